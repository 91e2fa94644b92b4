#include "runtime/gpu/probe.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace minirt::gpu {

namespace {

namespace fs = std::filesystem;

// The few C entry points the probe calls, declared here so that no CUDA
// header is needed. CUresult, cudnnStatus_t, cublasStatus_t and
// libraryPropertyType are C enums (int); CUdevice is an int; CUcontext a pointer.
using CuInit = int (*)(unsigned);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceTotalMem = int (*)(size_t*, int);
using CuDevicePrimaryCtxRetain = int (*)(void**, int);
using CuDevicePrimaryCtxRelease = int (*)(int);
using CudnnSizeFn = size_t (*)();
using CudnnStatusFn = int (*)();
using CublasGetProperty = int (*)(int, int*);
using CublasSizeFn = size_t (*)();

constexpr int kAttrCcMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kMaxDevices = 64;

// A function the library itself defines (dlsym on a handle also searches the
// library's dependencies: libcudnn_ops would answer with libcudnn_graph's
// cudnnGetVersion).
template <typename F>
F symbol(void* handle, const char* name) {
  if (!handle) return nullptr;
  void* p = dlsym(handle, name);
  if (!p) return nullptr;
  struct link_map* lm = nullptr;
  Dl_info info{};
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && dladdr(p, &info) && info.dli_fname &&
      std::strcmp(info.dli_fname, lm->l_name) != 0)
    return nullptr;
  return reinterpret_cast<F>(p);
}

std::string env(const char* name, bool* set = nullptr) {
  const char* v = std::getenv(name);
  if (set) *set = v != nullptr;
  return v ? v : "";
}

std::vector<std::string> split_path(const std::string& s) {
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

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string real_path_of(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (!r) return path;
  std::string s = r;
  std::free(r);
  return s;
}

// "libcudnn_ops.so.9.19.0" -> 9.19.0; unknown unless the name carries at
// least major.minor after ".so.".
Version version_in_file_name(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  size_t so = name.find(".so.");
  if (so == std::string::npos) return {};
  std::string rest = name.substr(so + 4);
  if (rest.find('.') == std::string::npos) return {};
  for (char c : rest)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.')) return {};
  return Version::parse(rest);
}

std::string release_in_file_name(const std::string& path) {
  Version v = version_in_file_name(path);
  if (!v.known() || v.major < 100) return "";
  std::string name = path.substr(path.rfind('/') + 1);
  return name.substr(name.find(".so.") + 4);
}

// A search step: a label for the report and a folder (empty: the loader's own search).
struct Place {
  std::string label;
  std::string dir;
};

// site-packages/nvidia/*/lib folders under a Python environment prefix, sorted.
std::vector<std::string> pip_nvidia_dirs(const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::path lib = fs::path(prefix) / "lib";
  if (prefix.empty() || !fs::is_directory(lib, ec)) return out;
  std::vector<fs::path> pythons;
  for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("python3", 0) == 0) pythons.push_back(it->path());
  std::sort(pythons.begin(), pythons.end());
  for (const fs::path& py : pythons) {
    fs::path nvidia = py / "site-packages" / "nvidia";
    if (!fs::is_directory(nvidia, ec)) continue;
    std::vector<std::string> dirs;
    for (fs::directory_iterator it(nvidia, ec), end; !ec && it != end; it.increment(ec)) {
      fs::path l = it->path() / "lib";
      if (fs::is_directory(l, ec)) dirs.push_back(l.string());
    }
    std::sort(dirs.begin(), dirs.end());
    out.insert(out.end(), dirs.begin(), dirs.end());
  }
  return out;
}

std::vector<Place> search_places(const ProbeOptions& o) {
  std::vector<Place> p;
  if (o.loader_default_search) p.push_back({"the default loader search", ""});
  for (const std::string& d : o.cuda_path) p.push_back({"MINIRT_CUDA_PATH", d});
  for (const std::string& d : pip_nvidia_dirs(o.virtual_env)) p.push_back({"VIRTUAL_ENV (pip wheels)", d});
  for (const std::string& d : pip_nvidia_dirs(o.conda_prefix)) p.push_back({"CONDA_PREFIX (pip wheels)", d});
  if (!o.conda_prefix.empty()) p.push_back({"CONDA_PREFIX", o.conda_prefix + "/lib"});
  for (const std::string& d : o.system_dirs) p.push_back({"the CUDA toolkit folder", d});
  return p;
}

