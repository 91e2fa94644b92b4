// Internal hooks into a Session, for tests (a pretend device, an injected
// timer); not part of the public API, and no tool uses them: the session
// loads the GPU module itself (choose_device, runtime/backend_registry.h).
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

struct SessionInternals {
  // Lets the session place nodes on `device` (after any added before it, and
  // before the CPU). Must be called before the first run.
  static void add_device(Session& session, std::shared_ptr<KernelProvider> device);
  // Replaces the session's tuner options (repeats, an injected timer, not
  // writing the cache), for tests. Before the first run.
  static void configure_tuning(Session& session, TunerOptions options);
};

}  // namespace minirt
