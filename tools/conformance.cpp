// minirt-conformance: runs ONNX backend test cases (a folder with model.onnx
// and test_data_set_*/input_*.pb, output_*.pb) and compares minirt's
// outputs with the expected ones.
//
//   minirt-conformance /usr/share/libonnx-testdata/data/node
//   minirt-conformance --expect-skips tests/conformance_skips.txt
//                      --known-differences tests/conformance_known.txt DIR...
//
// Ends with "N passed, M failed, K skipped". Exit status: 0 when nothing
// failed (and, with --expect-skips, the skipped set is the expected one),
// 1 when a case failed, 2 on bad usage. A case listed as a known difference
// (where the test data disagrees with the spec and onnxruntime) that fails
// is reported as skipped with the recorded reason; one that passes is an
// error, so the list stays true.
//
//   minirt-conformance --device cuda --reference cpu DIR...
//
// runs each case on the GPU (a Device::kAuto session that must have got the
// GPU, through the public API) and on the CPU and compares the two, with the tolerance of the case's op family
// (tools/gpu_tolerance.h: the table tests/gpu/test_gpu_ops.cpp uses). A case
// some of whose nodes the GPU declined (they ran on the CPU) is reported as
// FALLBACK with the placement line, apart from the passes. Ends with "N
// passed on cuda, F passed with nodes on the CPU, M failed, K skipped".
// Exit status: 0 nothing failed, 1 a case failed, 2 bad usage, 3 skipped:
// no usable GPU here (the first line says "skipped: no usable GPU: " and the
// gate's or the module loader's sentence).
#include <minirt/minirt.h>

#include "loaders/onnx/onnx_loader.h"
#include "loaders/onnx/onnx_subset.pb.h"
#include "tools/cli_util.h"
#include "tools/gpu_tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace minirt;

namespace {

struct Options {
  std::vector<std::string> dirs;
  std::string filter;
  std::string expect_skips;
  std::string write_skips;
  std::string known;
  double rtol = 1e-3, atol = 1e-5;
  bool tol_given = false;  // --rtol or --atol: used instead of the GPU's table
  int threads = 1;
  bool verbose = false;
  bool gpu = false;                         // --device cuda --reference cpu
  MathMode math = MathMode::kFp32;          // --math: the CPU session's (bf16)
  TuningMode tuning = TuningMode::kCached;  // --tune
  std::string tuning_algorithm;
  // --scaled-error X: a float output passes when max|got - want| / max|want| <= X
  // (instead of the element-wise tolerance), and a [N, classes] output keeps
  // each row's largest class; negative: not used.
  double scaled = -1;
};

// Exit status of the GPU mode when no GPU is usable here.
constexpr int kExitNoGpu = 3;

enum class Outcome { kPass, kFail, kSkip, kFallback };

// No GPU session can be had here: every case would skip for it.
struct NoGpu {
  std::string why;
};

struct Result {
  Outcome outcome;
  std::string reason;
};

// `units`: how far an int8/uint8 output may be from the expected one (1 for
// a model that quantizes: issue 25's "within one unit of the last place",
// since a float product rounded to the output scale may land on the other
// side of a half where an int32 one does not).
std::string compare(const Tensor& got_in, const Tensor& want_in, double rtol, double atol, int units = 0) {
  if (got_in.dtype() != want_in.dtype())
    return std::string("dtype ") + dtype_name(got_in.dtype()) + ", expected " + dtype_name(want_in.dtype());
  if (got_in.shape() != want_in.shape())
    return "shape " + shape_str(got_in.shape()) + ", expected " + shape_str(want_in.shape());
  // float16 and bfloat16 are compared as their (exact) float32 values.
  const Tensor got = to_float32(got_in), want = to_float32(want_in);
  int64_t n = got.numel();
  if (units > 0 && (got.dtype() == DType::kInt8 || got.dtype() == DType::kUInt8)) {
    const bool is_signed = got.dtype() == DType::kInt8;
    auto at = [&](const Tensor& t, int64_t i) {
      return is_signed ? static_cast<int>(static_cast<const int8_t*>(t.raw())[i])
                       : static_cast<int>(static_cast<const uint8_t*>(t.raw())[i]);
    };
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (std::abs(at(got, i) - at(want, i)) > units && ++bad == 1) first = i;
    if (!bad) return {};
    return std::to_string(bad) + " of " + std::to_string(n) + " values more than " + std::to_string(units) +
           " unit off (first at " + std::to_string(first) + ": got " + std::to_string(at(got, first)) + ", expected " +
           std::to_string(at(want, first)) + ")";
  }
  if (got.dtype() != DType::kFloat32) {
    if (got.nbytes() && std::memcmp(got.raw(), want.raw(), got.nbytes()) != 0) return "values differ";
    return {};
  }
  const float* a = got.data<float>();
  const float* b = want.data<float>();
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isinf(b[i]) && a[i] == b[i]) continue;
    double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= atol + rtol * std::fabs(b[i]))) {
      if (first < 0) first = i;
      ++bad;
      worst = std::max(worst, d);
    }
  }
  if (!bad) return {};
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld of %lld values off (first at %lld: got %g, expected %g; max abs diff %g)",
                static_cast<long long>(bad), static_cast<long long>(n), static_cast<long long>(first), a[first],
                b[first], worst);
  return buf;
}

