// The probe for real. On this machine as it is: whatever it finds (here: no
// driver), it says so and does not crash. Against fake CUDA libraries
// (tests/gpu_fakes/) copied into folders laid out like real installs — a pip
// venv, a conda prefix, MINIRT_CUDA_PATH folders, a toolkit's stubs folder —
// so that each search path and each verdict runs end to end without a GPU.
//
// Every probe runs in a forked child: a loaded library stays loaded (and a
// later dlopen by soname would find it), so each case starts from a process
// that has loaded none of them. The child sends the facts back as lines.
#include "runtime/gpu/probe.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace minirt::gpu {
namespace {

namespace fs = std::filesystem;

const fs::path kFakes = fs::path(MINIRT_BINARY_DIR) / "tests" / "gpu_fakes";

// What a child reports: flattened facts and the verdicts.
struct Outcome {
  bool exited_normally = false;
  std::string crash;  // how the child ended when not normally
  std::map<std::string, std::string> facts;
  std::vector<Verdict> verdicts;
  bool usable = false;
  std::string summary;

  std::string operator[](const std::string& key) const {
    auto it = facts.find(key);
    return it == facts.end() ? "<absent>" : it->second;
  }
  const Verdict* find(const std::string& rule) const {
    for (const Verdict& v : verdicts)
      if (v.rule == rule) return &v;
    return nullptr;
  }
  std::string rules() const {
    std::string s;
    for (const Verdict& v : verdicts) s += " " + v.rule + "(" + level_name(v.level) + ")";
    return s;
  }
};

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s;
}

