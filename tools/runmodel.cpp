// runmodel: load an ONNX model, run it, and report timing, top-k and the plan.
// See --help (and tools/README.md) for options and exit codes.
#include <minirt/minirt.h>

#include "tools/charts.h"
#include "tools/cli_util.h"
#include "tools/tuning_text.h"
#include "tools/compare.h"
#include "tools/npy.h"

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

using namespace minirt;
using minirt::tools::json_str;
namespace fs = std::filesystem;

namespace {

// Exit codes, documented in --help and tools/README.md.
enum Exit {
  kOk = 0,
  kUsage = 1,        // bad command line
  kLoadError = 2,    // the model file is missing, malformed or unsupported
  kRunError = 3,     // bad inputs, or a failure while planning or running
  kDeviceError = 4,  // --device cuda and no usable GPU backend
  kOutputError = 5,  // an output or profile file could not be written
  kResources = 6,    // the system would not start the threads asked for
  kDeadline = 7,     // a run took longer than --run-timeout
  kDisagree = 8,     // --compare: outputs differ beyond the tolerance
};

// The library's sentences name its API (SessionOptions, Device); what the
// same setting is called here follows them, for the errors that have one.
void print_error(const Error& e) {
  std::fprintf(stderr, "runmodel: %s\n", tools::with_flag_names(e.what(), tools::session_flag_names()).c_str());
  if (e.code() == ErrorCode::kDeviceUnavailable)
    std::fprintf(stderr, "runmodel: --device cpu runs on the CPU; --device auto takes the GPU where it works\n");
  if (e.code() == ErrorCode::kDeadlineExceeded)
    std::fprintf(stderr, "runmodel: --run-timeout SECONDS sets the limit (0: none)\n");
}

// The exit code of an error from planning or running.
int run_exit(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kResourceExhausted:
      return kResources;
    case ErrorCode::kDeadlineExceeded:
      return kDeadline;
    default:
      return kRunError;
  }
}

const char* kHelp = R"(usage: runmodel MODEL.onnx [options]

Loads an ONNX model, runs it on random or given inputs, and prints load time,
first-run time, latency statistics, throughput and each output's top-k.

inputs
  --input NAME=FILE.npy   use this .npy file for input NAME (repeatable)
  --shape NAME=1x3x224x224
                          shape for an input with symbolic dimensions (repeatable);
                          symbolic dimensions not given default to 1
  --seed N                seed for random inputs (default 42); floats are uniform in [0, 1)
                          (float16 / bfloat16 inputs: those numbers rounded to the type)
outputs
  --top-k K               print the K largest values of each output (default 5; 0: none)
  --output-dir DIR        write each output as DIR/NAME.npy (in the model's dtype: a float16
                          output as <f2; a bfloat16 one, which NumPy lacks, as float32)
timing
  --warmup N              untimed runs before timing (default 3)
  --iterations N          timed runs (default 10)
  --duration SECONDS      keep timing until this much time has passed; the later of
                          --iterations and --duration ends the run
  --threads N             intra-op threads (default, or 0: every core this process may use, from its
                          CPU affinity and cgroup CPU quota); at most 4 x those cores (at least 8,
                          never more than 1024): more is refused (exit 1)
  --run-timeout SECONDS   the most one run may take, planning included; a run past it stops
                          between two steps (exit 7). 0: no limit (default)
execution
  --device cpu|cuda|auto  where to run (default auto: the GPU when usable, else the CPU, saying why)
  --math fp32|tf32|fp16|bf16  the math of convolutions and matrix products (default fp32;
                          on the GPU, tf32 uses tensor cores on Ampere and newer, with about 3 fewer
                          digits; fp16 converts their weights and data to float16 for tensor cores,
                          Turing and newer, accumulating in float32; bf16 does the same in bfloat16
                          on the GPU (Ampere and newer) and runs the CPU's convolutions in bfloat16
                          on AMX or AVX512_BF16, accumulating in float32; each says why not where
                          the hardware lacks it)
  --no-optimize           skip the graph passes (folding, fusion, blocked layout), for comparison
  --layout auto|nchw      the CPU's activation layout: auto (default) keeps activations channel-blocked
                          (NCHW16c on AVX-512, NCHW8c on AVX2) where the kernels can; nchw keeps them plain
convolution algorithms (chosen when a shape is first planned; what is measured, in the background by default)
  --tune MODE             cached: the algorithm cache's choices; what it lacks runs the heuristic's pick at
                          once and is measured in the background, between runs, until the tuned plan takes
                          over (default);
                          exhaustive: measure every candidate, and write the results to the cache;
                          heuristic: the backend's fixed rules, nothing measured, cache untouched;
                          ALGO: that algorithm (e.g. winograd_f4x4) wherever it can run, else the heuristic's
  --algo-cache PATH       the algorithm cache file (default: $MINIRT_ALGO_CACHE, else
                          $XDG_CACHE_HOME/minirt/algo_cache.txt, else ~/.cache/minirt/algo_cache.txt)
  --workspace-limit SIZE  most scratch memory one algorithm may use, in bytes or with a K, M or G
                          suffix; candidates that need more are skipped. 0: no limit (default)
  --wait-tuning           after the first run, wait until background tuning is done and its plan has
                          taken over, so that the timed runs measure the tuned plan
  --tune-in-first-run     measure what the cache lacks inside the first run, before its first step (the
                          behaviour before background tuning)
  --verbose               print each convolution's choice on stderr
