// Reorders between the plain and the channel-blocked layout (nchwc.h); the
// vector tiles are reorder_avx512.cpp and reorder_avx2.cpp.
#include "kernels/cpu/nchwc.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/reorder_isa.h"

namespace minirt::cpu {

int nchwc_block(SgemmIsa isa) {
  switch (isa) {
    case SgemmIsa::kAvx512:
      return 16;
    case SgemmIsa::kAvx2:
      return 8;
    case SgemmIsa::kGeneric:
      break;
  }
  return 0;
}

namespace {

// Pixels per task at least: a reorder is a pure copy, worth splitting only
// when each part moves tens of kilobytes.
constexpr int64_t kPixelGrain = 1024;

// Portable: one block of b channels (nc of them real) of one image, plain
// rows of hw floats at x (stride hw) into hw pixels of b lanes at y (and
// back), pixels [p0, p1).
void block_in(const float* x, float* y, int64_t hw, int64_t nc, int b, int64_t p0, int64_t p1) {
  for (int64_t q = p0; q < p1; ++q) {
    float* dst = y + q * b;
    int64_t l = 0;
    for (; l < nc; ++l) dst[l] = x[l * hw + q];
    for (; l < b; ++l) dst[l] = 0.0f;
  }
}

void block_out(const float* x, float* y, int64_t hw, int64_t nc, int b, int64_t p0, int64_t p1) {
  for (int64_t l = 0; l < nc; ++l) {
    float* dst = y + l * hw;
    const float* src = x + l;
    for (int64_t q = p0; q < p1; ++q) dst[q] = src[q * b];
  }
}

// The vector tiles (reorder_isa.h) do the whole tiles of B pixels, the
// portable loops above the tail pixels.
template <bool kIn>
void reorder(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int b, ThreadPool& pool) {
  const int64_t cb = nchwc_blocks(c, b);
  const int64_t parts = std::max<int64_t>(1, hw / kPixelGrain);
#if defined(__x86_64__) || defined(__i386__)
  // The vector tiles need the ISA the block was chosen for; blocks are only
  // made for kernels of that ISA, so it is there.
  const bool simd =
      (b == 16 && sgemm_isa_supported(SgemmIsa::kAvx512)) || (b == 8 && sgemm_isa_supported(SgemmIsa::kAvx2));
#endif
  auto body = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      int64_t part = u % parts, blk = (u / parts) % cb, img = u / parts / cb;
      int64_t p0 = hw * part / parts, p1 = hw * (part + 1) / parts;
      int64_t nc = std::min<int64_t>(b, c - blk * b);
      const size_t plain = static_cast<size_t>((img * c + blk * b) * hw);
      const size_t blocked = static_cast<size_t>((img * cb + blk) * hw * b);
      const float* src = x + (kIn ? plain : blocked);
      float* dst = y + (kIn ? blocked : plain);
#if defined(__x86_64__) || defined(__i386__)
      if (simd && b == 16) p0 = nchwc_reorder_tiles_avx512(src, dst, hw, nc, p0, p1, kIn);
      if (simd && b == 8) p0 = nchwc_reorder_tiles_avx2(src, dst, hw, nc, p0, p1, kIn);
#endif
      if (kIn)
        block_in(src, dst, hw, nc, b, p0, p1);
      else
        block_out(src, dst, hw, nc, b, p0, p1);
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
