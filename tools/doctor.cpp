// minirt-doctor: prints the GPU stack layer by layer (what was found, its
// version, the file it came from, the verdict), the GPU module's file and
// interface version (runtime/gpu/module_api.h), and the decision: GPU usable,
// or CPU fallback and why. --assume judges a hypothetical stack with the same
// rules, so a version table copied from a blog post can be checked on any
// machine.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_caps.h"
#include "runtime/gpu/gate.h"
#include "runtime/gpu/module.h"
#include "runtime/gpu/module_api.h"
#include "runtime/gpu/probe.h"
#include "runtime/gpu/stack.h"

namespace {

using namespace minirt::gpu;

constexpr int kExitUsable = 0;
constexpr int kExitUsage = 1;
constexpr int kExitDriver = 2;
constexpr int kExitLibrary = 3;
constexpr int kExitDevice = 4;
constexpr int kExitNoBackend = 5;

const char* kUsage = R"(usage: minirt-doctor [--json] [--verbose] [--assume KEY=VALUE,...]... [--assume-only]

Prints the GPU stack minirt would use, layer by layer: this build, the NVIDIA
driver, the GPUs, cuDNN and cuBLAS; for each, what was found, its version, the
file it was loaded from and the verdict; then the GPU module (its file and
interface version); then the decision: GPU usable, or CPU fallback and why. Libraries are looked for through the loader's default search
(LD_LIBRARY_PATH, ld.so.cache), then MINIRT_CUDA_PATH (colon-separated
folders), then the NVIDIA pip wheels of $VIRTUAL_ENV and $CONDA_PREFIX
(lib/python3*/site-packages/nvidia/*/lib), then /usr/local/cuda/lib64.

  --json            the report as JSON
  --verbose         list every place each library was looked for, even when found
  --assume LIST     judge a hypothetical stack: comma-separated KEY=VALUE facts
                    replace the probed ones (repeatable)
  --assume-only     start from a healthy stack (driver 580.65.06 for CUDA 13.0,
                    one GPU of compute capability 9.0, cuDNN and cuBLAS as this
                    build was compiled against) instead of probing this machine
  -h, --help        this text

Keys for --assume:
  driver=535.104 | none | stub      the driver release (its CUDA version follows
                                    NVIDIA's table unless cuda_driver is given)
  cuda_driver=12.2                  the CUDA version the driver supports (nvidia-smi)
  cuinit=N                          what cuInit returns (34 stub, 100 no device, 46 busy, 803 ...)
  devices=N                         the number of visible GPUs
  cc=7.0                            the first GPU's compute capability
  cudnn=8.9.7 | none                cuDNN's version
  cudnn_cuda=12.8                   the CUDA version cuDNN was built for
  cudnn_max_cc=9.0                  the newest GPU cuDNN has native kernels for
  cublas=12.2 | none                cuBLAS's version
Example: minirt-doctor --assume-only --assume driver=535.104,cudnn=8.9.7,cublas=12.2,cc=7.0

Exit status:
  0  the GPU is usable (warnings may have been printed)
  1  bad command line
  2  no usable GPU: the driver layer (no driver, the toolkit's stub, too old, broken)
  3  no usable GPU: a library layer (cuDNN or cuBLAS missing, wrong version, mixed)
  4  no usable GPU: the device layer (no visible GPU, busy, too old, no code for it)
  5  this minirt was built without the GPU backend
)";

struct Args {
  bool json = false;
  bool verbose = false;
  bool assume_only = false;
  std::vector<std::pair<std::string, std::string>> assume;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "minirt-doctor: " << msg << "\n(minirt-doctor --help for the options)\n";
  std::exit(kExitUsage);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "-h" || s == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (s == "--json") {
      a.json = true;
    } else if (s == "--verbose") {
      a.verbose = true;
    } else if (s == "--assume-only") {
      a.assume_only = true;
    } else if (s == "--assume" || s.rfind("--assume=", 0) == 0) {
      std::string list;
      if (s == "--assume") {
        if (i + 1 >= argc) usage_error("--assume needs a list such as driver=535.104,cc=7.0");
        list = argv[++i];
      } else {
        list = s.substr(9);
      }
      std::stringstream ss(list);
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
          usage_error("--assume: '" + item + "' is not KEY=VALUE");
        a.assume.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      }
    } else {
      usage_error("unknown option '" + s + "'");
    }
  }
  return a;
}

// --- a healthy stack, and facts given by hand -------------------------------

LibraryLoad assumed_library(const std::string& name) {
  LibraryLoad l;
  l.name = l.loaded_name = name;
  l.searched = l.found = true;
  l.found_by = "given by --assume";
  return l;
}

DriverFacts healthy_driver(const BuildFacts& b) {
  DriverFacts d;
  d.lib = assumed_library("libcuda.so.1");
  d.init_result = 0;
  d.release = d.library_release = "580.65.06";
  d.cuda_version = std::max(Version{13, 0, 0}, Version{b.toolkit.major, b.toolkit.minor, 0});
  return d;
}

DeviceFacts healthy_device(int ordinal) {
  DeviceFacts g;
  g.ordinal = ordinal;
  g.name = "assumed GPU";
  g.cc = {9, 0};
  g.total_memory = 80ull << 30;
  g.context_result = 0;
  return g;
}

CudnnFacts healthy_cudnn(const BuildFacts& b) {
  CudnnFacts n;
  n.lib = assumed_library("libcudnn.so." + std::to_string(b.cudnn.major));
  n.version = b.cudnn;
  n.cuda_version = {b.toolkit.major, b.toolkit.minor, 0};
  return n;
}

CublasFacts healthy_cublas(const BuildFacts& b) {
  CublasFacts c;
  c.lib = assumed_library("libcublas.so." + std::to_string(b.cublas.major));
  c.version = b.cublas;
  c.cuda_version = {b.toolkit.major, b.toolkit.minor, 0};
  return c;
}

StackFacts healthy_stack(const BuildFacts& b) {
  StackFacts s;
  s.driver = healthy_driver(b);
  s.devices.probed = true;
  s.devices.count_result = 0;
  s.devices.count = 1;
  s.devices.list = {healthy_device(0)};
  s.cudnn = healthy_cudnn(b);
  s.cublas = healthy_cublas(b);
  s.search_order = {"(--assume-only: nothing was probed)"};
  return s;
}

bool driver_usable(const DriverFacts& d) {
  return d.lib.found && !d.is_stub && d.lib.missing_symbol.empty() && d.init_result == 0;
}

Version parse_version_or_die(const std::string& key, const std::string& value) {
  Version v = Version::parse(value);
  if (!v.known()) usage_error("--assume " + key + "=" + value + ": not a version");
  return v;
}

int parse_int_or_die(const std::string& key, const std::string& value) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < 0 || v > 100000)
    usage_error("--assume " + key + "=" + value + ": not a number");
  return static_cast<int>(v);
}

// Applies the facts given by hand. A fact about a layer implies the layers it
// needs: a GPU's compute capability implies a working driver, cuDNN's CUDA
// version implies a cuDNN.
void apply_assumptions(const Args& a, const BuildFacts& b, StackFacts& s) {
  auto ensure_driver = [&] {
    if (!driver_usable(s.driver)) s.driver = healthy_driver(b);
  };
  auto ensure_devices = [&] {
    ensure_driver();
    if (!s.devices.probed || s.devices.list.empty()) {
      s.devices.probed = true;
      s.devices.count_result = 0;
      s.devices.count = 1;
      s.devices.list = {healthy_device(0)};
    }
  };
  auto ensure_cudnn = [&] {
    if (!s.cudnn.lib.found || !s.cudnn.version.known()) s.cudnn = healthy_cudnn(b);
  };
  // Order matters: the driver first, then what the keys refine.
  static const char* kOrder[] = {"driver", "cuda_driver", "cuinit",       "devices", "cc",
                                 "cudnn",  "cudnn_cuda",  "cudnn_max_cc", "cublas"};
  for (const auto& [key, value] : a.assume) {
    bool known = false;
    for (const char* k : kOrder) known |= key == k;
    if (!known) usage_error("--assume: unknown key '" + key + "' (see --help)");
  }
  for (const char* k : kOrder) {
    for (const auto& [key, value] : a.assume) {
      if (key != k) continue;
      s.assumed.push_back(key + "=" + value);
      if (key == "driver") {
        if (value == "none") {
          s.driver = DriverFacts{};
          s.driver.lib.searched = true;
          s.driver.lib.name = "libcuda.so.1";
          s.devices = DevicesFacts{};
        } else if (value == "stub") {
          s.driver = DriverFacts{};
          s.driver.lib = assumed_library("libcuda.so.1");
          s.driver.lib.path = s.driver.lib.real_path = "/usr/local/cuda/lib64/stubs/libcuda.so.1";
          s.driver.is_stub = true;
          s.driver.init_result = 34;
          s.devices = DevicesFacts{};
        } else {
          parse_version_or_die(key, value);
          ensure_driver();
          s.driver.release = s.driver.library_release = value;
          s.driver.kernel_module_release.clear();
          s.driver.cuda_version = cuda_for_driver_release(value);
        }
      } else if (key == "cuda_driver") {
        ensure_driver();
        s.driver.cuda_version = parse_version_or_die(key, value);
      } else if (key == "cuinit") {
        if (!s.driver.lib.found) s.driver = healthy_driver(b);
        s.driver.init_result = parse_int_or_die(key, value);
        s.driver.is_stub = s.driver.init_result == 34;
        if (s.driver.init_result != 0) s.devices = DevicesFacts{};
      } else if (key == "devices") {
        int n = parse_int_or_die(key, value);
        ensure_devices();
        s.devices.count = n;
        s.devices.list.resize(static_cast<size_t>(std::min(n, 64)), healthy_device(0));
        for (size_t i = 0; i < s.devices.list.size(); ++i) s.devices.list[i].ordinal = static_cast<int>(i);
      } else if (key == "cc") {
        ComputeCapability cc = ComputeCapability::parse(value);
        if (!cc.known()) usage_error("--assume cc=" + value + ": not a compute capability such as 8.6");
        ensure_devices();
        s.devices.list.front().cc = cc;
        s.devices.list.front().name = "assumed GPU";
      } else if (key == "cudnn") {
        if (value == "none") {
          s.cudnn = CudnnFacts{};
          s.cudnn.lib.searched = true;
          s.cudnn.lib.name = "libcudnn.so." + std::to_string(b.cudnn.major);
        } else {
          Version v = parse_version_or_die(key, value);
          ensure_cudnn();
          s.cudnn.version = v;
          if (v.major != b.cudnn.major) s.cudnn.cuda_version = {};  // unless cudnn_cuda says
          s.cudnn.lib = assumed_library("libcudnn.so." + std::to_string(v.major));
          s.cudnn.sublibs.clear();
          s.cudnn.max_device = {};
        }
      } else if (key == "cudnn_cuda") {
        ensure_cudnn();
        s.cudnn.cuda_version = parse_version_or_die(key, value);
      } else if (key == "cudnn_max_cc") {
        ComputeCapability cc = ComputeCapability::parse(value);
        if (!cc.known()) usage_error("--assume cudnn_max_cc=" + value + ": not a compute capability such as 9.0");
        ensure_cudnn();
        s.cudnn.max_device = cc;
      } else if (key == "cublas") {
        if (value == "none") {
          s.cublas = CublasFacts{};
          s.cublas.lib.searched = true;
          s.cublas.lib.name = "libcublas.so." + std::to_string(b.cublas.major);
        } else {
          Version v = parse_version_or_die(key, value);
          s.cublas = healthy_cublas(b);
          s.cublas.version = v;
          if (v.major != b.cublas.major) s.cublas.cuda_version = {};
          s.cublas.lib = assumed_library("libcublas.so." + std::to_string(v.major));
        }
      }
    }
  }
}

int exit_code_for(const GateResult& r) {
  const Verdict* f = r.first_fatal();
  if (!f) return kExitUsable;
  switch (f->layer) {
    case Layer::kBuild:
      return kExitNoBackend;
    case Layer::kDriver:
      return kExitDriver;
    case Layer::kDevice:
      return kExitDevice;
    case Layer::kCudnn:
    case Layer::kCublas:
      return kExitLibrary;
  }
  return kExitDriver;
}

// The GPU module as the loader finds it (not looked at under --assume-only,
// which probes nothing).
struct ModuleReport {
  bool inspected = false;
  ModuleInfo info;
};

std::string runtime_abi() {
  return std::to_string(MINIRT_CUDA_ABI_MAJOR) + "." + std::to_string(MINIRT_CUDA_ABI_MINOR);
}

// --- text report -------------------------------------------------------------

std::string ver(const Version& v, bool patch = true) { return v.known() ? v.str(patch) : "unknown"; }

std::string arches(const std::vector<int>& v, const char* prefix) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::string(prefix) + std::to_string(x);
  return s.empty() ? "none" : s;
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

const char* kIndent = "          ";

void print_library(std::ostream& o, const LibraryLoad& l, bool verbose) {
  if (!l.searched) {
    o << l.name << (l.name.empty() ? "" : ": ") << "not probed\n";
    return;
  }
  if (!l.found) {
    o << l.name << ": not found\n";
  } else {
    o << l.loaded_name << ": found\n" << kIndent << "file: ";
    if (l.path.empty()) {
      o << "none (" << l.found_by << ")\n";
    } else {
      o << l.path;
      if (!l.real_path.empty() && l.real_path != l.path) o << " -> " << l.real_path;
      o << " (" << l.found_by << ")\n";
    }
    if (!l.missing_symbol.empty()) o << kIndent << "does not export " << l.missing_symbol << "\n";
  }
  if ((!l.found || verbose) && !l.tried.empty()) {
    o << kIndent << "tried:\n";
    for (const LoadAttempt& t : l.tried) o << kIndent << "  " << t.path << " (" << t.where << "): " << t.error << "\n";
  }
}

void print_verdicts(std::ostream& o, const GateResult& r, Layer layer) {
  for (const Verdict& v : r.verdicts) {
    if (v.layer != layer) continue;
    o << kIndent
      << (v.level == Level::kFatal     ? "FATAL"
          : v.level == Level::kWarning ? "WARNING"
                                       : level_name(v.level))
      << ": " << v.message << "\n";
  }
}

void print_text(std::ostream& o, const GateReport& rep, const ModuleReport& m, bool verbose) {
  const StackFacts& s = rep.stack;
  const BuildFacts& b = rep.build;
  const GateResult& r = rep.result;
  o << "minirt-doctor: the GPU stack, layer by layer\n";
  if (!s.assumed.empty()) {
    o << "assumed: ";
    for (size_t i = 0; i < s.assumed.size(); ++i) o << (i ? ", " : "") << s.assumed[i];
    o << "\n";
  }
  o << "\nbuild     GPU backend: " << (b.has_gpu_backend ? "yes" : "no (" + b.why_not + ")") << "\n";
  o << kIndent << "CUDA toolkit " << ver(b.toolkit)
    << (b.has_gpu_backend ? " (nvcc --version: what the GPU module is compiled with)" : " (the target; not found)")
    << "\n";
  o << kIndent << "machine code: " << arches(b.sass, "sm_") << "; PTX: " << arches(b.ptx, "compute_");
  if (!b.arch_known) o << " (from '" << b.arch_spec << "', not all understood)";
  o << "\n"
    << kIndent << "cuDNN " << ver(b.cudnn) << ", cuBLAS " << ver(b.cublas) << " (headers it was built against)\n";
  print_verdicts(o, r, Layer::kBuild);

  const DriverFacts& d = s.driver;
  o << "\ndriver    ";
  print_library(o, d.lib, verbose);
  if (d.lib.found) {
    o << kIndent << "release: " << (d.release.empty() ? "unknown" : d.release) << "; supports CUDA "
      << ver(d.cuda_version, false) << " (cuDriverGetVersion; nvidia-smi's \"CUDA Version\")\n";
    if (d.init_result >= 0)
      o << kIndent << "cuInit: " << d.init_result << " (" << cuda_error_name(d.init_result) << ")"
        << (d.is_stub ? "; this is the CUDA toolkit's stub library" : "") << "\n";
  }
  o << kIndent << "kernel module: "
    << (d.kernel_module_loaded ? "loaded" + (d.kernel_module_release.empty() ? "" : ", " + d.kernel_module_release)
                               : std::string("not loaded (no /proc/driver/nvidia/version)"))
    << "\n";
  print_verdicts(o, r, Layer::kDriver);

  const DevicesFacts& v = s.devices;
  o << "\ndevice    ";
  if (!v.probed) {
    o << "not probed\n";
  } else {
    o << v.count << " visible GPU" << (v.count == 1 ? "" : "s") << "\n";
    for (const DeviceFacts& g : v.list) {
      o << kIndent << "GPU " << g.ordinal << ": " << (g.name.empty() ? "unnamed" : g.name) << ", compute capability "
        << (g.cc.known() ? g.cc.str() : "unknown") << ", " << gib(g.total_memory);
      if (g.context_result >= 0) o << ", context: " << cuda_error_name(g.context_result);
      o << "\n";
    }
  }
  if (v.cuda_visible_devices_set) o << kIndent << "CUDA_VISIBLE_DEVICES='" << v.cuda_visible_devices << "'\n";
  print_verdicts(o, r, Layer::kDevice);

  const CudnnFacts& n = s.cudnn;
  o << "\ncudnn     ";
  print_library(o, n.lib, verbose);
  if (n.lib.found && n.version.known()) {
    o << kIndent << "version " << n.version.str() << ", built for CUDA " << ver(n.cuda_version, false);
    if (n.max_device.known()) o << ", native kernels up to compute capability " << n.max_device.str();
    o << "\n";
  }
  if (!n.sublibs.empty()) {
    o << kIndent << "sub-libraries:";
    for (size_t i = 0; i < n.sublibs.size(); ++i) {
      const CudnnSubLibrary& sub = n.sublibs[i];
      o << (i ? ", " : " ") << sub.name;
      if (!sub.present) {
        o << (sub.required ? " (missing)" : " (missing; not needed by minirt)");
        continue;
      }
      std::string info;
      if (sub.version.known()) info = sub.version.str();
      if (!sub.load_error.empty()) info += (info.empty() ? "" : ", ") + std::string("does not load");
      if (sub.check_result >= 0)
        info += (info.empty() ? "" : ", ") + std::string(sub.check_result == 0 ? "check ok" : "check fails");
      o << " (" << (info.empty() ? "present" : info) << ")";
    }
    o << "\n";
  }
  print_verdicts(o, r, Layer::kCudnn);

  const CublasFacts& c = s.cublas;
  o << "\ncublas    ";
  print_library(o, c.lib, verbose);
  if (c.lib.found && c.version.known())
    o << kIndent << "version " << c.version.str() << ", built for CUDA " << ver(c.cuda_version, false) << "\n";
  print_verdicts(o, r, Layer::kCublas);

  o << "\nmodule    ";
  if (!m.inspected) {
    o << "not looked for (--assume-only)\n";
  } else {
    o << kMinirtCudaModuleFile << ": " << (m.info.loaded ? "found" : "not usable") << "\n";
    if (!m.info.path.empty()) o << kIndent << "file: " << m.info.path << "\n";
    if (!m.info.abi.empty())
      o << kIndent << "interface " << m.info.abi << " (function table of " << m.info.table_size
        << " bytes); this minirt speaks " << runtime_abi() << "\n";
    if (!m.info.loaded) o << kIndent << m.info.error << "\n";
  }

  o << "\nsearch order for the libraries:\n";
  for (size_t i = 0; i < s.search_order.size(); ++i) o << "  " << i + 1 << ". " << s.search_order[i] << "\n";
  o << "\ndecision: " << r.summary << "\n";
}

// --- JSON report -------------------------------------------------------------

std::string js(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      case '\r':
        o += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string jv(const Version& v, bool patch = true) { return v.known() ? js(v.str(patch)) : "null"; }
std::string jb(bool b) { return b ? "true" : "false"; }

std::string jints(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string jlib(const LibraryLoad& l) {
  std::string s = "{\"name\":" + js(l.name) + ",\"searched\":" + jb(l.searched) + ",\"found\":" + jb(l.found) +
                  ",\"loaded_name\":" + js(l.loaded_name) + ",\"path\":" + js(l.path) +
                  ",\"real_path\":" + js(l.real_path) + ",\"found_by\":" + js(l.found_by) +
                  ",\"missing_symbol\":" + js(l.missing_symbol) + ",\"tried\":[";
  for (size_t i = 0; i < l.tried.size(); ++i)
    s += std::string(i ? "," : "") + "{\"where\":" + js(l.tried[i].where) + ",\"path\":" + js(l.tried[i].path) +
         ",\"error\":" + js(l.tried[i].error) + "}";
  return s + "]}";
}

void print_json(std::ostream& o, const GateReport& rep, const ModuleReport& m, int exit_code) {
  const StackFacts& s = rep.stack;
  const BuildFacts& b = rep.build;
  const GateResult& r = rep.result;
  o << "{\"usable\":" << jb(r.usable) << ",\"exit_code\":" << exit_code << ",\"summary\":" << js(r.summary);
  o << ",\"assumed\":[";
  for (size_t i = 0; i < s.assumed.size(); ++i) o << (i ? "," : "") << js(s.assumed[i]);
  o << "]";
  o << ",\"build\":{\"gpu_backend\":" << jb(b.has_gpu_backend) << ",\"why_not\":" << js(b.why_not)
    << ",\"toolkit\":" << jv(b.toolkit) << ",\"sass\":" << jints(b.sass) << ",\"ptx\":" << jints(b.ptx)
    << ",\"architectures\":" << js(b.arch_spec) << ",\"cudnn\":" << jv(b.cudnn) << ",\"cublas\":" << jv(b.cublas)
    << "}";
  const DriverFacts& d = s.driver;
  o << ",\"driver\":{\"library\":" << jlib(d.lib) << ",\"is_stub\":" << jb(d.is_stub)
    << ",\"init_result\":" << d.init_result << ",\"cuda_version\":" << jv(d.cuda_version, false)
    << ",\"release\":" << js(d.release) << ",\"kernel_module_loaded\":" << jb(d.kernel_module_loaded)
    << ",\"kernel_module_release\":" << js(d.kernel_module_release) << ",\"library_release\":" << js(d.library_release)
    << "}";
  const DevicesFacts& v = s.devices;
  o << ",\"devices\":{\"probed\":" << jb(v.probed) << ",\"count_result\":" << v.count_result << ",\"count\":" << v.count
    << ",\"cuda_visible_devices\":" << (v.cuda_visible_devices_set ? js(v.cuda_visible_devices) : "null")
    << ",\"list\":[";
  for (size_t i = 0; i < v.list.size(); ++i) {
    const DeviceFacts& g = v.list[i];
    o << (i ? "," : "") << "{\"ordinal\":" << g.ordinal << ",\"name\":" << js(g.name)
      << ",\"compute_capability\":" << (g.cc.known() ? js(g.cc.str()) : "null")
      << ",\"total_memory\":" << g.total_memory << ",\"context_result\":" << g.context_result << "}";
  }
  o << "]}";
  const CudnnFacts& n = s.cudnn;
  o << ",\"cudnn\":{\"library\":" << jlib(n.lib) << ",\"version\":" << jv(n.version)
    << ",\"cuda_version\":" << jv(n.cuda_version, false)
    << ",\"max_device\":" << (n.max_device.known() ? js(n.max_device.str()) : "null") << ",\"sublibs\":[";
  for (size_t i = 0; i < n.sublibs.size(); ++i) {
    const CudnnSubLibrary& sub = n.sublibs[i];
    o << (i ? "," : "") << "{\"name\":" << js(sub.name) << ",\"required\":" << jb(sub.required)
      << ",\"present\":" << jb(sub.present) << ",\"path\":" << js(sub.path) << ",\"version\":" << jv(sub.version)
      << ",\"load_error\":" << js(sub.load_error) << ",\"check_function\":" << js(sub.check_function)
      << ",\"check_result\":" << sub.check_result << "}";
  }
  o << "]}";
  const CublasFacts& c = s.cublas;
  o << ",\"cublas\":{\"library\":" << jlib(c.lib) << ",\"version\":" << jv(c.version)
    << ",\"cuda_version\":" << jv(c.cuda_version, false) << "}";
  o << ",\"module\":{\"inspected\":" << jb(m.inspected) << ",\"loaded\":" << jb(m.info.loaded)
    << ",\"path\":" << js(m.info.path) << ",\"abi\":" << (m.info.abi.empty() ? "null" : js(m.info.abi))
    << ",\"table_size\":" << m.info.table_size << ",\"runtime_abi\":" << js(runtime_abi())
    << ",\"error\":" << js(m.info.error) << "}";
  o << ",\"search_order\":[";
  for (size_t i = 0; i < s.search_order.size(); ++i) o << (i ? "," : "") << js(s.search_order[i]);
  o << "],\"verdicts\":[";
  for (size_t i = 0; i < r.verdicts.size(); ++i) {
    const Verdict& x = r.verdicts[i];
    o << (i ? "," : "") << "{\"layer\":" << js(layer_name(x.layer)) << ",\"level\":" << js(level_name(x.level))
      << ",\"rule\":" << js(x.rule) << ",\"message\":" << js(x.message) << "}";
  }
  o << "]";
  namespace cpu = minirt::cpu;
  o << ",\"cpu\":{\"features\":" << js(cpu::cpu_features_line()) << ",\"isa\":" << js(cpu::cpu_isa_name(cpu::cpu_isa()))
    << ",\"bf16\":" << js(cpu::bf16_isa_name(cpu::bf16_isa())) << ",\"bf16_reason\":" << js(cpu::bf16_isa_reason())
    << "}}\n";
}

// The CPU beside the GPU stack: what MathMode::kBf16 would run on, and why not better.
void print_cpu(std::ostream& o) {
  namespace cpu = minirt::cpu;
  o << "\ncpu       " << cpu::cpu_features_line() << "\n";
  o << kIndent << "kernels: " << cpu::cpu_isa_name(cpu::cpu_isa()) << "; bf16 math (--math bf16): ";
  switch (cpu::bf16_isa()) {
    case cpu::Bf16Isa::kAmx:
      o << "AMX tiles";
      break;
    case cpu::Bf16Isa::kAvx512Bf16:
      o << "AVX512_BF16 (" << cpu::bf16_isa_reason() << ")";
      break;
    case cpu::Bf16Isa::kNone:
      o << "none, float32 runs (" << cpu::bf16_isa_reason() << ")";
      break;
  }
  o << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  GateReport rep;
  rep.build = BuildFacts::this_build();
  if (a.assume_only) {
    rep.stack = healthy_stack(rep.build);
  } else {
    rep = probe_and_judge(ProbeOptions::from_environment(), rep.build);
  }
  if (!a.assume.empty()) apply_assumptions(a, rep.build, rep.stack);
  rep.result = judge(rep.stack, rep.build);
  int code = exit_code_for(rep.result);
  // After the probe, which loaded the cuDNN and cuBLAS the module binds to.
  ModuleReport m;
  if (!a.assume_only) {
    m.inspected = true;
    m.info = inspect_cuda_module();
  }
  if (a.json)
    print_json(std::cout, rep, m, code);
  else {
    print_text(std::cout, rep, m, a.verbose);
    print_cpu(std::cout);
  }
  return code;
}
