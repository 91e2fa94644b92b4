// The Resize row primitives for AVX-512 (resize_isa.h: what each does).
// Compiled with -mavx512f -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has
// the set (resize_ops in resize.cpp); the entry point is its one global
// symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/resize_isa.h"
#include "kernels/cpu/resize_scalar.h"

namespace minirt::cpu {
namespace {

void dup2_avx512(float* dst, const float* src, int64_t npix, int64_t lanes) {
  if (lanes == 1) {
    const __m512i lo = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i hi = _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
    int64_t p = 0;
    for (; p + 16 <= npix; p += 16) {
      __m512 v = _mm512_loadu_ps(src + p);
      _mm512_storeu_ps(dst + 2 * p, _mm512_permutexvar_ps(lo, v));
      _mm512_storeu_ps(dst + 2 * p + 16, _mm512_permutexvar_ps(hi, v));
    }
    for (; p < npix; ++p) dst[2 * p] = dst[2 * p + 1] = src[p];
    return;
  }
  if (lanes == 16) {
    for (int64_t p = 0; p < npix; ++p) {
      __m512 v = _mm512_loadu_ps(src + p * 16);
      _mm512_storeu_ps(dst + 32 * p, v);
      _mm512_storeu_ps(dst + 32 * p + 16, v);
    }
    return;
  }
  dup2_generic(dst, src, npix, lanes);
}

void blend_avx512(float* dst, const float* h0, const float* h1, float a, float b, int64_t n) {
  const __m512 av = _mm512_set1_ps(a), bv = _mm512_set1_ps(b);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(
        dst + i, _mm512_add_ps(_mm512_mul_ps(av, _mm512_loadu_ps(h0 + i)), _mm512_mul_ps(bv, _mm512_loadu_ps(h1 + i))));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dst + i, m,
                          _mm512_add_ps(_mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, h0 + i)),
                                        _mm512_mul_ps(bv, _mm512_maskz_loadu_ps(m, h1 + i))));
  }
}

void scale_avx512(float* dst, const float* h0, float a, int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_mul_ps(av, _mm512_loadu_ps(h0 + i)));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, h0 + i)));
  }
}

void hblend_avx512(float* dst, const float* src, const int64_t* i0, const int64_t* i1, const float* w0, const float* w1,
                   int64_t npix, int64_t lanes) {
  if (lanes == 16) {
    for (int64_t o = 0; o < npix; ++o)
      _mm512_storeu_ps(dst + o * 16,
                       _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(w0[o]), _mm512_loadu_ps(src + i0[o] * 16)),
                                     _mm512_mul_ps(_mm512_set1_ps(w1[o]), _mm512_loadu_ps(src + i1[o] * 16))));
    return;
  }
  if (lanes == 8) {
    for (int64_t o = 0; o < npix; ++o)
      _mm256_storeu_ps(dst + o * 8,
                       _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(w0[o]), _mm256_loadu_ps(src + i0[o] * 8)),
                                     _mm256_mul_ps(_mm256_set1_ps(w1[o]), _mm256_loadu_ps(src + i1[o] * 8))));
    return;
  }
  hblend_generic(dst, src, i0, i1, w0, w1, npix, lanes);
}

constexpr ResizeOps kOps{dup2_avx512, blend_avx512, scale_avx512, hblend_avx512};

}  // namespace

const ResizeOps& resize_ops_avx512() { return kOps; }

}  // namespace minirt::cpu
