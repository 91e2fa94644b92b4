// convprof: every convolution of a model (or one given by its parameters),
// every algorithm the device has for it: median time, workspace, status,
// the pick, and how much the pick gains over the heuristic's choice and over
// the slowest. A table, CSV, JSON, and an SVG chart.
// See --help (and tools/README.md) for options and exit codes.
#include <minirt/minirt.h>

#include "loaders/onnx/onnx_subset.pb.h"
#include "runtime/format_bytes.h"
#include "runtime/tuner.h"
#include "tools/charts.h"
#include "tools/cli_util.h"
#include "tools/npy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

using namespace minirt;
using minirt::tools::json_str;

namespace {

// The tuner's adaptive timing, as its defaults set it: "9 to 200 (20 ms)".
std::string adaptive_repeats() {
  const minirt::TunerOptions d;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%g", d.target_ms);
  return std::to_string(d.min_repeats) + " to " + std::to_string(d.max_repeats) + " (" + ms + " ms)";
}

// convprof's flags for the SessionOptions fields the library's sentences name.
const std::vector<tools::FlagName> kConvprofFlags = {{"SessionOptions::threads", "--threads"}};

// Exit codes, as runmodel's; documented in --help and tools/README.md.
enum Exit {
  kOk = 0,
  kUsage = 1,        // bad command line
  kLoadError = 2,    // the model file is missing, malformed or unsupported
  kRunError = 3,     // planning, measuring or running failed
  kDeviceError = 4,  // --device cuda and no usable GPU backend
  kOutputError = 5,  // the SVG file could not be written
};

const char* kHelp = R"(usage: convprof MODEL.onnx [options]
       convprof --conv N,C,H,W,K,R,S[,stride,pad,dilation,groups] [options]

Measures every convolution algorithm the device has for each convolution of
the model (after its folding and fusion passes), or for one convolution given
by its parameters: input NxCxHxW, K filters of RxS, then stride, padding (all
sides), dilation and groups (default 1, 0, 1, 1). Prints per candidate its
median time, workspace and status (ok; declined, with the backend's reason;
over workspace limit; failed), marks the pick (the fastest beyond the noise of
the rounds, else the heuristic's choice) and the heuristic's choice, and the
pick's speedup over the heuristic's choice and over the slowest.
Nothing is written to the algorithm cache.

options
  --shape NAME=1x3x224x224  shape for a model input with symbolic dimensions (others: 1)
  --threads N             intra-op threads (default, or 0: every core this process may use);
                          at most 4 x those cores (at least 8, never more than 1024)
  --device cpu|cuda|auto  where to measure (default auto: the GPU when usable, else the CPU)
  --math fp32|tf32|fp16|bf16  the math (on the GPU, tf32 and fp16 add the tensor-core candidates;
                          fp16 runs the convolutions on float16 data; on the CPU, bf16 adds
                          nchwc_bf16, AMX or AVX512_BF16)
  --workspace-limit SIZE  candidates needing more scratch are skipped (bytes, or K, M, G suffix; 0: none)
  --repeats N             timed runs per candidate after one warm-up (default: at least 9,
                          until 20 ms or 200 runs)
output
  --csv                   one row per candidate, with a header
  --json                  everything as one JSON object
  --svg FILE              also draw a chart, 1,200 px wide: per layer a group of bars, one per
                          algorithm that ran, the pick and the heuristic's choice marked, the
                          slowest's ratio; at the top the total and the share of the top 5
  --svg-order time|model  the chart's groups by the pick's time, costliest first (default), or
                          in model order
  --svg-layers N          the chart shows at most the N costliest layers and says so (default 60;
                          0: all)
  --linear                the chart's time axis linear (default logarithmic)
  --help                  this text

exit status
  0  success
  1  bad command line
  2  the model could not be loaded (missing, malformed, or using unsupported features)
  3  the model could not be planned, measured or run
  4  --device cuda was asked for and no usable GPU backend exists
  5  the SVG file could not be written
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Format { kTable, kCsv, kJson };

struct Args {
  std::string model;
  std::vector<int64_t> conv;  // --conv
  std::map<std::string, Shape> shapes;
  int threads = 0;
  Device device = Device::kAuto;
  MathMode math = MathMode::kFp32;
  size_t workspace_limit = 0;
  int repeats = 0;
  Format format = Format::kTable;
  std::string svg;
  bool linear = false;
  bool svg_model_order = false;
  int svg_layers = 60;
};

int to_int(const std::string& opt, const std::string& v, int lo) {
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || x < lo || x > 1000000)
    throw UsageError(opt + " expects an integer >= " + std::to_string(lo) + ", got '" + v + "'");
  return static_cast<int>(x);
}

std::vector<int64_t> parse_conv(const std::string& v) {
  const std::string what =
      "--conv expects N,C,H,W,K,R,S[,stride,pad,dilation,groups] (positive integers, pad >= 0), got '" + v + "'";
  std::vector<int64_t> p;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long long x = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end || x < 0 || x > (1 << 20)) throw UsageError(what);
    p.push_back(x);
  }
  if (p.size() < 7 || p.size() > 11 || (!v.empty() && v.back() == ',')) throw UsageError(what);
  const int64_t defaults[] = {1, 0, 1, 1};
  for (size_t i = p.size(); i < 11; ++i) p.push_back(defaults[i - 7]);
  for (size_t i = 0; i < 11; ++i)
    if (i != 8 && p[i] == 0) throw UsageError(what);
  int64_t n = p[0], c = p[1], h = p[2], w = p[3], k = p[4], r = p[5], s = p[6], pad = p[8], dil = p[9], g = p[10];
  if (c % g || k % g)
    throw UsageError("--conv: groups (" + std::to_string(g) + ") must divide both C (" + std::to_string(c) +
                     ") and K (" + std::to_string(k) + ")");
  if (h + 2 * pad < dil * (r - 1) + 1 || w + 2 * pad < dil * (s - 1) + 1)
    throw UsageError("--conv: the " + std::to_string(r) + "x" + std::to_string(s) + " kernel (dilation " +
                     std::to_string(dil) + ") does not fit the padded " + std::to_string(h) + "x" + std::to_string(w) +
                     " input");
  if (static_cast<double>(n) * c * h * w > 1e9 || static_cast<double>(k) * (c / g) * r * s > 1e9)
    throw UsageError("--conv: tensors above 10^9 elements");
  return p;
}

