// The C entry points of the GPU module (libminirt_cuda.so, built from
// kernels/cuda/), shared by the module and by its loader (runtime/gpu/module.h).
// The loader finds the file, dlopens it and calls these three functions by
// name; nothing else crosses the boundary but the minirt::KernelProvider the
// module makes (and the ComputeDevice it owns).
//
//   auto abi = (MinirtCudaAbiFn)dlsym(h, kMinirtCudaAbiSymbol);
//   if (abi() != MINIRT_CUDA_MODULE_ABI) ...                         // built for another minirt
//   MinirtCudaOptions o = minirt_cuda_default_options();
//   o.math = kMinirtCudaMathTf32;
//   char err[1024], what[512];
//   minirt::KernelProvider* b = create(&o, err, sizeof err, what, sizeof what);  // null: err says why
//   ...
//   destroy(b);
//
// The KernelProvider is a C++ object whose classes (Graph, Node, Tensor, ...) the
// module and the runtime each compile from the same headers, so both must
// come from the same build: the ABI number says which interface the module
// speaks, and `layout` holds the sizes of the shared types, which create()
// compares with its own before it makes anything.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/backend.h"

// Raised whenever these entry points, MinirtCudaOptions or the KernelProvider
// and ComputeDevice interfaces (runtime/backend.h) change. 4: the backend
// became a KernelProvider owning a ComputeDevice. 5: kMinirtCudaMathFp16.
// 6: per-step device timing (ComputeDevice::step_begun/step_ended/
// step_times), KernelProvider::reads_uploaded_constant and
// Kernel::own_constant_bytes (new virtual functions move the vtables: a
// module of 5 would call the wrong ones). 7: Kernel::precision,
// KernelProvider::math_note and narrow_values. 8: kMinirtCudaMathBf16.
#define MINIRT_CUDA_MODULE_ABI 8

extern "C" {

enum { kMinirtCudaMathFp32 = 0, kMinirtCudaMathTf32 = 1, kMinirtCudaMathFp16 = 2, kMinirtCudaMathBf16 = 3 };
enum { kMinirtCudaLayoutCount = 8 };

struct MinirtCudaOptions {
  uint32_t abi;                             // MINIRT_CUDA_MODULE_ABI of the caller
  uint32_t size;                            // sizeof(MinirtCudaOptions) of the caller
  int32_t device;                           // CUDA device ordinal (of the visible devices)
  int32_t math;                             // kMinirtCudaMathFp32 (default), kMinirtCudaMathTf32 or kMinirtCudaMathFp16
  uint32_t layout[kMinirtCudaLayoutCount];  // minirt_cuda_layout() of the caller
};

// Returns MINIRT_CUDA_MODULE_ABI as the module was built.
typedef int (*MinirtCudaAbiFn)(void);
// Makes the backend for options->device, or returns null with a sentence in
// `error` (CUDA's, cuDNN's or cuBLAS's error, or why the module does not fit
// this minirt). On success `description` says what runs: "NVIDIA H200 (cc
// 9.0), driver CUDA 13.0, cuDNN 9.19.0, cuBLAS 13.1.0". Never throws.
typedef minirt::KernelProvider* (*MinirtCudaCreateFn)(const MinirtCudaOptions* options, char* error, size_t error_size,
                                                      char* description, size_t description_size);
// Destroys a backend from create(); every kernel, stream and upload it made
// must be gone first.
typedef void (*MinirtCudaDestroyFn)(minirt::KernelProvider* backend);

}  // extern "C"

inline constexpr const char* kMinirtCudaModuleFile = "libminirt_cuda.so";
inline constexpr const char* kMinirtCudaAbiSymbol = "minirt_cuda_module_abi";
inline constexpr const char* kMinirtCudaCreateSymbol = "minirt_cuda_create";
inline constexpr const char* kMinirtCudaDestroySymbol = "minirt_cuda_destroy";

// The sizes of the C++ types both sides share, as this side compiled them.
inline void minirt_cuda_layout(uint32_t out[kMinirtCudaLayoutCount]) {
  out[0] = sizeof(minirt::Graph);
  out[1] = sizeof(minirt::Node);
  out[2] = sizeof(minirt::Value);
  out[3] = sizeof(minirt::Tensor);
  out[4] = sizeof(minirt::Attribute);
  out[5] = sizeof(minirt::KernelArgs);
  out[6] = sizeof(minirt::DeviceRunTimes);
  out[7] = sizeof(std::string);
}

inline MinirtCudaOptions minirt_cuda_default_options() {
  MinirtCudaOptions o{};
  o.abi = MINIRT_CUDA_MODULE_ABI;
  o.size = sizeof(MinirtCudaOptions);
  o.device = 0;
  o.math = kMinirtCudaMathFp32;
  minirt_cuda_layout(o.layout);
  return o;
}