memory
  --memory-limit SIZE     most activation memory the session's pool may reserve, in bytes or
                          with a K, M or G suffix (powers of 1024), e.g. 512M; 0: no limit (default).
                          A run that needs more fails (exit 3) saying what it asked and what to change
  --memory-policy grow|preallocate:FRACTION
                          grow: reserve memory as runs need it (default); preallocate:0.25:
                          reserve that fraction of free memory at start (at most the limit)
                          and never more
  --memory-stats          print the pool's numbers after the runs (and add them to --json):
                          reserved, in use, peak, segments, largest free block, fragmentation;
                          and the weights': the model's as loaded and in memory now, packed, folded
comparing devices
  --compare LIST          run the same inputs on each entry of LIST in turn, one process: cpu, cuda,
                          auto, or all (cpu,cuda), each optionally with :SETTING... (nchw, noopt, tf32, fp16, fp32,
                          heuristic, exhaustive, tune=ALGORITHM), e.g. cpu,cuda or cpu,cpu:nchw; prints
                          each entry's decision (why a device is not usable), placement, copies at the
                          seams, session, first-run and latency times, and each output's largest
                          differences from the first entry that ran, pass or fail (exit 8 on a failure)
  --rtol X, --atol X      the tolerance of --compare: |a - b| <= atol + rtol x |first| element-wise
                          (default 1e-4 and 1e-5; 5e-2 and 1e-2 when a run uses tf32, fp16 or bf16; rtol at least
                          2e-3 for a float16 output, 1.6e-2 for a bfloat16 one: two steps of the type)
reports
  --print-plan            print every step with its shapes and arena offsets, and the arena size
  --profile FILE.json     write per-step timings of the timed runs as Chrome trace JSON
                          (open in Perfetto or chrome://tracing) and print a per-op summary; steps
                          on a GPU are timed by the GPU (CUDA events around each step), on a track of their own
  --profile-svg FILE.svg  the same timings as a chart: time per op type and the 20 costliest steps,
                          CPU and GPU steps apart, the steps the GPU timed itself marked (alone or
                          with --profile)
  --json                  print the summary as JSON instead of text
  --list-ops              print every op minirt runs, its opset versions and notes, as a Markdown
                          table (no model needed), and exit
  --help                  this text

exit status
  0  success
  1  bad command line
  2  the model could not be loaded (missing, malformed, or using unsupported features)
  3  the model could not be run (bad input, or an error while planning or running)
  4  --device cuda was asked for and no usable GPU backend exists
  5  an output or profile file could not be written
  6  the system would not start the threads asked for (ulimit -u, a cgroup's pids.max)
  7  a run took longer than --run-timeout
  8  --compare: an output differs beyond the tolerance
  A plan whose memory exceeds what the process can get (MemAvailable, the cgroup's memory
  limit, ulimit -v, --memory-limit) is refused with exit 3 before the memory is touched.
)";

struct Args {
  std::string model;
  std::map<std::string, std::string> input_files;
  std::map<std::string, Shape> shapes;
  uint64_t seed = 42;
  int top_k = 5;
  std::string output_dir;
  int warmup = 3;
  int iterations = 10;
  double duration = 0;
  int threads = 0;
  double run_timeout = 0;
  std::string compare;
  double rtol = -1, atol = -1;
  Device device = Device::kAuto;
  MathMode math = MathMode::kFp32;
  bool optimize = true;
  CpuLayout layout = CpuLayout::kAuto;
  bool print_plan = false;
  std::string profile;
  std::string profile_svg;
  bool json = false;
  size_t memory_limit = 0;
  MemoryPolicy memory_policy = MemoryPolicy::kGrow;
  double preallocate_fraction = 0;
  bool memory_stats = false;
  TuningMode tuning = TuningMode::kCached;
  std::string tuning_algorithm;
  std::string algo_cache;
  size_t workspace_limit = 0;
  bool verbose = false;
  bool wait_tuning = false;
  bool tune_in_background = true;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int to_int(const std::string& opt, const std::string& v, int lo) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || x < lo)
    throw UsageError(opt + " expects an integer >= " + std::to_string(lo) + ", got '" + v + "'");
  if (errno == ERANGE || x > std::numeric_limits<int>::max())
    throw UsageError(opt + " expects an integer up to " + std::to_string(std::numeric_limits<int>::max()) + ", got '" +
                     v + "'");
  return static_cast<int>(x);
}

std::pair<std::string, std::string> split_eq(const std::string& opt, const std::string& v) {
  size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
    throw UsageError(opt + " expects NAME=VALUE, got '" + v + "'");
  return {v.substr(0, eq), v.substr(eq + 1)};
}

size_t parse_size(const std::string& opt, const std::string& v) {
  if (auto b = tools::parse_size(v)) return *b;
  throw UsageError(opt + " expects a size in bytes, with an optional K, M or G suffix, got '" + v + "'");
}

