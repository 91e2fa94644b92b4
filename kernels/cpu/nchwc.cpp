// Reorders between the plain and the channel-blocked layout (nchwc.h).
#include "kernels/cpu/nchwc.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__) || defined(__i386__)
// 16 x 16 and 8 x 8 tiles transposed in registers: 16 (8) channel rows of
// 16 (8) pixels become 16 (8) pixels of the block, whole vectors both ways.

__attribute__((target("avx512f"))) inline void transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  __m512 u[16];
  for (int g = 0; g < 16; g += 4) {
    __m512d a = _mm512_castps_pd(t[g]), b = _mm512_castps_pd(t[g + 2]);
    __m512d c = _mm512_castps_pd(t[g + 1]), d = _mm512_castps_pd(t[g + 3]);
    u[g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  // u[4g + m] lane 4j + i: row 4g + i, column 4j + m (within 128-bit lanes).
  for (int m = 0; m < 4; ++m) {
    __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88), v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xdd);
    __m512 w0 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88), w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xdd);
    r[m] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[8 + m] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
    r[4 + m] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[12 + m] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
  }
}

__attribute__((target("avx2"))) inline void transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 8; g += 4) {
    u[g + 0] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
    u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xee);
    u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xee);
  }
  for (int m = 0; m < 4; ++m) {
    r[m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x20);
    r[4 + m] = _mm256_permute2f128_ps(u[m], u[4 + m], 0x31);
  }
}

// Whole tiles of 16 (8) pixels with vectors; the tail pixels, and a block
// with fewer real channels, through rows of zeros.
template <bool kIn>
__attribute__((target("avx512f"))) void reorder16(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0,
                                                  int64_t p1) {
  const __m512 zero = _mm512_setzero_ps();
  int64_t q = p0;
  for (; q + 16 <= p1; q += 16) {
    __m512 r[16];
    if (kIn) {
      for (int l = 0; l < 16; ++l) r[l] = l < nc ? _mm512_loadu_ps(x + l * hw + q) : zero;
      transpose16x16(r);
      for (int p = 0; p < 16; ++p) _mm512_storeu_ps(y + (q + p) * 16, r[p]);
    } else {
      for (int p = 0; p < 16; ++p) r[p] = _mm512_loadu_ps(x + (q + p) * 16);
      transpose16x16(r);
      for (int l = 0; l < nc; ++l) _mm512_storeu_ps(y + l * hw + q, r[l]);
    }
  }
  if (q < p1) {
    if (kIn)
      block_in(x, y, hw, nc, 16, q, p1);
    else
      block_out(x, y, hw, nc, 16, q, p1);
  }
}

template <bool kIn>
__attribute__((target("avx2"))) void reorder8(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0,
                                              int64_t p1) {
  const __m256 zero = _mm256_setzero_ps();
  int64_t q = p0;
  for (; q + 8 <= p1; q += 8) {
    __m256 r[8];
    if (kIn) {
      for (int l = 0; l < 8; ++l) r[l] = l < nc ? _mm256_loadu_ps(x + l * hw + q) : zero;
      transpose8x8(r);
      for (int p = 0; p < 8; ++p) _mm256_storeu_ps(y + (q + p) * 8, r[p]);
    } else {
      for (int p = 0; p < 8; ++p) r[p] = _mm256_loadu_ps(x + (q + p) * 8);
      transpose8x8(r);
      for (int l = 0; l < nc; ++l) _mm256_storeu_ps(y + l * hw + q, r[l]);
    }
  }
  if (q < p1) {
    if (kIn)
      block_in(x, y, hw, nc, 8, q, p1);
    else
      block_out(x, y, hw, nc, 8, q, p1);
  }
}
#endif

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
      if (simd && b == 16) {
        reorder16<kIn>(src, dst, hw, nc, p0, p1);
        continue;
      }
      if (simd && b == 8) {
        reorder8<kIn>(src, dst, hw, nc, p0, p1);
        continue;
      }
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
