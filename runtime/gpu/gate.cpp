#include "runtime/gpu/gate.h"

#include <algorithm>
#include <cstdio>

namespace minirt::gpu {

const char* layer_name(Layer l) {
  switch (l) {
    case Layer::kBuild:
      return "build";
    case Layer::kDriver:
      return "driver";
    case Layer::kDevice:
      return "device";
    case Layer::kCudnn:
      return "cudnn";
    case Layer::kCublas:
      return "cublas";
  }
  return "?";
}

const char* level_name(Level l) {
  switch (l) {
    case Level::kOk:
      return "ok";
    case Level::kNote:
      return "note";
    case Level::kWarning:
      return "warning";
    case Level::kFatal:
      return "fatal";
  }
  return "?";
}

std::string cuda_error_name(int code) {
  switch (code) {
    case 0:
      return "CUDA_SUCCESS";
    case 2:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case 34:
      return "CUDA_ERROR_STUB_LIBRARY";
    case 35:
      return "cudaErrorInsufficientDriver";
    case 46:
      return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100:
      return "CUDA_ERROR_NO_DEVICE";
    case 101:
      return "CUDA_ERROR_INVALID_DEVICE";
    case 304:
      return "CUDA_ERROR_OPERATING_SYSTEM";
    case 801:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case 803:
      return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804:
      return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return "CUDA error " + std::to_string(code);
  }
}

const Verdict* GateResult::first_fatal() const {
  for (const Verdict& v : verdicts)
    if (v.level == Level::kFatal) return &v;
  return nullptr;
}

int GateResult::warnings() const {
  int n = 0;
  for (const Verdict& v : verdicts) n += v.level == Level::kWarning;
  return n;
}

const Verdict* GateResult::find(const std::string& rule) const {
  for (const Verdict& v : verdicts)
    if (v.rule == rule) return &v;
  return nullptr;
}

bool GateResult::has(const std::string& rule) const { return find(rule) != nullptr; }

namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string arch_list(const std::vector<int>& sms, const char* prefix) {
  std::string s;
  for (int sm : sms) s += (s.empty() ? "" : ", ") + std::string(prefix) + std::to_string(sm);
  return s.empty() ? "none" : s;
}

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The driver branch that first supports a CUDA major version (minor-version
// compatibility lets it run every minor release of that major).
int driver_branch_for(int cuda_major) {
  switch (cuda_major) {
    case 13:
      return 580;
    case 12:
      return 525;
    case 11:
      return 450;
    default:
      return 0;
  }
}

// The oldest compute capability a CUDA toolkit compiles for.
ComputeCapability min_cc_for(int cuda_major) {
  if (cuda_major >= 13) return {7, 5};
  if (cuda_major == 12) return {5, 0};
  return {3, 5};
}

// Package names for the fixes.
struct Packages {
  std::string driver, pip_cudnn, deb_cudnn, pip_cublas, deb_cublas;
};

Packages packages_for(const BuildFacts& b) {
  Packages p;
  const std::string cuda = std::to_string(b.toolkit.major);
  int branch = driver_branch_for(b.toolkit.major);
  std::string r = std::to_string(branch);
  p.driver = "the NVIDIA driver R" + r +
             " or newer (NVIDIA's CUDA repository: the cuda-drivers package; Ubuntu: nvidia-driver-" + r + ")";
  p.pip_cudnn = "pip install nvidia-cudnn-cu" + cuda;
  p.deb_cudnn = "libcudnn" + std::to_string(b.cudnn.major) + "-cuda-" + cuda;
  p.pip_cublas = b.toolkit.major >= 13 ? "pip install nvidia-cublas" : "pip install nvidia-cublas-cu" + cuda;
  p.deb_cublas = "libcublas-" + cuda + "-" + std::to_string(b.toolkit.minor);
  return p;
}

std::string where_found(const LibraryLoad& lib) {
  if (lib.path.empty()) return lib.found_by;  // facts given by hand
  std::string s = lib.path;
  if (!lib.real_path.empty() && lib.real_path != lib.path) s += " -> " + lib.real_path;
  if (!lib.found_by.empty()) s += ", found by " + lib.found_by;
  return s;
}

std::string device_label(const DeviceFacts& d) {
  return "GPU " + std::to_string(d.ordinal) + " (" + (d.name.empty() ? std::string("unnamed") : d.name) + ")";
}

// Which code of this build runs on a device: machine code for the same major
// architecture and an equal or older minor one, else PTX the driver can
// compile for it (PTX for compute_XY runs on XY and newer).
struct CodeMatch {
  int sass = 0;  // the sm number used, 0 if none
  int ptx = 0;   // the compute_XY number JIT-compiled, 0 if none
};

CodeMatch code_for(ComputeCapability cc, const BuildFacts& b) {
  CodeMatch m;
  for (int sm : b.sass)
    if (sm / 10 == cc.major && sm % 10 <= cc.minor) m.sass = std::max(m.sass, sm);
  for (int sm : b.ptx)
    if (sm <= cc.as_int()) m.ptx = std::max(m.ptx, sm);
  return m;
}

class Judge {
 public:
  Judge(const StackFacts& s, const BuildFacts& b) : s_(s), b_(b), pk_(packages_for(b)) {}

  GateResult run() {
    build();
    bool driver_answers = driver();
    const DeviceFacts* dev = devices(driver_answers);
    cudnn(dev);
    cublas();
    summarize(dev);
    return std::move(r_);
  }

 private:
  void add(Layer layer, Level level, std::string rule, std::string message) {
    r_.verdicts.push_back(Verdict{layer, level, std::move(rule), std::move(message)});
  }

  std::string needs() const {
    return "this build needs " + std::to_string(b_.toolkit.major) + ".0 and an R" +
           std::to_string(driver_branch_for(b_.toolkit.major)) + "-or-newer driver";
  }

  void build() {
    if (!b_.has_gpu_backend) {
      add(Layer::kBuild, Level::kFatal, "build.no_backend",
          "this minirt was built without the GPU backend (" +
              (b_.why_not.empty() ? std::string("no CUDA toolkit at configure time") : b_.why_not) +
              "); rebuild it where the CUDA " + std::to_string(b_.toolkit.major) +
              " toolkit and cuDNN's headers are installed (" + pk_.pip_cudnn +
              " provides the headers; point CUDNN_ROOT at " + "site-packages/nvidia/cudnn), then configure again");
      return;
    }
    add(Layer::kBuild, Level::kOk, "build.ok",
        "GPU backend compiled with the CUDA " + b_.toolkit.str(false) +
            " toolkit (what nvcc --version shows), machine code for " + arch_list(b_.sass, "sm_") + ", PTX for " +
            arch_list(b_.ptx, "compute_") + ", against cuDNN " + b_.cudnn.str() + " and cuBLAS " + b_.cublas.str());
  }

  // Judges the driver; true when the GPUs can be judged (the driver answers,
  // even if it is too old for this build).
  bool driver() {
    const DriverFacts& d = s_.driver;
    if (!d.lib.searched) {
      add(Layer::kDriver, Level::kNote, "driver.unchecked", "the driver was not probed");
      return false;
    }
    if (!d.lib.found) {
      if (d.kernel_module_loaded) {
        std::string rel = d.kernel_module_release.empty() ? "" : " (driver " + d.kernel_module_release + ")";
        add(Layer::kDriver, Level::kFatal, "driver.missing",
            "the NVIDIA kernel module is loaded" + rel +
                " but its library libcuda.so.1 was not found; in a container, start it with the NVIDIA container "
                "toolkit (docker run --gpus all), otherwise reinstall the driver's user-space libraries or add the "
                "folder holding libcuda.so.1 to LD_LIBRARY_PATH or MINIRT_CUDA_PATH");
      } else {
        add(Layer::kDriver, Level::kFatal, "driver.missing",
            "no NVIDIA driver (libcuda.so.1 not found); install " + pk_.driver +
                ", or, if it is installed where the loader does not look, add that folder to LD_LIBRARY_PATH or "
                "MINIRT_CUDA_PATH");
      }
      return false;
    }
    if (d.is_stub || d.init_result == 34) {
      add(Layer::kDriver, Level::kFatal, "driver.stub",
          "the libcuda that was loaded (" + where_found(d.lib) +
              ") is the CUDA toolkit's stub, which exists only for linking (cuInit returns 34, "
              "CUDA_ERROR_STUB_LIBRARY); remove the stubs folder from LD_LIBRARY_PATH and MINIRT_CUDA_PATH so the "
              "driver's own libcuda.so.1 is found, and install " +
              pk_.driver + " if this machine has none");
      return false;
    }
    if (!d.lib.missing_symbol.empty()) {
      add(Layer::kDriver, Level::kFatal, "driver.symbols",
          d.lib.path + " does not export " + d.lib.missing_symbol +
              ", so it is not a working NVIDIA driver library; reinstall " + pk_.driver +
              " and look for a stray libcuda.so.1 in LD_LIBRARY_PATH and MINIRT_CUDA_PATH");
      return false;
    }
    Version cuda = d.cuda_version;
    if (!cuda.known() && !d.release.empty()) cuda = cuda_for_driver_release(d.release);
    std::string rel = d.release.empty() ? "" : " (driver " + d.release + ")";
    if (d.init_result == 35 || (cuda.known() && cuda.major < b_.toolkit.major)) {
      std::string has = cuda.known()
                            ? "the driver supports CUDA " + cuda.str(false) + rel
                            : "the driver is too old for this build (error 35, cudaErrorInsufficientDriver)" + rel;
      add(Layer::kDriver, Level::kFatal, "driver.too_old",
          has + ", " + needs() + "; upgrade to " + pk_.driver +
              "; until then the CUDA runtime refuses to start with error 35 (cudaErrorInsufficientDriver)");
      // The driver API still answers, so the GPUs are judged too.
      driver_cuda_ = cuda;
      return d.init_result == 0 || d.init_result == 100 || d.init_result == 46;
    }
    if (d.init_result == 803) {
      std::string lib = d.library_release.empty() ? "" : " " + d.library_release;
      std::string mod = d.kernel_module_release.empty() ? "" : " " + d.kernel_module_release;
      add(Layer::kDriver, Level::kFatal, "driver.mismatch",
          "the driver's library libcuda.so.1" + lib + " and the loaded kernel module" + mod +
              " come from different driver releases (cuInit returns 803, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH); reboot "
              "after a driver upgrade, or reinstall the driver so both come from one release");
      return false;
    }
    if (d.init_result != 0 && d.init_result != 100 && d.init_result != 46 && d.init_result != -1) {
      add(Layer::kDriver, Level::kFatal, "driver.init_failed",
          "cuInit failed with " + cuda_error_name(d.init_result) + " (" + std::to_string(d.init_result) +
              "): the driver is installed but not working; check that nvidia-smi works and look for NVRM messages "
              "in dmesg");
      return false;
    }
    std::string both = "driver" + (d.release.empty() ? std::string() : " " + d.release) + " (" + where_found(d.lib) +
                       ") supports CUDA " + (cuda.known() ? cuda.str(false) : std::string("(unknown)")) +
                       ", the version nvidia-smi shows, which decides the newest CUDA runtime this machine runs; this "
                       "build's toolkit is CUDA " +
                       b_.toolkit.str(false) +
                       ", the version nvcc --version shows, which the GPU module was compiled with";
    if (cuda.known() && cuda < Version{b_.toolkit.major, b_.toolkit.minor, 0}) {
      add(Layer::kDriver, Level::kWarning, "driver.minor_older",
          both +
              "; the module runs through CUDA's minor-version compatibility, but this driver cannot JIT-compile "
              "PTX from the newer toolkit; a driver for CUDA " +
              b_.toolkit.str(false) + " or newer removes that limit");
    } else {
      add(Layer::kDriver, Level::kOk, "driver.ok", both);
    }
    driver_cuda_ = cuda;
    return true;
  }

  // A device other than the selected one that this build could use, as a hint.
  std::string other_device_hint(const DeviceFacts& bad) const {
    for (const DeviceFacts& d : s_.devices.list) {
      if (d.ordinal == bad.ordinal || !d.cc.known()) continue;
      if (d.cc < min_cc_for(b_.toolkit.major)) continue;
      CodeMatch m = code_for(d.cc, b_);
      if (b_.arch_known && m.sass == 0 && m.ptx == 0) continue;
      return "; " + device_label(d) + ", compute capability " + d.cc.str() +
             ", is supported: make it the first visible device with CUDA_VISIBLE_DEVICES";
    }
    return "";
  }

  const DeviceFacts* devices(bool driver_answers) {
    const DriverFacts& d = s_.driver;
    const DevicesFacts& v = s_.devices;
    if (!driver_answers) {
      add(Layer::kDevice, Level::kNote, "device.unchecked", "GPUs not checked: the driver is not usable");
      return nullptr;
    }
    const std::string cvd = v.cuda_visible_devices_set ? "CUDA_VISIBLE_DEVICES='" + v.cuda_visible_devices + "'" : "";
    if (d.init_result == 100 || (v.probed && v.count_result == 0 && v.count == 0)) {
      if (v.cuda_visible_devices_set) {
        add(Layer::kDevice, Level::kFatal, "device.none",
            "no GPU is visible (cuInit returns 100, CUDA_ERROR_NO_DEVICE) and " + cvd +
                " is set; unset CUDA_VISIBLE_DEVICES or list an index or UUID that nvidia-smi -L shows");
      } else {
        add(Layer::kDevice, Level::kFatal, "device.none",
            "the driver sees no NVIDIA GPU (cuInit returns 100, CUDA_ERROR_NO_DEVICE); check that nvidia-smi lists "
            "one, pass it into a container with docker run --gpus all, and check that CUDA_VISIBLE_DEVICES does not "
            "hide it");
      }
      return nullptr;
    }
    const std::string busy_fix =
        "another process holds a GPU in exclusive-process compute mode; wait for it, choose a free GPU with "
        "CUDA_VISIBLE_DEVICES, or set the compute mode back with nvidia-smi -c DEFAULT (as root)";
    if (d.init_result == 46) {
      add(Layer::kDevice, Level::kFatal, "device.busy",
          "every GPU is busy or unavailable (CUDA error 46, CUDA_ERROR_DEVICE_UNAVAILABLE): " + busy_fix);
      return nullptr;
    }
    if (!v.probed || v.list.empty()) {
      add(Layer::kDevice, Level::kNote, "device.unchecked", "GPUs not listed by the probe");
      return nullptr;
    }
    const DeviceFacts& g = v.list.front();
    const std::string label = device_label(g);
    bool ok = true;
    if (g.cc.known()) {
      ComputeCapability min = min_cc_for(b_.toolkit.major);
      if (g.cc < min) {
        add(Layer::kDevice, Level::kFatal, "device.cc_too_old",
            label + " has compute capability " + g.cc.str() + ", but CUDA " + std::to_string(b_.toolkit.major) +
                " supports " + min.str() +
                (b_.toolkit.major >= 13 ? " (Turing) and newer (it dropped Maxwell, Pascal and Volta)" : " and newer") +
                "; run on a newer GPU, or use a minirt built with the CUDA 12 toolkit" + other_device_hint(g));
        ok = false;
      } else if (b_.arch_known) {
        CodeMatch m = code_for(g.cc, b_);
        int want = g.cc.as_int();
        if (m.sass == 0 && m.ptx == 0) {
          add(Layer::kDevice, Level::kFatal, "device.no_code",
              label + " has compute capability " + g.cc.str() + ", but this build has machine code only for " +
                  arch_list(b_.sass, "sm_") + " and PTX for " + arch_list(b_.ptx, "compute_") +
                  ", none of which runs on it; rebuild with " + std::to_string(want) +
                  "-real added to MINIRT_CUDA_ARCHITECTURES (cmake -DMINIRT_CUDA_ARCHITECTURES=...)" +
                  other_device_hint(g));
          ok = false;
        } else if (m.sass == 0) {
          if (driver_cuda_.known() && driver_cuda_ < Version{b_.toolkit.major, b_.toolkit.minor, 0}) {
            add(Layer::kDevice, Level::kFatal, "device.ptx_too_new",
                label + " has no machine code in this build and needs its PTX (compute_" + std::to_string(m.ptx) +
                    ") compiled by the driver, but the driver supports CUDA " + driver_cuda_.str(false) +
                    " and the PTX comes from CUDA " + b_.toolkit.str(false) + "; upgrade the driver, or rebuild with " +
                    std::to_string(want) + "-real added to MINIRT_CUDA_ARCHITECTURES");
            ok = false;
          } else {
            add(Layer::kDevice, Level::kNote, "device.jit",
                label + " runs this build's PTX for compute_" + std::to_string(m.ptx) +
                    " through the driver's JIT compiler (slower first start, cached in ~/.nv/ComputeCache); adding " +
                    std::to_string(want) + "-real to MINIRT_CUDA_ARCHITECTURES avoids that");
          }
        }
      }
    }
    if (ok && g.context_result == 46) {
      add(Layer::kDevice, Level::kFatal, "device.busy",
          label + " is busy or unavailable (CUDA error 46, CUDA_ERROR_DEVICE_UNAVAILABLE, when creating a context): " +
              busy_fix);
      ok = false;
    } else if (ok && g.context_result > 0) {
      add(Layer::kDevice, Level::kFatal, "device.context",
          "could not create a CUDA context on " + label + ": " + cuda_error_name(g.context_result) + " (" +
              std::to_string(g.context_result) + "); check the GPU's state and free memory with nvidia-smi");
      ok = false;
    }
    if (!ok) return nullptr;
    std::string msg = label + ": compute capability " + (g.cc.known() ? g.cc.str() : std::string("unknown")) + ", " +
                      gib(g.total_memory);
    CodeMatch m = code_for(g.cc, b_);
    if (m.sass) msg += "; this build has machine code for it (sm_" + std::to_string(m.sass) + ")";
    if (v.list.size() > 1)
      msg += "; " + std::to_string(v.list.size()) +
             " GPUs are visible and minirt uses the first (choose another with CUDA_VISIBLE_DEVICES)";
    add(Layer::kDevice, Level::kOk, "device.ok", msg);
    return &g;
  }

  void cudnn(const DeviceFacts* dev) {
    const CudnnFacts& n = s_.cudnn;
    const std::string fix = pk_.pip_cudnn + ", or the " + pk_.deb_cudnn + " package from NVIDIA's repository";
    const std::string want =
        "cuDNN " + std::to_string(b_.cudnn.major) + " (libcudnn.so." + std::to_string(b_.cudnn.major) + ")";
    if (!n.lib.searched) {
      add(Layer::kCudnn, Level::kNote, "cudnn.unchecked", "cuDNN not checked (the driver layer failed first)");
      return;
    }
    if (!n.lib.found) {
      add(Layer::kCudnn, Level::kFatal, "cudnn.missing",
          want + " not found; install it: " + pk_.pip_cudnn +
              " in the active Python environment (found through VIRTUAL_ENV or CONDA_PREFIX), or the " + pk_.deb_cudnn +
              " package from NVIDIA's repository, or point MINIRT_CUDA_PATH at the folder holding libcudnn.so." +
              std::to_string(b_.cudnn.major));
      return;
    }
    if (!n.lib.missing_symbol.empty() || !n.version.known()) {
      add(Layer::kCudnn, Level::kFatal, "cudnn.symbols",
          n.lib.path + " does not export " +
              (n.lib.missing_symbol.empty() ? std::string("a usable cudnnGetVersion") : n.lib.missing_symbol) +
              ", so it is not a working cuDNN library; reinstall cuDNN: " + fix);
      return;
    }
    if (n.version.major != b_.cudnn.major) {
      if (n.version.major < b_.cudnn.major) {
        add(Layer::kCudnn, Level::kFatal, "cudnn.major",
            "found cuDNN " + n.version.str() + " (" + where_found(n.lib) + "), but this build needs " + want +
                "; install it beside the old one: " + fix);
      } else {
        add(Layer::kCudnn, Level::kFatal, "cudnn.major",
            "found cuDNN " + n.version.str() + " (" + where_found(n.lib) + "), but this build was compiled against " +
                "cuDNN " + b_.cudnn.str() + " and cuDNN keeps no compatibility across major versions; install " + want +
                " (" + fix + "), or rebuild minirt against cuDNN " + std::to_string(n.version.major));
      }
      return;
    }
    bool fatal = false;
    if (n.cuda_version.known() && n.cuda_version.major != b_.toolkit.major) {
      add(Layer::kCudnn, Level::kFatal, "cudnn.cuda_major",
          "cuDNN " + n.version.str() + " (" + where_found(n.lib) + ") was built for CUDA " + n.cuda_version.str(false) +
              ", but this build uses CUDA " + b_.toolkit.str(false) + "; install cuDNN's CUDA " +
              std::to_string(b_.toolkit.major) + " build: " + pk_.pip_cudnn + " (not nvidia-cudnn-cu" +
              std::to_string(n.cuda_version.major) + "), or the " + pk_.deb_cudnn + " package");
      fatal = true;
    }
    if (n.version.minor < b_.cudnn.minor) {
      add(Layer::kCudnn, Level::kFatal, "cudnn.minor_older",
          "cuDNN " + n.version.str() + " (" + where_found(n.lib) + ") is older than the " + b_.cudnn.str(false) +
              " this build was compiled against, and cuDNN only promises to run code built against the same or an "
              "older minor release; upgrade it (" +
              pk_.pip_cudnn + ">=" + b_.cudnn.str(false) + ", or a newer " + pk_.deb_cudnn +
              "), or rebuild minirt against the cuDNN " + n.version.str(false) + " headers");
      fatal = true;
    }
    // Sub-libraries: all from one release, and the ones minirt's ops need present.
    std::string mixed, missing;
    for (const CudnnSubLibrary& sub : n.sublibs) {
      const std::string file = "libcudnn_" + sub.name + ".so." + std::to_string(n.version.major);
      if (!sub.present) {
        if (sub.required) missing += (missing.empty() ? "" : ", ") + file;
        continue;
      }
      if (!sub.load_error.empty() && sub.required)
        missing += (missing.empty() ? "" : ", ") + file + " (" + sub.load_error + ")";
      if (sub.version.known() && sub.version != n.version) mixed += "; " + file + " is " + sub.version.str();
      if (sub.check_result > 0)
        mixed += "; " + sub.check_function + " reports a mismatch (status " + std::to_string(sub.check_result) + ")";
    }
    const std::string dir = folder_of(n.lib.path);
    if (!mixed.empty()) {
      add(Layer::kCudnn, Level::kFatal, "cudnn.mixed",
          "cuDNN's sub-libraries come from different releases: libcudnn.so." + std::to_string(n.version.major) +
              " is " + n.version.str() + mixed + "; reinstall one cuDNN so every libcudnn*.so." +
              std::to_string(n.version.major) + " in " + dir + " comes from the same release (" + pk_.pip_cudnn +
              " --force-reinstall, or the " + pk_.deb_cudnn + " package)");
      fatal = true;
    }
    if (!missing.empty()) {
      add(Layer::kCudnn, Level::kFatal, "cudnn.incomplete",
          "cuDNN in " + dir + " is incomplete: " + missing + " missing or unloadable next to libcudnn.so." +
              std::to_string(n.version.major) + "; reinstall it: " + fix);
      fatal = true;
    }
    if (dev && dev->cc.known()) {
      ComputeCapability max = n.max_device;
      // Older cuDNN 9 releases do not say; before 9.7 none knew Blackwell.
      if (!max.known() && n.version < Version{9, 7, 0}) max = {9, 0};
      if (max.known() && dev->cc > max) {
        add(Layer::kCudnn, Level::kWarning, "cudnn.gpu_newer",
            device_label(*dev) + " has compute capability " + dev->cc.str() + ", newer than the GPUs cuDNN " +
                n.version.str() + " has kernels for (up to " + max.str() +
                "): cuDNN runs it in forward-compatibility mode (PTX JIT, slower first use, some engines "
                "missing); upgrade cuDNN: " +
                pk_.pip_cudnn + " -U, or a newer " + pk_.deb_cudnn);
      }
    }
    cudnn_ok_ = !fatal;
    if (!fatal) {
      add(Layer::kCudnn, Level::kOk, "cudnn.ok",
          "cuDNN " + n.version.str() +
              (n.cuda_version.known() ? " for CUDA " + n.cuda_version.str(false) : std::string()) + " (" +
              where_found(n.lib) + "); this build was compiled against " + b_.cudnn.str() +
              ", and cuDNN runs code built against the same or an older minor release");
    }
  }

  void cublas() {
    const CublasFacts& c = s_.cublas;
    const std::string major = std::to_string(b_.cublas.major);
    const std::string fix = pk_.pip_cublas + ", or the " + pk_.deb_cublas + " package from NVIDIA's repository";
    if (!c.lib.searched) {
      add(Layer::kCublas, Level::kNote, "cublas.unchecked", "cuBLAS not checked (the driver layer failed first)");
      return;
    }
    if (!c.lib.found) {
      add(Layer::kCublas, Level::kFatal, "cublas.missing",
          "cuBLAS " + major + " not found (libcublas.so." + major + "); install it: " + pk_.pip_cublas +
              (b_.cublas.major >= 13 ? " (CUDA 13's wheel; its libraries go to site-packages/nvidia/cu13/lib)" : "") +
              ", or the " + pk_.deb_cublas +
              " package from NVIDIA's repository, or point MINIRT_CUDA_PATH at the folder holding libcublas.so." +
              major);
      return;
    }
    if (!c.lib.missing_symbol.empty() || !c.version.known()) {
      add(Layer::kCublas, Level::kFatal, "cublas.symbols",
          c.lib.path + " does not export " +
              (c.lib.missing_symbol.empty() ? std::string("a usable cublasGetProperty") : c.lib.missing_symbol) +
              ", so it is not a working cuBLAS library; reinstall cuBLAS: " + fix);
      return;
    }
    if (c.version.major != b_.cublas.major) {
      add(Layer::kCublas, Level::kFatal, "cublas.major",
          "found cuBLAS " + c.version.str() + " (" + where_found(c.lib) + "), but this build needs cuBLAS " + major +
              (b_.cublas.major == b_.toolkit.major ? ", which comes with CUDA " + major : std::string()) + ": " + fix);
      return;
    }
    if (Version{c.version.major, c.version.minor, 0} < Version{b_.cublas.major, b_.cublas.minor, 0}) {
      add(Layer::kCublas, Level::kWarning, "cublas.minor_older",
          "cuBLAS " + c.version.str() + " (" + where_found(c.lib) + ") is older than the " + b_.cublas.str() +
              " this build was compiled against; the functions minirt calls exist in every cuBLAS " + major +
              ", but upgrading removes the doubt: " + pk_.pip_cublas + " -U");
      cublas_ok_ = true;
      return;
    }
    cublas_ok_ = true;
    add(Layer::kCublas, Level::kOk, "cublas.ok",
        "cuBLAS " + c.version.str() + " (" + where_found(c.lib) + "); this build was compiled against " +
            b_.cublas.str());
  }

  void summarize(const DeviceFacts* dev) {
    // Every layer must have been probed and passed; a layer left unprobed
    // without a fatal verdict elsewhere still keeps the GPU off.
    if (!r_.first_fatal() && !(b_.has_gpu_backend && dev && cudnn_ok_ && cublas_ok_)) {
      Layer l = !dev         ? (s_.driver.lib.searched ? Layer::kDevice : Layer::kDriver)
                : !cudnn_ok_ ? Layer::kCudnn
                             : Layer::kCublas;
      add(l, Level::kFatal, "stack.unchecked",
          std::string("the ") + layer_name(l) +
              " layer was not probed, so the GPU is not used; run minirt-doctor for "
              "the whole stack");
    }
    if (const Verdict* f = r_.first_fatal()) {
      r_.usable = false;
      r_.summary = "CPU fallback: " + f->message;
      return;
    }
    r_.usable = true;
    std::string s = "GPU usable: ";
    if (dev) s += device_label(*dev) + " compute capability " + dev->cc.str() + ", ";
    s += "driver";
    if (!s_.driver.release.empty()) s += " " + s_.driver.release;
    if (driver_cuda_.known()) s += " (CUDA " + driver_cuda_.str(false) + ")";
    s += ", cuDNN " + s_.cudnn.version.str() + ", cuBLAS " + s_.cublas.version.str();
    int w = r_.warnings();
    if (w) s += "; " + std::to_string(w) + (w == 1 ? " warning" : " warnings");
    r_.summary = s;
  }

  const StackFacts& s_;
  const BuildFacts& b_;
  Packages pk_;
  Version driver_cuda_;
  bool cudnn_ok_ = false, cublas_ok_ = false;
  GateResult r_;
};

}  // namespace

GateResult judge(const StackFacts& stack, const BuildFacts& build) { return Judge(stack, build).run(); }

}  // namespace minirt::gpu
