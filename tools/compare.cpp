#include "tools/compare.h"

#include <minirt/half.h>

#include "tools/cli_util.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace minirt::tools {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  for (;;) {
    size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return t.data<float>()[i];
    case DType::kFloat64:
      return t.data<double>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kUInt8:
    case DType::kBool:
      return static_cast<const uint8_t*>(t.raw())[i];
    case DType::kInt8:
      return static_cast<const int8_t*>(t.raw())[i];
    case DType::kFloat16:
      return half_to_float(t.data<uint16_t>()[i]);
    case DType::kBFloat16:
      return bfloat16_to_float(t.data<uint16_t>()[i]);
    default:
      return std::nan("");
  }
}

bool floating(DType d) { return d == DType::kFloat32 || d == DType::kFloat64 || is_half_dtype(d); }

OutputDiff diff(const std::string& name, const Tensor& ref, const Tensor& got, double rtol, double atol) {
  OutputDiff d;
  d.name = name;
  d.rtol = rtol;
  d.atol = atol;
  if (ref.dtype() != got.dtype() || ref.shape() != got.shape()) {
    d.pass = false;
    d.note = std::string("is ") + dtype_name(got.dtype()) + " " + shape_str(got.shape()) + ", the reference's " +
             dtype_name(ref.dtype()) + " " + shape_str(ref.shape());
    return d;
  }
  bool exact = !floating(ref.dtype());
  int64_t nan_mismatch = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double a = element(ref, i), b = element(got, i);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) ++nan_mismatch;
      continue;
    }
    double e = std::fabs(a - b);
    if (std::isinf(a) || std::isinf(b)) e = a == b ? 0 : INFINITY;
    d.max_abs = std::max(d.max_abs, e);
    if (std::fabs(a) > atol) d.max_rel = std::max(d.max_rel, e / std::fabs(a));
    if (exact ? e != 0 : e > atol + rtol * std::fabs(a)) d.pass = false;
  }
  if (nan_mismatch) {
    d.pass = false;
    d.note = std::to_string(nan_mismatch) + " elements are NaN in one run and not the other";
  }
  return d;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A JSON number; null for what JSON cannot hold (inf, NaN).
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

