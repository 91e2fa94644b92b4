// The backends minirt ships with, registered in the process's registry on
// first use: the CPU (the host), and the GPU module's loader (which starts
// nothing until a session asks for a GPU). This file is the one place that
// names them; a backend added to minirt adds a line here, a backend a program
// or a test brings calls backend_registry().add() itself. choose_device, a
// session's pick among the registered device backends, lives here, beside
// the public API it speaks in (device_name), not in minirt_core.
#include "runtime/backend_registry.h"

#include "kernels/cpu/cpu_backend.h"
#include "runtime/gpu/module.h"

namespace minirt {

BackendRegistry& backend_registry() {
  static BackendRegistry* registry = [] {
    auto* r = new BackendRegistry;  // never destroyed: sessions may outlive static destruction order
    r->add(cpu_backend_factory());
    r->add(gpu::cuda_backend_factory());
    return r;
  }();
  return *registry;
}

DeviceChoice choose_device(BackendRegistry& registry, Device asked, const BackendRequest& request) {
  if (asked == Device::kCpu) return {.reason = "running on the CPU as requested"};
  std::vector<BackendFactory> candidates = registry.candidates(asked);
  std::string why;
  for (const BackendFactory& f : candidates) {
    OpenedBackend b = registry.open_shared(f, request);
    if (b.kernels)
      return {
          .device = f.kind, .backend = std::move(b.kernels), .reason = "running on " + f.name + ": " + b.description};
    // One candidate (the usual case): its sentence alone; several: each named.
    std::string said = b.error.empty() ? "it did not start and gave no reason" : b.error;
    if (candidates.size() > 1) said = f.name + ": " + said;
    why += (why.empty() ? "" : "; ") + said;
  }
  if (candidates.empty())
    why = std::string("no ") + (asked == Device::kAuto ? "device" : device_name(asked)) +
          " backend is registered in this build";
  if (asked != Device::kAuto)
    throw Error(ErrorCode::kDeviceUnavailable,
                std::string("no usable GPU backend for Device::kCuda: ") + why +
                    "; use the CPU instead (Device::kCpu, or Device::kAuto to take the GPU where it works)");
  return {.reason = "running on the CPU: " + why};
}

}  // namespace minirt
