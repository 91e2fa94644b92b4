#include "runtime/gpu/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "runtime/gpu/gate.h"
#include "runtime/gpu/module_api.h"
#include "runtime/gpu/probe.h"

namespace minirt::gpu {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_colons(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The folder of the file that holds this code: libminirt.so, or the
// executable minirt is linked into.
std::string folder_of_this_code() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&load_cuda_backend), &info) == 0 || !info.dli_fname || !info.dli_fname[0])
    return {};
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::path(info.dli_fname), ec);
  if (ec || !fs::is_regular_file(p, ec)) return {};
  return p.parent_path().string();
}

std::string folder_of_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return p.parent_path().string();
}

void add_folder(std::vector<std::string>& out, const std::string& dir) {
  if (dir.empty()) return;
  for (const char* sub : {"", "../lib", "../lib64", "lib"}) {
    fs::path p = fs::path(dir);
    if (*sub) p /= sub;
    p /= kMinirtCudaModuleFile;
    out.push_back(p.lexically_normal().string());
  }
}

struct Module {
  std::string path;
  MinirtCudaCreateFn create = nullptr;
  MinirtCudaDestroyFn destroy = nullptr;
};

std::string dl_error(const char* fallback) {
  const char* e = dlerror();
  return e ? e : fallback;
}

// Opens the first candidate that exists; fills `error` when none will do.
bool open_module(Module& m, std::string& error) {
  std::vector<std::string> tried;
  for (const std::string& path : module_candidates()) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      tried.push_back(path);
      continue;
    }
    m.path = path;
    dlerror();
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      error = "the GPU module " + path + " could not be loaded: " + dl_error("dlopen failed") +
              " (run minirt-doctor to see which CUDA libraries are found)";
      return false;
    }
    auto abi = reinterpret_cast<MinirtCudaAbiFn>(dlsym(h, kMinirtCudaAbiSymbol));
    auto create = reinterpret_cast<MinirtCudaCreateFn>(dlsym(h, kMinirtCudaCreateSymbol));
    auto destroy = reinterpret_cast<MinirtCudaDestroyFn>(dlsym(h, kMinirtCudaDestroySymbol));
    if (!abi || !create || !destroy) {
      error = path + " is not a minirt GPU module (it lacks " + kMinirtCudaAbiSymbol + ", " + kMinirtCudaCreateSymbol +
              " or " + kMinirtCudaDestroySymbol + ")";
      dlclose(h);
      return false;
    }
    int got = abi();
    if (got != MINIRT_CUDA_MODULE_ABI) {
      error = "the GPU module " + path + " speaks module interface " + std::to_string(got) + ", this minirt speaks " +
              std::to_string(MINIRT_CUDA_MODULE_ABI) + "; use the libminirt_cuda.so built with this minirt";
      dlclose(h);
      return false;
    }
    // Never closed: the backend's code and the CUDA runtime inside stay for
    // the process's lifetime (opening the same file again only counts up).
    m.create = create;
    m.destroy = destroy;
    return true;
  }
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  error = std::string("the GPU module ") + kMinirtCudaModuleFile + " was not found (looked for " + list +
          "); it is built with minirt where the CUDA toolkit and cuDNN are found, and installed next to "
          "libminirt.so; set MINIRT_MODULE_PATH to the file or its folder if it is elsewhere" +
          (std::getenv("MINIRT_MODULE_PATH") ? std::string(" (MINIRT_MODULE_PATH is set: only it is searched)") : "");
  return false;
}

}  // namespace

std::vector<std::string> module_candidates() {
  std::vector<std::string> out;
  const char* env = std::getenv("MINIRT_MODULE_PATH");
  if (env && *env) {
    // An explicit choice: only these are tried.
    for (const std::string& p : split_colons(env)) {
      std::error_code ec;
      if (fs::is_directory(p, ec))
        out.push_back((fs::path(p) / kMinirtCudaModuleFile).string());
      else
        out.push_back(p);
    }
  } else {
    add_folder(out, folder_of_this_code());
    add_folder(out, folder_of_executable());
  }
  std::vector<std::string> unique;
  for (const std::string& p : out) {
    bool seen = false;
    for (const std::string& q : unique) seen = seen || q == p;
    if (!seen) unique.push_back(p);
  }
  return unique;
}

LoadedBackend load_cuda_backend(const ModuleOptions& options) {
  // The gate first, whatever the caller did: its probe leaves the cuDNN and
  // cuBLAS files it judged loaded, and the module's libcudnn.so.9 and
  // libcublas.so.13 bind to those by soname (from a wheel's folder or
  // MINIRT_CUDA_PATH, which the loader would not search). Probed once per
  // process.
  (void)check_gpu_stack();
  LoadedBackend r;
  Module m;
  {
    // dlopen and dlerror are per-call, but the error text is per-thread
    // state that two loads at once must not mix.
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    if (!open_module(m, r.error)) {
      r.path = m.path;
      return r;
    }
  }
  r.path = m.path;
  MinirtCudaOptions o = minirt_cuda_default_options();
  o.device = options.device;
  o.math = options.math == MathMode::kTf32   ? kMinirtCudaMathTf32
           : options.math == MathMode::kFp16 ? kMinirtCudaMathFp16
           : options.math == MathMode::kBf16 ? kMinirtCudaMathBf16
                                             : kMinirtCudaMathFp32;
  char error[1024] = {0};
  char description[512] = {0};
  KernelProvider* b = m.create(&o, error, sizeof error, description, sizeof description);
  if (!b) {
    r.error = std::string("the GPU module ") + m.path + " could not start: " + (error[0] ? error : "it gave no reason");
    return r;
  }
  MinirtCudaDestroyFn destroy = m.destroy;
  r.backend = std::shared_ptr<KernelProvider>(b, [destroy](KernelProvider* p) { destroy(p); });
  r.description = description;
  return r;
}

BackendFactory cuda_backend_factory() {
  BackendFactory f;
  f.name = "cuda";
  f.kind = Device::kCuda;
  f.priority = 100;
  f.open = [](const BackendRequest& request) {
    OpenedBackend out;
    const GateResult& gate = check_gpu_stack();
    if (!gate.usable) {
      const Verdict* fatal = gate.first_fatal();
      out.error = fatal ? fatal->message : gate.summary;
      return out;
    }
    LoadedBackend m = load_cuda_backend({.device = request.device_id, .math = request.math});
    out.kernels = std::move(m.backend);
    out.description = std::move(m.description);
    out.error = std::move(m.error);
    return out;
  };
  return f;
}

}  // namespace minirt::gpu
