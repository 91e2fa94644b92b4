// Internal hooks into a Session, for the GPU module's loader and for tests;
// not part of the public API.
//
//   SessionInternals::add_device(session, std::make_shared<FakeDevice>());  // before the first run
#pragma once

#include <minirt/session.h>

#include "runtime/backend.h"
#include "runtime/tuner.h"

#include <memory>
#include <string>
#include <vector>

namespace minirt {

// One device's share of a run: the backend and its timed phases.
struct DeviceTimes {
  const Backend* backend = nullptr;
  DeviceRunTimes times;
};

// The copy steps of a plan between host and device memory, per run: what
// crossing the seams between devices costs in transfers.
struct SeamCopies {
  int to_device = 0, to_host = 0;
  size_t bytes_to_device = 0, bytes_to_host = 0;
};

struct SessionInternals {
  // Lets the session place nodes on `device` (after any added before it, and
  // before the CPU). Must be called before the first run.
  static void add_device(Session& session, std::shared_ptr<Backend> device);
  // The placement summary of the last plan ("placed N nodes on X, M on cpu (...)").
  static std::string placement(const Session& session);
  // The device phases (copies in, kernels, copies out) of the last finished
  // run, one entry per device backend the plan used; empty on the CPU.
  static std::vector<DeviceTimes> device_times(const Session& session);
  // The copy steps of the last plan (none on the CPU alone).
  static SeamCopies seam_copies(const Session& session);
  // Replaces the session's tuner options (repeats, an injected timer, not
  // writing the cache), e.g. for convprof and tests. Before the first run.
  static void configure_tuning(Session& session, TunerOptions options);
};

}  // namespace minirt