// max|got - want| / max|want| over a float output (0 when want is all zeros
// and got equals it), and, for [N, classes] outputs of 10 classes or more,
// whether each row's argmax is the same.
struct Scaled {
  double error = 0;
  bool top1_kept = true;
  bool classes = false;
};
bool floating(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }
std::optional<Scaled> scaled_error(const Tensor& got_in, const Tensor& want_in) {
  if (got_in.shape() != want_in.shape() || !floating(got_in.dtype()) || !floating(want_in.dtype())) return std::nullopt;
  const Tensor got = to_float32(got_in), want = to_float32(want_in);
  const float* a = got.data<float>();
  const float* b = want.data<float>();
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    ref = std::max(ref, std::fabs(static_cast<double>(b[i])));
  }
  Scaled s;
  s.error = ref > 0 ? diff / ref : (diff > 0 ? INFINITY : 0.0);
  if (std::isnan(diff)) s.error = INFINITY;
  const Shape& sh = got.shape();
  if (sh.size() == 2 && sh[1] >= 10) {
    s.classes = true;
    for (int64_t r = 0; r < sh[0]; ++r) {
      const float* ar = a + r * sh[1];
      const float* br = b + r * sh[1];
      if (std::max_element(ar, ar + sh[1]) - ar != std::max_element(br, br + sh[1]) - br) s.top1_kept = false;
    }
  }
  return s;
}

// A test-data tensor for a value the model declares as `expect`. ONNX's
// older generators (the Debian 1.12 data among them) wrote bfloat16 data as
// UINT16 tensors holding the bit patterns, since NumPy has no bfloat16: for
// a bfloat16 input or output those are read as bfloat16.
Tensor load_data(const fs::path& path, DType expect, std::string* name = nullptr) {
  if (expect == DType::kBFloat16) {
    std::string bytes = onnx::read_file_bytes(path.string());
    onnx::TensorProto tp;
    if (tp.ParseFromString(bytes) && tp.data_type() == onnx::TensorProto::UINT16) {
      tp.set_data_type(onnx::TensorProto::BFLOAT16);
      return onnx::parse_tensor_bytes(tp.SerializeAsString().data(), tp.ByteSizeLong(), path.string(), name);
    }
  }
  return onnx::load_tensor_file(path.string(), name);
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> found = tools::numbered_entries(dir.string(), prefix);
  return {found.begin(), found.end()};
}