std::string flatten(const GateReport& r) {
  std::string o;
  auto put = [&](const std::string& k, const std::string& v) { o += "F\t" + k + "\t" + one_line(v) + "\n"; };
  auto lib = [&](const std::string& p, const LibraryLoad& l) {
    put(p + ".searched", l.searched ? "1" : "0");
    put(p + ".found", l.found ? "1" : "0");
    put(p + ".loaded_name", l.loaded_name);
    put(p + ".path", l.path);
    put(p + ".found_by", l.found_by);
    put(p + ".missing_symbol", l.missing_symbol);
    std::string tried;
    for (const LoadAttempt& t : l.tried) tried += t.where + "|" + t.path + "|" + t.error + ";";
    put(p + ".tried", tried);
  };
  const StackFacts& s = r.stack;
  lib("driver", s.driver.lib);
  put("driver.is_stub", s.driver.is_stub ? "1" : "0");
  put("driver.init", std::to_string(s.driver.init_result));
  put("driver.cuda", s.driver.cuda_version.known() ? s.driver.cuda_version.str(false) : "");
  put("devices.probed", s.devices.probed ? "1" : "0");
  put("devices.count", std::to_string(s.devices.count));
  for (const DeviceFacts& d : s.devices.list) {
    std::string p = "device" + std::to_string(d.ordinal);
    put(p + ".name", d.name);
    put(p + ".cc", d.cc.known() ? d.cc.str() : "");
    put(p + ".memory", std::to_string(d.total_memory));
    put(p + ".context", std::to_string(d.context_result));
  }
  lib("cudnn", s.cudnn.lib);
  put("cudnn.version", s.cudnn.version.known() ? s.cudnn.version.str() : "");
  put("cudnn.cuda", s.cudnn.cuda_version.known() ? s.cudnn.cuda_version.str(false) : "");
  put("cudnn.max_device", s.cudnn.max_device.known() ? s.cudnn.max_device.str() : "");
  for (const CudnnSubLibrary& sub : s.cudnn.sublibs)
    put("cudnn.sub." + sub.name, std::string(sub.present ? "present" : "missing") + "," +
                                     (sub.version.known() ? sub.version.str() : "") + "," +
                                     std::to_string(sub.check_result));
  lib("cublas", s.cublas.lib);
  put("cublas.version", s.cublas.version.known() ? s.cublas.version.str() : "");
  for (const Verdict& v : r.result.verdicts)
    o += "V\t" + v.rule + "\t" + std::to_string(static_cast<int>(v.level)) + "\t" +
         std::to_string(static_cast<int>(v.layer)) + "\t" + one_line(v.message) + "\n";
  o += std::string("U\t") + (r.result.usable ? "1" : "0") + "\n";
  o += "S\t" + one_line(r.result.summary) + "\n";
  return o;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

// Runs `probe` in a child process and returns what it reported.
Outcome in_child(const std::function<GateReport()>& probe) {
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe failed";
    return {};
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string text;
    try {
      text = flatten(probe());
    } catch (const std::exception& e) {
      text = std::string("E\t") + e.what() + "\n";
    }
    size_t off = 0;
    while (off < text.size()) {
      ssize_t n = write(fds[1], text.data() + off, text.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Outcome out;
  out.exited_normally = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (WIFSIGNALED(status)) out.crash = "killed by signal " + std::to_string(WTERMSIG(status));
  for (const std::string& line : split(text, '\n')) {
    std::vector<std::string> f = split(line, '\t');
    if (f[0] == "F" && f.size() == 3) out.facts[f[1]] = f[2];
    if (f[0] == "V" && f.size() == 5)
      out.verdicts.push_back({static_cast<Layer>(std::stoi(f[3])), static_cast<Level>(std::stoi(f[2])), f[1], f[4]});
    if (f[0] == "U" && f.size() == 2) out.usable = f[1] == "1";
    if (f[0] == "S" && f.size() == 2) out.summary = f[1];
    if (f[0] == "E") out.crash = "exception: " + line;
  }
  return out;
}

// A temporary folder tree built from the fakes.
class Tree {
 public:
  Tree() {
    static std::atomic<int> counter{0};
    root_ = fs::temp_directory_path() /
            ("minirt_probe_" + std::to_string(getpid()) + "_" + std::to_string(counter.fetch_add(1)));
    fs::create_directories(root_);
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string path(const std::string& rel = "") const { return (root_ / rel).string(); }
  // Copies the fake `fake` (a file name in the build's gpu_fakes folder) to `rel`.
  void put(const std::string& fake, const std::string& rel) const {
    fs::path to = root_ / rel;
    fs::create_directories(to.parent_path());
    fs::copy_file(kFakes / fake, to, fs::copy_options::overwrite_existing);
  }
  void write(const std::string& rel, const std::string& bytes) const {
    fs::path to = root_ / rel;
    fs::create_directories(to.parent_path());
    std::ofstream(to) << bytes;
  }
  void mkdir(const std::string& rel) const { fs::create_directories(root_ / rel); }
  // A cuDNN 9 install, every sub-library next to libcudnn.so.9.
  void cudnn(const std::string& dir) const {
    put("libcudnn.so.9", dir + "/libcudnn.so.9");
    for (const char* s : {"graph", "ops", "cnn", "adv"})
      put(std::string("libcudnn_") + s + ".so.9", dir + "/libcudnn_" + s + ".so.9");
    for (const char* s : {"engines_precompiled", "engines_runtime_compiled", "heuristic"})
      put("libfake_empty.so", dir + "/libcudnn_" + s + ".so.9");
  }
  void remove(const std::string& rel) const { fs::remove(root_ / rel); }

 private:
  fs::path root_;
};

// The facts this build is judged against in these tests.
BuildFacts test_build() {
  BuildFacts b;
  b.has_gpu_backend = true;
  b.toolkit = {13, 0, 0};
  b.set_architectures("75-real;80-real;86-real;89-real;90-real;100-real;120");
  b.cudnn = {9, 10, 0};
  b.cublas = {13, 0, 0};
  return b;
}

// A probe that sees only the folders a test made: the variables given are
// set (all others of interest unset), the loader's own search and the
// machine's CUDA folders are left out.
struct ProbeSetup {
  std::map<std::string, std::string> env;
  std::vector<std::string> system_dirs;
  bool quick = false;
};

Outcome probe(const ProbeSetup& setup) {
  return in_child([&] {
    for (const char* v : {"MINIRT_CUDA_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_VISIBLE_DEVICES"}) unsetenv(v);
    for (const auto& [k, v] : setup.env) setenv(k.c_str(), v.c_str(), 1);
    ProbeOptions o = ProbeOptions::from_environment();
    o.loader_default_search = false;
    o.system_dirs = setup.system_dirs;
    o.proc_driver_version.clear();
    o.stop_at_first_failure = setup.quick;
    return probe_and_judge(o, test_build());
  });
}

#define EXPECT_SAYS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (text) << "' lacks '" << (part) << "'"
#define ASSERT_RULE(out, rule, want_level)                                         \
  ASSERT_NE((out).find(rule), nullptr) << "no " << (rule) << ";" << (out).rules(); \
  EXPECT_EQ((out).find(rule)->level, want_level)

// A healthy stack: driver through MINIRT_CUDA_PATH, cuDNN and cuBLAS from a
// venv's pip wheels (nvidia/cudnn/lib, and CUDA 13's nvidia/cu13/lib).
struct Healthy {
  Tree t;
  ProbeSetup s;
  Healthy() {
    t.mkdir("empty");
    t.put("libcuda.so.1", "driver/libcuda.so.1");
    t.cudnn("venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
    t.put("libcublas.so.13", "venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13");
    s.env["MINIRT_CUDA_PATH"] = t.path("empty") + ":" + t.path("driver");
    s.env["VIRTUAL_ENV"] = t.path("venv");
  }
};

TEST(ProbeFakes, FindsTheStackThroughMinirtCudaPathAndAVenv) {
  Healthy h;
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_TRUE(o.usable) << o.summary << o.rules();
  EXPECT_EQ(o["driver.path"], h.t.path("driver/libcuda.so.1"));
  EXPECT_EQ(o["driver.found_by"], "MINIRT_CUDA_PATH");
  EXPECT_SAYS(o["driver.tried"], h.t.path("empty/libcuda.so.1") + "|not present");
  EXPECT_EQ(o["driver.init"], "0");
  EXPECT_EQ(o["driver.cuda"], "13.0");
  EXPECT_EQ(o["devices.count"], "1");
  EXPECT_EQ(o["device0.name"], "Fake GPU 0");
  EXPECT_EQ(o["device0.cc"], "9.0");
  EXPECT_EQ(o["device0.memory"], std::to_string(16ull << 30));
  EXPECT_EQ(o["device0.context"], "0");
  EXPECT_EQ(o["cudnn.path"], h.t.path("venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"));
  EXPECT_EQ(o["cudnn.found_by"], "VIRTUAL_ENV (pip wheels)");
  EXPECT_EQ(o["cudnn.version"], "9.19.0");
  EXPECT_EQ(o["cudnn.cuda"], "13.0");
  EXPECT_EQ(o["cudnn.max_device"], "12.1");
  EXPECT_EQ(o["cudnn.sub.graph"], "present,9.19.0,0");
  EXPECT_EQ(o["cudnn.sub.ops"], "present,,0");
  EXPECT_EQ(o["cudnn.sub.engines_precompiled"], "present,,-1");
  EXPECT_EQ(o["cublas.path"], h.t.path("venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13"));
  EXPECT_EQ(o["cublas.version"], "13.1.0");
  EXPECT_EQ(o.summary.rfind("GPU usable: GPU 0 (Fake GPU 0) compute capability 9.0", 0), 0u) << o.summary;
}

TEST(ProbeFakes, SearchOrderMinirtCudaPathThenVenvThenCondaThenToolkitFolder) {
  Tree t;
  t.put("libcuda.so.1", "driver/libcuda.so.1");
  t.put("libcublas.so.13", "driver/libcublas.so.13");
  t.cudnn("custom");
  t.cudnn("venv/lib/python3.12/site-packages/nvidia/cudnn/lib");
  t.cudnn("conda/lib/python3.10/site-packages/nvidia/cudnn/lib");
  t.cudnn("conda2/lib");
  t.cudnn("toolkit/lib64");
  ProbeSetup s;
  s.env["MINIRT_CUDA_PATH"] = t.path("driver") + ":" + t.path("custom");
  s.env["VIRTUAL_ENV"] = t.path("venv");
  s.env["CONDA_PREFIX"] = t.path("conda");
  s.system_dirs = {t.path("toolkit/lib64")};
  auto where = [&] {
    Outcome o = probe(s);
    EXPECT_TRUE(o.exited_normally) << o.crash;
    return o["cudnn.found_by"] + " " + o["cudnn.path"];
  };
  EXPECT_EQ(where(), "MINIRT_CUDA_PATH " + t.path("custom/libcudnn.so.9"));
  s.env["MINIRT_CUDA_PATH"] = t.path("driver");
  EXPECT_EQ(where(),
            "VIRTUAL_ENV (pip wheels) " + t.path("venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"));
  s.env.erase("VIRTUAL_ENV");
  EXPECT_EQ(where(),
            "CONDA_PREFIX (pip wheels) " + t.path("conda/lib/python3.10/site-packages/nvidia/cudnn/lib/libcudnn.so.9"));
  s.env["CONDA_PREFIX"] = t.path("conda2");  // conda's own packages put libraries in $CONDA_PREFIX/lib
  EXPECT_EQ(where(), "CONDA_PREFIX " + t.path("conda2/lib/libcudnn.so.9"));
  s.env.erase("CONDA_PREFIX");
  EXPECT_EQ(where(), "the CUDA toolkit folder " + t.path("toolkit/lib64/libcudnn.so.9"));
}

TEST(ProbeFakes, DriverTooOldForCuda13) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CUINIT"] = "35";
  h.s.env["MINIRT_FAKE_CUDA_VERSION"] = "12020";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_FALSE(o.usable);
  EXPECT_EQ(o["driver.init"], "35");
  EXPECT_EQ(o["driver.cuda"], "12.2");
  EXPECT_EQ(o["devices.probed"], "0");
  ASSERT_RULE(o, "driver.too_old", Level::kFatal);
  EXPECT_SAYS(o.summary,
              "CPU fallback: the driver supports CUDA 12.2, this build needs 13.0 and an R580-or-newer driver");

  // The usual case: the driver initialises but is a CUDA 12 one.
  h.s.env["MINIRT_FAKE_CUINIT"] = "0";
  o = probe(h.s);
  ASSERT_RULE(o, "driver.too_old", Level::kFatal);
}

TEST(ProbeFakes, ToolkitStubOnThePath) {
  Tree t;
  t.put("libcuda.so.1", "cuda/lib64/stubs/libcuda.so.1");
  ProbeSetup s;
  s.env["MINIRT_CUDA_PATH"] = t.path("cuda/lib64/stubs");
  s.env["MINIRT_FAKE_CUINIT"] = "34";
  Outcome o = probe(s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["driver.is_stub"], "1");
  ASSERT_RULE(o, "driver.stub", Level::kFatal);
  EXPECT_SAYS(o.find("driver.stub")->message, t.path("cuda/lib64/stubs/libcuda.so.1"));
  EXPECT_SAYS(o.summary, "remove the stubs folder from LD_LIBRARY_PATH and MINIRT_CUDA_PATH");

  // Found by cuInit's answer alone, and under the unversioned name the toolkit ships.
  Tree u;
  u.put("libcuda.so.1", "lib/libcuda.so");
  s.env["MINIRT_CUDA_PATH"] = u.path("lib");
  o = probe(s);
  EXPECT_EQ(o["driver.loaded_name"], "libcuda.so");
  EXPECT_EQ(o["driver.is_stub"], "1");
  ASSERT_RULE(o, "driver.stub", Level::kFatal);
}

TEST(ProbeFakes, NoVisibleDevice) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CUINIT"] = "100";
  h.s.env["CUDA_VISIBLE_DEVICES"] = "";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_FALSE(o.usable);
  ASSERT_RULE(o, "device.none", Level::kFatal);
  EXPECT_SAYS(o.summary, "CUDA_VISIBLE_DEVICES='' is set");

  h.s.env.erase("CUDA_VISIBLE_DEVICES");
  h.s.env["MINIRT_FAKE_CUINIT"] = "0";
  h.s.env["MINIRT_FAKE_DEVICES"] = "0";
  o = probe(h.s);
  EXPECT_EQ(o["devices.count"], "0");
  ASSERT_RULE(o, "device.none", Level::kFatal);
  EXPECT_SAYS(o.summary, "nvidia-smi");
}

TEST(ProbeFakes, BusyDevice) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CONTEXT"] = "46";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["device0.context"], "46");
  ASSERT_RULE(o, "device.busy", Level::kFatal);
  EXPECT_SAYS(o.summary, "GPU 0 (Fake GPU 0) is busy or unavailable");
}

TEST(ProbeFakes, VoltaIsBelowCuda13) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CC"] = "70";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["device0.cc"], "7.0");
  ASSERT_RULE(o, "device.cc_too_old", Level::kFatal);
  EXPECT_SAYS(o.summary, "compute capability 7.0, but CUDA 13 supports 7.5 (Turing) and newer");
}

TEST(ProbeFakes, GpuNewerThanCudnnKnowsIsOnlyAWarning) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CC"] = "120";
  h.s.env["MINIRT_FAKE_CUDNN_MAXDEV"] = "900";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_TRUE(o.usable) << o.summary;
  ASSERT_RULE(o, "cudnn.gpu_newer", Level::kWarning);
}

