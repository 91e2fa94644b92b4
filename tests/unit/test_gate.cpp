// The compatibility gate's rules against synthetic facts: each rule fires
// when its fact is wrong, stays silent on a healthy stack and at its
// boundary, and its sentence names the fix. No GPU or CUDA library needed.
#include "runtime/gpu/gate.h"

#include <gtest/gtest.h>

#include <string>

namespace minirt::gpu {
namespace {

BuildFacts build() {
  BuildFacts b;
  b.has_gpu_backend = true;
  b.toolkit = {13, 0, 88};
  b.set_architectures("75-real;80-real;86-real;89-real;90-real;100-real;120");
  b.cudnn = {9, 10, 0};
  b.cublas = {13, 0, 0};
  return b;
}

LibraryLoad found(const std::string& name, const std::string& path) {
  LibraryLoad l;
  l.name = l.loaded_name = name;
  l.searched = l.found = true;
  l.path = l.real_path = path;
  l.found_by = "the default loader search";
  return l;
}

StackFacts healthy() {
  StackFacts s;
  s.driver.lib = found("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  s.driver.lib.real_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06";
  s.driver.init_result = 0;
  s.driver.cuda_version = {13, 0, 0};
  s.driver.release = s.driver.kernel_module_release = s.driver.library_release = "580.65.06";
  s.driver.kernel_module_loaded = true;
  s.devices.probed = true;
  s.devices.count_result = 0;
  s.devices.count = 1;
  DeviceFacts g;
  g.ordinal = 0;
  g.name = "NVIDIA H200";
  g.cc = {9, 0};
  g.total_memory = 150ull << 30;
  g.context_result = 0;
  s.devices.list = {g};
  const std::string dir = "/venv/lib/python3.11/site-packages/nvidia/cudnn/lib";
  s.cudnn.lib = found("libcudnn.so.9", dir + "/libcudnn.so.9");
  s.cudnn.version = {9, 13, 0};
  s.cudnn.cuda_version = {13, 0, 0};
  s.cudnn.max_device = {12, 1};
  for (const char* name : {"graph", "ops", "cnn", "adv", "engines_precompiled"}) {
    CudnnSubLibrary sub;
    sub.name = name;
    sub.present = true;
    sub.path = dir + "/libcudnn_" + name + ".so.9";
    if (sub.name == "graph") sub.version = {9, 13, 0};
    if (sub.name == "ops") {
      sub.check_function = "cudnnOpsVersionCheck";
      sub.check_result = 0;
    }
    s.cudnn.sublibs.push_back(sub);
  }
  s.cublas.lib = found("libcublas.so.13", "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13");
  s.cublas.version = {13, 0, 2};
  s.cublas.cuda_version = {13, 0, 0};
  return s;
}

CudnnSubLibrary& sub(StackFacts& s, const std::string& name) {
  for (CudnnSubLibrary& x : s.cudnn.sublibs)
    if (x.name == name) return x;
  throw std::runtime_error("no sub-library " + name);
}

// The verdict for `rule` (a copy), which must exist at `level`.
Verdict expect_rule(const GateResult& r, const std::string& rule, Level level) {
  const Verdict* v = r.find(rule);
  if (!v) {
    std::string all;
    for (const Verdict& x : r.verdicts) all += "\n  " + x.rule + ": " + x.message;
    ADD_FAILURE() << "no verdict " << rule << "; got:" << all;
    return Verdict{Layer::kBuild, Level::kOk, "", ""};
  }
  EXPECT_EQ(v->level, level) << rule << ": " << v->message;
  return *v;
}

#define EXPECT_SAYS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (text) << "' lacks '" << (part) << "'"

TEST(GateVersions, EncodingsFromNvidiaDocumentation) {
  EXPECT_EQ(Version::from_cuda(12020), (Version{12, 2, 0}));
  EXPECT_EQ(Version::from_cuda(13000), (Version{13, 0, 0}));
  EXPECT_EQ(Version::from_cuda(13010), (Version{13, 1, 0}));
  EXPECT_FALSE(Version::from_cuda(0).known());
  EXPECT_EQ(Version::from_cudnn(8907), (Version{8, 9, 7}));
  EXPECT_EQ(Version::from_cudnn(90100), (Version{9, 1, 0}));
  EXPECT_EQ(Version::from_cudnn(91900), (Version{9, 19, 0}));
  EXPECT_EQ(Version::from_cudnn(7605), (Version{7, 6, 5}));
  EXPECT_EQ(Version::parse("535.104.05"), (Version{535, 104, 5}));
  EXPECT_EQ(Version::parse("12.2"), (Version{12, 2, 0}));
  EXPECT_EQ(Version::parse("13.0.88.1"), (Version{13, 0, 88}));
  EXPECT_FALSE(Version::parse("none").known());
  EXPECT_EQ((Version{9, 19, 0}).str(), "9.19.0");
  EXPECT_EQ((Version{13, 0, 0}).str(false), "13.0");
  EXPECT_LT((Version{9, 9, 0}), (Version{9, 10, 0}));
  EXPECT_EQ(ComputeCapability::parse("8.6"), (ComputeCapability{8, 6}));
  EXPECT_EQ(ComputeCapability::parse("120"), (ComputeCapability{12, 0}));
  EXPECT_FALSE(ComputeCapability::parse("x").known());
  EXPECT_EQ((ComputeCapability{10, 0}).as_int(), 100);
}

TEST(GateVersions, DriverReleaseToCuda) {
  EXPECT_EQ(cuda_for_driver_release("535.104.05"), (Version{12, 2, 0}));
  EXPECT_EQ(cuda_for_driver_release("550.54"), (Version{12, 4, 0}));
  EXPECT_EQ(cuda_for_driver_release("570.86.10"), (Version{12, 8, 0}));
  EXPECT_EQ(cuda_for_driver_release("580.65.06"), (Version{13, 0, 0}));
  EXPECT_EQ(cuda_for_driver_release("470.82"), (Version{11, 4, 0}));
  EXPECT_FALSE(cuda_for_driver_release("390.1").known());
}

TEST(GateVersions, ArchitectureLists) {
  BuildFacts b;
  b.set_architectures("75-real;90;120-virtual");
  EXPECT_EQ(b.sass, (std::vector<int>{75, 90}));
  EXPECT_EQ(b.ptx, (std::vector<int>{90, 120}));
  EXPECT_TRUE(b.arch_known);
  b.set_architectures("all-major");
  EXPECT_FALSE(b.arch_known);
  b.set_architectures("90a-real");
  EXPECT_FALSE(b.arch_known);
}

TEST(GateVersions, ThisBuildIsConsistent) {
  BuildFacts b = BuildFacts::this_build();
  EXPECT_TRUE(b.toolkit.known());
  EXPECT_TRUE(b.cudnn.known());
  EXPECT_TRUE(b.cublas.known());
  if (b.has_gpu_backend) {
    EXPECT_TRUE(b.why_not.empty());
    EXPECT_FALSE(b.sass.empty() && b.ptx.empty());
  } else {
    EXPECT_FALSE(b.why_not.empty());
  }
}

TEST(Gate, HealthyStackIsUsableAndEveryLayerSaysOk) {
  GateResult r = judge(healthy(), build());
  EXPECT_TRUE(r.usable) << r.summary;
  EXPECT_EQ(r.first_fatal(), nullptr);
  EXPECT_EQ(r.warnings(), 0);
  for (const Verdict& v : r.verdicts) EXPECT_EQ(v.level, Level::kOk) << v.rule << ": " << v.message;
  for (const char* rule : {"build.ok", "driver.ok", "device.ok", "cudnn.ok", "cublas.ok"})
    expect_rule(r, rule, Level::kOk);
  EXPECT_EQ(r.summary.rfind("GPU usable: GPU 0 (NVIDIA H200) compute capability 9.0, driver 580.65.06 (CUDA 13.0)", 0),
            0u)
      << r.summary;
  // Both versions, and what each is for.
  const std::string& d = r.find("driver.ok")->message;
  EXPECT_SAYS(d, "supports CUDA 13.0, the version nvidia-smi shows");
  EXPECT_SAYS(d, "toolkit is CUDA 13.0, the version nvcc --version shows");
  EXPECT_SAYS(r.find("device.ok")->message, "machine code for it (sm_90)");
}

TEST(Gate, NoGpuBackendInThisBuild) {
  BuildFacts b = build();
  b.has_gpu_backend = false;
  b.why_not = "the CUDA toolkit was not found when minirt was configured";
  GateResult r = judge(healthy(), b);
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "build.no_backend", Level::kFatal);
  EXPECT_SAYS(v.message, "built without the GPU backend (the CUDA toolkit was not found");
  EXPECT_SAYS(v.message, "nvidia-cudnn-cu13");
  EXPECT_EQ(r.first_fatal(), r.find("build.no_backend"));
}

TEST(Gate, NoDriver) {
  StackFacts s = healthy();
  s.driver = DriverFacts{};
  s.driver.lib.searched = true;
  s.driver.lib.name = "libcuda.so.1";
  s.devices = DevicesFacts{};
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "driver.missing", Level::kFatal);
  EXPECT_SAYS(v.message, "no NVIDIA driver (libcuda.so.1 not found)");
  EXPECT_SAYS(v.message, "R580 or newer");
  EXPECT_SAYS(v.message, "LD_LIBRARY_PATH or MINIRT_CUDA_PATH");
  EXPECT_EQ(
      r.summary.rfind("CPU fallback: no NVIDIA driver (libcuda.so.1 not found); install the NVIDIA driver R580", 0), 0u)
      << r.summary;
  expect_rule(r, "device.unchecked", Level::kNote);
  // The library layers are still judged and reported.
  expect_rule(r, "cudnn.ok", Level::kOk);
}

TEST(Gate, KernelModuleWithoutItsLibraryPointsAtContainers) {
  StackFacts s = healthy();
  s.driver.lib = LibraryLoad{};
  s.driver.lib.searched = true;
  s.driver.kernel_module_loaded = true;
  s.driver.kernel_module_release = "580.65.06";
  GateResult r = judge(s, build());
  const Verdict& v = expect_rule(r, "driver.missing", Level::kFatal);
  EXPECT_SAYS(v.message, "kernel module is loaded (driver 580.65.06)");
  EXPECT_SAYS(v.message, "docker run --gpus all");
}

TEST(Gate, StubDriverOnThePath) {
  for (int variant = 0; variant < 2; ++variant) {
    StackFacts s = healthy();
    if (variant == 0) {
      s.driver.lib.path = s.driver.lib.real_path = "/usr/local/cuda/lib64/stubs/libcuda.so.1";
      s.driver.is_stub = true;
    }
    s.driver.init_result = 34;
    GateResult r = judge(s, build());
    EXPECT_FALSE(r.usable);
    const Verdict& v = expect_rule(r, "driver.stub", Level::kFatal);
    EXPECT_SAYS(v.message, "the CUDA toolkit's stub");
    EXPECT_SAYS(v.message, "cuInit returns 34, CUDA_ERROR_STUB_LIBRARY");
    EXPECT_SAYS(v.message, "remove the stubs folder from LD_LIBRARY_PATH and MINIRT_CUDA_PATH");
  }
  EXPECT_FALSE(judge(healthy(), build()).has("driver.stub"));
}

TEST(Gate, DriverLibraryWithoutCuInit) {
  StackFacts s = healthy();
  s.driver.lib.missing_symbol = "cuInit";
  s.driver.init_result = -1;
  GateResult r = judge(s, build());
  const Verdict& v = expect_rule(r, "driver.symbols", Level::kFatal);
  EXPECT_SAYS(v.message, "does not export cuInit");
}

TEST(Gate, DriverTooOldForCuda13) {
  StackFacts s = healthy();
  s.driver.cuda_version = {12, 2, 0};
  s.driver.release = "535.104.05";
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "driver.too_old", Level::kFatal);
  EXPECT_SAYS(v.message,
              "the driver supports CUDA 12.2 (driver 535.104.05), this build needs 13.0 and an R580-or-newer driver");
  EXPECT_SAYS(v.message, "nvidia-driver-580");
  EXPECT_SAYS(v.message, "error 35");
  // The driver API still answers, so the GPU is judged as well.
  expect_rule(r, "device.ok", Level::kOk);

