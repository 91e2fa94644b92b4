// Loads the GPU module (libminirt_cuda.so) at run time and makes its backend.
// The core library links no CUDA library: the module does, and it is opened
// only after the compatibility gate (probe.h) has judged the stack usable and
// loaded the very cuDNN and cuBLAS files it judged, so the module's
// libcudnn.so.9 and libcublas.so.13 bind to those by soname, even when they
// live in a pip wheel's folder the loader would not search.
// load_cuda_backend runs the gate itself first (once per process), so a
// caller that loads the module without asking the gate gets the same.
//
//   const GateResult& gate = check_gpu_stack();
//   if (gate.usable) {
//     LoadedBackend m = load_cuda_backend({.device = 0, .tf32 = false});
//     if (m.backend) devices.push_back(m.backend);  // m.description: "NVIDIA H200 (cc 9.0), ..."
//     else std::cerr << m.error << "\n";            // a sentence; never a crash
//   }
// (cuda_backend_factory() below does this for the backend registry.)
//
// Where the module is looked for, in order (the first file that exists is
// the one opened):
//   1. MINIRT_MODULE_PATH: colon-separated files or folders; when it is set,
//      nothing else is tried (an explicit choice);
//   2. next to the file that holds minirt (libminirt.so, or the executable
//      that links minirt statically), then its ../lib, ../lib64 and lib/
//      (an installed tree puts the module in lib/ beside libminirt.so; a
//      build tree puts it in BUILD/lib, with the tools in BUILD/bin);
//   3. next to the running executable (/proc/self/exe), then its ../lib,
//      ../lib64 and lib/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/backend_registry.h"

namespace minirt::gpu {

struct ModuleOptions {
  int device = 0;                   // CUDA device ordinal
  MathMode math = MathMode::kFp32;  // cuBLAS's and cuDNN's math: fp32, TF32 or float16 tensor cores
};

struct LoadedBackend {
  std::shared_ptr<KernelProvider> backend;  // null when loading failed
  std::string path;                         // the module file opened (or the last one tried)
  std::string description;  // what runs, e.g. "NVIDIA H200 (cc 9.0), driver CUDA 13.0, cuDNN 9.19.0, cuBLAS 13.1.0"
  std::string error;        // when backend is null: one sentence, with the file and the loader's or CUDA's words
  std::string abi;          // the module's interface version, "9.0", once its table was accepted
  uint32_t table_size = 0;  // the bytes of its function table (runtime/gpu/module_api.h)
};

// What minirt-doctor says of the module: the file and its interface, without
// starting it (no CUDA call).
struct ModuleInfo {
  std::string path;         // the file opened, or the last one tried
  bool loaded = false;      // opened, and its function table is one this minirt uses
  std::string abi;          // "9.0": the table's version, when a table was read (accepted or not)
  uint32_t table_size = 0;  // its bytes
  std::string error;        // when not loaded: the loader's sentence
};

// Finds, opens and asks the module for a backend. Thread-safe. The module
// stays loaded for the rest of the process once opened; the backend is
// destroyed through the module when the last shared_ptr goes.
LoadedBackend load_cuda_backend(const ModuleOptions& options);

// Finds and opens the module and reads its function table, as
// load_cuda_backend does, but makes no backend.
ModuleInfo inspect_cuda_module();

// The registry's entry for the GPU module (runtime/builtin_backends.cpp):
// "cuda", kind Device::kCuda. Opening it runs the compatibility gate and,
// when the stack is usable, loads the module; otherwise its error is the
// gate's first fatal sentence or the loader's.
BackendFactory cuda_backend_factory();

// The files that would be tried, in order (for messages and tests).
std::vector<std::string> module_candidates();

}  // namespace minirt::gpu
