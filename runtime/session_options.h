// What a session asks for, as a pure function of its SessionOptions: the
// thread count, the memory pools' options, the tuner's, what the planner is
// asked and what the host and device backends are opened with. Every
// setting is checked here, before the GPU is probed or a thread started;
// a refusal is Error(kInvalidArgument) naming the SessionOptions field.
// Internal to runtime/.
//
//   SessionRequests r = session_requests(options, count_cores());
//   MemoryPool host(std::make_shared<HostAllocator>(), r.pool);
//   Tuner tuner(r.tuner);
#pragma once

#include <minirt/session.h>

#include "runtime/backend_registry.h"
#include "runtime/host_resources.h"
#include "runtime/memory_pool.h"
#include "runtime/tuner.h"

namespace minirt {

struct SessionRequests {
  int threads = 1;                // the session's thread pool, and the host backend's
  PoolOptions pool;               // of every pool: the host's and each device's
  TunerOptions tuner;             // the session's tuner
  BackendRequest host;            // the host backend's (threads and math)
  Device device = Device::kAuto;  // kCpu: no device backend is opened
  BackendRequest device_backend;  // each device backend's (device_id and math)
  bool optimize = true;           // PlanOptions::optimize
  bool blocked_layout = true;     // PlanOptions::blocked_layout
};

// Throws Error(kInvalidArgument) for a setting out of range; reads nothing
// but its arguments (`cores`: what this process may use, count_cores()).
SessionRequests session_requests(const SessionOptions& options, const CoreCount& cores);

}  // namespace minirt
