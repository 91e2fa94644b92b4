// How the command-line tools say what tuning did.
//
//   std::printf("tuning: %s\n", minirt::tools::tuning_summary(session.tuning_report()).c_str());
//   // tuning: 20 convolutions, 0 measured, 20 from cache, 0 heuristic, 0.00 s (cached, cache ...)
#pragma once

#include <minirt/tuning.h>

#include <string>
#include <vector>

namespace minirt::tools {

// "20 convolutions, 0 measured, 20 from cache, 0 heuristic, 0.01 s (cached, cache PATH)"
std::string tuning_summary(const TuningReport& r);

// What background tuning did while a tool ran its runs (`lat`: the timed
// runs' milliseconds, after the first run and `warmup` more): a line for
// --wait-tuning's wait (`wait_ms` >= 0), each tuned plan that took over
// with the timed runs' medians before and after it, and the choices still
// pending when the runs ended.
std::vector<std::string> swap_lines(const TuningReport& r, const std::vector<double>& lat, int warmup, double wait_ms);

}  // namespace minirt::tools