TEST(ProbeFakes, Cudnn8FoundWhereCudnn9IsNeeded) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CUDNN_VERSION"] = "8907";
  // A libcudnn.so.9 that answers 8.9.7 ...
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["cudnn.version"], "8.9.7");
  ASSERT_RULE(o, "cudnn.major", Level::kFatal);
  EXPECT_SAYS(o.summary, "found cuDNN 8.9.7");
  EXPECT_SAYS(o.summary, "this build needs cuDNN 9 (libcudnn.so.9)");
  // ... and an install with only libcudnn.so.8: found under that name, to explain.
  Tree t;
  t.put("libcudnn.so.9", "old/libcudnn.so.8");
  h.s.env["VIRTUAL_ENV"] = t.path("nothing-here");
  h.s.env["MINIRT_CUDA_PATH"] = h.t.path("driver") + ":" + t.path("old");
  o = probe(h.s);
  EXPECT_EQ(o["cudnn.loaded_name"], "libcudnn.so.8");
  EXPECT_SAYS(o["cudnn.tried"], t.path("old/libcudnn.so.9") + "|not present");
  ASSERT_RULE(o, "cudnn.major", Level::kFatal);
  EXPECT_SAYS(o.find("cudnn.major")->message, "pip install nvidia-cudnn-cu13");
}