Args parse_args(int argc, char** argv) {
  Args a;
  bool csv = false, json = false;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(s + " needs a value");
      return argv[++i];
    };
    if (s == "--help" || s == "-h") {
      std::fputs(kHelp, stdout);
      std::exit(kOk);
    } else if (s == "--conv")
      a.conv = parse_conv(next());
    else if (s == "--shape") {
      std::string v = next();
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw UsageError("--shape expects NAME=1x3x224x224, got '" + v + "'");
      try {
        a.shapes[v.substr(0, eq)] = tools::parse_shape(v.substr(eq + 1));
      } catch (const Error& e) {
        throw UsageError(std::string("--shape ") + e.what());
      }
    } else if (s == "--threads") {
      a.threads = to_int(s, next(), 0);
      if (std::string why = tools::threads_problem(a.threads); !why.empty()) throw UsageError(why);
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
    } else if (s == "--workspace-limit") {
      std::string v = next();
      auto b = tools::parse_size(v);
      if (!b)
        throw UsageError("--workspace-limit expects a size in bytes, with an optional K, M or G suffix, got '" + v +
                         "'");
      a.workspace_limit = *b;
    } else if (s == "--repeats")
      a.repeats = to_int(s, next(), 1);
    else if (s == "--csv")
      csv = true;
    else if (s == "--json")
      json = true;
    else if (s == "--svg") {
      a.svg = next();
      if (a.svg.empty()) throw UsageError("--svg expects a file name");
    } else if (s == "--svg-order") {
      std::string v = next();
      if (v != "time" && v != "model") throw UsageError("--svg-order expects time or model, got '" + v + "'");
      a.svg_model_order = v == "model";
    } else if (s == "--svg-layers")
      a.svg_layers = to_int(s, next(), 0);
    else if (s == "--linear")
      a.linear = true;
    else if (!s.empty() && s[0] == '-')
      throw UsageError("unknown option " + s);
    else if (a.model.empty())
      a.model = s;
    else
      throw UsageError("more than one model given ('" + a.model + "' and '" + s + "')");
  }
  if (csv && json) throw UsageError("--csv and --json exclude each other");
  a.format = csv ? Format::kCsv : json ? Format::kJson : Format::kTable;
  if (a.model.empty() && a.conv.empty()) throw UsageError("no model given (MODEL.onnx or --conv N,C,H,W,K,R,S)");
  if (!a.model.empty() && !a.conv.empty()) throw UsageError("give a model or --conv, not both");
  return a;
}