std::vector<std::string> describe_search(const ProbeOptions& o) {
  std::vector<std::string> s;
  auto join = [](const std::vector<std::string>& v) {
    std::string r;
    for (const std::string& x : v) r += (r.empty() ? "" : ":") + x;
    return r;
  };
  if (o.loader_default_search)
    s.push_back("the dynamic loader's default search: LD_LIBRARY_PATH (" +
                (o.ld_library_path.empty() ? std::string("not set") : o.ld_library_path) +
                "), /etc/ld.so.cache, /lib, /usr/lib");
  s.push_back("MINIRT_CUDA_PATH: " + (o.cuda_path.empty() ? std::string("not set") : join(o.cuda_path)));
  auto pip = [&](const char* name, const std::string& prefix) {
    if (prefix.empty()) return std::string(name) + ": not set";
    std::vector<std::string> dirs = pip_nvidia_dirs(prefix);
    return std::string(name) + "=" + prefix + ": " +
           (dirs.empty() ? std::string("no lib/python3*/site-packages/nvidia/*/lib folders")
                         : std::to_string(dirs.size()) + " site-packages/nvidia/*/lib folders");
  };
  s.push_back(pip("VIRTUAL_ENV", o.virtual_env));
  s.push_back(pip("CONDA_PREFIX", o.conda_prefix) +
              (o.conda_prefix.empty() ? "" : ", then " + o.conda_prefix + "/lib"));
  for (const std::string& d : o.system_dirs) s.push_back(d);
  return s;
}

// Tries each name (in order) in every place (in order); the first that loads wins.
void* load_library(const std::vector<std::string>& names, const std::vector<Place>& places, LibraryLoad& lib) {
  lib.searched = true;
  lib.name = names.front();
  for (const std::string& name : names) {
    for (const Place& place : places) {
      std::string path = place.dir.empty() ? name : place.dir + "/" + name;
      if (!place.dir.empty()) {
        std::error_code ec;
        if (!fs::exists(path, ec)) {
          lib.tried.push_back({place.label, path, "not present"});
          continue;
        }
      }
      dlerror();
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char* e = dlerror();
        lib.tried.push_back({place.label, path, e ? e : "dlopen failed"});
        continue;
      }
      lib.found = true;
      lib.loaded_name = name;
      lib.found_by = place.label;
      lib.path = path;
      struct link_map* lm = nullptr;
      if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) lib.path = lm->l_name;
      lib.real_path = real_path_of(lib.path);
      return h;
    }
  }
  return nullptr;
}

// The kernel module's release from /proc/driver/nvidia/version:
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..."
void read_kernel_module(const ProbeOptions& o, DriverFacts& d) {
  std::error_code ec;
  if (o.proc_driver_version.empty() || !fs::exists(o.proc_driver_version, ec)) return;
  d.kernel_module_loaded = true;
  std::ifstream f(o.proc_driver_version);
  std::string line;
  if (!std::getline(f, line)) return;
  std::istringstream words(line);
  std::string w;
  while (words >> w) {
    bool dotted = w.find('.') != std::string::npos && std::all_of(w.begin(), w.end(), [](char c) {
                    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                  });
    if (dotted && Version::parse(w).major >= 100) {
      d.kernel_module_release = w;
      return;
    }
  }
}

void probe_devices(void* h, const ProbeOptions& o, DevicesFacts& v) {
  auto get_count = symbol<CuDeviceGetCount>(h, "cuDeviceGetCount");
  auto get = symbol<CuDeviceGet>(h, "cuDeviceGet");
  auto get_name = symbol<CuDeviceGetName>(h, "cuDeviceGetName");
  auto get_attr = symbol<CuDeviceGetAttribute>(h, "cuDeviceGetAttribute");
  auto total_mem = symbol<CuDeviceTotalMem>(h, "cuDeviceTotalMem_v2");
  if (!total_mem) total_mem = symbol<CuDeviceTotalMem>(h, "cuDeviceTotalMem");
  auto retain = symbol<CuDevicePrimaryCtxRetain>(h, "cuDevicePrimaryCtxRetain");
  auto release = symbol<CuDevicePrimaryCtxRelease>(h, "cuDevicePrimaryCtxRelease_v2");
  if (!release) release = symbol<CuDevicePrimaryCtxRelease>(h, "cuDevicePrimaryCtxRelease");
  if (!get_count || !get) return;
  int n = 0;
  v.count_result = get_count(&n);
  v.probed = true;
  if (v.count_result != 0) return;
  v.count = std::clamp(n, 0, kMaxDevices);
  for (int i = 0; i < v.count; ++i) {
    DeviceFacts d;
    d.ordinal = i;
    int dev = 0;
    if (get(&dev, i) != 0) {
      v.list.push_back(d);
      continue;
    }
    if (get_name) {
      char buf[256] = {};
      if (get_name(buf, static_cast<int>(sizeof buf) - 1, dev) == 0) d.name.assign(buf, strnlen(buf, sizeof buf));
    }
    if (get_attr) {
      int major = 0, minor = 0;
      if (get_attr(&major, kAttrCcMajor, dev) == 0 && get_attr(&minor, kAttrCcMinor, dev) == 0 && major > 0 &&
          minor >= 0 && minor < 10)
        d.cc = {major, minor};
    }
    if (total_mem) {
      size_t bytes = 0;
      if (total_mem(&bytes, dev) == 0) d.total_memory = bytes;
    }
    if (i == kSelectedDevice && o.check_context && retain) {
      void* ctx = nullptr;
      d.context_result = retain(&ctx, dev);
      if (d.context_result == 0 && release) release(dev);
    }
    v.list.push_back(std::move(d));
  }
}

