// For the memory pool's tests: host memory under a cap, with counters, and
// failures on demand. A RawAllocator (runtime/memory_pool.h) like the host's
// and the GPU module's, but one a test can squeeze.
//
//   auto raw = std::make_shared<CappedAllocator>(1 << 20);
//   MemoryPool pool(raw, {});
//   raw->fail_next();          // the pool's next reservation fails
#pragma once

#include "runtime/memory_pool.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace minirt {

class CappedAllocator final : public RawAllocator {
 public:
  static constexpr size_t kAlignment = 64;

  explicit CappedAllocator(size_t cap) : cap_(cap) {}
  ~CappedAllocator() override {
    for (auto& [p, n] : live_) std::free(p);
  }

  void* allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocate_calls_;
    const bool fits = bytes > 0 && bytes <= cap_ - std::min(cap_, outstanding_) && bytes <= SIZE_MAX - kAlignment;
    if (fail_next_ > 0 || !fits) {
      if (fail_next_ > 0) --fail_next_;
      ++failed_calls_;
      return nullptr;
    }
    void* p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (!p) {
      ++failed_calls_;
      return nullptr;
    }
    live_[p] = bytes;
    outstanding_ += bytes;
    return p;
  }

  void deallocate(void* p, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++deallocate_calls_;
    auto it = live_.find(p);
    if (it == live_.end() || it->second != bytes) {
      ++mismatched_;
      return;
    }
    outstanding_ -= bytes;
    live_.erase(it);
    std::free(p);
  }

  size_t free_memory() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return cap_ > outstanding_ ? cap_ - outstanding_ : 0;
  }
  std::string name() const override { return "capped test memory"; }

  void set_cap(size_t cap) {
    std::lock_guard<std::mutex> lock(mu_);
    cap_ = cap;
  }
  // The next `n` allocate() calls fail whatever the cap.
  void fail_next(int n = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = n;
  }

  size_t cap() const { return locked(cap_); }
  size_t outstanding() const { return locked(outstanding_); }         // bytes allocated and not yet given back
  int64_t allocate_calls() const { return locked(allocate_calls_); }  // every call, failed or not
  int64_t failed_calls() const { return locked(failed_calls_); }
  int64_t deallocate_calls() const { return locked(deallocate_calls_); }
  int64_t mismatched_deallocations() const { return locked(mismatched_); }  // unknown pointer or wrong size

 private:
  template <typename T>
  T locked(const T& field) const {
    std::lock_guard<std::mutex> lock(mu_);
    return field;
  }

  mutable std::mutex mu_;
  size_t cap_;
  size_t outstanding_ = 0;
  int fail_next_ = 0;
  int64_t allocate_calls_ = 0, failed_calls_ = 0, deallocate_calls_ = 0, mismatched_ = 0;
  std::unordered_map<void*, size_t> live_;
};

}  // namespace minirt