// The input_*.pb files of one test_data_set_* folder, named as the model
// declares them (a file whose tensor has no name, or another, takes the
// declared name of its position). An unreadable or unsupported file is the
// case's outcome.
std::optional<Result> load_inputs(const fs::path& set, const Model& model, NamedTensors& inputs) {
  auto in_files = sorted_files(set, "input_");
  const auto& declared = model.inputs();
  if (in_files.size() != declared.size())
    return Result{Outcome::kFail, set.filename().string() + ": " + std::to_string(in_files.size()) +
                                      " input files for " + std::to_string(declared.size()) + " graph inputs"};
  for (size_t i = 0; i < in_files.size(); ++i) {
    std::string name;
    Tensor t;
    try {
      t = load_data(in_files[i], declared[i].dtype, &name);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kUnsupported) return Result{Outcome::kSkip, e.what()};
      return Result{Outcome::kFail, e.what()};
    }
    bool known = std::any_of(declared.begin(), declared.end(), [&](const ValueDesc& d) { return d.name == name; });
    inputs.emplace_back(known ? name : declared[i].name, std::move(t));
  }
  return std::nullopt;
}

// The case's model.onnx; a model minirt refuses as unsupported is a skip,
// any other error a failure.
std::optional<Result> load_model(const fs::path& dir, std::shared_ptr<const Model>& model) {
  try {
    model = Model::load((dir / "model.onnx").string());
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return Result{Outcome::kSkip, e.what()};
    return Result{Outcome::kFail, e.what()};
  }
  return std::nullopt;
}

// Whether model.onnx quantizes (QuantizeLinear, DynamicQuantizeLinear or
// a QLinear op): its 8-bit outputs may be one unit off (see compare()).
bool quantizes(const fs::path& model_file) {
  onnx::ModelProto mp;
  if (!mp.ParseFromString(onnx::read_file_bytes(model_file.string()))) return false;
  for (const auto& n : mp.graph().node()) {
    const std::string& op = n.op_type();
    if (op == "QuantizeLinear" || op == "DynamicQuantizeLinear" || op.rfind("QLinear", 0) == 0 || op == "QGemm")
      return true;
  }
  return false;
}

Result run_case(const fs::path& dir, const Options& opt) {
  std::shared_ptr<const Model> model;
  if (std::optional<Result> bad = load_model(dir, model)) return *bad;
  const int units = quantizes(dir / "model.onnx") ? 1 : 0;
  SessionOptions so;
  so.device = Device::kCpu;
  so.threads = opt.threads;
  so.math = opt.math;
  so.tuning = opt.tuning;
  so.tuning_algorithm = opt.tuning_algorithm;
  Session session(model, so);
  std::string note;  // --scaled-error: each output's, for --verbose
  auto sets = sorted_files(dir, "test_data_set_");
  if (sets.empty()) return {Outcome::kSkip, "no test_data_set_* folders"};
  for (const auto& set : sets) {
    NamedTensors inputs;
    if (std::optional<Result> bad = load_inputs(set, *model, inputs)) return *bad;
    std::vector<Tensor> outputs;
    try {
      outputs = session.run(inputs);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kUnsupported) return {Outcome::kSkip, e.what()};
      return {Outcome::kFail, e.what()};
    }
    auto out_files = sorted_files(set, "output_");
    if (out_files.size() != outputs.size())
      return {Outcome::kFail,
              std::to_string(outputs.size()) + " outputs, " + std::to_string(out_files.size()) + " expected"};
    for (size_t i = 0; i < out_files.size(); ++i) {
      Tensor want;
      try {
        want = load_data(out_files[i], model->outputs()[i].dtype);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kUnsupported) return {Outcome::kSkip, e.what()};
        return {Outcome::kFail, e.what()};
      }
      const std::string where =
          set.filename().string() + ", output " + std::to_string(i) + " ('" + model->outputs()[i].name + "'): ";
      if (opt.scaled >= 0) {
        if (std::optional<Scaled> s = scaled_error(outputs[i], want)) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "scaled error %.3g%s", s->error,
                        !s->classes    ? ""
                        : s->top1_kept ? ", top-1 kept"
                                       : ", top-1 CHANGED");
          if (!(s->error <= opt.scaled)) return {Outcome::kFail, where + buf + ", above " + std::to_string(opt.scaled)};
          if (!s->top1_kept) return {Outcome::kFail, where + buf};
          note += (note.empty() ? "" : "; ") + std::string(model->outputs()[i].name) + " " + buf;
          continue;
        }
      }
      std::string diff = compare(outputs[i], want, opt.rtol, opt.atol, units);
      if (!diff.empty()) return {Outcome::kFail, where + diff};
    }
  }
  return {Outcome::kPass, note};
}

