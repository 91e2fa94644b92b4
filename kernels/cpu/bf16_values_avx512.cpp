// Moving bf16 values: MaxPool, 32 lanes a pixel compared as floats (two
// AVX-512 registers: a bf16 is the top half of a float32), the result
// converted back exactly; and the depthwise convolution's conversions.
// Compiled with the AVX512_BF16 flags (CMakeLists.txt); called only on bf16
// values, which exist only where cpu_isa() has AVX512_BF16. Layouts in
// bf16_values_isa.h; its entry points are its only global symbols
// (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>

#include "kernels/cpu/bf16_values_isa.h"

namespace minirt::cpu {
namespace {

// First i in [0, k) with a + i d >= 0, and one past the last with a + i d < n.
inline int64_t first_inside(int64_t a, int64_t d) { return a >= 0 ? 0 : (-a + d - 1) / d; }
inline int64_t end_inside(int64_t a, int64_t d, int64_t k, int64_t n) {
  if (a >= n) return 0;
  return std::min(k, (n - 1 - a) / d + 1);
}

}  // namespace

void bf16_max_rows_avx512(const Bf16PoolGeom& q, const uint16_t* x, uint16_t* y, int64_t row0, int64_t row1) {
  const __m512 lowest = _mm512_set1_ps(-FLT_MAX);
  for (int64_t oh = row0; oh < row1; ++oh) {
    const int64_t ih0 = oh * q.sh - q.ph;
    const int64_t i0 = first_inside(ih0, q.dh), i1 = end_inside(ih0, q.dh, q.kh, q.h);
    for (int64_t ow = 0; ow < q.ow; ++ow) {
      const int64_t iw0 = ow * q.sw - q.pw;
      const int64_t j0 = first_inside(iw0, q.dw), j1 = end_inside(iw0, q.dw, q.kw, q.w);
      __m512 lo = lowest, hi = lowest;
      for (int64_t i = i0; i < i1; ++i) {
        const uint16_t* row = x + ((ih0 + i * q.dh) * q.w + iw0) * 32;
        for (int64_t j = j0; j < j1; ++j) {
          const __m512i v = _mm512_loadu_si512(row + j * q.dw * 32);
          // bf16 -> float: the 16 bits in the top half; max(v, acc) keeps
          // acc where v is NaN.
          const __m512 a = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)), 16));
          const __m512 b =
              _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)), 16));
          lo = _mm512_max_ps(a, lo);
          hi = _mm512_max_ps(b, hi);
        }
      }
      _mm512_storeu_si512(y + (oh * q.ow + ow) * 32, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
    }
  }
}

void bf16_lanes_to_floats_avx512(const uint16_t* src, int64_t stride, float* dst, int64_t n) {
  for (int64_t p = 0; p < n; ++p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + p * stride));
    _mm512_storeu_ps(dst + p * 16, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
}

void floats_to_bf16_lanes_avx512(const float* src, uint16_t* dst, int64_t stride, int64_t n) {
  for (int64_t p = 0; p < n; ++p)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + p * stride),
                        reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_loadu_ps(src + p * 16))));
}

}  // namespace minirt::cpu