// A one-Conv ONNX model for --conv, with seeded random weights.
std::string conv_model(const std::vector<int64_t>& p) {
  int64_t n = p[0], c = p[1], h = p[2], w = p[3], k = p[4], r = p[5], s = p[6], stride = p[7], pad = p[8], dil = p[9],
          g = p[10];
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("convprof");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* gr = m.mutable_graph();
  gr->set_name("conv");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    if (dims.empty()) return;
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(gr->add_input(), "x", {n, c, h, w});
  value(gr->add_output(), "y", {});
  auto* wt = gr->add_initializer();
  wt->set_name("w");
  wt->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {k, c / g, r, s}) wt->add_dims(d);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  for (int64_t i = 0; i < k * (c / g) * r * s; ++i) wt->add_float_data(u(rng));
  auto* node = gr->add_node();
  node->set_op_type("Conv");
  node->set_name("conv");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  auto ints = [&](const char* name, std::vector<int64_t> v) {
    auto* at = node->add_attribute();
    at->set_name(name);
    at->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) at->add_ints(x);
  };
  ints("kernel_shape", {r, s});
  ints("strides", {stride, stride});
  ints("pads", {pad, pad, pad, pad});
  ints("dilations", {dil, dil});
  auto* gat = node->add_attribute();
  gat->set_name("group");
  gat->set_type(onnx::AttributeProto::INT);
  gat->set_i(g);
  return m.SerializeAsString();
}

// ---- What was measured, per layer ----

struct Layer {
  const TuningChoice* c;
  double pick_ms = -1, heuristic_ms = -1, slowest_ms = -1;
  std::string slowest;
  double vs_heuristic() const { return pick_ms > 0 && heuristic_ms > 0 ? heuristic_ms / pick_ms : -1; }
  double vs_slowest() const { return pick_ms > 0 && slowest_ms > 0 ? slowest_ms / pick_ms : -1; }
};

Layer layer_of(const TuningChoice& c) {
  Layer l{&c};
  for (const auto& t : c.candidates) {
    if (t.status != CandidateStatus::kOk) continue;
    if (t.algorithm == c.algorithm) l.pick_ms = t.time_ms;
    if (t.algorithm == c.heuristic) l.heuristic_ms = t.time_ms;
    if (t.time_ms > l.slowest_ms) {
      l.slowest_ms = t.time_ms;
      l.slowest = t.algorithm;
    }
  }
  return l;
}

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string ms_str(double ms) { return ms < 0 ? "-" : fmt(ms < 0.1 ? "%.4f" : ms < 100 ? "%.3f" : "%.1f", ms); }

// The tuner's form, so the sizes read as in its report.
std::string bytes_str(size_t b) { return format_bytes(b, 1); }

std::string status_str(const TuningCandidate& t) {
  std::string s = candidate_status_name(t.status);
  if (!t.reason.empty() && t.status != CandidateStatus::kOverWorkspaceLimit) s += ": " + t.reason;
  if (t.status == CandidateStatus::kOverWorkspaceLimit) s += " (" + t.reason + ")";
  return s;
}