TEST(ProbeFakes, Cudnn9BuiltForCuda12AndOlderThanBuiltAgainst) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CUDNN_VERSION"] = "90100";
  h.s.env["MINIRT_FAKE_CUDNN_CUDART"] = "12080";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["cudnn.version"], "9.1.0");
  EXPECT_EQ(o["cudnn.cuda"], "12.8");
  ASSERT_RULE(o, "cudnn.cuda_major", Level::kFatal);
  EXPECT_SAYS(o.find("cudnn.cuda_major")->message, "built for CUDA 12.8, but this build uses CUDA 13.0");
  ASSERT_RULE(o, "cudnn.minor_older", Level::kFatal);
}

TEST(ProbeFakes, MixedCudnnSubLibraries) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CUDNN_GRAPH_VERSION"] = "91300";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["cudnn.sub.graph"], "present,9.13.0,0");
  ASSERT_RULE(o, "cudnn.mixed", Level::kFatal);
  EXPECT_SAYS(o.summary, "libcudnn_graph.so.9 is 9.13.0");

  h.s.env.erase("MINIRT_FAKE_CUDNN_GRAPH_VERSION");
  h.s.env["MINIRT_FAKE_CUDNN_OPS_CHECK"] = "1002";
  o = probe(h.s);
  ASSERT_RULE(o, "cudnn.mixed", Level::kFatal);
  EXPECT_SAYS(o.summary, "cudnnOpsVersionCheck reports a mismatch (status 1002)");
}

