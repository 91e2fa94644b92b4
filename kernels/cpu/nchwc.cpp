// Reorders between the plain and the channel-blocked layout (nchwc.h).
#include "kernels/cpu/nchwc.h"

#include <algorithm>
#include <cstring>

namespace minirt::cpu {

int nchwc_block(SgemmIsa isa) {
  switch (isa) {
    case SgemmIsa::kAvx512: return 16;
    case SgemmIsa::kAvx2: return 8;
    case SgemmIsa::kGeneric: break;
  }
  return 0;
}

namespace {

// Pixels per task at least: a reorder is a pure copy, worth splitting only
// when each part moves tens of kilobytes.
constexpr int64_t kPixelGrain = 1024;

// One block of b channels (nc of them real) of one image: plain rows of hw
// floats at x (stride hw) into hw pixels of b lanes at y, pixels [p0, p1).
// Tiles of 8 pixels are gathered lane by lane so each store is a whole line.
void block_in(const float* x, float* y, int64_t hw, int64_t nc, int b, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; p += 8) {
    int64_t pe = std::min(p1, p + 8);
    for (int64_t q = p; q < pe; ++q) {
      float* dst = y + q * b;
      int64_t l = 0;
      for (; l < nc; ++l) dst[l] = x[l * hw + q];
      for (; l < b; ++l) dst[l] = 0.0f;
    }
  }
}

void block_out(const float* x, float* y, int64_t hw, int64_t nc, int b, int64_t p0, int64_t p1) {
  for (int64_t l = 0; l < nc; ++l) {
    float* dst = y + l * hw;
    const float* src = x + l;
    for (int64_t q = p0; q < p1; ++q) dst[q] = src[q * b];
  }
}

template <bool kIn>
void reorder(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int b, ThreadPool& pool) {
  const int64_t cb = nchwc_blocks(c, b);
  const int64_t parts = std::max<int64_t>(1, hw / kPixelGrain);
  auto body = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      int64_t part = u % parts, blk = (u / parts) % cb, img = u / parts / cb;
      int64_t p0 = hw * part / parts, p1 = hw * (part + 1) / parts;
      int64_t nc = std::min<int64_t>(b, c - blk * b);
      const size_t plain = static_cast<size_t>((img * c + blk * b) * hw);
      const size_t blocked = static_cast<size_t>((img * cb + blk) * hw * b);
      if (kIn) block_in(x + plain, y + blocked, hw, nc, b, p0, p1);
      else block_out(x + blocked, y + plain, hw, nc, b, p0, p1);
    }
  };
  pool.parallel_for(n * cb * parts, body);
}

}  // namespace

void nchwc_reorder_to_blocked(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int b, ThreadPool& pool) {
  reorder<true>(x, y, n, c, hw, b, pool);
}

void nchwc_reorder_to_plain(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int b, ThreadPool& pool) {
  reorder<false>(x, y, n, c, hw, b, pool);
}

}  // namespace minirt::cpu
