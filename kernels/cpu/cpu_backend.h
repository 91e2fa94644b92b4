// The CPU backend: every op minirt knows, in C++ with AVX2 and AVX-512
// kernels chosen at run time (Eigen only for ConvTranspose's product). It is the
// reference every other backend is compared against, and it must support
// every node a schema accepts.
//
//   std::unique_ptr<KernelProvider> cpu = make_cpu_backend(pool.size());
//
// A session gets it through the backend registry (cpu_backend_factory(),
// registered in runtime/builtin_backends.cpp); its device is host_device().
#pragma once

#include "runtime/backend.h"
#include "runtime/backend_registry.h"

#include <memory>

namespace minirt {

// `threads`: the size of the pool its kernels will run on. `math`:
// MathMode::kBf16 runs convolutions in bfloat16 where the CPU has AMX (or,
// where measured faster, AVX512_BF16); its math_note() says which, or why
// not; every other mode is float32.
std::unique_ptr<KernelProvider> make_cpu_backend(int threads, MathMode math = MathMode::kFp32);

// The registry's host entry: "cpu", kind Device::kCpu; never fails to open.
BackendFactory cpu_backend_factory();

}  // namespace minirt