// The loosest tolerance of the case's nodes (tools/gpu_tolerance.h), read
// from model.onnx itself.
tools::GpuTolerance case_tolerance(const fs::path& model_file) {
  onnx::ModelProto mp;
  std::string bytes = onnx::read_file_bytes(model_file.string());
  tools::GpuTolerance t = tools::kGpuExact;
  if (!mp.ParseFromString(bytes)) return tools::kGpuOnCpu;
  for (const auto& n : mp.graph().node()) {
    std::string mode;
    for (const auto& a : n.attribute())
      if (a.name() == "mode") mode = a.s();
    const tools::GpuTolerance& nt = tools::gpu_tolerance(n.op_type(), mode);
    if (nt.rtol > t.rtol || (nt.rtol == t.rtol && nt.atol > t.atol)) t = nt;
  }
  return t;
}

// Nodes on `device` in a placement line: "placed 3 nodes on cuda, 1 node on
// cpu (Cast: ...)" gives 1 for "cpu".
int placed_on(const std::string& placement, const std::string& device) {
  std::string counts = placement.substr(0, placement.find(" ("));
  if (counts.rfind("placed ", 0) != 0) return 0;
  std::istringstream items(counts.substr(7));
  std::string item;
  while (std::getline(items, item, ',')) {
    std::istringstream words(item);
    int n = 0;
    std::string node, on, name;
    if (words >> n >> node >> on >> name && name == device) return n;
  }
  return 0;
}

// Holds the GPU open across cases (run_case_gpu); main() lets it go before it
// returns, not static destruction (the CUDA runtime may be gone by then).
std::shared_ptr<Session> g_device_keeper;

