// The boundary of the GPU module (libminirt_cuda.so, built from kernels/cuda/),
// shared by the module and by its loader (runtime/gpu/module.h): one C
// function, minirt_cuda_module(), returns a table of function pointers that
// begins with its own size and version. Objects cross as opaque handles (the
// provider, a kernel, an upload); the runtime wraps them in its own
// KernelProvider, ComputeDevice and Kernel (runtime/gpu/module_provider.h),
// so no C++ vtable crosses and a method added to runtime/backend.h moves
// nothing the module was built against.
//
//   auto get = (MinirtCudaModuleFn)dlsym(h, kMinirtCudaModuleSymbol);
//   const MinirtCudaModuleTable* t = get();
//   // t->abi_major must be MINIRT_CUDA_ABI_MAJOR, t->size at least kMinirtCudaTableRequiredSize
//   MinirtCudaOptions o = minirt_cuda_default_options();
//   char err[1024], what[512];
//   MinirtCudaProvider* p = t->create(&o, err, sizeof err, what, sizeof what);  // null: err says why
//   std::string error;
//   MinirtCudaKernel* k = nullptr;
//   if (t->make_kernel(p, &graph, &node, &k, &error) != kMinirtCudaOk) throw Error(...);
//   ...
//   t->kernel_destroy(k);
//   t->destroy(p);
//
// Versions. Entries are only ever appended, and the minor version counts
// them: a table whose `size` ends before an entry (a module of an older
// minor), or whose entry is null, has not got it, and the runtime does what
// the interface's default does (runtime/backend.h). The major version
// changes only when an existing entry's meaning, MinirtCudaOptions' existing
// fields or the layout of a shared C++ type changes; another major is
// refused. The shared C++ types (Graph, Node, Tensor, KernelArgs,
// std::string, std::vector, std::map, ...) are passed by pointer, so the
// module and the runtime must compile them alike: `layout` holds their sizes,
// which create() compares with its own before it makes anything.
//
// Errors. An entry that can fail returns a MinirtCudaStatus: kMinirtCudaOk,
// a minirt::ErrorCode (1..99) with its message in `error`, or
// kMinirtCudaStdException / kMinirtCudaBadAlloc for the other exceptions the
// module caught. The runtime throws them again as minirt::Error,
// std::runtime_error and std::bad_alloc. No exception leaves an entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/backend.h"

// 9: the function table (before it, interfaces 4 to 8 were the C++ vtables of
// KernelProvider and ComputeDevice, numbered by minirt_cuda_module_abi()).
#define MINIRT_CUDA_ABI_MAJOR 9
// 0: every entry below.
#define MINIRT_CUDA_ABI_MINOR 0