  // Only the release is known: NVIDIA's table gives its CUDA version.
  s.driver.cuda_version = {};
  s.driver.release = "550.54.14";
  EXPECT_SAYS(expect_rule(judge(s, build()), "driver.too_old", Level::kFatal).message, "supports CUDA 12.4");

  // What the CUDA runtime calls error 35.
  s = healthy();
  s.driver.cuda_version = {};
  s.driver.release.clear();
  s.driver.init_result = 35;
  EXPECT_SAYS(expect_rule(judge(s, build()), "driver.too_old", Level::kFatal).message, "cudaErrorInsufficientDriver");

  // Exactly 13.0, and newer: fine.
  s = healthy();
  EXPECT_FALSE(judge(s, build()).has("driver.too_old"));
  s.driver.cuda_version = {13, 2, 0};
  EXPECT_TRUE(judge(s, build()).has("driver.ok"));
}

TEST(Gate, DriverOlderMinorWarnsButRuns) {
  StackFacts s = healthy();
  BuildFacts b = build();
  b.toolkit = {13, 1, 0};
  GateResult r = judge(s, b);
  EXPECT_TRUE(r.usable) << r.summary;
  const Verdict& v = expect_rule(r, "driver.minor_older", Level::kWarning);
  EXPECT_SAYS(v.message, "minor-version compatibility");
  EXPECT_SAYS(r.summary, "1 warning");
}

