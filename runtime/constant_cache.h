// Equal constants shared between a session's plans. A session plans once per
// input signature, and every plan folds the model's constants again
// (BatchNormalization into convolution weights, bias Adds, ...): the same
// bytes, new tensors, one set per batch size. The planner passes each
// plan's constants through intern(), so plans alive together hold one copy.
// Entries are weak: a constant lives as long as some plan holds it (a plan
// lets go of those every kernel packed into a form of its own once its
// kernels are made, so what plans share is what kernels read as it is).
//
//   ConstantCache cache;
//   v.constant = cache.intern(v.constant);  // an equal tensor already held, or v.constant itself
#pragma once

#include <minirt/tensor.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace minirt {

class ConstantCache {
 public:
  // Tensors smaller than this are not worth the hashing.
  static constexpr size_t kMinBytes = 4096;

  // An alive tensor equal to `t` (dtype, shape and bytes) when the cache
  // knows one, else `t`, which it remembers. Thread-safe.
  std::shared_ptr<const Tensor> intern(std::shared_ptr<const Tensor> t);

  // Bytes of the distinct constants alive in the cache now (for tests and reports).
  size_t alive_bytes() const;

 private:
  mutable std::mutex mu_;
  std::unordered_multimap<uint64_t, std::weak_ptr<const Tensor>> by_hash_;
  std::unordered_map<const Tensor*, std::weak_ptr<const Tensor>> seen_;  // interned before: no hashing again
  uint64_t inserts_ = 0;
};

// A 64-bit hash of a tensor's dtype, shape and bytes.
uint64_t tensor_hash(const Tensor& t);

}  // namespace minirt