Result run_case_gpu(const fs::path& dir, const Options& opt) {
  std::shared_ptr<const Model> model;
  if (std::optional<Result> bad = load_model(dir, model)) return *bad;
  tools::GpuTolerance tol = case_tolerance(dir / "model.onnx");
  if (opt.tol_given) tol = {"given", opt.atol, opt.rtol, "--atol/--rtol"};
  // kAuto, not kCuda: without a GPU the session says why in the gate's or
  // the module loader's own sentence ("running on the CPU: <why>"). The
  // heuristic's convolution algorithms: nothing measured (hundreds of cases
  // in a time budget), the algorithm cache untouched.
  auto gpu = std::make_shared<Session>(
      model, SessionOptions{.device = Device::kAuto, .threads = opt.threads, .tuning = TuningMode::kHeuristic});
  if (gpu->device() != Device::kCuda) {
    std::string why = gpu->device_reason();
    const std::string prefix = "running on the CPU: ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    throw NoGpu{why};
  }
  // The first GPU session stays alive until main() ends the run: sessions on
  // one device share its opened backend while any of them lives, so the
  // next cases reuse the module instance and its handles instead of opening
  // it again for every case.
  if (!g_device_keeper) g_device_keeper = gpu;
  Session cpu(model, SessionOptions{.device = Device::kCpu, .threads = opt.threads});
  auto sets = sorted_files(dir, "test_data_set_");
  if (sets.empty()) return {Outcome::kSkip, "no test_data_set_* folders"};
  std::string placement;
  for (const auto& set : sets) {
    NamedTensors inputs;
    if (std::optional<Result> bad = load_inputs(set, *model, inputs)) return *bad;
    std::vector<Tensor> want, got;
    try {
      want = cpu.run(inputs);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kUnsupported) return {Outcome::kSkip, std::string("on the CPU: ") + e.what()};
      return {Outcome::kFail, std::string("on the CPU: ") + e.what()};
    }
    try {
      got = gpu->run(inputs);
    } catch (const Error& e) {
      return {Outcome::kFail, std::string("on cuda: ") + e.what() + " [" + gpu->placement() + "]"};
    }
    placement = gpu->placement();
    if (got.size() != want.size())
      return {Outcome::kFail,
              std::to_string(got.size()) + " outputs on cuda, " + std::to_string(want.size()) + " on the CPU"};
    for (size_t i = 0; i < want.size(); ++i) {
      std::string diff = compare(got[i], want[i], tol.rtol, tol.atol);
      if (!diff.empty())
        return {Outcome::kFail, set.filename().string() + ", output " + std::to_string(i) + " ('" +
                                    model->outputs()[i].name + "'), tolerance " + tol.family + ": " + diff + " [" +
                                    placement + "]"};
    }
  }
  if (placed_on(placement, "cpu") > 0) return {Outcome::kFallback, placement};
  return {Outcome::kPass, placement};
}

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: minirt-conformance [options] DIR...\n"
               "  DIR is an ONNX backend test case (model.onnx + test_data_set_*) or a folder of them.\n"
               "options:\n"
               "  --filter TEXT         only cases whose name contains TEXT\n"
               "  --rtol X --atol X     float tolerance (default 1e-3 and 1e-5: |got-want| <= atol + rtol*|want|)\n"
               "  --threads N           intra-op threads (default 1)\n"
               "  --expect-skips FILE   fail unless the skipped cases are exactly those listed in FILE\n"
               "                        (one per line: the name, then optionally the reason)\n"
               "  --write-skips FILE    write the skipped cases' names and reasons to FILE\n"
               "  --known-differences FILE\n"
               "                        cases (one per line: NAME REASON) whose expected data is known to\n"
               "                        disagree with the spec and onnxruntime; their failure counts as a skip\n"
               "  --verbose             print passing cases too\n"
               "  --math fp32|bf16      the CPU session's math (default fp32; bf16: MathMode::kBf16)\n"
               "  --tune MODE           cached (default), exhaustive, heuristic, or an algorithm's name\n"
               "  --scaled-error X      a float output passes when max|got-want| / max|want| <= X, and a\n"
               "                        [N, classes] output (10 classes or more) keeps every row's top-1;\n"
               "                        --verbose prints each output's scaled error\n"
               "  --device cuda --reference cpu\n"
               "                        run each case on the GPU and compare with the CPU's run, with the\n"
               "                        tolerance of its op family (--print-tolerances; --rtol/--atol override);\n"
               "                        cases with nodes left on the CPU are reported as FALLBACK, apart\n"
               "  --print-tolerances    print the GPU-against-CPU tolerance of each op family and exit\n"
               "exit status: 0 all ran cases passed, 1 failures (or unexpected skips), 2 usage error,\n"
               "             3 (--device cuda) skipped: no usable GPU here, the reason on the first line\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::string device = "cpu", reference;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "minirt-conformance: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--filter")
      opt.filter = next();
    else if (a == "--rtol")
      opt.rtol = std::atof(next().c_str()), opt.tol_given = true;
    else if (a == "--atol")
      opt.atol = std::atof(next().c_str()), opt.tol_given = true;
    else if (a == "--device")
      device = next();
    else if (a == "--reference")
      reference = next();
    else if (a == "--print-tolerances") {
      std::printf("| family | atol | rtol | ops |\n| --- | --- | --- | --- |\n");
      for (const tools::GpuTolerance* t : tools::kGpuTolerances)
        std::printf("| %s | %g | %g | %s |\n", t->family, t->atol, t->rtol, t->why);
      return 0;
    } else if (a == "--threads") {
      std::string v = next();
      char* end = nullptr;
      long t = std::strtol(v.c_str(), &end, 10);
      std::string why =
          v.empty() || *end ? "--threads expects a whole number, got '" + v + "'" : minirt::tools::threads_problem(t);
      if (!why.empty()) {
        std::fprintf(stderr, "minirt-conformance: %s\n", why.c_str());
        return 2;
      }
      opt.threads = static_cast<int>(t);
    } else if (a == "--expect-skips")
      opt.expect_skips = next();
    else if (a == "--write-skips")
      opt.write_skips = next();
    else if (a == "--known-differences")
      opt.known = next();
    else if (a == "--verbose")
      opt.verbose = true;
    else if (a == "--math") {
      std::string v = next();
      if (v == "fp32")
        opt.math = MathMode::kFp32;
      else if (v == "bf16")
        opt.math = MathMode::kBf16;
      else {
        std::fprintf(stderr, "minirt-conformance: --math expects fp32 or bf16 (the CPU's), got '%s'\n", v.c_str());
        return 2;
      }
    } else if (a == "--tune") {
      std::string v = next();
      auto t = tools::parse_tuning(v);
      if (!t) {
        std::fprintf(stderr,
                     "minirt-conformance: --tune expects cached, exhaustive, heuristic or an algorithm, got '%s'\n",
                     v.c_str());
        return 2;
      }
      opt.tuning = t->mode;
      opt.tuning_algorithm = t->algorithm;
    } else if (a == "--scaled-error") {
      std::string v = next();
      char* end = nullptr;
      opt.scaled = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(opt.scaled >= 0)) {
        std::fprintf(stderr, "minirt-conformance: --scaled-error expects a number of 0 or more, got '%s'\n", v.c_str());
        return 2;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "minirt-conformance: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    } else
      opt.dirs.push_back(a);
  }
  if (device == "cuda" && (reference.empty() || reference == "cpu")) {
    opt.gpu = true;
  } else if (device != "cpu" || !(reference.empty() || reference == "expected")) {
    std::fprintf(stderr,
                 "minirt-conformance: --device %s --reference %s: the modes are --device cpu (against the expected "
                 "outputs) and --device cuda --reference cpu\n",
                 device.c_str(), reference.empty() ? "expected" : reference.c_str());
    return 2;
  }
  if (opt.gpu && (!opt.expect_skips.empty() || !opt.write_skips.empty() || !opt.known.empty())) {
    std::fprintf(stderr,
                 "minirt-conformance: --expect-skips, --write-skips and --known-differences are for --device cpu\n");
    return 2;
  }
  if (opt.dirs.empty()) {
    usage(stderr);
    return 2;
  }
  std::string bad;
  std::optional<std::vector<std::string>> found = tools::case_folders(opt.dirs, &bad);
  if (!found) {
    std::fprintf(stderr, "minirt-conformance: %s\n", bad.c_str());
    return 2;
  }
  std::vector<fs::path> cases(found->begin(), found->end());
  std::map<std::string, std::string> known;
  if (!opt.known.empty()) {
    std::ifstream f(opt.known);
    if (!f) {
      std::fprintf(stderr, "minirt-conformance: cannot read %s\n", opt.known.c_str());
      return 2;
    }
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      size_t sp = line.find_first_of(" \t");
      known[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
    }
  }
  int passed = 0, failed = 0, skipped = 0, fallback = 0;
  int status = 0;
  std::set<std::string> skipped_names;
  std::map<std::string, std::string> skip_reasons;
  for (const auto& c : cases) {
    std::string name = c.filename().string();
    if (!opt.filter.empty() && name.find(opt.filter) == std::string::npos) continue;
    Result r;
    try {
      r = opt.gpu ? run_case_gpu(c, opt) : run_case(c, opt);
    } catch (const NoGpu& e) {
      std::printf("skipped: no usable GPU: %s\n", e.why.c_str());
      size_t n = std::count_if(cases.begin(), cases.end(), [&](const fs::path& p) {
        return opt.filter.empty() || p.filename().string().find(opt.filter) != std::string::npos;
      });
      std::printf("0 passed on cuda, 0 passed with nodes on the CPU, 0 failed, %zu skipped (no usable GPU)\n", n);
      return kExitNoGpu;
    } catch (const std::exception& e) {
      r = {Outcome::kFail, std::string("unexpected exception: ") + e.what()};
    }
    auto k = known.find(name);
    if (k != known.end()) {
      if (r.outcome == Outcome::kFail) {
        r = {Outcome::kSkip, "known difference: " + k->second + " (" + r.reason + ")"};
      } else if (r.outcome == Outcome::kPass) {
        std::printf("NOW PASSING %s (listed in %s; remove it from the list)\n", name.c_str(), opt.known.c_str());
        status = 1;
      }
    }
    switch (r.outcome) {
      case Outcome::kPass:
        ++passed;
        if (opt.verbose) std::printf("PASS %s%s%s\n", name.c_str(), r.reason.empty() ? "" : ": ", r.reason.c_str());
        break;
      case Outcome::kFallback:
        ++fallback;
        std::printf("FALLBACK %s: %s\n", name.c_str(), r.reason.c_str());
        break;
      case Outcome::kFail:
        ++failed;
        std::printf("FAIL %s: %s\n", name.c_str(), r.reason.c_str());
        break;
      case Outcome::kSkip:
        ++skipped;
        skipped_names.insert(name);
        skip_reasons[name] = r.reason;
        std::printf("SKIP %s: %s\n", name.c_str(), r.reason.c_str());
        break;
    }
  }
  if (failed) status = 1;
  if (!opt.write_skips.empty()) {
    // One line per case: its name, then the reason without the file path.
    std::ofstream f(opt.write_skips);
    for (const auto& s : skipped_names) {
      std::string why = skip_reasons[s];
      size_t at = why.find("model.onnx: ");
      if (at != std::string::npos) why = why.substr(at + 12);
      f << s << "  " << why << "\n";
    }
  }
  if (!opt.expect_skips.empty()) {
    std::ifstream f(opt.expect_skips);
    if (!f) {
      std::fprintf(stderr, "minirt-conformance: cannot read %s\n", opt.expect_skips.c_str());
      return 2;
    }
    std::set<std::string> want;
    std::string line;
    while (std::getline(f, line))
      if (!line.empty() && line[0] != '#') want.insert(line.substr(0, line.find_first_of(" \t")));
    for (const auto& s : skipped_names)
      if (!want.count(s) && (opt.filter.empty() || s.find(opt.filter) != std::string::npos)) {
        std::printf("UNEXPECTED SKIP %s (not in %s)\n", s.c_str(), opt.expect_skips.c_str());
        status = 1;
      }
    for (const auto& s : want)
      if (!skipped_names.count(s) && (opt.filter.empty() || s.find(opt.filter) != std::string::npos)) {
        bool exists = std::any_of(cases.begin(), cases.end(), [&](const fs::path& c) { return c.filename() == s; });
        if (exists) {
          std::printf("NOW SUPPORTED %s (listed in %s as skipped; remove it from the list)\n", s.c_str(),
                      opt.expect_skips.c_str());
          status = 1;
        }
      }
  }
  if (opt.gpu)
    std::printf("%d passed on cuda, %d passed with nodes on the CPU, %d failed, %d skipped\n", passed, fallback, failed,
                skipped);
  else
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  g_device_keeper.reset();
  return status;
}