TEST(Gate, DriverLibraryAndKernelModuleMismatch) {
  StackFacts s = healthy();
  s.driver.init_result = 803;
  s.driver.library_release = "580.95.05";
  s.driver.kernel_module_release = "580.65.06";
  const Verdict& v = expect_rule(judge(s, build()), "driver.mismatch", Level::kFatal);
  EXPECT_SAYS(v.message, "libcuda.so.1 580.95.05 and the loaded kernel module 580.65.06");
  EXPECT_SAYS(v.message, "reboot");
}

TEST(Gate, DriverInitFailsOtherwise) {
  StackFacts s = healthy();
  s.driver.init_result = 999;
  const Verdict& v = expect_rule(judge(s, build()), "driver.init_failed", Level::kFatal);
  EXPECT_SAYS(v.message, "CUDA_ERROR_UNKNOWN (999)");
  EXPECT_SAYS(v.message, "nvidia-smi");
}

TEST(Gate, NoVisibleDevice) {
  StackFacts s = healthy();
  s.driver.init_result = 100;
  s.devices = DevicesFacts{};
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "device.none", Level::kFatal);
  EXPECT_SAYS(v.message, "cuInit returns 100, CUDA_ERROR_NO_DEVICE");
  EXPECT_SAYS(v.message, "CUDA_VISIBLE_DEVICES");
  EXPECT_SAYS(v.message, "docker run --gpus all");

  s.devices.cuda_visible_devices_set = true;
  s.devices.cuda_visible_devices = "";
  EXPECT_SAYS(expect_rule(judge(s, build()), "device.none", Level::kFatal).message,
              "CUDA_VISIBLE_DEVICES='' is set; unset CUDA_VISIBLE_DEVICES");

  // cuInit succeeds but counts none.
  s = healthy();
  s.devices.count = 0;
  s.devices.list.clear();
  expect_rule(judge(s, build()), "device.none", Level::kFatal);
  EXPECT_FALSE(judge(healthy(), build()).has("device.none"));
}