TEST(ProbeFakes, IncompleteCudnn) {
  Healthy h;
  h.t.remove("venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_cnn.so.9");
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["cudnn.sub.cnn"], "missing,,-1");
  ASSERT_RULE(o, "cudnn.incomplete", Level::kFatal);
}

TEST(ProbeFakes, LibrariesMissingTheirFunctionsDoNotCrashTheProbe) {
  Tree t;
  t.put("libfake_empty.so", "bad/libcuda.so.1");
  t.put("libfake_empty.so", "bad/libcudnn.so.9");
  t.put("libfake_empty.so", "bad/libcublas.so.13");
  ProbeSetup s;
  s.env["MINIRT_CUDA_PATH"] = t.path("bad");
  Outcome o = probe(s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["driver.missing_symbol"], "cuInit");
  ASSERT_RULE(o, "driver.symbols", Level::kFatal);
  EXPECT_EQ(o["cudnn.missing_symbol"], "cudnnGetVersion");
  ASSERT_RULE(o, "cudnn.symbols", Level::kFatal);
  EXPECT_EQ(o["cublas.missing_symbol"], "cublasGetProperty");
  ASSERT_RULE(o, "cublas.symbols", Level::kFatal);
}

TEST(ProbeFakes, AFileThatIsNotALibraryIsSkippedWithTheLoadersReason) {
  Healthy h;
  h.t.write("junk/libcudnn.so.9", "this is not an ELF file, just text long enough to be read as one");
  h.s.env["MINIRT_CUDA_PATH"] = h.t.path("junk") + ":" + h.t.path("driver");
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["cudnn.found_by"], "VIRTUAL_ENV (pip wheels)");
  std::string tried = o["cudnn.tried"];
  EXPECT_SAYS(tried, "MINIRT_CUDA_PATH|" + h.t.path("junk/libcudnn.so.9") + "|");
  EXPECT_EQ(tried.find(h.t.path("junk/libcudnn.so.9") + "|not present"), std::string::npos) << tried;
  EXPECT_TRUE(o.usable) << o.summary;
}