void probe_driver(const ProbeOptions& o, const std::vector<Place>& places, StackFacts& s) {
  DriverFacts& d = s.driver;
  s.devices.cuda_visible_devices_set = o.cuda_visible_devices_set;
  s.devices.cuda_visible_devices = o.cuda_visible_devices;
  read_kernel_module(o, d);
  void* h = load_library({"libcuda.so.1", "libcuda.so"}, places, d.lib);
  d.release = d.kernel_module_release;
  if (!h) return;
  d.library_release = release_in_file_name(d.lib.real_path);
  if (d.release.empty()) d.release = d.library_release;
  d.is_stub = d.lib.path.find("/stubs/") != std::string::npos || d.lib.real_path.find("/stubs/") != std::string::npos;
  auto init = symbol<CuInit>(h, "cuInit");
  auto get_version = symbol<CuDriverGetVersion>(h, "cuDriverGetVersion");
  if (!init)
    d.lib.missing_symbol = "cuInit";
  else if (!get_version)
    d.lib.missing_symbol = "cuDriverGetVersion";
  if (get_version) {
    int v = 0;
    if (get_version(&v) == 0) d.cuda_version = Version::from_cuda(v);
  }
  if (!init) return;
  d.init_result = init(0);
  if (d.init_result == 34) d.is_stub = true;
  if (d.init_result == 0 && !d.is_stub) probe_devices(h, o, s.devices);
}

void probe_cudnn(const ProbeOptions& o, const std::vector<Place>& places, CudnnFacts& n) {
  const int m = o.cudnn_major;
  auto so = [](int major) { return "libcudnn.so." + std::to_string(major); };
  void* h = load_library({so(m), so(m - 1), so(m + 1), "libcudnn.so"}, places, n.lib);
  if (!h) return;
  auto get_version = symbol<CudnnSizeFn>(h, "cudnnGetVersion");
  if (!get_version) {
    n.lib.missing_symbol = "cudnnGetVersion";
    return;
  }
  n.version = Version::from_cudnn(static_cast<long long>(get_version()));
  if (auto cudart = symbol<CudnnSizeFn>(h, "cudnnGetCudartVersion"))
    n.cuda_version = Version::from_cuda(static_cast<long long>(cudart()));
  if (auto max_dev = symbol<CudnnSizeFn>(h, "cudnnGetMaxDeviceVersion")) {
    size_t v = max_dev();  // 100 * major + 10 * minor: 1210 is 12.1
    if (v >= 100 && v < 100000) n.max_device = {static_cast<int>(v / 100), static_cast<int>((v % 100) / 10)};
  }
  if (n.version.major < 9) return;  // cuDNN 8 splits differently; the major-version rule says enough
  // cuDNN 9's sub-libraries, looked for where libcudnn.so.9 was found, in
  // dependency order, so that each loads against the ones before it.
  struct Sub {
    const char* name;
    bool required;
    bool load;  // load it to call its version check (the engine libraries are large: presence only)
    const char* check;
  };
  static constexpr Sub kSubs[] = {
      {"graph", true, true, "cudnnGraphVersionCheck"},
      {"ops", true, true, "cudnnOpsVersionCheck"},
      {"cnn", true, true, "cudnnCnnVersionCheck"},
      {"adv", false, true, "cudnnAdvVersionCheck"},
      {"engines_precompiled", true, false, ""},
      {"engines_runtime_compiled", false, false, ""},
      {"heuristic", false, false, ""},
  };
  const std::string dir = folder_of(n.lib.path);
  for (const Sub& sub : kSubs) {
    CudnnSubLibrary out;
    out.name = sub.name;
    out.required = sub.required;
    out.path = dir + "/libcudnn_" + sub.name + ".so." + std::to_string(n.version.major);
    std::error_code ec;
    out.present = fs::exists(out.path, ec);
    if (out.present) {
      out.version = version_in_file_name(real_path_of(out.path));
      if (sub.load) {
        dlerror();
        void* sh = dlopen(out.path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!sh) {
          const char* e = dlerror();
          out.load_error = e ? e : "dlopen failed";
        } else {
          if (auto v = symbol<CudnnSizeFn>(sh, "cudnnGetVersion"))
            out.version = Version::from_cudnn(static_cast<long long>(v()));
          if (auto check = symbol<CudnnStatusFn>(sh, sub.check)) {
            out.check_function = sub.check;
            out.check_result = check();
          }
        }
      }
    }
    n.sublibs.push_back(std::move(out));
  }
}