TEST(Gate, DevicesBusy) {
  StackFacts s = healthy();
  s.driver.init_result = 46;
  s.devices = DevicesFacts{};
  const Verdict& v = expect_rule(judge(s, build()), "device.busy", Level::kFatal);
  EXPECT_SAYS(v.message, "CUDA error 46");
  EXPECT_SAYS(v.message, "nvidia-smi -c DEFAULT");

  s = healthy();
  s.devices.list[0].context_result = 46;
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  EXPECT_SAYS(expect_rule(r, "device.busy", Level::kFatal).message, "GPU 0 (NVIDIA H200) is busy or unavailable");
  EXPECT_FALSE(judge(healthy(), build()).has("device.busy"));
}

TEST(Gate, ContextFailsOtherwise) {
  StackFacts s = healthy();
  s.devices.list[0].context_result = 2;
  EXPECT_SAYS(expect_rule(judge(s, build()), "device.context", Level::kFatal).message, "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST(Gate, ComputeCapabilityBelowWhatCuda13Supports) {
  StackFacts s = healthy();
  s.devices.list[0].cc = {7, 0};
  s.devices.list[0].name = "Tesla V100-SXM2-16GB";
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "device.cc_too_old", Level::kFatal);
  EXPECT_SAYS(v.message, "GPU 0 (Tesla V100-SXM2-16GB) has compute capability 7.0, but CUDA 13 supports 7.5 (Turing)");
  EXPECT_SAYS(v.message, "CUDA 12 toolkit");

  // A second, supported GPU is pointed at.
  DeviceFacts other = healthy().devices.list[0];
  other.ordinal = 1;
  other.name = "NVIDIA A100";
  other.cc = {8, 0};
  s.devices.list.push_back(other);
  s.devices.count = 2;
  EXPECT_SAYS(expect_rule(judge(s, build()), "device.cc_too_old", Level::kFatal).message,
              "GPU 1 (NVIDIA A100), compute capability 8.0, is supported");

  // Turing itself is fine.
  s = healthy();
  s.devices.list[0].cc = {7, 5};
  GateResult ok = judge(s, build());
  EXPECT_TRUE(ok.usable) << ok.summary;
  EXPECT_FALSE(ok.has("device.cc_too_old"));
}

