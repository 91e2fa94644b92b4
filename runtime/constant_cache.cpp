#include "runtime/constant_cache.h"

#include <cstring>

namespace minirt {

namespace {

inline uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w;
  h *= 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

// The bucket of a tensor: its dtype, shape and byte count, and samples of
// its bytes (the first and last 256, and 64 words spread between) rather
// than every byte: equal tensors sample equal, and a bucket's tensors are
// compared whole (same_tensor). A plan's folded weights are most of a
// model's bytes, and hashing them all took as long as folding them.
uint64_t sample_hash(const Tensor& t) {
  uint64_t h = mix(0x13198A2E03707344ull, static_cast<uint64_t>(t.dtype()));
  for (int64_t d : t.shape()) h = mix(h, static_cast<uint64_t>(d));
  const auto* p = static_cast<const unsigned char*>(t.raw());
  const size_t n = t.nbytes();
  h = mix(h, n);
  if (n <= 1024) {
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = mix(h, w);
    }
    return h;
  }
  auto word = [&](size_t at) {
    uint64_t w;
    std::memcpy(&w, p + at, 8);
    h = mix(h, w);
  };
  for (size_t i = 0; i < 256; i += 8) word(i);
  for (size_t i = n - 256; i + 8 <= n; i += 8) word(i);
  for (size_t k = 1; k <= 64; ++k) word((n - 8) / 65 * k);
  return h;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

}  // namespace

uint64_t tensor_hash(const Tensor& t) {
  uint64_t h = mix(0x243F6A8885A308D3ull, static_cast<uint64_t>(t.dtype()));
  for (int64_t d : t.shape()) h = mix(h, static_cast<uint64_t>(d));
  const auto* p = static_cast<const unsigned char*>(t.raw());
  size_t n = t.nbytes();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  if (i < n) std::memcpy(&tail, p + i, n - i);
  return mix(h, tail ^ (static_cast<uint64_t>(n) << 3));
}

std::shared_ptr<const Tensor> ConstantCache::intern(std::shared_ptr<const Tensor> t) {
  if (!t || t->nbytes() < kMinBytes || !t->raw()) return t;
  std::lock_guard<std::mutex> lock(mu_);
  auto s = seen_.find(t.get());
  if (s != seen_.end()) {
    if (auto held = s->second.lock(); held && held.get() == t.get()) return t;
    seen_.erase(s);
  }
  uint64_t h = sample_hash(*t);
  auto [first, last] = by_hash_.equal_range(h);
  for (auto it = first; it != last;) {
    std::shared_ptr<const Tensor> other = it->second.lock();
    if (!other) {
      it = by_hash_.erase(it);
      continue;
    }
    if (same_tensor(*other, *t)) return other;
    ++it;
  }
  by_hash_.emplace(h, t);
  seen_[t.get()] = t;
  // Forget the dead now and then, so the maps stay the size of what is alive.
  if (++inserts_ % 256 == 0) {
    for (auto it = seen_.begin(); it != seen_.end();) it = it->second.expired() ? seen_.erase(it) : std::next(it);
    for (auto it = by_hash_.begin(); it != by_hash_.end();)
      it = it->second.expired() ? by_hash_.erase(it) : std::next(it);
  }
  return t;
}

size_t ConstantCache::alive_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (const auto& [h, w] : by_hash_)
    if (auto t = w.lock()) bytes += t->nbytes();
  return bytes;
}

}  // namespace minirt
