// The runtime's side of the GPU module's boundary (runtime/gpu/module_api.h):
// a KernelProvider, its ComputeDevice, their allocator and kernels, each a
// thin class forwarding through the module's function table. An entry the
// table has not got (a module of an older minor version) or leaves null runs
// the interface's default (runtime/backend.h); an error the module returns
// is thrown again here as minirt::Error with its code and message.
//
//   if (std::string why = check_module_table(table, path); !why.empty()) refuse(why);
//   MinirtCudaProvider* p = table->create(&options, ...);
//   std::shared_ptr<KernelProvider> b = wrap_module_provider(table, p);  // destroys p when the last user goes
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.h"
#include "runtime/gpu/module_api.h"

namespace minirt::gpu {

// Empty when this minirt can use the table; otherwise a sentence naming
// `path`, the module's interface version and this minirt's, and what to do.
std::string check_module_table(const MinirtCudaModuleTable* table, const std::string& path);

// The module's provider `p` (from table->create) as a KernelProvider. The
// provider is destroyed through the table once the returned pointer, its
// device's allocator and every kernel and upload it made are gone.
std::shared_ptr<KernelProvider> wrap_module_provider(const MinirtCudaModuleTable* table, MinirtCudaProvider* p);

// "9.0" for a table.
std::string module_abi_text(const MinirtCudaModuleTable* table);

}  // namespace minirt::gpu