TEST(Gate, NoCodeInThisBuildForTheArchitecture) {
  // Thor-class 11.0: no sm_11x machine code, and PTX for compute_120 cannot go down to 11.0.
  StackFacts s = healthy();
  s.devices.list[0].cc = {11, 0};
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "device.no_code", Level::kFatal);
  EXPECT_SAYS(v.message, "compute capability 11.0");
  EXPECT_SAYS(v.message, "machine code only for sm_75");
  EXPECT_SAYS(v.message, "PTX for compute_120");
  EXPECT_SAYS(v.message, "110-real added to MINIRT_CUDA_ARCHITECTURES");

  // Machine code of an older minor of the same major runs (8.6 on 8.9 and 8.7).
  s.devices.list[0].cc = {8, 7};
  EXPECT_TRUE(judge(s, build()).usable);
  BuildFacts b = build();
  b.set_architectures("80-real");
  s.devices.list[0].cc = {9, 0};
  expect_rule(judge(s, b), "device.no_code", Level::kFatal);
  // Not with an unknown list.
  b.set_architectures("all");
  EXPECT_FALSE(judge(s, b).has("device.no_code"));
}

TEST(Gate, PtxOnlyRunsThroughJitUnlessTheDriverIsOlderThanTheToolkit) {
  StackFacts s = healthy();
  s.devices.list[0].cc = {8, 6};
  BuildFacts b = build();
  b.set_architectures("75-real;80-virtual");
  GateResult r = judge(s, b);
  EXPECT_TRUE(r.usable) << r.summary;
  EXPECT_SAYS(expect_rule(r, "device.jit", Level::kNote).message, "compute_80");

  b.toolkit = {13, 1, 0};  // the driver (13.0) cannot compile PTX from 13.1
  r = judge(s, b);
  EXPECT_FALSE(r.usable);
  EXPECT_SAYS(expect_rule(r, "device.ptx_too_new", Level::kFatal).message, "PTX comes from CUDA 13.1");
}

TEST(Gate, CudnnMissing) {
  StackFacts s = healthy();
  s.cudnn = CudnnFacts{};
  s.cudnn.lib.searched = true;
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "cudnn.missing", Level::kFatal);
  EXPECT_SAYS(v.message, "cuDNN 9 (libcudnn.so.9) not found");
  EXPECT_SAYS(v.message, "pip install nvidia-cudnn-cu13");
  EXPECT_SAYS(v.message, "libcudnn9-cuda-13");
  EXPECT_SAYS(v.message, "MINIRT_CUDA_PATH");
  EXPECT_EQ(r.summary.rfind("CPU fallback: cuDNN 9", 0), 0u) << r.summary;
}

TEST(Gate, CudnnWithoutItsFunctions) {
  StackFacts s = healthy();
  s.cudnn.lib.missing_symbol = "cudnnGetVersion";
  s.cudnn.version = {};
  EXPECT_SAYS(expect_rule(judge(s, build()), "cudnn.symbols", Level::kFatal).message,
              "does not export cudnnGetVersion");
}

