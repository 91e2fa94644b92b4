// A pretend GPU for testing placement without one: a device backend whose
// memory is ordinary host memory but holds every byte XOR-ed with 0x5A, so a
// host kernel that reads device memory by mistake (or a device kernel that
// gets a host pointer) produces wrong numbers instead of silently working.
// It runs the CPU kernels of the ops it claims, decoding inputs and encoding
// outputs around them, and checks that every pointer it is given lies in its
// own memory. It is both halves of a backend (runtime/backend.h): the kernel
// provider and its own device.
#pragma once

#include "kernels/cpu/cpu_backend.h"
#include "runtime/backend.h"
#include "runtime/memory_pool.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

namespace minirt::testing {

class FakeDeviceMemory final : public RawAllocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    std::lock_guard<std::mutex> lock(mu_);
    if (p) ranges_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  void deallocate(void* p, size_t) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ranges_.erase(static_cast<const char*>(p));
    }
    std::free(p);
  }
  size_t free_memory() const override { return size_t{1} << 30; }
  std::string name() const override { return "fake device memory"; }
  bool contains(const void* p, size_t bytes) const {
    const char* c = static_cast<const char*>(p);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ranges_.upper_bound(c);
    if (it == ranges_.begin()) return false;
    --it;
    return c >= it->first && c + bytes <= it->first + it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<const char*, size_t> ranges_;
};

// Host bytes aligned as the arenas align every buffer (64 bytes), so that a
// CPU kernel's aligned vector loads work on the decoded copies too.
class AlignedBytes {
 public:
  void resize(size_t n) { p_.reset(static_cast<unsigned char*>(std::aligned_alloc(64, (n + 63) / 64 * 64))); }
  unsigned char* data() const { return p_.get(); }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> p_;
};

inline void xor_bytes(void* dst, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = s[i] ^ 0x5A;
}

