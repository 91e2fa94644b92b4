#include "runtime/backend_registry.h"

#include <minirt/error.h>

#include <algorithm>

namespace minirt {

namespace {

const char* math_name(MathMode m) {
  switch (m) {
    case MathMode::kFp32:
      return "fp32";
    case MathMode::kTf32:
      return "tf32";
    case MathMode::kFp16:
      return "fp16";
    case MathMode::kBf16:
      return "bf16";
  }
  return "?";
}

// The host's memory space. The planner asks nothing of it but is_device();
// reaching any device-only operation is a bug in the caller, said as such.
class HostDevice final : public ComputeDevice {
 public:
  bool is_device() const override { return false; }
  std::shared_ptr<RawAllocator> allocator() const override { return nullptr; }
  void copy_to_device(void*, const void*, size_t, void*) const override { misuse("copy_to_device"); }
  void copy_to_host(void*, const void*, size_t, void*) const override { misuse("copy_to_host"); }
  void* create_stream() const override { return nullptr; }
  void destroy_stream(void*) const override {}
  void synchronize(void*) const override {}
  std::shared_ptr<void> upload(const Tensor&) const override {
    misuse("upload");
    return nullptr;
  }
  void begin_run(void*) const override {}
  void end_run(void*) const override {}
  DeviceRunTimes run_times(void*) const override { return {}; }

 private:
  [[noreturn]] static void misuse(const char* what) {
    throw Error(ErrorCode::kInternal, std::string("the host memory was asked for a device operation (") + what + ")");
  }
};

}  // namespace

const ComputeDevice& host_device() {
  static const HostDevice host;
  return host;
}

void BackendRegistry::add(BackendFactory factory) {
  if (factory.name.empty() || !factory.open)
    throw Error(ErrorCode::kInvalidArgument,
                "BackendRegistry::add: a backend factory needs a name and an open function");
  if (factory.kind == Device::kAuto)
    throw Error(ErrorCode::kInvalidArgument, "BackendRegistry::add: backend '" + factory.name +
                                                 "' must say its kind (Device::kCpu or kCuda), not kAuto");
  const std::string name = factory.name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const BackendFactory& f : factories_)
      if (factory.kind == Device::kCpu && f.kind == Device::kCpu && f.name != factory.name)
        throw Error(ErrorCode::kInvalidArgument, "BackendRegistry::add: '" + factory.name +
                                                     "' would be a second host backend beside '" + f.name + "'");
    auto same = std::find_if(factories_.begin(), factories_.end(),
                             [&](const BackendFactory& f) { return f.name == factory.name; });
    if (same != factories_.end())
      *same = std::move(factory);
    else
      factories_.push_back(std::move(factory));
  }
  forget_opened(name);  // a replaced factory's backends are not handed out again (after mu_: one lock at a time)
}

void BackendRegistry::forget_opened(const std::string& name) {
  std::lock_guard<std::mutex> lock(open_mu_);
  const std::string prefix = name + "|";
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [&](const Open& o) { return o.key.compare(0, prefix.size(), prefix) == 0; }),
              open_.end());
}

bool BackendRegistry::remove(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it =
        std::find_if(factories_.begin(), factories_.end(), [&](const BackendFactory& f) { return f.name == name; });
    if (it == factories_.end()) return false;
    factories_.erase(it);
  }
  forget_opened(name);
  return true;
}

std::vector<BackendFactory> BackendRegistry::candidates(Device device) const {
  std::vector<BackendFactory> out;
  if (device == Device::kCpu) return out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const BackendFactory& f : factories_)
      if (f.kind != Device::kCpu && (device == Device::kAuto || f.kind == device)) out.push_back(f);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const BackendFactory& a, const BackendFactory& b) { return a.priority > b.priority; });
  return out;
}

std::shared_ptr<KernelProvider> BackendRegistry::open_host(const BackendRequest& request) const {
  BackendFactory host;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const BackendFactory& f : factories_)
      if (f.kind == Device::kCpu) host = f;
  }
  if (!host.open) throw Error(ErrorCode::kInternal, "no host backend is registered (BackendRegistry)");
  OpenedBackend b = host.open(request);
  if (!b.kernels) throw Error(b.error_code, "the host backend '" + host.name + "' did not start: " + b.error);
  return std::move(b.kernels);
}

OpenedBackend BackendRegistry::open_shared(const BackendFactory& factory, const BackendRequest& request) {
  const std::string key = factory.name + "|" + std::to_string(request.device_id) + "|" + math_name(request.math);
  std::lock_guard<std::mutex> lock(open_mu_);
  for (auto it = open_.begin(); it != open_.end();) {
    std::shared_ptr<KernelProvider> alive = it->kernels.lock();
    if (!alive) {
      it = open_.erase(it);
      continue;
    }
    if (it->key == key) {
      OpenedBackend b;
      b.kernels = std::move(alive);
      b.description = it->description;
      return b;
    }
    ++it;
  }
  OpenedBackend b = factory.open(request);
  if (b.kernels) open_.push_back({key, b.kernels, b.description});
  return b;
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const BackendFactory& f : factories_)
      if (f.kind == Device::kCpu) out.push_back(f.name);
  }
  for (const BackendFactory& f : candidates(Device::kAuto)) out.push_back(f.name);
  return out;
}

}  // namespace minirt
