// A device backend for asking questions, not running: it is offered every
// node by placement, answers through the derived class's supports() and
// should claim none, so the plan stays on the CPU and none of its memory,
// streams or copies is ever used (each says so if it is). Used to read the
// CUDA support table on machines without a GPU (tests/gpu/test_cuda_support.cpp,
// tests/op_cases/support_matrix.cpp).
//
//   class Probe final : public testing::DecliningDevice {
//     bool supports(const Graph& g, const Node& n, std::string* why) const override { ...; return false; }
//   };
//   SessionInternals::add_device(session, std::make_shared<Probe>());
#pragma once

#include "runtime/backend.h"
#include "runtime/memory_pool.h"

#include <memory>
#include <stdexcept>
#include <string>

namespace minirt::testing {

class DecliningDevice : public KernelProvider, public ComputeDevice {
 public:
  explicit DecliningDevice(std::string name = "cuda") : name_(std::move(name)) {}
  const char* name() const override { return name_.c_str(); }
  const ComputeDevice& device() const override { return *this; }
  std::unique_ptr<Kernel> make_kernel(const Graph&, const Node&) const override {
    unused("make a kernel");
    return nullptr;
  }

  bool is_device() const override { return true; }
  std::shared_ptr<RawAllocator> allocator() const override { return std::make_shared<HostAllocator>(); }
  void copy_to_device(void*, const void*, size_t, void*) const override { unused("copy to the device"); }
  void copy_to_host(void*, const void*, size_t, void*) const override { unused("copy to the host"); }
  void* create_stream() const override { return const_cast<DecliningDevice*>(this); }
  void destroy_stream(void*) const override {}
  void synchronize(void*) const override {}
  std::shared_ptr<void> upload(const Tensor&) const override {
    unused("upload a constant");
    return nullptr;
  }
  void begin_run(void*) const override {}
  void end_run(void*) const override {}
  DeviceRunTimes run_times(void*) const override { return {}; }

 private:
  [[noreturn]] static void unused(const char* what) {
    throw std::logic_error(std::string("a declining probe device claims no node, yet was asked to ") + what);
  }
  std::string name_;
};

}  // namespace minirt::testing