std::string json_num(double x) { return x < 0 || !std::isfinite(x) ? "null" : fmt("%.6g", x); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

void print_table(const std::vector<Layer>& layers, const std::string& header) {
  std::printf("%s\n", header.c_str());
  // Column widths from the content.
  size_t wl = 5, wc = 4, wa = 9;
  for (const auto& l : layers) {
    wl = std::max(wl, l.c->node.size());
    wc = std::max(wc, l.c->summary.size());
    for (const auto& t : l.c->candidates) wa = std::max(wa, t.algorithm.size());
  }
  auto row = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                 const std::string& e, const std::string& f) {
    std::printf("%-*s  %-*s  %-*s  %10s  %10s  %s\n", static_cast<int>(wl), a.c_str(), static_cast<int>(wc), b.c_str(),
                static_cast<int>(wa), c.c_str(), d.c_str(), e.c_str(), f.c_str());
  };
  row("layer", "conv", "algorithm", "median ms", "workspace", "status");
  double pick_total = 0, heuristic_total = 0;
  bool totals = true;
  for (const auto& l : layers) {
    bool first = true;
    for (const auto& t : l.c->candidates) {
      std::string status = status_str(t);
      if (t.algorithm == l.c->algorithm) status += ", pick";
      if (t.algorithm == l.c->heuristic) status += ", heuristic";
      row(first ? l.c->node : "", first ? l.c->summary : "", t.algorithm, ms_str(t.time_ms),
          t.status == CandidateStatus::kDeclined ? "-" : bytes_str(t.workspace_bytes), status);
      first = false;
    }
    std::string line = "  -> " + (l.c->algorithm.empty() ? std::string("no pick") : "pick " + l.c->algorithm);
    if (l.vs_heuristic() > 0)
      line += l.c->algorithm == l.c->heuristic
                  ? ": the heuristic's choice too"
                  : ": " + fmt("%.2fx", l.vs_heuristic()) + " faster than the heuristic's " + l.c->heuristic;
    else
      line += " (the heuristic's " + (l.c->heuristic.empty() ? std::string("choice") : l.c->heuristic) + " not timed)";
    if (l.vs_slowest() > 0)
      line += ", " + fmt("%.2fx", l.vs_slowest()) + " faster than the slowest (" + l.slowest + ")";
    std::printf("%s\n", line.c_str());
    if (l.pick_ms > 0 && l.heuristic_ms > 0) {
      pick_total += l.pick_ms;
      heuristic_total += l.heuristic_ms;
    } else
      totals = false;
  }
  if (layers.size() > 1 && totals && pick_total > 0)
    std::printf("all %zu convolutions: picks %.3f ms, the heuristic's %.3f ms (%.2fx)\n", layers.size(), pick_total,
                heuristic_total, heuristic_total / pick_total);
}

void print_csv(const std::vector<Layer>& layers) {
  std::printf("layer,conv,problem,algorithm,status,reason,median_ms,workspace_bytes,pick,heuristic\n");
  for (const auto& l : layers)
    for (const auto& t : l.c->candidates)
      std::printf("%s,%s,%s,%s,%s,%s,%s,%zu,%d,%d\n", csv_field(l.c->node).c_str(), csv_field(l.c->summary).c_str(),
                  csv_field(l.c->problem).c_str(), csv_field(t.algorithm).c_str(),
                  csv_field(candidate_status_name(t.status)).c_str(), csv_field(t.reason).c_str(),
                  t.time_ms < 0 ? "" : fmt("%.6g", t.time_ms).c_str(), t.workspace_bytes,
                  t.algorithm == l.c->algorithm ? 1 : 0, t.algorithm == l.c->heuristic ? 1 : 0);
}

void print_json(const std::vector<Layer>& layers, const std::string& source, const Session& s, const Args& a) {
  std::ostringstream o;
  o << "{\"source\":" << json_str(source) << ",\"device\":" << json_str(device_name(s.device()))
    << ",\"device_reason\":" << json_str(s.device_reason()) << ",\"threads\":" << s.threads()
    << ",\"repeats\":" << (a.repeats ? std::to_string(a.repeats) : "null")
    << ",\"workspace_limit_bytes\":" << a.workspace_limit << ",\"layers\":[";
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    o << (i ? "," : "") << "{\"node\":" << json_str(l.c->node) << ",\"conv\":" << json_str(l.c->summary)
      << ",\"backend\":" << json_str(l.c->backend) << ",\"problem\":" << json_str(l.c->problem)
      << ",\"pick\":" << json_str(l.c->algorithm) << ",\"heuristic\":" << json_str(l.c->heuristic)
      << ",\"speedup_vs_heuristic\":" << json_num(l.vs_heuristic())
      << ",\"speedup_vs_slowest\":" << json_num(l.vs_slowest()) << ",\"candidates\":[";
    for (size_t k = 0; k < l.c->candidates.size(); ++k) {
      const auto& t = l.c->candidates[k];
      o << (k ? "," : "") << "{\"algorithm\":" << json_str(t.algorithm)
        << ",\"status\":" << json_str(candidate_status_name(t.status)) << ",\"reason\":" << json_str(t.reason)
        << ",\"median_ms\":" << json_num(t.time_ms) << ",\"workspace_bytes\":" << t.workspace_bytes << "}";
    }
    o << "]}";
  }
  o << "]}\n";
  std::fputs(o.str().c_str(), stdout);
}

