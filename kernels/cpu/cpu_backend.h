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
// MathMode::kBf16 runs convolutions in bfloat16 where the CPU has
// AVX512_BF16 or AMX (cpu_bf16_math says which, or why not); every other
// mode is float32.
std::unique_ptr<KernelProvider> make_cpu_backend(int threads, MathMode math = MathMode::kFp32);

// What a CPU backend opened with `math` runs its convolutions in: "fp32",
// "bf16 (amx)" or "bf16 (avx512_bf16)"; `why` gets the reason when bf16 was
// asked for and fp32 runs (or AMX was left out).
std::string cpu_math_summary(MathMode math, std::string* why = nullptr);

// The registry's host entry: "cpu", kind Device::kCpu; never fails to open.
BackendFactory cpu_backend_factory();

}  // namespace minirt