TEST(Gate, Cudnn8WhereCudnn9IsNeeded) {
  StackFacts s = healthy();
  s.cudnn.lib = found("libcudnn.so.8", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8");
  s.cudnn.version = {8, 9, 7};
  s.cudnn.cuda_version = {12, 2, 0};
  s.cudnn.sublibs.clear();
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "cudnn.major", Level::kFatal);
  EXPECT_SAYS(v.message, "found cuDNN 8.9.7 (/usr/lib/x86_64-linux-gnu/libcudnn.so.8");
  EXPECT_SAYS(v.message, "this build needs cuDNN 9 (libcudnn.so.9)");
  EXPECT_SAYS(v.message, "pip install nvidia-cudnn-cu13");
  // One verdict for the layer: the CUDA version it was built for is moot.
  EXPECT_FALSE(r.has("cudnn.cuda_major"));

  s.cudnn.version = {10, 0, 0};
  EXPECT_SAYS(expect_rule(judge(s, build()), "cudnn.major", Level::kFatal).message,
              "no compatibility across major versions");
}

TEST(Gate, Cudnn9BuiltForCuda12) {
  StackFacts s = healthy();
  s.cudnn.cuda_version = {12, 8, 0};
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "cudnn.cuda_major", Level::kFatal);
  EXPECT_SAYS(v.message, "was built for CUDA 12.8, but this build uses CUDA 13.0");
  EXPECT_SAYS(v.message, "pip install nvidia-cudnn-cu13 (not nvidia-cudnn-cu12)");
  // A newer CUDA 13 minor is fine.
  s.cudnn.cuda_version = {13, 1, 0};
  EXPECT_FALSE(judge(s, build()).has("cudnn.cuda_major"));
}

TEST(Gate, CudnnMinorOlderThanBuiltAgainst) {
  StackFacts s = healthy();
  s.cudnn.version = {9, 9, 0};
  sub(s, "graph").version = {9, 9, 0};
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "cudnn.minor_older", Level::kFatal);
  EXPECT_SAYS(v.message, "cuDNN 9.9.0");
  EXPECT_SAYS(v.message, "older than the 9.10 this build was compiled against");
  EXPECT_SAYS(v.message, "pip install nvidia-cudnn-cu13>=9.10");
  // The same minor (any patch) and newer ones are fine.
  for (Version ok : {Version{9, 10, 0}, Version{9, 10, 3}, Version{9, 19, 0}}) {
    s.cudnn.version = ok;
    sub(s, "graph").version = ok;
    EXPECT_TRUE(judge(s, build()).usable) << ok.str();
  }
}

TEST(Gate, MixedCudnnSubLibraries) {
  StackFacts s = healthy();
  sub(s, "graph").version = {9, 1, 0};
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "cudnn.mixed", Level::kFatal);
  EXPECT_SAYS(v.message, "libcudnn.so.9 is 9.13.0; libcudnn_graph.so.9 is 9.1.0");
  EXPECT_SAYS(v.message, "--force-reinstall");

  s = healthy();
  sub(s, "ops").check_result = 1002;
  EXPECT_SAYS(expect_rule(judge(s, build()), "cudnn.mixed", Level::kFatal).message,
              "cudnnOpsVersionCheck reports a mismatch (status 1002)");
}

TEST(Gate, IncompleteCudnn) {
  StackFacts s = healthy();
  sub(s, "cnn").present = false;
  const Verdict& v = expect_rule(judge(s, build()), "cudnn.incomplete", Level::kFatal);
  EXPECT_SAYS(v.message, "libcudnn_cnn.so.9 missing");
  // A sub-library minirt does not need may be absent.
  s = healthy();
  sub(s, "adv").present = false;
  sub(s, "adv").required = false;
  EXPECT_TRUE(judge(s, build()).usable);
}

