// The module's side of its boundary (runtime/gpu/module_api.h): the table
// minirt_cuda_module() returns, whose entries cast the handles back to the
// module's KernelProvider, ComputeDevice and Kernel and call them, catching
// every exception (module_table.cpp). The tests link module_table.cpp with a
// create_backend of their own (tests/gpu/test_module_table.cpp).
#pragma once

#include <cstddef>

#include "runtime/gpu/module_api.h"

namespace minirt::cuda {

// Makes the CUDA backend (backend.cpp), or returns null with a sentence in
// `error`. Never throws.
KernelProvider* create_backend(const MinirtCudaOptions* options, char* error, size_t error_size, char* description,
                               size_t description_size);

}  // namespace minirt::cuda

// The module's one export: its table, which lives as long as the module.
extern "C" const MinirtCudaModuleTable* minirt_cuda_module(void);
