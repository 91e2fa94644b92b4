// The backends a session can run on, found by name and preference instead of
// being named in the session. Each backend registers a factory: the CPU's is
// always there (the host, every node's fallback); the CUDA module's runs the
// compatibility gate and loads libminirt_cuda.so only when a session asks for
// a GPU; a test can register a pretend device of its own.
//
//   BackendRegistry& r = backend_registry();          // the built-in ones registered
//   std::shared_ptr<KernelProvider> cpu = r.open_host({.threads = 4});
//   for (const BackendFactory* f : r.candidates(Device::kCuda)) {
//     OpenedBackend b = f->open(request);             // b.kernels null: b.error says why
//   }
//
// Session (runtime/api/session.cpp) takes the host backend and, for
// Device::kCuda or kAuto, the first device backend that opens
// (choose_device); it names none of them.
#pragma once

#include <minirt/error.h>
#include <minirt/session.h>

#include "runtime/backend.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace minirt {

// What a session asks of a backend it starts.
struct BackendRequest {
  int threads = 1;                  // the size of the thread pool host kernels run on
  int device_id = 0;                // the device ordinal (SessionOptions::device_id)
  MathMode math = MathMode::kFp32;  // device backends' matrix math (tf32, fp16: tensor cores)
};

// A started backend, or why it could not start.
struct OpenedBackend {
  std::shared_ptr<KernelProvider> kernels;  // null when it could not start
  std::string description;                  // what runs: "NVIDIA H200 (cc 9.0), driver CUDA 13.0, ..."
  std::string error;                        // when kernels is null: one sentence with the fix
  // What kind of failure: a device that is not there or does not start
  // (the default), or a setting that cannot be followed (kInvalidArgument).
  ErrorCode error_code = ErrorCode::kDeviceUnavailable;
};

struct BackendFactory {
  std::string name;  // the KernelProvider's name(): "cpu", "cuda"
  // The public Device it answers to: Device::kCpu for the host backend, the
  // kind of device otherwise. Device::kAuto tries every device backend.
  Device kind = Device::kCpu;
  // Among device backends of one kind and under kAuto, higher goes first.
  int priority = 0;
  std::function<OpenedBackend(const BackendRequest&)> open;
};

class BackendRegistry {
 public:
  // Adds a factory, or replaces the one with the same name. Exactly one
  // factory of kind Device::kCpu (the host) may be registered.
  void add(BackendFactory factory);
  // Removes the factory of that name; false when there is none.
  bool remove(const std::string& name);
  // The device backends (not the host) a session asking for `device` tries,
  // in order: for kCuda those of that kind, for kAuto all of them, highest
  // priority first (registration order among equals); none for kCpu.
  std::vector<BackendFactory> candidates(Device device) const;
  // Starts the host backend; throws Error(kInternal) when none is registered,
  // or with the backend's error_code and sentence when it does not start.
  std::shared_ptr<KernelProvider> open_host(const BackendRequest& request) const;
  // Every registered factory's name, host first then by priority.
  std::vector<std::string> names() const;

  // Opens a device backend for a session, sharing one already open for the
  // same factory, device and math mode with the sessions that hold it (one
  // CUDA context, cuDNN and cuBLAS handle set and module instance per
  // device in a process, however many sessions or Triton instances use
  // it); opens a new one once they are all gone. A failure is not kept:
  // the next call tries again.
  OpenedBackend open_shared(const BackendFactory& factory, const BackendRequest& request);

 private:
  // A replaced or removed factory's backends stay with the sessions that
  // hold them but are no longer handed to new ones.
  void forget_opened(const std::string& name);

  mutable std::mutex mu_;
  std::vector<BackendFactory> factories_;
  struct Open {
    std::string key;  // factory name, device, math
    std::weak_ptr<KernelProvider> kernels;
    std::string description;
  };
  std::mutex open_mu_;  // held while a backend opens, so two sessions do not open one twice
  std::vector<Open> open_;
};

// The device a session runs on, and in one sentence why.
struct DeviceChoice {
  Device device = Device::kCpu;
  std::shared_ptr<KernelProvider> backend;  // the device backend; null on the CPU
  std::string reason;                       // Session::device_reason()
};

// The CPU when `asked` is kCpu (nothing is opened); otherwise the first of
// registry.candidates(asked) that opens (open_shared) with `request`, else
// (kAuto) the CPU with the candidates' sentences as the reason, or (kCuda)
// Error(kDeviceUnavailable) carrying them. (In runtime/builtin_backends.cpp.)
DeviceChoice choose_device(BackendRegistry& registry, Device asked, const BackendRequest& request);

// The process's registry, with the built-in backends registered on first use
// (runtime/builtin_backends.cpp: the CPU, and the CUDA module when minirt was
// built with it).
BackendRegistry& backend_registry();

}  // namespace minirt
