// The probe: finds and loads the GPU stack's libraries at run time
// (dlopen/dlsym; minirt links no CUDA library) and asks each what it is. It
// never aborts the process, whatever it finds: a missing library, a missing
// symbol, a stub or an old version all become facts for the gate.
//
//   GateReport r = probe_and_judge(ProbeOptions::from_environment());
//   std::cout << r.result.summary << "\n";      // what minirt-doctor prints last
//
//   const GateResult& g = check_gpu_stack();   // what a Session asks: probed once per process
//   if (!g.usable) reason = g.summary;         // "CPU fallback: no NVIDIA driver ..."
//
// Where libraries are looked for, in order (the first place that loads wins):
//   1. the dynamic loader's default search: LD_LIBRARY_PATH, the executable's
//      RUNPATH, /etc/ld.so.cache, /lib and /usr/lib;
//   2. each folder of MINIRT_CUDA_PATH (colon-separated);
//   3. the NVIDIA wheels pip installed into the active Python environment:
//      $VIRTUAL_ENV and $CONDA_PREFIX, lib/python3*/site-packages/nvidia/*/lib
//      (and $CONDA_PREFIX/lib, where conda's own packages go);
//   4. /usr/local/cuda/lib64.
// Libraries that load stay loaded, so the GPU module later binds to exactly the
// files the gate judged (the loader matches them by soname).
#pragma once

#include <string>
#include <vector>

#include "runtime/gpu/gate.h"
#include "runtime/gpu/stack.h"

namespace minirt::gpu {

struct ProbeOptions {
  bool loader_default_search = true;                                 // step 1
  std::vector<std::string> cuda_path;                                // step 2: MINIRT_CUDA_PATH
  std::string virtual_env;                                           // step 3: VIRTUAL_ENV
  std::string conda_prefix;                                          // step 3: CONDA_PREFIX
  std::vector<std::string> system_dirs = {"/usr/local/cuda/lib64"};  // step 4
  std::string ld_library_path;  // for the report only (the loader reads its own copy at start-up)
  bool cuda_visible_devices_set = false;
  std::string cuda_visible_devices;
  std::string proc_driver_version = "/proc/driver/nvidia/version";
  // Create and release the first GPU's primary context, which is where a
  // busy GPU (exclusive-process mode) shows.
  bool check_context = true;
  // Stop after the build, driver or device layer fails, without loading
  // cuDNN and cuBLAS (what a Session wants; minirt-doctor probes everything).
  bool stop_at_first_failure = false;
  // The sonames to look for first; older or newer ones are then tried, to explain.
  int cudnn_major = 9;
  int cublas_major = 13;

  // MINIRT_CUDA_PATH, VIRTUAL_ENV, CONDA_PREFIX, LD_LIBRARY_PATH and
  // CUDA_VISIBLE_DEVICES; with MINIRT_PROBE_ONLY=1 only the folders those
  // name are searched (no default loader search, no toolkit folder, no
  // /proc/driver/nvidia/version).
  static ProbeOptions from_environment();
};

// Probes everything the options allow.
StackFacts probe_stack(const ProbeOptions& options);

struct GateReport {
  StackFacts stack;
  BuildFacts build;
  GateResult result;
};

// Probes (the sonames from `build`) and judges.
GateReport probe_and_judge(const ProbeOptions& options, const BuildFacts& build = BuildFacts::this_build());

// The entry point for choosing a Session's device: probes once per process
// (stop_at_first_failure; nothing at all when this build has no GPU
// backend), judges, and keeps the result. Thread-safe.
const GateResult& check_gpu_stack();

}  // namespace minirt::gpu
