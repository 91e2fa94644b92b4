// The blocked layout's reorders (nchwc.cpp) in AVX-512 registers: tiles of
// 16 channel rows x 16 pixels transposed in place (reorder_isa.h). Compiled with
// -mavx512f (CMakeLists.txt) and called only where the CPU has the set; the
// entry point is its one global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/reorder_isa.h"

namespace minirt::cpu {
namespace {

// 16 vectors transposed: 16 channel rows of 16 pixels become 16 pixels of the block.
inline void transpose16x16(__m512 r[16]) {
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

// Whole tiles of 16 pixels from p0 on (a block with fewer real channels
// reads rows of zeros); returns the first pixel it left.
template <bool kIn>
int64_t tiles(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0, int64_t p1) {
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
  return q;
}

}  // namespace

int64_t nchwc_reorder_tiles_avx512(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0, int64_t p1,
                                   bool to_blocked) {
  return to_blocked ? tiles<true>(x, y, hw, nc, p0, p1) : tiles<false>(x, y, hw, nc, p0, p1);
}

}  // namespace minirt::cpu
