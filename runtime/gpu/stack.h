// The GPU stack as plain facts: what the probe found on this machine
// (StackFacts) and what this build of minirt was compiled for (BuildFacts).
// The gate (gate.h) judges one against the other; the probe (probe.h) fills
// StackFacts by loading the libraries at run time. Nothing here includes a
// CUDA header or needs a GPU, so tests build these structs by hand.
//
//   StackFacts s = probe_stack(ProbeOptions::from_environment());
//   GateResult r = judge(s, BuildFacts::this_build());
//   if (!r.usable) std::cerr << r.summary << "\n";
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace minirt::gpu {

// A version as major.minor.patch; all zero means unknown.
struct Version {
  int major = 0, minor = 0, patch = 0;

  bool known() const { return major > 0 || minor > 0 || patch > 0; }
  // "13.0", or "9.19.0" when with_patch.
  std::string str(bool with_patch = true) const;
  auto operator<=>(const Version&) const = default;
  bool operator==(const Version&) const = default;

  // "12.2", "8.9.7", "580.65.06" (extra parts are dropped); unknown on error.
  static Version parse(std::string_view text);
  // CUDA's encoding (cuDriverGetVersion, cudnnGetCudartVersion):
  // 1000 * major + 10 * minor, so 12020 is 12.2 and 13010 is 13.1.
  static Version from_cuda(long long v);
  // cudnnGetVersion: 10000 * major + 100 * minor + patch from cuDNN 9 on
  // (91900 is 9.19.0), 1000 * major + 100 * minor + patch before (8907 is 8.9.7).
  static Version from_cudnn(long long v);
};

// A compute capability, e.g. {9, 0}; {0, 0} when unknown.
struct ComputeCapability {
  int major = 0, minor = 0;
  bool known() const { return major > 0; }
  int as_int() const { return major * 10 + minor; }  // 90, the sm_90 number
  std::string str() const;                           // "9.0"
  auto operator<=>(const ComputeCapability&) const = default;
  bool operator==(const ComputeCapability&) const = default;
  static ComputeCapability from_int(int sm);              // 90 -> 9.0, 120 -> 12.0
  static ComputeCapability parse(std::string_view text);  // "8.6" or "86"
};

// One place a library was looked for.
struct LoadAttempt {
  std::string where;  // the search step: "default loader search", "MINIRT_CUDA_PATH", ...
  std::string path;   // what was passed to dlopen (a bare name for the default search)
  std::string error;  // why it failed (dlerror's text, or "not present")
};

// The result of looking for one shared library.
struct LibraryLoad {
  std::string name;       // the name asked for first, e.g. "libcudnn.so.9"
  bool searched = false;  // false when the probe did not look (an earlier layer failed)
  bool found = false;
  std::string loaded_name;     // the file name that was found (may be an older soname, e.g. libcudnn.so.8)
  std::string path;            // the file as the loader opened it
  std::string real_path;       // symlinks resolved (often carries the full version: libcuda.so.580.65.06)
  std::string found_by;        // which search step found it
  std::string missing_symbol;  // a required function the library does not export
  std::vector<LoadAttempt> tried;
};

struct DriverFacts {
  LibraryLoad lib;       // libcuda.so.1
  bool is_stub = false;  // the toolkit's link-time stub, not a driver
  int init_result = -1;  // cuInit(0); -1 when not called
  Version cuda_version;  // cuDriverGetVersion: the newest CUDA this driver runs (nvidia-smi's "CUDA Version")
  std::string release;   // the driver release, e.g. "580.65.06": the kernel module's when known
  bool kernel_module_loaded = false;  // /proc/driver/nvidia/version exists
  std::string kernel_module_release;  // from /proc/driver/nvidia/version, when readable
  std::string library_release;        // from libcuda's file name (libcuda.so.580.65.06), when it has one
};

struct DeviceFacts {
  int ordinal = 0;
  std::string name;
  ComputeCapability cc;
  uint64_t total_memory = 0;  // bytes
  int context_result = -1;    // cuDevicePrimaryCtxRetain; -1 when not tried
};

struct DevicesFacts {
  bool probed = false;    // false when the driver could not be initialised
  int count_result = -1;  // cuDeviceGetCount
  int count = 0;
  std::vector<DeviceFacts> list;
  bool cuda_visible_devices_set = false;
  std::string cuda_visible_devices;
};

// One of cuDNN 9's sub-libraries (libcudnn_graph.so.9, libcudnn_ops.so.9, ...),
// looked for next to libcudnn.so.9.
struct CudnnSubLibrary {
  std::string name;      // "graph", "ops", "cnn", "adv", "engines_precompiled", ...
  bool required = true;  // minirt's ops need it
  bool present = false;
  std::string path;
  std::string load_error;      // dlerror when it is present but would not load
  Version version;             // its cudnnGetVersion (graph) or the version in its file name
  std::string check_function;  // e.g. "cudnnOpsVersionCheck"; empty when it has none
  int check_result = -1;       // 0 success, 1002 CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH; -1 not run
};

struct CudnnFacts {
  LibraryLoad lib;               // libcudnn.so.9 (or an older soname, to explain)
  Version version;               // cudnnGetVersion
  Version cuda_version;          // cudnnGetCudartVersion: the CUDA it was built for
  ComputeCapability max_device;  // cudnnGetMaxDeviceVersion: the newest GPU it has native kernels for
  std::vector<CudnnSubLibrary> sublibs;
};

struct CublasFacts {
  LibraryLoad lib;       // libcublas.so.13 (or an older soname)
  Version version;       // cublasGetProperty(MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL)
  Version cuda_version;  // cublasGetCudartVersion
};

struct StackFacts {
  DriverFacts driver;
  DevicesFacts devices;
  CudnnFacts cudnn;
  CublasFacts cublas;
  std::vector<std::string> search_order;  // the places libraries are looked for, in order, for the report
  std::vector<std::string> assumed;       // facts given by hand (minirt-doctor --assume), for the report
};

// What this build was compiled for (from CMake; see runtime/gpu/gpu_gate.cmake).
struct BuildFacts {
  bool has_gpu_backend = false;
  std::string why_not;     // when there is no GPU backend: what was missing at configure time
  Version toolkit;         // the CUDA toolkit (nvcc --version); the CUDA 13 target when not found
  std::vector<int> sass;   // machine code compiled, as sm numbers: 75, 80, ..., 120
  std::vector<int> ptx;    // PTX embedded, as compute_XY numbers
  bool arch_known = true;  // false when the architecture list was not a plain list
  std::string arch_spec;   // the list as configured, e.g. "75-real;80-real;...;120"
  Version cudnn;           // cudnn_version.h at build time
  Version cublas;          // cublas_api.h at build time

  static BuildFacts this_build();
  // Parses a CMake CUDA_ARCHITECTURES list ("75-real;90;120-virtual") into sass/ptx.
  void set_architectures(std::string_view spec);
};

// The CUDA version a driver release supports, from NVIDIA's table of
// minimum drivers (535 -> 12.2, 580 -> 13.0); unknown below R418.
Version cuda_for_driver_release(std::string_view release);

}  // namespace minirt::gpu