class FakeDevice final : public KernelProvider, public ComputeDevice {
 public:
  explicit FakeDevice(std::set<std::string> ops) : ops_(std::move(ops)), cpu_(make_cpu_backend(1)) {}
  const char* name() const override { return name_.c_str(); }
  const ComputeDevice& device() const override { return *this; }
  // Another name, for a test that registers several pretend devices.
  FakeDevice& named(std::string n) {
    name_ = std::move(n);
    return *this;
  }
  bool supports(const Graph&, const Node& n, std::string* why) const override {
    if (ops_.count(n.op)) return true;
    if (why) *why = "not implemented on " + name_;
    return false;
  }
  std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) const override {
    return std::make_unique<Wrapped>(this, cpu_->make_kernel(g, n), g, n);
  }
  // With keeps_weights(): Conv's and Gemm's constant weights (input 1) are
  // kept by the kernel in a form of its own, made when it is made, as the
  // CUDA kernels keep float16 weights under --math fp16; the planner then
  // uploads no copy of them, and the kernel never reads what it is passed.
  FakeDevice& keeps_weights() {
    keeps_weights_ = true;
    return *this;
  }
  bool reads_uploaded_constant(const Graph&, const Node& n, size_t input) const override {
    return !(keeps_weights_ && input == 1 && (n.op == "Conv" || n.op == "Gemm"));
  }
  bool is_device() const override { return true; }
  std::shared_ptr<RawAllocator> allocator() const override { return memory_; }
  void copy_to_device(void* dst, const void* src, size_t bytes, void* stream) const override {
    check(dst, bytes, "copy_to_device destination");
    if (memory_->contains(src, bytes)) fail("copy_to_device from device memory");
    check_stream(stream);
    xor_bytes(dst, src, bytes);
    to_device++;
  }
  void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    check(src, bytes, "copy_to_host source");
    if (memory_->contains(dst, bytes)) fail("copy_to_host into device memory");
    check_stream(stream);
    xor_bytes(dst, src, bytes);
    to_host++;
  }
  void* create_stream() const override { return reinterpret_cast<void*>(++streams_made); }
  void destroy_stream(void* stream) const override { check_stream(stream); }
  void synchronize(void* stream) const override { check_stream(stream); }
  void begin_run(void* stream) const override { check_stream(stream); }
  void end_run(void* stream) const override { check_stream(stream); }
  DeviceRunTimes run_times(void*) const override { return {}; }
  // With clocked(): a device clock of its own for profiling, on which step k
  // takes exactly 1000 + k microseconds and the steps follow one another
  // without gaps, so a test can tell the device's times from the host's.
  FakeDevice& clocked() {
    clocked_ = true;
    return *this;
  }
  void step_begun(void* stream, size_t step) const override {
    check_stream(stream);
    if (!clocked_) return;
    std::lock_guard<std::mutex> lock(clock_mu_);
    auto& open = open_[stream];
    if (open.has_value()) fail("step_begun twice without step_ended");
    open = step;
  }
  void step_ended(void* stream, size_t step) const override {
    check_stream(stream);
    if (!clocked_) return;
    std::lock_guard<std::mutex> lock(clock_mu_);
    auto& open = open_[stream];
    if (open != step) fail("step_ended for a step that was not begun");
    open.reset();
    auto& steps = timed_[stream];
    const double start = steps.empty() ? 0.0 : steps.back().start_us + steps.back().duration_us;
    steps.push_back({step, start, 1000.0 + static_cast<double>(step)});
  }
  std::vector<DeviceStepTime> step_times(void* stream) const override {
    std::lock_guard<std::mutex> lock(clock_mu_);
    auto it = timed_.find(stream);
    if (it == timed_.end()) return {};
    std::vector<DeviceStepTime> out = std::move(it->second);
    timed_.erase(it);
    return out;
  }
  std::shared_ptr<void> upload(const Tensor& t) const override {
    void* p = memory_->allocate(std::max<size_t>(t.nbytes(), 1));
    xor_bytes(p, t.raw(), t.nbytes());
    uploads++;
    auto mem = memory_;
    return std::shared_ptr<void>(p, [mem](void* q) { mem->deallocate(q, 0); });
  }

  mutable std::atomic<int> to_device{0}, to_host{0}, uploads{0}, kernels_run{0};
  mutable std::atomic<long> streams_made{0};
  mutable std::atomic<int> errors{0};

 private:
  // Runs a CPU kernel on decoded copies of its device buffers.
  class Wrapped final : public Kernel {
   public:
    Wrapped(const FakeDevice* dev, std::unique_ptr<Kernel> k, const Graph& g, const Node& n)
        : dev_(dev), k_(std::move(k)) {
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const int v = n.inputs[i];
        kept_.emplace_back(v >= 0 && g.values[v].constant && !dev->reads_uploaded_constant(g, n, i)
                               ? g.values[v].constant->clone()
                               : Tensor());
      }
      for (int v : n.inputs)
        in_bytes_.push_back(
            v < 0 ? 0 : static_cast<size_t>(shape_numel(g.values[v].shape)) * dtype_size(g.values[v].dtype));
      for (int v : n.outputs)
        out_bytes_.push_back(
            v < 0 ? 0 : static_cast<size_t>(shape_numel(g.values[v].shape)) * dtype_size(g.values[v].dtype));
    }
    size_t workspace_bytes() const override { return k_->workspace_bytes(); }
    std::string describe() const override { return "on fakegpu: " + k_->describe(); }
    size_t own_constant_bytes() const override {
      size_t bytes = 0;
      for (const Tensor& t : kept_) bytes += t.nbytes();
      return bytes;
    }
    void run(const KernelArgs& args) override {
      dev_->check_stream(args.stream);
      std::vector<AlignedBytes> ins(in_bytes_.size()), outs(out_bytes_.size());
      std::vector<const void*> in_ptrs;
      std::vector<void*> out_ptrs;
      for (size_t i = 0; i < in_bytes_.size(); ++i) {
        if (!args.inputs[i]) {
          in_ptrs.push_back(nullptr);
          continue;
        }
        if (!kept_[i].empty()) {  // its own copy; what it was passed must not be device memory it reads
          if (dev_->memory_->contains(args.inputs[i], in_bytes_[i])) dev_->fail("a kept weight was uploaded too");
          in_ptrs.push_back(kept_[i].raw());
          continue;
        }
        dev_->check(args.inputs[i], in_bytes_[i], "kernel input");
        ins[i].resize(in_bytes_[i] + 64);
        xor_bytes(ins[i].data(), args.inputs[i], in_bytes_[i]);
        in_ptrs.push_back(ins[i].data());
      }
      for (size_t i = 0; i < out_bytes_.size(); ++i) {
        if (!args.outputs[i]) {
          out_ptrs.push_back(nullptr);
          continue;
        }
        dev_->check(args.outputs[i], out_bytes_[i], "kernel output");
        outs[i].resize(out_bytes_[i] + 64);
        out_ptrs.push_back(outs[i].data());
      }
      AlignedBytes ws;
      ws.resize(k_->workspace_bytes() + 64);
      KernelArgs inner{in_ptrs.data(), out_ptrs.data(), ws.data(), args.pool, nullptr};
      k_->run(inner);
      for (size_t i = 0; i < out_bytes_.size(); ++i)
        if (args.outputs[i]) xor_bytes(args.outputs[i], outs[i].data(), out_bytes_[i]);
      dev_->kernels_run++;
    }

   private:
    const FakeDevice* dev_;
    std::unique_ptr<Kernel> k_;
    std::vector<size_t> in_bytes_, out_bytes_;
    std::vector<Tensor> kept_;  // per input: the kernel's own copy of a kept weight, else empty
  };

  void check(const void* p, size_t bytes, const char* what) const {
    if (!memory_->contains(p, bytes)) fail(std::string(what) + " is not in device memory");
  }
  void check_stream(void* stream) const {
    if (!stream) fail("no stream given to a device operation");
  }
  void fail(const std::string& what) const {
    errors++;
    throw std::logic_error("fakegpu: " + what);
  }

  std::set<std::string> ops_;
  std::string name_ = "fakegpu";
  bool clocked_ = false;
  bool keeps_weights_ = false;
  mutable std::mutex clock_mu_;
  mutable std::map<void*, std::optional<size_t>> open_;
  mutable std::map<void*, std::vector<DeviceStepTime>> timed_;
  std::unique_ptr<KernelProvider> cpu_;
  std::shared_ptr<FakeDeviceMemory> memory_ = std::make_shared<FakeDeviceMemory>();
};

}  // namespace minirt::testing