TEST(Gate, GpuNewerThanCudnnKnowsIsAWarning) {
  StackFacts s = healthy();
  s.devices.list[0].cc = {12, 0};
  s.devices.list[0].name = "NVIDIA RTX PRO 6000";
  s.cudnn.max_device = {9, 0};
  GateResult r = judge(s, build());
  EXPECT_TRUE(r.usable) << r.summary;
  const Verdict& v = expect_rule(r, "cudnn.gpu_newer", Level::kWarning);
  EXPECT_SAYS(v.message, "compute capability 12.0, newer than the GPUs cuDNN 9.13.0 has kernels for (up to 9.0)");
  EXPECT_SAYS(v.message, "forward-compatibility mode");
  // Without the library's own answer, cuDNN before 9.7 is taken to stop at 9.0.
  s.cudnn.max_device = {};
  s.cudnn.version = {9, 5, 1};
  BuildFacts b = build();
  b.cudnn = {9, 5, 0};
  sub(s, "graph").version = {9, 5, 1};
  expect_rule(judge(s, b), "cudnn.gpu_newer", Level::kWarning);
  // A GPU it knows: no warning.
  EXPECT_FALSE(judge(healthy(), build()).has("cudnn.gpu_newer"));
}

TEST(Gate, CublasMissingOrWrongMajor) {
  StackFacts s = healthy();
  s.cublas = CublasFacts{};
  s.cublas.lib.searched = true;
  GateResult r = judge(s, build());
  EXPECT_FALSE(r.usable);
  const Verdict& v = expect_rule(r, "cublas.missing", Level::kFatal);
  EXPECT_SAYS(v.message, "cuBLAS 13 not found (libcublas.so.13)");
  EXPECT_SAYS(v.message, "pip install nvidia-cublas");
  EXPECT_SAYS(v.message, "site-packages/nvidia/cu13/lib");

  s = healthy();
  s.cublas.lib = found("libcublas.so.12", "/usr/local/cuda-12.2/lib64/libcublas.so.12");
  s.cublas.version = {12, 2, 5};
  const Verdict& w = expect_rule(judge(s, build()), "cublas.major", Level::kFatal);
  EXPECT_SAYS(w.message, "found cuBLAS 12.2.5");
  EXPECT_SAYS(w.message, "needs cuBLAS 13, which comes with CUDA 13");

  s = healthy();
  s.cublas.lib.missing_symbol = "cublasGetProperty";
  s.cublas.version = {};
  expect_rule(judge(s, build()), "cublas.symbols", Level::kFatal);
}

TEST(Gate, CublasMinorOlderWarns) {
  StackFacts s = healthy();
  BuildFacts b = build();
  b.cublas = {13, 1, 0};
  GateResult r = judge(s, b);
  EXPECT_TRUE(r.usable);
  EXPECT_SAYS(expect_rule(r, "cublas.minor_older", Level::kWarning).message, "pip install nvidia-cublas -U");
  b.cublas = {13, 0, 0};
  EXPECT_FALSE(judge(s, b).has("cublas.minor_older"));
}

TEST(Gate, UnprobedLayersNeverCountAsUsable) {
  BuildFacts b = build();
  GateResult r = judge(StackFacts{}, b);
  EXPECT_FALSE(r.usable);
  expect_rule(r, "stack.unchecked", Level::kFatal);
  // A session's quick probe: the driver passed, the libraries were not looked at.
  StackFacts s = healthy();
  s.cudnn = CudnnFacts{};
  s.cublas = CublasFacts{};
  r = judge(s, b);
  EXPECT_FALSE(r.usable);
  expect_rule(r, "cudnn.unchecked", Level::kNote);
}

TEST(Gate, SummaryIsTheFirstFatalInLayerOrder) {
  StackFacts s = healthy();
  s.driver.cuda_version = {12, 2, 0};
  s.driver.release = "535.104.05";
  s.cudnn.version = {8, 9, 7};
  s.cublas.version = {12, 2, 5};
  s.devices.list[0].cc = {7, 0};
  GateResult r = judge(s, build());
  EXPECT_EQ(r.first_fatal()->rule, "driver.too_old");
  EXPECT_EQ(r.summary, "CPU fallback: " + r.first_fatal()->message);
  // Every failing layer is still reported.
  EXPECT_TRUE(r.has("device.cc_too_old"));
  EXPECT_TRUE(r.has("cudnn.major"));
  EXPECT_TRUE(r.has("cublas.major"));
  for (const Verdict& v : r.verdicts) EXPECT_FALSE(v.message.empty());
}

}  // namespace
}  // namespace minirt::gpu