extern "C" {

enum { kMinirtCudaMathFp32 = 0, kMinirtCudaMathTf32 = 1, kMinirtCudaMathFp16 = 2, kMinirtCudaMathBf16 = 3 };
enum { kMinirtCudaLayoutCount = 12 };

typedef int32_t MinirtCudaStatus;
enum { kMinirtCudaOk = 0, kMinirtCudaStdException = 100, kMinirtCudaBadAlloc = 101 };

struct MinirtCudaOptions {
  uint32_t abi_major;                       // MINIRT_CUDA_ABI_MAJOR of the caller
  uint32_t size;                            // sizeof(MinirtCudaOptions) of the caller; fields are appended
  int32_t device;                           // CUDA device ordinal (of the visible devices)
  int32_t math;                             // kMinirtCudaMathFp32 (default), ...Tf32, ...Fp16 or ...Bf16
  uint32_t layout[kMinirtCudaLayoutCount];  // minirt_cuda_layout() of the caller
};

// The opaque handles: the backend (a kernel provider with its device) and a kernel.
typedef struct MinirtCudaProvider MinirtCudaProvider;
typedef struct MinirtCudaKernel MinirtCudaKernel;

// `P` a provider, `E` where a failing entry writes its message.
struct MinirtCudaModuleTable {
  uint32_t size;       // sizeof(MinirtCudaModuleTable) as the module was built: entries past it are absent
  uint32_t abi_major;  // MINIRT_CUDA_ABI_MAJOR as the module was built
  uint32_t abi_minor;  // MINIRT_CUDA_ABI_MINOR as the module was built
  uint32_t reserved;   // 0

  // ---- 9.0, required: a table that ends before these, or has one null, is refused ----
  // Makes the backend for options->device, or returns null with a sentence in
  // `error` (CUDA's, cuDNN's or cuBLAS's error, or why the module does not
  // fit this minirt). On success `description` says what runs: "NVIDIA H200
  // (cc 9.0), driver CUDA 13.0, cuDNN 9.19.0, cuBLAS 13.1.0".
  MinirtCudaProvider* (*create)(const MinirtCudaOptions* options, char* error, size_t error_size, char* description,
                                size_t description_size);
  // Destroys a backend from create(); every kernel, stream and upload it made must be gone first.
  void (*destroy)(MinirtCudaProvider* p);
  // KernelProvider::name: a string that lives as long as the module.
  const char* (*name)(MinirtCudaProvider* p);
  MinirtCudaStatus (*supports)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n, std::string* why,
                               int32_t* out, std::string* error);
  MinirtCudaStatus (*make_kernel)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                  MinirtCudaKernel** out, std::string* error);
  // ComputeDevice of the provider. The allocator's allocate returns null when it cannot.
  int32_t (*is_device)(MinirtCudaProvider* p);
  void* (*allocate)(MinirtCudaProvider* p, size_t bytes);
  void (*deallocate)(MinirtCudaProvider* p, void* ptr, size_t bytes);
  size_t (*free_memory)(MinirtCudaProvider* p);
  void (*allocator_name)(MinirtCudaProvider* p, std::string* out);
  MinirtCudaStatus (*copy_to_device)(MinirtCudaProvider* p, void* dst, const void* src, size_t bytes, void* stream,
                                     std::string* error);
  MinirtCudaStatus (*copy_to_host)(MinirtCudaProvider* p, void* dst, const void* src, size_t bytes, void* stream,
                                   std::string* error);
  MinirtCudaStatus (*create_stream)(MinirtCudaProvider* p, void** out, std::string* error);
  void (*destroy_stream)(MinirtCudaProvider* p, void* stream);
  MinirtCudaStatus (*synchronize)(MinirtCudaProvider* p, void* stream, std::string* error);
  // A device copy of t: `*data` is where it lives, `*handle` what release_upload frees.
  MinirtCudaStatus (*upload)(MinirtCudaProvider* p, const minirt::Tensor* t, void** data, void** handle,
                             std::string* error);
  void (*release_upload)(MinirtCudaProvider* p, void* handle);
  MinirtCudaStatus (*begin_run)(MinirtCudaProvider* p, void* stream, std::string* error);
  MinirtCudaStatus (*end_run)(MinirtCudaProvider* p, void* stream, std::string* error);
  MinirtCudaStatus (*run_times)(MinirtCudaProvider* p, void* stream, minirt::DeviceRunTimes* out, std::string* error);
  // Kernel.
  void (*kernel_destroy)(MinirtCudaKernel* k);
  MinirtCudaStatus (*kernel_run)(MinirtCudaKernel* k, const minirt::KernelArgs* args, std::string* error);

  // ---- 9.0, optional: absent or null, the interface's default runs ----
  size_t (*kernel_workspace_bytes)(MinirtCudaKernel* k);
  void (*kernel_describe)(MinirtCudaKernel* k, std::string* out);
  size_t (*kernel_own_constant_bytes)(MinirtCudaKernel* k);
  // A string that lives as long as the module.
  const char* (*kernel_precision)(MinirtCudaKernel* k);
  size_t (*backed_room)(MinirtCudaProvider* p, std::string* detail);
  MinirtCudaStatus (*step_begun)(MinirtCudaProvider* p, void* stream, size_t step, std::string* error);
  MinirtCudaStatus (*step_ended)(MinirtCudaProvider* p, void* stream, size_t step, std::string* error);
  MinirtCudaStatus (*step_times)(MinirtCudaProvider* p, void* stream, std::vector<minirt::DeviceStepTime>* out,
                                 std::string* error);
  MinirtCudaStatus (*reads_uploaded_constant)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                              size_t input, int32_t* out, std::string* error);
  int32_t (*channel_block)(MinirtCudaProvider* p);
  MinirtCudaStatus (*blocked_inputs)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                     std::vector<minirt::LayoutNeed>* needs, int32_t* out, std::string* error);
  MinirtCudaStatus (*algorithms)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                 std::vector<minirt::AlgorithmOption>* out, std::string* error);
  MinirtCudaStatus (*heuristic_algorithm)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                          std::string* out, std::string* error);
  MinirtCudaStatus (*make_kernel_with)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                       const std::string* algorithm, MinirtCudaKernel** out, std::string* error);
  MinirtCudaStatus (*make_tuning_kernel)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                         const std::string* algorithm, MinirtCudaKernel** out, std::string* error);
  MinirtCudaStatus (*keep_heuristic_within)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                            double usual, double* out, std::string* error);
  MinirtCudaStatus (*tuning_context)(MinirtCudaProvider* p, std::string* out, std::string* error);
  MinirtCudaStatus (*math_note)(MinirtCudaProvider* p, std::string* out, std::string* error);
  MinirtCudaStatus (*narrow_values)(MinirtCudaProvider* p, minirt::Graph* g,
                                    const std::map<int, std::string>* algorithm, int32_t* out, std::string* error);
  MinirtCudaStatus (*fuse_chosen)(MinirtCudaProvider* p, minirt::Graph* g, const std::map<int, std::string>* algorithm,
                                  const std::vector<int>* order, int32_t* out, std::string* error);
  MinirtCudaStatus (*measure_algorithms)(MinirtCudaProvider* p, const minirt::Graph* g, const minirt::Node* n,
                                         const std::vector<minirt::AlgorithmOption>* candidates, size_t workspace_limit,
                                         std::vector<double>* out, std::string* error);
  // ---- appended entries go here, with MINIRT_CUDA_ABI_MINOR raised ----
};