void probe_cublas(const ProbeOptions& o, const std::vector<Place>& places, CublasFacts& c) {
  const int m = o.cublas_major;
  auto so = [](int major) { return "libcublas.so." + std::to_string(major); };
  void* h = load_library({so(m), so(m - 1), so(m + 1), "libcublas.so"}, places, c.lib);
  if (!h) return;
  auto get_property = symbol<CublasGetProperty>(h, "cublasGetProperty");
  if (!get_property) {
    c.lib.missing_symbol = "cublasGetProperty";
    return;
  }
  int v[3] = {0, 0, 0};  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
  for (int i = 0; i < 3; ++i)
    if (get_property(i, &v[i]) != 0 || v[i] < 0) v[i] = 0;
  c.version = {v[0], v[1], v[2]};
  if (auto cudart = symbol<CublasSizeFn>(h, "cublasGetCudartVersion"))
    c.cuda_version = Version::from_cuda(static_cast<long long>(cudart()));
}

bool lower_layers_failed(const GateResult& r) {
  for (const Verdict& v : r.verdicts)
    if (v.level == Level::kFatal && v.rule != "stack.unchecked" &&
        (v.layer == Layer::kBuild || v.layer == Layer::kDriver || v.layer == Layer::kDevice))
      return true;
  return false;
}

}  // namespace

ProbeOptions ProbeOptions::from_environment() {
  ProbeOptions o;
  o.cuda_path = split_path(env("MINIRT_CUDA_PATH"));
  o.virtual_env = env("VIRTUAL_ENV");
  o.conda_prefix = env("CONDA_PREFIX");
  o.ld_library_path = env("LD_LIBRARY_PATH");
  o.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES", &o.cuda_visible_devices_set);
  // Only the folders named by the variables (tools/fallback-demo.sh replays
  // a stack in a folder of its own, which the machine's must not shadow).
  std::string only = env("MINIRT_PROBE_ONLY");
  if (!only.empty() && only != "0") {
    o.loader_default_search = false;
    o.system_dirs.clear();
    o.proc_driver_version.clear();
  }
  return o;
}

StackFacts probe_stack(const ProbeOptions& o) {
  StackFacts s;
  s.search_order = describe_search(o);
  std::vector<Place> places = search_places(o);
  probe_driver(o, places, s);
  probe_cudnn(o, places, s.cudnn);
  probe_cublas(o, places, s.cublas);
  return s;
}

GateReport probe_and_judge(const ProbeOptions& options, const BuildFacts& build) {
  ProbeOptions o = options;
  o.cudnn_major = build.cudnn.major > 0 ? build.cudnn.major : o.cudnn_major;
  o.cublas_major = build.cublas.major > 0 ? build.cublas.major : o.cublas_major;
  GateReport r;
  r.build = build;
  if (!o.stop_at_first_failure) {
    r.stack = probe_stack(o);
  } else if (build.has_gpu_backend) {
    r.stack.search_order = describe_search(o);
    std::vector<Place> places = search_places(o);
    probe_driver(o, places, r.stack);
    if (!lower_layers_failed(judge(r.stack, build))) {
      probe_cudnn(o, places, r.stack.cudnn);
      probe_cublas(o, places, r.stack.cublas);
    }
  }
  r.result = judge(r.stack, build);
  return r;
}

const GateResult& check_gpu_stack() {
  static const GateResult result = [] {
    try {
      ProbeOptions o = ProbeOptions::from_environment();
      o.stop_at_first_failure = true;
      return probe_and_judge(o).result;
    } catch (const std::exception& e) {
      GateResult r;
      r.verdicts.push_back(
          {Layer::kDriver, Level::kFatal, "probe.failed", std::string("the GPU probe failed: ") + e.what()});
      r.summary = "CPU fallback: " + r.verdicts.back().message;
      return r;
    }
  }();
  return result;
}

}  // namespace minirt::gpu