int run(const Args& a) {
  std::shared_ptr<const Model> model;
  std::string source = a.model;
  try {
    if (!a.conv.empty()) {
      std::string bytes = conv_model(a.conv);
      source = "--conv ";
      for (size_t i = 0; i < a.conv.size(); ++i) source += (i ? "," : "") + std::to_string(a.conv[i]);
      model = Model::load_from_memory(bytes.data(), bytes.size(), source);
    } else {
      model = Model::load(a.model);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "convprof: %s\n", e.what());
    return kLoadError;
  }
  for (const auto& kv : a.shapes)
    if (std::none_of(model->inputs().begin(), model->inputs().end(),
                     [&](const ValueDesc& d) { return d.name == kv.first; })) {
      std::fprintf(stderr, "convprof: --shape %s: the model has no input of that name\n", kv.first.c_str());
      return kRunError;
    }

  SessionOptions so;
  so.device = a.device;
  so.math = a.math;
  so.threads = a.threads;
  so.tuning = TuningMode::kExhaustive;
  so.workspace_limit = a.workspace_limit;
  so.algo_cache_write = false;  // a profiler looks; it does not change what later runs choose
  so.tuning_repeats = a.repeats;
  std::unique_ptr<Session> session;
  try {
    session = std::make_unique<Session>(model, so);
  } catch (const Error& e) {
    std::fprintf(stderr, "convprof: %s\n", tools::with_flag_names(e.what(), kConvprofFlags).c_str());
    return e.code() == ErrorCode::kDeviceUnavailable ? kDeviceError : kRunError;
  }

  // One run plans the model, and planning measures every candidate.
  NamedTensors inputs;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (const auto& d : model->inputs()) {
    Shape shape = d.dims;
    if (auto s = a.shapes.find(d.name); s != a.shapes.end()) shape = s->second;
    for (auto& x : shape)
      if (x < 0) x = 1;
    Tensor t = Tensor::zeros(d.dtype, shape);
    if (d.dtype == DType::kFloat32)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    inputs.emplace_back(d.name, std::move(t));
  }
  try {
    session->run(inputs);
  } catch (const Error& e) {
    std::fprintf(stderr, "convprof: %s\n", tools::with_flag_names(e.what(), kConvprofFlags).c_str());
    return kRunError;
  }
  const TuningReport report = session->tuning_report();
  for (const auto& line : report.log) std::fprintf(stderr, "convprof: %s\n", line.c_str());
  std::vector<Layer> layers;
  for (const auto& c : report.choices) layers.push_back(layer_of(c));

  std::string where = std::string(device_name(session->device())) + " (" + std::to_string(session->threads()) +
                      " thread" + (session->threads() == 1 ? "" : "s") + ")";
  std::string header = "convprof: " + source + " on " + where + "; " + std::to_string(layers.size()) + " convolution" +
                       (layers.size() == 1 ? "" : "s") + " with a choice; repeats " +
                       (a.repeats ? std::to_string(a.repeats) : adaptive_repeats()) + "; workspace limit " +
                       (a.workspace_limit ? bytes_str(a.workspace_limit) : std::string("none"));
  if (a.format == Format::kJson)
    print_json(layers, source, *session, a);
  else if (a.format == Format::kCsv)
    print_csv(layers);
  else {
    std::printf("%s\n", session->device_reason().c_str());
    print_table(layers, header);
    if (layers.empty())
      std::printf("(no convolution here has a choice of algorithm on %s)\n", device_name(session->device()));
  }

  if (!a.svg.empty()) {
    std::ofstream f(a.svg);
    tools::ConvChartOptions co;
    co.title = "convprof: " + source + " on " + where;
    co.linear = a.linear;
    co.model_order = a.svg_model_order;
    co.max_layers = static_cast<size_t>(a.svg_layers);
    f << tools::convprof_chart(report.choices, co);
    f.close();
    if (!f) {
      std::fprintf(stderr, "convprof: --svg: cannot write %s\n", a.svg.c_str());
      return kOutputError;
    }
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "convprof: %s\n(see convprof --help)\n", e.what());
    return kUsage;
  }
  try {
    return run(a);
  } catch (const Error& e) {
    std::fprintf(stderr, "convprof: %s\n", e.what());
    return kRunError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convprof: unexpected error: %s\n", e.what());
    return kRunError;
  }
}