// The ops minirt runs as a Markdown table (runtime/ops/README.md holds the same table,
// checked by the cli.list_ops test).
void print_ops() {
  std::printf("| op | opset versions | notes |\n| --- | --- | --- |\n");
  for (const minirt::OpSupport& o : minirt::supported_ops()) {
    std::string v;
    for (int x : o.versions) v += (v.empty() ? "" : ", ") + std::to_string(x);
    std::printf("| %s | %s | %s |\n", o.op.c_str(), v.c_str(), o.notes.c_str());
  }
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(s + " needs a value");
      return argv[++i];
    };
    if (s == "--help" || s == "-h") {
      std::fputs(kHelp, stdout);
      std::exit(kOk);
    } else if (s == "--list-ops") {
      print_ops();
      std::exit(kOk);
    } else if (s == "--input") {
      auto [k, v] = split_eq(s, next());
      a.input_files[k] = v;
    } else if (s == "--shape") {
      auto [k, v] = split_eq(s, next());
      try {
        a.shapes[k] = tools::parse_shape(v);
      } catch (const Error& e) {
        throw UsageError(std::string("--shape ") + e.what());
      }
    } else if (s == "--seed")
      a.seed = static_cast<uint64_t>(to_int(s, next(), 0));
    else if (s == "--top-k")
      a.top_k = to_int(s, next(), 0);
    else if (s == "--output-dir")
      a.output_dir = next();
    else if (s == "--warmup")
      a.warmup = to_int(s, next(), 0);
    else if (s == "--iterations")
      a.iterations = to_int(s, next(), 1);
    else if (s == "--duration") {
      std::string v = next();
      char* end = nullptr;
      a.duration = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || a.duration < 0) throw UsageError("--duration expects seconds >= 0, got '" + v + "'");
    } else if (s == "--threads")
      a.threads = to_int(s, next(), 0);
    else if (s == "--compare") {
      a.compare = next();
    } else if (s == "--rtol" || s == "--atol") {
      std::string v = next();
      char* end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(x >= 0) || !std::isfinite(x))
        throw UsageError(s + " expects a number >= 0, got '" + v + "'");
      (s == "--rtol" ? a.rtol : a.atol) = x;
    } else if (s == "--run-timeout") {
      std::string v = next();
      char* end = nullptr;
      a.run_timeout = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(a.run_timeout >= 0) || !std::isfinite(a.run_timeout))
        throw UsageError("--run-timeout expects seconds >= 0, got '" + v + "'");
    } else if (s == "--device") {
      std::string v = next();
      std::optional<Device> d = tools::parse_device(v);
      if (!d) throw UsageError("--device expects cpu, cuda or auto, got '" + v + "'");
      a.device = *d;
    } else if (s == "--math") {
      std::string v = next();
      std::optional<MathMode> m = tools::parse_math(v);
      if (!m) throw UsageError("--math expects fp32, tf32, fp16 or bf16, got '" + v + "'");
      a.math = *m;
    } else if (s == "--layout") {
      std::string v = next();
      if (v == "auto")
        a.layout = CpuLayout::kAuto;
      else if (v == "nchw")
        a.layout = CpuLayout::kNchw;
      else
        throw UsageError("--layout expects auto or nchw, got '" + v + "'");
    } else if (s == "--no-optimize")
      a.optimize = false;
    else if (s == "--print-plan")
      a.print_plan = true;
    else if (s == "--profile")
      a.profile = next();
    else if (s == "--profile-svg") {
      a.profile_svg = next();
      if (a.profile_svg.empty()) throw UsageError("--profile-svg expects a file name");
    } else if (s == "--json")
      a.json = true;
    else if (s == "--memory-limit")
      a.memory_limit = parse_size(s, next());
    else if (s == "--memory-policy") {
      std::string v = next();
      auto c = minirt::tools::parse_memory_policy(v);
      if (!c && v.rfind("preallocate:", 0) == 0)
        throw UsageError("--memory-policy preallocate:FRACTION expects a fraction in (0, 1], got '" + v.substr(12) +
                         "'");
      if (!c) throw UsageError("--memory-policy expects grow or preallocate:FRACTION, got '" + v + "'");
      a.memory_policy = c->policy;
      a.preallocate_fraction = c->fraction;
    } else if (s == "--memory-stats")
      a.memory_stats = true;
    else if (s == "--tune") {
      std::string v = next();
      auto c = minirt::tools::parse_tuning(v);
      if (!c) throw UsageError("--tune expects cached, exhaustive, heuristic or an algorithm name, got '" + v + "'");
      a.tuning = c->mode;
      a.tuning_algorithm = c->algorithm;
    } else if (s == "--algo-cache") {
      a.algo_cache = next();
      if (a.algo_cache.empty()) throw UsageError("--algo-cache expects a file path");
    } else if (s == "--workspace-limit")
      a.workspace_limit = parse_size(s, next());
    else if (s == "--verbose" || s == "-v")
      a.verbose = true;
    else if (s == "--wait-tuning")
      a.wait_tuning = true;
    else if (s == "--tune-in-first-run")
      a.tune_in_background = false;
    else if (!s.empty() && s[0] == '-')
      throw UsageError("unknown option " + s);
    else if (a.model.empty())
      a.model = s;
    else
      throw UsageError("more than one model given ('" + a.model + "' and '" + s + "')");
  }
  if (a.model.empty()) throw UsageError("no model given");
  return a;
}

