// The blocked layout's reorders (nchwc.cpp) in AVX2 registers: tiles of
// 8 channel rows x 8 pixels transposed in place (reorder_isa.h). Compiled with
// -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has the set; the
// entry point is its one global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/reorder_isa.h"

namespace minirt::cpu {
namespace {

// 8 vectors transposed: 8 channel rows of 8 pixels become 8 pixels of the block.
inline void transpose8x8(__m256 r[8]) {
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

// Whole tiles of 8 pixels from p0 on (a block with fewer real channels
// reads rows of zeros); returns the first pixel it left.
template <bool kIn>
int64_t tiles(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0, int64_t p1) {
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
  return q;
}

}  // namespace

int64_t nchwc_reorder_tiles_avx2(const float* x, float* y, int64_t hw, int64_t nc, int64_t p0, int64_t p1,
                                 bool to_blocked) {
  return to_blocked ? tiles<true>(x, y, hw, nc, p0, p1) : tiles<false>(x, y, hw, nc, p0, p1);
}

}  // namespace minirt::cpu
