#include "runtime/gpu/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "runtime/gpu/gate.h"
#include "runtime/gpu/module_api.h"
#include "runtime/gpu/module_provider.h"
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
  const MinirtCudaModuleTable* table = nullptr;           // set once the file is open and speaks its interface
  uint32_t abi_major = 0, abi_minor = 0, table_size = 0;  // the table's, when one was read
};

// dlopen and dlerror are per-call, but the error text is per-thread state
// that two loads at once must not mix.
std::mutex& open_mutex() {
  static std::mutex mu;
  return mu;
}

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
    auto get = reinterpret_cast<MinirtCudaModuleFn>(dlsym(h, kMinirtCudaModuleSymbol));
    if (!get) {
      if (auto old = reinterpret_cast<int (*)(void)>(dlsym(h, kMinirtCudaOldAbiSymbol)))
        error = "the GPU module " + path + " speaks module interface " + std::to_string(old()) +
                " (C++ classes, before the function table), this minirt speaks " +
                std::to_string(MINIRT_CUDA_ABI_MAJOR) + "." + std::to_string(MINIRT_CUDA_ABI_MINOR) +
                "; use the libminirt_cuda.so built with this minirt";
      else
        error = path + " is not a minirt GPU module (it lacks " + kMinirtCudaModuleSymbol + ")";
      dlclose(h);
      return false;
    }
    const MinirtCudaModuleTable* table = get();
    if (table) {
      m.abi_major = table->abi_major;
      m.abi_minor = table->abi_minor;
      m.table_size = table->size;
    }
    error = check_module_table(table, path);
    if (!error.empty()) {
      dlclose(h);
      return false;
    }
    // Never closed: the backend's code and the CUDA runtime inside stay for
    // the process's lifetime (opening the same file again only counts up).
    m.table = table;
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
    std::lock_guard<std::mutex> lock(open_mutex());
    if (!open_module(m, r.error)) {
      r.path = m.path;
      return r;
    }
  }
  r.path = m.path;
  r.abi = module_abi_text(m.table);
  r.table_size = m.table_size;
  MinirtCudaOptions o = minirt_cuda_default_options();
  o.device = options.device;
  o.math = options.math == MathMode::kTf32   ? kMinirtCudaMathTf32
           : options.math == MathMode::kFp16 ? kMinirtCudaMathFp16
           : options.math == MathMode::kBf16 ? kMinirtCudaMathBf16
                                             : kMinirtCudaMathFp32;
  char error[1024] = {0};
  char description[512] = {0};
  MinirtCudaProvider* p = m.table->create(&o, error, sizeof error, description, sizeof description);
  if (!p) {
    r.error = std::string("the GPU module ") + m.path + " could not start: " + (error[0] ? error : "it gave no reason");
    return r;
  }
  r.backend = wrap_module_provider(m.table, p);
  r.description = description;
  return r;
}

ModuleInfo inspect_cuda_module() {
  ModuleInfo info;
  Module m;
  std::lock_guard<std::mutex> lock(open_mutex());
  info.loaded = open_module(m, info.error);
  info.path = m.path;
  if (m.table_size) {
    info.abi = std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor);
    info.table_size = m.table_size;
  }
  return info;
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