Tensor random_input(const ValueDesc& d, const Shape& shape, std::mt19937_64& rng) {
  // float16 and bfloat16 inputs: the same float32 numbers, rounded to the type.
  const bool half = is_half_dtype(d.dtype);
  Tensor t = Tensor::zeros(half ? DType::kFloat32 : d.dtype, shape);
  if (t.dtype() == DType::kFloat32) {
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = u(rng);
  }
  return half ? from_float32(t, d.dtype) : t;  // integer and bool inputs stay zero: random indices are rarely valid
}

struct TopK {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<std::pair<int64_t, float>> best;
};

TopK top_k(const std::string& name, const Tensor& out, int k) {
  TopK r{name, out.dtype(), out.shape(), {}};
  const Tensor t = to_float32(out);  // float16 / bfloat16 outputs: their exact float32 values
  if (t.dtype() != DType::kFloat32 || k <= 0) return r;
  std::vector<std::pair<int64_t, float>> all;
  // For a batch, the first item's scores.
  int64_t n = t.numel();
  if (t.rank() >= 2 && t.shape()[0] > 1) n /= t.shape()[0];
  for (int64_t i = 0; i < n; ++i) all.emplace_back(i, t.data<float>()[i]);
  size_t kk = std::min<size_t>(static_cast<size_t>(k), all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<long>(kk), all.end(),
                    [](const auto& a, const auto& b) { return a.second > b.second; });
  all.resize(kk);
  r.best = std::move(all);
  return r;
}

// Tuning's warnings always, and each choice with --verbose, on stderr.
TuningReport print_tuning_log(const Session& s, bool verbose) {
  TuningReport r = s.tuning_report();
  for (const auto& line : r.log) std::fprintf(stderr, "runmodel: %s\n", line.c_str());
  if (verbose)
    for (const auto& c : r.choices) std::fprintf(stderr, "tuning: %s\n", to_string(c).c_str());
  return r;
}