std::vector<CompareRun> parse_compare(const std::string& text, const SessionOptions& base) {
  std::vector<CompareRun> runs;
  std::string list = text == "all" ? "cpu,cuda" : text;
  for (const std::string& entry : split(list, ',')) {
    if (entry.empty()) throw std::invalid_argument("--compare has an empty entry in '" + text + "'");
    std::vector<std::string> parts = split(entry, ':');
    CompareRun r;
    r.label = entry;
    r.options = base;
    const std::string& dev = parts[0];
    if (dev == "cpu")
      r.options.device = Device::kCpu;
    else if (dev == "cuda" || dev == "gpu")
      r.options.device = Device::kCuda;
    else if (dev == "auto")
      r.options.device = Device::kAuto;
    else
      throw std::invalid_argument("--compare: '" + dev + "'" + (parts.size() > 1 ? " in '" + entry + "'" : "") +
                                  " is not a device (cpu, cuda, auto, or all)");
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string& p = parts[i];
      if (p == "nchw")
        r.options.layout = CpuLayout::kNchw;
      else if (p == "noopt")
        r.options.optimize = false;
      else if (p == "tf32")
        r.options.math = MathMode::kTf32;
      else if (p == "fp32")
        r.options.math = MathMode::kFp32;
      else if (p == "fp16")
        r.options.math = MathMode::kFp16;
      else if (p == "bf16")
        r.options.math = MathMode::kBf16;
      else if (p == "heuristic")
        r.options.tuning = TuningMode::kHeuristic;
      else if (p == "exhaustive")
        r.options.tuning = TuningMode::kExhaustive;
      else if (p.rfind("tune=", 0) == 0) {
        auto c = parse_tuning(p.substr(5));
        if (!c)
          throw std::invalid_argument("--compare: '" + p + "' in '" + entry + "' names no tuning mode or algorithm");
        r.options.tuning = c->mode;
        r.options.tuning_algorithm = c->algorithm;
      } else {
        throw std::invalid_argument(
            "--compare: unknown setting '" + p + "' in '" + entry +
            "' (settings: nchw, noopt, tf32, fp16, fp32, heuristic, exhaustive, tune=ALGORITHM)");
      }
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

CompareReport compare_runs(const std::shared_ptr<const Model>& model, const NamedTensors& inputs,
                           const std::vector<CompareRun>& runs, const CompareSettings& settings) {
  CompareReport rep;
  rep.model = model->info().path;
  for (const auto& [name, t] : inputs)
    rep.inputs += (rep.inputs.empty() ? "" : ", ") + name + " " + dtype_name(t.dtype()) + " " + shape_str(t.shape());
  for (const CompareRun& cr : runs) {
    RunResult r;
    r.label = cr.label;
    r.device = cr.options.device;
    std::unique_ptr<Session> session;
    auto t0 = Clock::now();
    try {
      session = std::make_unique<Session>(model, cr.options);
    } catch (const Error& e) {
      r.decision = e.what();
      rep.runs.push_back(std::move(r));
      continue;
    }
    r.start_ms = ms_since(t0);
    r.usable = true;
    r.decision = session->device_reason();
    r.threads = session->threads();
    try {
      auto f0 = Clock::now();
      session->run(inputs, r.outputs);
      r.first_run_ms = ms_since(f0);
      for (int i = 0; i < settings.warmup; ++i) session->run(inputs, r.outputs);
      std::vector<double> lat;
      int timed = 0;
      for (int i = 0; i < std::max(settings.iterations, 1); ++i) {
        auto a = Clock::now();
        session->run(inputs, r.outputs);
        lat.push_back(ms_since(a));
        for (const DeviceTimes& d : session->device_times()) {
          if (!d.valid) continue;
          r.h2d_ms += d.h2d_ms;
          r.compute_ms += d.compute_ms;
          r.d2h_ms += d.d2h_ms;
          ++timed;
        }
      }
      if (timed) {
        r.device_timed = true;
        r.h2d_ms /= timed;
        r.compute_ms /= timed;
        r.d2h_ms /= timed;
      }
      r.iterations = static_cast<int>(lat.size());
      r.median_ms = percentile(lat, 50);
      r.p90_ms = percentile(lat, 90);
      r.ran = true;
    } catch (const Error& e) {
      r.error = e.what();
      rep.failed = true;
    }
    r.placement = session->placement();
    SeamCopies c = session->seam_copies();
    r.copies_to_device = c.to_device;
    r.copies_to_host = c.to_host;
    r.bytes_to_device = c.bytes_to_device;
    r.bytes_to_host = c.bytes_to_host;
    rep.runs.push_back(std::move(r));
  }
  for (size_t i = 0; i < rep.runs.size() && rep.reference < 0; ++i)
    if (rep.runs[i].ran) rep.reference = static_cast<int>(i);
  if (rep.reference < 0) return rep;
  const RunResult& ref = rep.runs[static_cast<size_t>(rep.reference)];
  const std::vector<ValueDesc>& outs = model->outputs();
  // TF32 and float16 tensor cores keep a 10-bit mantissa in products: both
  // get the looser tolerance.
  // bf16 on the CPU keeps 8 bits: the same looser tolerance.
  auto tensor_cores = [&](size_t i) {
    return (rep.runs[i].device == Device::kCuda && runs[i].options.math != MathMode::kFp32) ||
           runs[i].options.math == MathMode::kBf16;
  };
  const bool ref_tensor_cores = tensor_cores(static_cast<size_t>(rep.reference));
  for (size_t i = 0; i < rep.runs.size(); ++i) {
    RunResult& r = rep.runs[i];
    if (!r.ran || static_cast<int>(i) == rep.reference) continue;
    bool loose = ref_tensor_cores || tensor_cores(i);
    double rtol = settings.rtol >= 0 ? settings.rtol : (loose ? 5e-2 : 1e-4);
    double atol = settings.atol >= 0 ? settings.atol : (loose ? 1e-2 : 1e-5);
    for (size_t k = 0; k < ref.outputs.size() && k < r.outputs.size(); ++k) {
      // A float16 (bfloat16) output: two float32 runs that differ in the
      // last float32 bits can round to neighbouring halves, one step
      // (2^-10 relative; 2^-7 for bfloat16) apart. The default allows two.
      double out_rtol = rtol;
      if (settings.rtol < 0 && ref.outputs[k].dtype() == DType::kFloat16) out_rtol = std::max(rtol, 2e-3);
      if (settings.rtol < 0 && ref.outputs[k].dtype() == DType::kBFloat16) out_rtol = std::max(rtol, 1.6e-2);
      r.diffs.push_back(diff(k < outs.size() ? outs[k].name : "output " + std::to_string(k), ref.outputs[k],
                             r.outputs[k], out_rtol, atol));
      rep.agree = rep.agree && r.diffs.back().pass;
    }
  }
  return rep;
}

std::string compare_text(const CompareReport& rep) {
  std::ostringstream o;
  o << "compare: " << rep.model << " (inputs " << rep.inputs << "), loaded once in " << fmt("%.1f", rep.load_ms)
    << " ms, " << rep.runs.size() << " runs\n";
  for (size_t i = 0; i < rep.runs.size(); ++i) {
    const RunResult& r = rep.runs[i];
    o << "[" << i + 1 << "] " << r.label << ": ";
    if (!r.usable) {
      o << "not usable: " << r.decision << "\n";
      continue;
    }
    o << r.decision << " (" << r.threads << (r.threads == 1 ? " thread)\n" : " threads)\n");
    o << "    placement: " << (r.placement.empty() ? "every node on the CPU" : r.placement) << "\n";
    if (r.copies_to_device || r.copies_to_host)
      o << "    copies at the seams per run: " << r.copies_to_device << " to the device ("
        << human_bytes(r.bytes_to_device) << "), " << r.copies_to_host << " to the host ("
        << human_bytes(r.bytes_to_host) << ")\n";
    if (!r.ran) {
      o << "    failed: " << r.error << "\n";
      continue;
    }
    o << "    session " << fmt("%.1f", r.start_ms) << " ms, first run " << fmt("%.2f", r.first_run_ms)
      << " ms, latency median " << fmt("%.3f", r.median_ms) << " ms, p90 " << fmt("%.3f", r.p90_ms) << " ms ("
      << r.iterations << " runs)\n";
    if (r.device_timed)
      o << "    device time per run (CUDA events): H2D " << fmt("%.3f", r.h2d_ms) << " ms, compute "
        << fmt("%.3f", r.compute_ms) << " ms, D2H " << fmt("%.3f", r.d2h_ms) << " ms\n";
  }
  if (rep.reference < 0) {
    o << "result: no run could be made, nothing to compare\n";
    return o.str();
  }
  const RunResult& ref = rep.runs[static_cast<size_t>(rep.reference)];
  int compared = 0;
  for (size_t i = 0; i < rep.runs.size(); ++i) {
    const RunResult& r = rep.runs[i];
    if (!r.ran || static_cast<int>(i) == rep.reference) continue;
    ++compared;
    o << "[" << i + 1 << "] " << r.label << " against [" << rep.reference + 1 << "] " << ref.label << " ("
      << fmt("%.2fx", ref.median_ms > 0 ? r.median_ms / ref.median_ms : 0) << " its median latency):\n";
    for (const OutputDiff& d : r.diffs) {
      o << "    " << d.name << ": ";
      if (!d.note.empty() && d.max_abs == 0)
        o << d.note;
      else
        o << "max abs diff " << fmt("%.3g", d.max_abs) << ", max rel diff " << fmt("%.3g", d.max_rel);
      o << " -> " << (d.pass ? "pass" : "FAIL") << " (|a - b| <= " << fmt("%g", d.atol) << " + " << fmt("%g", d.rtol)
        << " x |reference|)" << (!d.note.empty() && d.max_abs != 0 ? "; " + d.note : "") << "\n";
    }
  }
  int ran = 0, usable = 0;
  for (const RunResult& r : rep.runs) {
    ran += r.ran;
    usable += r.usable;
  }
  o << "result: ";
  if (rep.failed) o << "a usable device failed to run; ";
  if (compared == 0)
    o << "only [" << rep.reference + 1 << "] " << ref.label << " ran, nothing to compare it with";
  else if (rep.agree)
    o << "the " << ran << " runs that ran agree within tolerance";
  else
    o << "outputs DISAGREE beyond tolerance";
  o << " (" << usable << " of " << rep.runs.size() << " runs usable)\n";
  return o.str();
}

std::string compare_json(const CompareReport& rep) {
  std::ostringstream o;
  o << "{\"model\":" << json_str(rep.model) << ",\"inputs\":" << json_str(rep.inputs) << ",\"load_ms\":" << rep.load_ms
    << ",\"reference\":"
    << (rep.reference < 0 ? std::string("null") : json_str(rep.runs[static_cast<size_t>(rep.reference)].label))
    << ",\"agree\":" << (rep.agree ? "true" : "false") << ",\"failed\":" << (rep.failed ? "true" : "false")
    << ",\"runs\":[";
  for (size_t i = 0; i < rep.runs.size(); ++i) {
    const RunResult& r = rep.runs[i];
    o << (i ? "," : "") << "{\"label\":" << json_str(r.label) << ",\"device\":" << json_str(device_name(r.device))
      << ",\"usable\":" << (r.usable ? "true" : "false") << ",\"ran\":" << (r.ran ? "true" : "false")
      << ",\"decision\":" << json_str(r.decision);
    if (r.usable) {
      o << ",\"threads\":" << r.threads << ",\"placement\":" << json_str(r.placement)
        << ",\"copies\":{\"to_device\":" << r.copies_to_device << ",\"bytes_to_device\":" << r.bytes_to_device
        << ",\"to_host\":" << r.copies_to_host << ",\"bytes_to_host\":" << r.bytes_to_host << "}";
    }
    if (!r.error.empty()) o << ",\"error\":" << json_str(r.error);
    if (r.ran) {
      o << ",\"session_ms\":" << r.start_ms << ",\"first_run_ms\":" << r.first_run_ms
        << ",\"latency_ms\":{\"median\":" << r.median_ms << ",\"p90\":" << r.p90_ms << ",\"runs\":" << r.iterations
        << "}";
      if (r.device_timed)
        o << ",\"device_time_ms\":{\"h2d\":" << r.h2d_ms << ",\"compute\":" << r.compute_ms << ",\"d2h\":" << r.d2h_ms
          << "}";
      o << ",\"outputs\":[";
      for (size_t k = 0; k < r.diffs.size(); ++k) {
        const OutputDiff& d = r.diffs[k];
        o << (k ? "," : "") << "{\"name\":" << json_str(d.name) << ",\"max_abs_diff\":" << num(d.max_abs)
          << ",\"max_rel_diff\":" << num(d.max_rel) << ",\"rtol\":" << d.rtol << ",\"atol\":" << d.atol
          << ",\"pass\":" << (d.pass ? "true" : "false");
        if (!d.note.empty()) o << ",\"note\":" << json_str(d.note);
        o << "}";
      }
      o << "]";
    }
    o << "}";
  }
  o << "]}\n";
  return o.str();
}

}  // namespace minirt::tools