// Returns the module's table, which lives as long as the module. Never null.
typedef const MinirtCudaModuleTable* (*MinirtCudaModuleFn)(void);

}  // extern "C"

// The bytes MinirtCudaOptions has in 9.0; fields appended later are read
// only where the caller's `size` covers them.
inline constexpr size_t kMinirtCudaOptionsRequiredSize =
    offsetof(MinirtCudaOptions, layout) + sizeof(uint32_t) * kMinirtCudaLayoutCount;

// The bytes a table must have: every required entry.
inline constexpr size_t kMinirtCudaTableRequiredSize =
    offsetof(MinirtCudaModuleTable, kernel_run) + sizeof(MinirtCudaModuleTable::kernel_run);

inline constexpr const char* kMinirtCudaModuleFile = "libminirt_cuda.so";
inline constexpr const char* kMinirtCudaModuleSymbol = "minirt_cuda_module";
// What modules of interfaces 4 to 8 exported instead, named in the loader's refusal.
inline constexpr const char* kMinirtCudaOldAbiSymbol = "minirt_cuda_module_abi";

// Whether the table has the entry `member` (a pointer to member): its size
// covers it and it is not null.
template <typename Fn>
inline bool minirt_cuda_has(const MinirtCudaModuleTable* t, Fn MinirtCudaModuleTable::*member) {
  const auto* base = reinterpret_cast<const char*>(t);
  const auto* at = reinterpret_cast<const char*>(&(t->*member));
  return static_cast<size_t>(at - base) + sizeof(Fn) <= t->size && t->*member != nullptr;
}

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
  out[8] = sizeof(minirt::AlgorithmOption);
  out[9] = sizeof(minirt::DeviceStepTime);
  out[10] = sizeof(std::vector<int>);
  out[11] = sizeof(std::map<int, std::string>);
}

inline MinirtCudaOptions minirt_cuda_default_options() {
  MinirtCudaOptions o{};
  o.abi_major = MINIRT_CUDA_ABI_MAJOR;
  o.size = sizeof(MinirtCudaOptions);
  o.device = 0;
  o.math = kMinirtCudaMathFp32;
  minirt_cuda_layout(o.layout);
  return o;
}