// The process's own peak resident set: VmHWM of /proc/self/status, which
// belongs to this address space. (getrusage's ru_maxrss survives exec on
// Linux: started from a big parent, it would report the parent's peak.)
long peak_rss_kib() {
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    std::fclose(f);
    if (kib >= 0) return kib;
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

int run(const Args& a) {
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };

  // A thread count past the ceiling is a typo: said before anything is loaded.
  if (std::string why = tools::threads_problem(a.threads); !why.empty()) {
    std::fprintf(stderr, "runmodel: %s\n(see runmodel --help)\n", why.c_str());
    return kUsage;
  }
  auto t0 = clock::now();
  std::shared_ptr<const Model> model;
  try {
    model = Model::load(a.model);
  } catch (const Error& e) {
    std::fprintf(stderr, "runmodel: %s\n", e.what());
    return kLoadError;
  }
  double load_ms = ms(clock::now() - t0);

  SessionOptions so;
  so.device = a.device;
  so.math = a.math;
  so.threads = a.threads;
  so.run_timeout_seconds = a.run_timeout;
  so.optimize = a.optimize;
  so.layout = a.layout;
  so.profile = !a.profile.empty() || !a.profile_svg.empty();
  so.memory_limit = a.memory_limit;
  so.memory_policy = a.memory_policy;
  so.preallocate_fraction = a.preallocate_fraction;
  so.tuning = a.tuning;
  so.tuning_algorithm = a.tuning_algorithm;
  so.tune_in_background = a.tune_in_background;
  so.algo_cache_path = a.algo_cache;
  so.workspace_limit = a.workspace_limit;

  // Inputs: files where given, else seeded random data of the declared shape.
  auto declared = [&](const std::string& name) {
    return std::any_of(model->inputs().begin(), model->inputs().end(),
                       [&](const ValueDesc& d) { return d.name == name; });
  };
  for (const auto& kv : a.input_files)
    if (!declared(kv.first)) {
      std::fprintf(stderr, "runmodel: --input %s: the model has no input of that name\n", kv.first.c_str());
      return kRunError;
    }
  for (const auto& kv : a.shapes)
    if (!declared(kv.first)) {
      std::fprintf(stderr, "runmodel: --shape %s: the model has no input of that name\n", kv.first.c_str());
      return kRunError;
    }
  std::mt19937_64 rng(a.seed);
  NamedTensors inputs;
  std::vector<std::string> input_notes;
  for (const auto& d : model->inputs()) {
    auto f = a.input_files.find(d.name);
    if (f != a.input_files.end()) {
      std::string converted;
      try {
        Tensor t = tools::read_npy(f->second);
        // A float32 file for a float16 / bfloat16 input (NumPy has no
        // bfloat16): rounded to the input's type, and said so.
        if (t.dtype() == DType::kFloat32 && is_half_dtype(d.dtype)) {
          t = from_float32(t, d.dtype);
          converted = std::string(" (float32 rounded to ") + dtype_name(d.dtype) + ")";
        }
        inputs.emplace_back(d.name, std::move(t));
      } catch (const Error& e) {
        std::fprintf(stderr, "runmodel: --input %s: %s\n", d.name.c_str(), e.what());
        return kRunError;
      }
      input_notes.push_back(d.name + " " + dtype_name(d.dtype) + " " + shape_str(inputs.back().second.shape()) +
                            " from " + f->second + converted);
      continue;
    }
    Shape shape = d.dims;
    std::string note;
    auto s = a.shapes.find(d.name);
    if (s != a.shapes.end()) {
      shape = s->second;
    } else {
      for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i] < 0) {
          shape[i] = 1;
          note += " (" + (d.dim_params[i].empty() ? "dimension " + std::to_string(i) : "'" + d.dim_params[i] + "'") +
                  " set to 1; use --shape)";
        }
    }
    inputs.emplace_back(d.name, random_input(d, shape, rng));
    input_notes.push_back(d.name + " " + dtype_name(d.dtype) + " " + shape_str(shape) + " random (seed " +
                          std::to_string(a.seed) + ")" + note);
  }

  if (!a.compare.empty()) {
    std::vector<tools::CompareRun> runs;
    try {
      runs = tools::parse_compare(a.compare, so);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "runmodel: %s\n(see runmodel --help)\n", e.what());
      return kUsage;
    }
    tools::CompareSettings cs;
    cs.warmup = a.warmup;
    cs.iterations = a.iterations;
    cs.rtol = a.rtol;
    cs.atol = a.atol;
    tools::CompareReport rep = tools::compare_runs(model, inputs, runs, cs);
    rep.load_ms = load_ms;
    std::string out = a.json ? tools::compare_json(rep) : tools::compare_text(rep);
    std::fputs(out.c_str(), stdout);
    if (rep.reference < 0) return kDeviceError;
    if (rep.failed) return kRunError;
    return rep.agree ? kOk : kDisagree;
  }

  std::unique_ptr<Session> session;
  double session_ms = 0;
  try {
    const auto s0 = clock::now();
    session = std::make_unique<Session>(model, so);
    session_ms = ms(clock::now() - s0);
  } catch (const Error& e) {
    print_error(e);
    if (e.code() == ErrorCode::kDeviceUnavailable) return kDeviceError;
    if (e.code() == ErrorCode::kInvalidArgument) return kUsage;  // a setting the library refuses
    return run_exit(e);
  }

  std::vector<Tensor> outputs;
  double first_ms = 0;
  double tuning_wait_ms = -1;  // --wait-tuning's wait
  std::vector<double> lat;
  std::vector<std::vector<StepTiming>> traces;
  // The device's own timing of each timed run (CUDA events), per phase.
  DeviceTimes dev_sum;
  int dev_runs = 0;
  try {
    auto f0 = clock::now();
    session->run(inputs, outputs);
    first_ms = ms(clock::now() - f0);
    if (a.wait_tuning) {
      auto w0 = clock::now();
      if (session->tuning_report().pending)
        std::fprintf(stderr, "runmodel: waiting for background tuning (--wait-tuning)\n");
      session->wait_for_tuning();
      tuning_wait_ms = ms(clock::now() - w0);
    }
    for (int i = 0; i < a.warmup; ++i) session->run(inputs, outputs);
    auto start = clock::now();
    while (static_cast<int>(lat.size()) < a.iterations ||
           std::chrono::duration<double>(clock::now() - start).count() < a.duration) {
      auto r0 = clock::now();
      session->run(inputs, outputs);
      lat.push_back(ms(clock::now() - r0));
      if (so.profile && traces.size() < 1000) traces.push_back(session->last_profile());
      for (const DeviceTimes& d : session->device_times()) {
        if (!d.valid) continue;
        dev_sum.h2d_ms += d.h2d_ms;
        dev_sum.compute_ms += d.compute_ms;
        dev_sum.d2h_ms += d.d2h_ms;
        dev_sum.h2d_copies = d.h2d_copies;
        dev_sum.kernels = d.kernels;
        dev_sum.d2h_copies = d.d2h_copies;
        ++dev_runs;
      }
    }
  } catch (const Error& e) {
    print_tuning_log(*session, a.verbose);
    print_error(e);
    return run_exit(e);
  }
  const TuningReport tuning = print_tuning_log(*session, a.verbose);

  if (!a.output_dir.empty()) {
    try {
      fs::create_directories(a.output_dir);
      for (size_t i = 0; i < outputs.size(); ++i) {
        std::string name = model->outputs()[i].name;
        std::replace_if(
            name.begin(), name.end(), [](char c) { return c == '/' || c == '\\' || c == ':'; }, '_');
        // bfloat16 has no .npy type: written as its exact float32 values.
        const Tensor& y = outputs[i].dtype() == DType::kBFloat16 ? to_float32(outputs[i]) : outputs[i];
        tools::write_npy((fs::path(a.output_dir) / (name + ".npy")).string(), y);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "runmodel: --output-dir: %s\n", e.what());
      return kOutputError;
    }
  }

  // Per-op totals over the timed runs, and the Chrome trace.
  std::vector<std::pair<std::string, double>> op_totals;
  std::string device_clocks;  // the devices whose steps were timed on their own clock
  if (so.profile) {
    std::ofstream file;
    if (!a.profile.empty()) {
      file.open(a.profile);
      if (!file) {
        std::fprintf(stderr, "runmodel: --profile: cannot write %s\n", a.profile.c_str());
        return kOutputError;
      }
    }
    std::ostringstream f;  // the trace, written to the file (if any) at the end
    std::map<std::string, double> by_op;
    // One track per clock: the host's (tid 1), and each device that timed
    // its own steps (tid 2, 3, ...), named in the trace's metadata. A step
    // that ran off the CPU is summed under "op @device".
    std::map<std::string, int> tracks;
    f << "{\"traceEvents\":[\n";
    double offset = 0;
    bool first = true;
    for (size_t it = 0; it < traces.size(); ++it) {
      double end = 0;
      for (const auto& s : traces[it]) {
        const std::string track = s.device_clock ? s.device : std::string("host");
        const int tid = tracks.emplace(track, static_cast<int>(tracks.size()) + 1).first->second;
        f << (first ? "" : ",\n") << "{\"name\":" << json_str(s.name) << ",\"cat\":" << json_str(s.op)
          << ",\"ph\":\"X\",\"pid\":1,\"tid\":" << tid << ",\"ts\":" << offset + s.start_us
          << ",\"dur\":" << s.duration_us << ",\"args\":{\"op\":" << json_str(s.op)
          << ",\"shapes\":" << json_str(s.shapes) << ",\"device\":" << json_str(s.device)
          << ",\"clock\":" << json_str(s.device_clock ? "device" : "host") << ",\"iteration\":" << it << "}}";
        first = false;
        end = std::max(end, s.start_us + s.duration_us);
        const std::string key = s.device.empty() || s.device == "cpu" ? s.op : s.op + " @" + s.device;
        by_op[key] += s.duration_us / 1000.0 / static_cast<double>(traces.size());
      }
      offset += end + 10;
    }
    for (const auto& [track, tid] : tracks) {
      const std::string label = track == "host" ? "host clock (cpu steps, and any device's enqueue)"
                                                : track + " (its own clock: events around each step)";
      f << (first ? "" : ",\n") << "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid
        << ",\"args\":{\"name\":" << json_str(label) << "}}";
      first = false;
    }
    f << "\n],\"displayTimeUnit\":\"ms\"}\n";
    for (const auto& [track, tid] : tracks)
      if (track != "host") device_clocks += (device_clocks.empty() ? "" : ", ") + track;
    if (file.is_open()) {
      file << f.str();
      file.close();
      if (!file) {
        std::fprintf(stderr, "runmodel: --profile: write to %s failed\n", a.profile.c_str());
        return kOutputError;
      }
    }
    if (!a.profile_svg.empty()) {
      std::ofstream chart(a.profile_svg);
      chart << tools::profile_chart(
          traces, "runmodel --profile-svg: " + a.model + " on " + std::string(device_name(session->device())) + " (" +
                      std::to_string(session->threads()) + (session->threads() == 1 ? " thread)" : " threads)"));
      chart.close();
      if (!chart) {
        std::fprintf(stderr, "runmodel: --profile-svg: cannot write %s\n", a.profile_svg.c_str());
        return kOutputError;
      }
    }
    op_totals.assign(by_op.begin(), by_op.end());
    std::sort(op_totals.begin(), op_totals.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  }

  double total_ms = 0;
  for (double l : lat) total_ms += l;
  double mean = total_ms / static_cast<double>(lat.size());
  std::vector<TopK> tops;
  for (size_t i = 0; i < outputs.size(); ++i) tops.push_back(top_k(model->outputs()[i].name, outputs[i], a.top_k));
  const ModelInfo& info = model->info();
  const MemoryStats mem = session->memory_stats();
  const std::string placement = session->placement();
  auto dev_mean = [&](double total) { return dev_runs ? total / dev_runs : 0.0; };
  char policy_buf[48];
  std::snprintf(policy_buf, sizeof policy_buf, "preallocate:%g", a.preallocate_fraction);
  const std::string policy = a.memory_policy == MemoryPolicy::kGrow ? std::string("grow") : policy_buf;

  if (a.json) {
    std::ostringstream o;
    o << "{\"model\":" << json_str(a.model) << ",\"ir_version\":" << info.ir_version << ",\"opset\":" << info.opset
      << ",\"producer\":" << json_str(info.producer) << ",\"half_precision\":" << json_str(info.half_precision)
      << ",\"device\":" << json_str(device_name(session->device()))
      << ",\"device_reason\":" << json_str(session->device_reason())
      << ",\"cpu_math\":" << json_str(session->math_reason()) << ",\"threads\":" << session->threads()
      << ",\"load_ms\":" << load_ms << ",\"session_ms\":" << session_ms << ",\"first_run_ms\":" << first_ms
      << ",\"iterations\":" << lat.size() << ",\"warmup\":" << a.warmup
      << ",\"latency_ms\":{\"min\":" << *std::min_element(lat.begin(), lat.end()) << ",\"mean\":" << mean
      << ",\"median\":" << tools::percentile(lat, 50) << ",\"p90\":" << tools::percentile(lat, 90)
      << ",\"p99\":" << tools::percentile(lat, 99) << ",\"max\":" << *std::max_element(lat.begin(), lat.end())
      << "},\"latencies_ms\":[";
    for (size_t i = 0; i < lat.size(); ++i) o << (i ? "," : "") << lat[i];
    o << "],\"throughput_per_s\":" << 1000.0 / mean << ",\"arena_bytes\":" << session->arena_bytes()
      << ",\"peak_rss_kib\":" << peak_rss_kib() << ",\"outputs\":[";
    for (size_t i = 0; i < tops.size(); ++i) {
      o << (i ? "," : "") << "{\"name\":" << json_str(tops[i].name)
        << ",\"dtype\":" << json_str(dtype_name(tops[i].dtype)) << ",\"shape\":[";
      for (size_t k = 0; k < tops[i].shape.size(); ++k) o << (k ? "," : "") << tops[i].shape[k];
      o << "],\"top_k\":[";
      for (size_t k = 0; k < tops[i].best.size(); ++k)
        o << (k ? "," : "") << "{\"index\":" << tops[i].best[k].first << ",\"value\":" << tops[i].best[k].second << "}";
      o << "]}";
    }
    o << "]";
    if (!op_totals.empty()) {
      o << ",\"per_op_ms\":{";
      for (size_t i = 0; i < op_totals.size(); ++i)
        o << (i ? "," : "") << json_str(op_totals[i].first) << ":" << op_totals[i].second;
      o << "}";
    }
    if (!placement.empty()) o << ",\"placement\":" << json_str(placement);
    o << ",\"tuning\":{\"mode\":" << json_str(tuning_mode_name(tuning.mode))
      << ",\"cache\":" << json_str(tuning.cache_path) << ",\"convolutions\":" << tuning.nodes
      << ",\"measured\":" << tuning.measured << ",\"from_cache\":" << tuning.from_cache
      << ",\"heuristic\":" << tuning.heuristic << ",\"fixed\":" << tuning.fixed << ",\"seconds\":" << tuning.seconds
      << ",\"pending\":" << tuning.pending << ",\"wait_ms\":" << tuning_wait_ms << ",\"swaps\":[";
    for (size_t i = 0; i < tuning.swaps.size(); ++i) {
      const PlanSwap& w = tuning.swaps[i];
      o << (i ? "," : "") << "{\"seconds\":" << w.seconds << ",\"tuning_seconds\":" << w.tuning_seconds
        << ",\"runs_before\":" << w.runs_before << ",\"measured\":" << w.measured << ",\"changed\":" << w.changed
        << ",\"before_ms\":" << w.before_ms << ",\"after_ms\":" << w.after_ms << "}";
    }
    o << "],\"choices\":[";
    for (size_t i = 0; i < tuning.choices.size(); ++i) {
      const TuningChoice& c = tuning.choices[i];
      o << (i ? "," : "") << "{\"node\":" << json_str(c.node) << ",\"summary\":" << json_str(c.summary)
        << ",\"algorithm\":" << json_str(c.algorithm) << ",\"source\":" << json_str(choice_source_name(c.source))
        << ",\"workspace_bytes\":" << c.workspace_bytes;
      if (c.time_ms >= 0) o << ",\"time_ms\":" << c.time_ms;
      o << "}";
    }
    o << "],\"log\":[";
    for (size_t i = 0; i < tuning.log.size(); ++i) o << (i ? "," : "") << json_str(tuning.log[i]);
    o << "]}";
    if (dev_runs)
      o << ",\"device_time_ms\":{\"h2d\":" << dev_mean(dev_sum.h2d_ms)
        << ",\"compute\":" << dev_mean(dev_sum.compute_ms) << ",\"d2h\":" << dev_mean(dev_sum.d2h_ms)
        << ",\"runs\":" << dev_runs << ",\"h2d_copies\":" << dev_sum.h2d_copies << ",\"kernels\":" << dev_sum.kernels
        << ",\"d2h_copies\":" << dev_sum.d2h_copies << "}";
    if (a.memory_stats) {
      auto pool_json = [&](const MemoryStats& m) {
        o << "{\"policy\":" << json_str(policy) << ",\"limit_bytes\":" << m.limit_bytes
          << ",\"reserved_bytes\":" << m.reserved_bytes << ",\"in_use_bytes\":" << m.in_use_bytes
          << ",\"peak_in_use_bytes\":" << m.peak_in_use_bytes << ",\"segments\":" << m.segments
          << ",\"largest_free_block_bytes\":" << m.largest_free_block_bytes << ",\"fragmentation\":" << m.fragmentation
          << ",\"allocations\":" << m.allocations << ",\"frees\":" << m.frees << "}";
      };
      o << ",\"memory_pool\":";
      pool_json(mem);
      o << ",\"device_memory_pools\":{";
      bool first = true;
      for (const DeviceMemoryStats& d : session->device_memory_stats()) {
        o << (first ? "" : ",") << json_str(d.device) << ":";
        pool_json(d.stats);
        first = false;
      }
      const WeightStats w = session->weight_stats();
      o << "},\"weights\":{\"model_bytes\":" << w.model_bytes << ",\"model_resident_bytes\":" << w.model_resident_bytes
        << ",\"plan_bytes\":" << w.plan_bytes << ",\"packed_bytes\":" << w.packed_bytes
        << ",\"released_constants\":" << w.released_constants << "}";
    }
    o << "}\n";
    std::fputs(o.str().c_str(), stdout);
    if (a.print_plan) std::fputs(session->plan_report().c_str(), stderr);
    return kOk;
  }

  std::printf("model: %s (IR %lld, opset %lld, %s, %zu nodes)\n", a.model.c_str(),
              static_cast<long long>(info.ir_version), static_cast<long long>(info.opset),
              info.producer.empty() ? "unknown producer" : info.producer.c_str(), info.node_count);
  if (!info.half_precision.empty()) std::printf("precision: %s\n", info.half_precision.c_str());
  std::printf("device: %s: %s\n", device_name(session->device()), session->device_reason().c_str());
  if (std::string m = session->math_reason(); !m.empty()) std::printf("cpu math: %s\n", m.c_str());
  if (std::string q = session->int8_summary(); !q.empty()) std::printf("precision: %s\n", q.c_str());
  std::printf("threads: %d\n", session->threads());
  if (!placement.empty()) std::printf("placement: %s\n", placement.c_str());
  for (const auto& n : input_notes) std::printf("input: %s\n", n.c_str());
  if (a.print_plan) std::fputs(session->plan_report().c_str(), stdout);
  std::printf("load: %.2f ms\n", load_ms);
  std::printf("first run: %.2f ms (includes planning%s)\n", first_ms,
              tuning.measured && tuning.swaps.empty() ? " and tuning" : "");
  std::printf("tuning: %s\n", tools::tuning_summary(tuning).c_str());
  for (const std::string& line : tools::swap_lines(tuning, lat, a.warmup, tuning_wait_ms))
    std::printf("tuning: %s\n", line.c_str());
  std::printf(
      "latency over %zu runs (after %d warm-up): min %.3f  mean %.3f  median %.3f  p90 %.3f  p99 %.3f  max %.3f ms\n",
      lat.size(), a.warmup, *std::min_element(lat.begin(), lat.end()), mean, tools::percentile(lat, 50),
      tools::percentile(lat, 90), tools::percentile(lat, 99), *std::max_element(lat.begin(), lat.end()));
  std::printf("throughput: %.2f inferences/s\n", 1000.0 / mean);
  if (dev_runs)
    std::printf(
        "device time per run (CUDA events, mean of %d): H2D %.3f ms (%d copies), compute %.3f ms (%d steps), "
        "D2H %.3f ms (%d copies)\n",
        dev_runs, dev_mean(dev_sum.h2d_ms), dev_sum.h2d_copies, dev_mean(dev_sum.compute_ms), dev_sum.kernels,
        dev_mean(dev_sum.d2h_ms), dev_sum.d2h_copies);
  std::printf("memory: arena %.2f MiB, peak RSS %.1f MiB\n", session->arena_bytes() / 1048576.0,
              peak_rss_kib() / 1024.0);
  for (const auto& t : tops) {
    std::printf("output '%s': %s %s\n", t.name.c_str(), dtype_name(t.dtype), shape_str(t.shape).c_str());
    if (!t.best.empty()) {
      std::printf("  top-%zu%s:\n", t.best.size(),
                  t.shape.size() >= 2 && t.shape[0] > 1 ? " (first item of the batch)" : "");
      for (size_t k = 0; k < t.best.size(); ++k)
        std::printf("    #%zu  index %-6lld %.6g\n", k + 1, static_cast<long long>(t.best[k].first), t.best[k].second);
    }
  }
  if (a.memory_stats) {
    auto print_pool = [&](const char* name, const MemoryStats& m) {
      std::printf("%s: policy %s, limit %s\n", name, policy.c_str(),
                  m.limit_bytes ? tools::human_bytes(m.limit_bytes).c_str() : "none");
      std::printf("  reserved %s in %zu segment%s, in use %s, peak in use %s\n",
                  tools::human_bytes(m.reserved_bytes).c_str(), m.segments, m.segments == 1 ? "" : "s",
                  tools::human_bytes(m.in_use_bytes).c_str(), tools::human_bytes(m.peak_in_use_bytes).c_str());
      std::printf("  largest free block %s, fragmentation %.1f%%, %llu allocation%s, %llu free%s\n",
                  tools::human_bytes(m.largest_free_block_bytes).c_str(), 100.0 * m.fragmentation,
                  static_cast<unsigned long long>(m.allocations), m.allocations == 1 ? "" : "s",
                  static_cast<unsigned long long>(m.frees), m.frees == 1 ? "" : "s");
    };
    print_pool("memory pool", mem);
    for (const DeviceMemoryStats& d : session->device_memory_stats())
      print_pool((d.device + " memory pool").c_str(), d.stats);
    const WeightStats w = session->weight_stats();
    std::printf(
        "weights: model %s as loaded, %s of it in memory now; packed %s; folded by the plans %s (%zu "
        "constants let go once packed)\n",
        tools::human_bytes(w.model_bytes).c_str(), tools::human_bytes(w.model_resident_bytes).c_str(),
        tools::human_bytes(w.packed_bytes).c_str(), tools::human_bytes(w.plan_bytes).c_str(), w.released_constants);
  }
  if (!op_totals.empty()) {
    double sum = 0;
    for (const auto& p : op_totals) sum += p.second;
    std::printf("per-op time (mean per run, from %s%s%s):\n",
                a.profile.empty() ? a.profile_svg.c_str() : a.profile.c_str(),
                device_clocks.empty() ? "" : "; steps on ",
                device_clocks.empty() ? "" : (device_clocks + " timed by the device itself").c_str());
    for (const auto& [op, t] : op_totals) std::printf("  %-28s %9.3f ms  %5.1f%%\n", op.c_str(), t, 100.0 * t / sum);
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "runmodel: %s\n(see runmodel --help)\n", e.what());
    return kUsage;
  }
  try {
    return run(a);
  } catch (const Error& e) {
    std::fprintf(stderr, "runmodel: %s\n", e.what());
    return kRunError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runmodel: unexpected error: %s\n", e.what());
    return kRunError;
  }
}
