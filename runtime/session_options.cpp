#include "runtime/session_options.h"

#include <cmath>
#include <string>

namespace minirt {

SessionRequests session_requests(const SessionOptions& options, const CoreCount& cores) {
  SessionRequests r;
  r.threads = resolve_threads(options.threads, cores);
  if (!(options.run_timeout_seconds >= 0) || !std::isfinite(options.run_timeout_seconds))
    throw Error(ErrorCode::kInvalidArgument,
                "SessionOptions: run_timeout_seconds must be 0 (no limit) or a positive "
                "number of seconds, got " +
                    std::to_string(options.run_timeout_seconds));
  if (options.device_id < 0)
    throw Error(ErrorCode::kInvalidArgument,
                "SessionOptions: device_id must be a CUDA device ordinal (0 or more), got " +
                    std::to_string(options.device_id));
  // One pool design for every memory: the limit and policy apply to the
  // host's pool and to each device's (a limit per pool).
  r.pool.limit = options.memory_limit;
  if (options.memory_policy == MemoryPolicy::kPreallocate) {
    const double f = options.preallocate_fraction;
    if (!(f > 0.0 && f <= 1.0))
      throw Error(
          ErrorCode::kInvalidArgument,
          "SessionOptions: MemoryPolicy::kPreallocate needs preallocate_fraction in (0, 1], got " + std::to_string(f));
    r.pool.policy = PoolPolicy::kPreallocate;
    r.pool.preallocate_fraction = f;
  }
  if (options.tuning == TuningMode::kFixed && options.tuning_algorithm.empty())
    throw Error(ErrorCode::kInvalidArgument, "SessionOptions: TuningMode::kFixed needs tuning_algorithm (its name)");
  if (options.tuning_repeats < 0)
    throw Error(ErrorCode::kInvalidArgument, "SessionOptions: tuning_repeats must be 0 (adaptive) or more, got " +
                                                 std::to_string(options.tuning_repeats));
  r.tuner.mode = options.tuning;
  r.tuner.algorithm = options.tuning_algorithm;
  r.tuner.cache_path = options.algo_cache_path;
  r.tuner.workspace_limit = options.workspace_limit;
  r.tuner.write_cache = options.algo_cache_write;
  if (options.tuning_repeats > 0) {
    r.tuner.min_repeats = r.tuner.max_repeats = options.tuning_repeats;
    r.tuner.target_ms = 0;
  }
  r.host = {.threads = r.threads, .math = options.math};
  r.device = options.device;
  r.device_backend = {.threads = 1, .device_id = options.device_id, .math = options.math};
  r.optimize = options.optimize;
  r.blocked_layout = options.layout == CpuLayout::kAuto;
  return r;
}

}  // namespace minirt
