#include "tools/tuning_text.h"

#include "tools/cli_util.h"

#include <cstdio>

namespace minirt::tools {

// "tuning: 20 convolutions, 0 measured, 20 from cache, 0 heuristic, 0.01 s"
std::string tuning_summary(const TuningReport& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d convolution%s, %d measured, %d from cache, %d heuristic", r.nodes,
                r.nodes == 1 ? "" : "s", r.measured, r.from_cache, r.heuristic);
  std::string s = buf;
  if (r.mode == TuningMode::kFixed) s += ", " + std::to_string(r.fixed) + " fixed";
  std::snprintf(buf, sizeof buf, ", %.2f s (%s", r.seconds, tuning_mode_name(r.mode));
  s += buf;
  if (!r.cache_path.empty()) s += ", cache " + r.cache_path;
  return s + ")";
}

// What background tuning did while runmodel ran: each tuned plan that
// took over (and the timed runs' medians before and after it), or the
// choices still pending when the runs ended.
std::vector<std::string> swap_lines(const TuningReport& r, const std::vector<double>& lat, int warmup, double wait_ms) {
  std::vector<std::string> out;
  char buf[200];
  if (wait_ms >= 0) {
    std::snprintf(buf, sizeof buf, "waited %.2f s after the first run for background tuning (--wait-tuning)",
                  wait_ms / 1000);
    out.push_back(buf);
  }
  for (const PlanSwap& s : r.swaps) {
    std::string line = to_string(s);
    // Run k (1-based) of the session is the first run, the warm-ups, then lat[k - 2 - warmup].
    const long first_timed = 2 + warmup;
    const long split = s.runs_before + 1 - first_timed;  // timed runs before the swap
    if (split > 0 && split < static_cast<long>(lat.size())) {
      std::vector<double> before(lat.begin(), lat.begin() + split), after(lat.begin() + split, lat.end());
      std::snprintf(buf, sizeof buf, "; timed runs before it: median %.3f ms, after: %.3f ms", percentile(before, 50),
                    percentile(after, 50));
      line += buf;
    }
    out.push_back(line);
  }
  if (r.pending) {
    std::snprintf(buf, sizeof buf,
                  "%d choice%s still pending when the runs ended (measured between runs in the background; "
                  "what was measured is cached; --wait-tuning waits for it)",
                  r.pending, r.pending == 1 ? "" : "s");
    out.push_back(buf);
  }
  return out;
}

}  // namespace minirt::tools