TEST(ProbeFakes, Cublas12WhereCublas13IsNeeded) {
  Healthy h;
  h.t.remove("venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13");
  h.t.put("libcublas.so.13", "venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12");
  h.s.env["MINIRT_FAKE_CUBLAS_VERSION"] = "12.2.5";
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["cublas.loaded_name"], "libcublas.so.12");
  EXPECT_EQ(o["cublas.version"], "12.2.5");
  ASSERT_RULE(o, "cublas.major", Level::kFatal);
  EXPECT_SAYS(o.summary, "found cuBLAS 12.2.5");
}

TEST(ProbeFakes, NothingInstalledSaysWhereItLooked) {
  Tree t;
  t.mkdir("venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
  ProbeSetup s;
  s.env["MINIRT_CUDA_PATH"] = t.path("a") + "::" + t.path("b");
  s.env["VIRTUAL_ENV"] = t.path("venv");
  s.system_dirs = {t.path("toolkit/lib64")};
  Outcome o = probe(s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_FALSE(o.usable);
  ASSERT_RULE(o, "driver.missing", Level::kFatal);
  ASSERT_RULE(o, "cudnn.missing", Level::kFatal);
  ASSERT_RULE(o, "cublas.missing", Level::kFatal);
  std::string tried = o["cudnn.tried"];
  for (const std::string& p : {t.path("a/libcudnn.so.9"), t.path("b/libcudnn.so.9"),
                               t.path("venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"),
                               t.path("toolkit/lib64/libcudnn.so.9"), t.path("a/libcudnn.so.8")})
    EXPECT_SAYS(tried, p + "|not present");
  EXPECT_SAYS(o.summary, "CPU fallback: no NVIDIA driver (libcuda.so.1 not found)");
}

TEST(ProbeFakes, QuickProbeStopsAfterTheDriverFails) {
  Healthy h;
  h.s.env["MINIRT_FAKE_CUINIT"] = "34";
  h.s.quick = true;
  Outcome o = probe(h.s);
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_EQ(o["cudnn.searched"], "0");
  EXPECT_EQ(o["cublas.searched"], "0");
  ASSERT_RULE(o, "driver.stub", Level::kFatal);
  ASSERT_RULE(o, "cudnn.unchecked", Level::kNote);
  // With a working driver it goes on to the libraries.
  h.s.env.erase("MINIRT_FAKE_CUINIT");
  o = probe(h.s);
  EXPECT_EQ(o["cudnn.searched"], "1");
  EXPECT_TRUE(o.usable) << o.summary;
}

// --- the real probe, on this machine as it is --------------------------------

TEST(ProbeReal, ThisMachineIsReportedWithoutACrash) {
  Outcome o = in_child([] { return probe_and_judge(ProbeOptions::from_environment()); });
  ASSERT_TRUE(o.exited_normally) << o.crash;
  std::cout << "[ real probe ] " << o.summary << "\n";
  ASSERT_FALSE(o.summary.empty());
  bool any_fatal = false;
  for (const Verdict& v : o.verdicts) any_fatal |= v.level == Level::kFatal;
  EXPECT_EQ(o.usable, !any_fatal) << o.rules();
  EXPECT_EQ(o.summary.rfind(o.usable ? "GPU usable: " : "CPU fallback: ", 0), 0u) << o.summary;
  for (Layer l : {Layer::kBuild, Layer::kDriver, Layer::kDevice, Layer::kCudnn, Layer::kCublas}) {
    bool said = false;
    for (const Verdict& v : o.verdicts) said |= v.layer == l;
    EXPECT_TRUE(said) << "nothing said about the " << layer_name(l) << " layer:" << o.rules();
  }
  if (o["driver.found"] == "0") {
    // A machine without the driver (this one): it says so, first.
    ASSERT_RULE(o, "driver.missing", Level::kFatal);
    EXPECT_SAYS(o.summary, "libcuda.so.1");
    EXPECT_SAYS(o["driver.tried"], "the default loader search|libcuda.so.1|");
    EXPECT_EQ(o["devices.probed"], "0");
  }
}

TEST(ProbeReal, SessionEntryPointAgreesAndIsCached) {
  Outcome full = in_child([] { return probe_and_judge(ProbeOptions::from_environment()); });
  Outcome quick = in_child([] {
    const GateResult& a = check_gpu_stack();
    const GateResult& b = check_gpu_stack();
    GateReport r;
    r.result = a;
    if (&a != &b) r.result.summary = "not cached";
    return r;
  });
  ASSERT_TRUE(quick.exited_normally) << quick.crash;
  EXPECT_EQ(quick.usable, full.usable) << quick.summary << " vs " << full.summary;
  // The quick probe may stop early, but never decides differently; with a
  // failed lower layer both name the same first reason.
  if (!full.usable && !quick.usable) {
    const Verdict* qf = nullptr;
    for (const Verdict& v : quick.verdicts)
      if (v.level == Level::kFatal && !qf) qf = &v;
    ASSERT_NE(qf, nullptr);
    if (qf->layer != Layer::kCudnn && qf->layer != Layer::kCublas) {
      EXPECT_EQ(quick.summary, full.summary);
    }
  }
}

// tools/fallback_scenarios.txt: the stacks tools/fallback-demo.sh replays.
// Each, built here the same way, fails the gate with the rule and the
// sentence the line names, as the first fatal verdict (what a Session falls
// back with).
struct Scenario {
  std::string id, title, layout, env, rule, says;
};

std::vector<Scenario> read_scenarios() {
  std::vector<Scenario> out;
  std::ifstream f(std::string(MINIRT_SOURCE_DIR) + "/tools/fallback_scenarios.txt");
  std::string line;
  auto trim = [](std::string x) {
    size_t b = x.find_first_not_of(' '), e = x.find_last_not_of(' ');
    return b == std::string::npos ? std::string() : x.substr(b, e - b + 1);
  };
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f6;
    size_t b = 0;
    for (;;) {
      size_t e = line.find('|', b);
      f6.push_back(trim(line.substr(b, e == std::string::npos ? std::string::npos : e - b)));
      if (e == std::string::npos) break;
      b = e + 1;
    }
    if (f6.size() != 6) {
      ADD_FAILURE() << "fallback_scenarios.txt: not 6 fields: " << line;
      continue;
    }
    out.push_back({f6[0], f6[1], f6[2], f6[3], f6[4], f6[5]});
  }
  return out;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

TEST(FallbackScenarios, EachStackFailsTheGateWithItsRuleAndSentence) {
  std::vector<Scenario> all = read_scenarios();
  ASSERT_GE(all.size(), 9u);
  for (const Scenario& sc : all) {
    if (sc.rule == "-") continue;  // the machine's own stack
    SCOPED_TRACE(sc.id);
    Tree t;
    ProbeSetup s;
    s.quick = true;  // as a Session probes
    for (std::string step : split_on(sc.layout, ';')) {
      while (!step.empty() && step.front() == ' ') step.erase(step.begin());
      while (!step.empty() && step.back() == ' ') step.pop_back();
      std::vector<std::string> w = split_on(step, ' ');
      if (step == "-" || step.empty()) continue;
      if (w[0] == "healthy") {
        t.put("libcuda.so.1", "driver/libcuda.so.1");
        t.cudnn("venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
        t.put("libcublas.so.13", "venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcublas.so.13");
        s.env["MINIRT_CUDA_PATH"] = t.path("driver");
        s.env["VIRTUAL_ENV"] = t.path("venv");
      } else if (w[0] == "put" && w.size() == 3) {
        t.put(w[1], w[2]);
      } else if (w[0] == "rm" && w.size() == 2) {
        fs::remove_all(t.path(w[1]));
      } else {
        ADD_FAILURE() << "unknown layout step '" << step << "'";
      }
    }
    if (sc.env != "-")
      for (const std::string& kv : split_on(sc.env, ' ')) {
        size_t eq = kv.find('=');
        ASSERT_NE(eq, std::string::npos) << kv;
        std::string v = kv.substr(eq + 1);
        for (size_t at = v.find('@'); at != std::string::npos; at = v.find('@')) v.replace(at, 1, t.path());
        s.env[kv.substr(0, eq)] = v;
      }
    Outcome o = probe(s);
    ASSERT_TRUE(o.exited_normally) << o.crash;
    EXPECT_FALSE(o.usable) << o.summary;
    const Verdict* first = nullptr;
    for (const Verdict& v : o.verdicts)
      if (v.level == Level::kFatal && !first) first = &v;
    ASSERT_NE(first, nullptr) << o.rules();
    EXPECT_EQ(first->rule, sc.rule) << o.rules() << "\n" << o.summary;
    EXPECT_SAYS(first->message, sc.says);
  }
}

TEST(ProbeReal, OddEnvironmentIsHarmless) {
  Tree t;
  t.write("not-a-dir", "x");
  Outcome o = in_child([&] {
    setenv("MINIRT_CUDA_PATH", (":::" + t.path("missing") + ":" + t.path("not-a-dir") + ":").c_str(), 1);
    setenv("VIRTUAL_ENV", t.path("not-a-dir").c_str(), 1);
    setenv("CONDA_PREFIX", "/nonexistent/conda", 1);
    return probe_and_judge(ProbeOptions::from_environment());
  });
  ASSERT_TRUE(o.exited_normally) << o.crash;
  EXPECT_FALSE(o.summary.empty());
}

}  // namespace
}  // namespace minirt::gpu
