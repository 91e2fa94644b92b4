// The strided-copy engine's 4-byte transpose tile in AVX2 registers
// (transpose_isa.h). Compiled with -mavx2 -mfma (CMakeLists.txt) and called
// only where the CPU has AVX2 (StridedView::avx2). Its entry point is its one
// global symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/transpose_isa.h"

namespace minirt::cpu {

// A tile of 4-byte elements as in transpose_tile, in 8 x 8 blocks of AVX2
// registers (8 source rows loaded, transposed by unpacks, shuffles and lane
// permutes, stored as 8 destination rows); the edges element by element.
void transpose_tile32_avx2(const char* src, int64_t ld_src, char* dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (int64_t b = 0; b < cols8; b += 8)
    for (int64_t a = 0; a < rows8; a += 8) {
      const float* p = s + a + b * ld_src;
      __m256 r0 = _mm256_loadu_ps(p), r1 = _mm256_loadu_ps(p + ld_src), r2 = _mm256_loadu_ps(p + 2 * ld_src),
             r3 = _mm256_loadu_ps(p + 3 * ld_src), r4 = _mm256_loadu_ps(p + 4 * ld_src),
             r5 = _mm256_loadu_ps(p + 5 * ld_src), r6 = _mm256_loadu_ps(p + 6 * ld_src),
             r7 = _mm256_loadu_ps(p + 7 * ld_src);
      __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
      __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
      __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
      __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
      __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* q = d + a * ld_dst + b;
      _mm256_storeu_ps(q, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(q + ld_dst, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(q + 2 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(q + 3 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(q + 4 * ld_dst, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(q + 5 * ld_dst, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(q + 6 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(q + 7 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
  // The right edge (columns past cols8) and the bottom edge (rows past rows8).
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t b = a < rows8 ? cols8 : 0; b < cols; ++b) d[a * ld_dst + b] = s[a + b * ld_src];
}

}  // namespace minirt::cpu
