// runmodel --compare: the same model and inputs on several devices (or
// settings) in one process, each run's decision, placement, copies at the
// seams and latency, and every output against the first usable run's.
//
//   auto runs = minirt::tools::parse_compare("cpu,cuda", base_options);
//   minirt::tools::CompareReport r = minirt::tools::compare_runs(model, inputs, runs, settings);
//   std::cout << minirt::tools::compare_text(r);   // or compare_json(r)
//
// An entry is DEVICE[:SETTING...], DEVICE being cpu, cuda (gpu) or auto (the
// GPU when the gate passes, else the CPU with the gate's sentence), "all"
// standing for cpu,cuda; settings: nchw (plain layout), noopt (no graph
// passes), tf32 or fp32 (the GPU's math), heuristic, exhaustive or
// tune=ALGORITHM (how convolutions are chosen). "cpu,cpu:nchw:tune=im2col_gemm"
// compares minirt with itself under other kernels.
#pragma once

#include <minirt/session.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace minirt::tools {

struct CompareRun {
  std::string label;  // the entry as given, e.g. "cpu:nchw"
  SessionOptions options;
};

// Throws std::invalid_argument with a sentence for an unknown device or setting.
std::vector<CompareRun> parse_compare(const std::string& text, const SessionOptions& base);

struct CompareSettings {
  int warmup = 3;
  int iterations = 10;
  // Element-wise |a - b| <= atol + rtol x |reference|. Negative: the defaults,
  // fp32 1e-4 / 1e-5, and 5e-2 / 1e-2 when either run uses TF32 math; rtol
  // at least 2e-3 for a float16 output and 1.6e-2 for a bfloat16 one (two
  // steps of the type).
  double rtol = -1, atol = -1;
};

struct OutputDiff {
  std::string name;
  double max_abs = 0, max_rel = 0;  // rel over the elements where |reference| > atol
  double rtol = 0, atol = 0;
  bool pass = true;
  std::string note;  // a shape or dtype mismatch, NaN where the reference has none
};

struct RunResult {
  std::string label;
  Device device = Device::kCpu;  // asked for
  bool usable = false;
  bool ran = false;
  std::string decision;   // the session's device reason, or why the device is not usable
  std::string error;      // a failure while running, when usable
  std::string placement;  // where the nodes ran
  int threads = 0;
  double start_ms = 0, first_run_ms = 0, median_ms = 0, p90_ms = 0;
  int iterations = 0;
  int copies_to_device = 0, copies_to_host = 0;
  size_t bytes_to_device = 0, bytes_to_host = 0;
  bool device_timed = false;  // the device's own times (CUDA events) below are valid
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
  std::vector<Tensor> outputs;
  std::vector<OutputDiff> diffs;  // against the reference run; empty for the reference
};

struct CompareReport {
  std::string model;
  std::string inputs;  // "x float32 1x3x224x224", for the header
  double load_ms = 0;  // loading the model, once for every run (set by the caller)
  std::vector<RunResult> runs;
  int reference = -1;   // the first run that ran
  bool agree = true;    // every run that ran matches the reference
  bool failed = false;  // a usable device failed to run
};

CompareReport compare_runs(const std::shared_ptr<const Model>& model, const NamedTensors& inputs,
                           const std::vector<CompareRun>& runs, const CompareSettings& settings);

std::string compare_text(const CompareReport& r);
std::string compare_json(const CompareReport& r);

}  // namespace minirt::tools
