// The tools' charts, each a self-contained SVG about 1,200 px wide whose
// texts all lie inside it (tools/svg.h measures them):
//   convprof_chart  convprof --svg: per convolution its candidates' times,
//                   the pick, the heuristic's choice, the slowest's ratio
//   profile_chart   runmodel --profile-svg: time per op type and the
//                   costliest steps, per device, device clocks marked
//   fallback_chart  tools/fallback-demo.sh (through minirt-chart): per
//                   scenario what broke, where the run went and why
#pragma once

#include <minirt/session.h>
#include <minirt/tuning.h>

#include <cstddef>
#include <string>
#include <vector>

namespace minirt::tools {

// The widest a chart is laid out to be, in pixels (a 1,280 px browser
// window shows it whole), and the most it grows to fit a text.
inline constexpr double kChartWidth = 1200, kChartMaxWidth = 1240;

struct ConvChartOptions {
  std::string title;
  bool linear = false;       // time axis linear (default logarithmic)
  bool model_order = false;  // groups in plan order (default: the pick's time, costliest first)
  size_t max_layers = 60;    // past this many, only the costliest this many, and the chart says so; 0: all
};
std::string convprof_chart(const std::vector<TuningChoice>& layers, const ConvChartOptions& options);

// `runs`: Session::last_profile() of each timed run.
std::string profile_chart(const std::vector<std::vector<StepTiming>>& runs, const std::string& title);

struct FallbackRow {
  std::string id;          // the scenario's id
  std::string broke;       // what the machine has, a short label
  std::string device;      // where the run went: cpu, cuda, none (did not run)
  double latency_ms = -1;  // < 0: not measured
  std::string speedup;     // "1.80x", "same device" or "-" (tools/fallback-demo.sh decides)
  std::string outputs;     // match, differ, -, or the error
  std::string sentence;    // the gate's sentence (or the run's decision) in full
};
std::string fallback_chart(const std::vector<FallbackRow>& rows, const std::string& title);

// A sentence up to its first "; ", without parenthesised asides:
// "no NVIDIA driver (libcuda.so.1 not found); install ..." -> "no NVIDIA driver".
std::string first_clause(const std::string& sentence);

}  // namespace minirt::tools
