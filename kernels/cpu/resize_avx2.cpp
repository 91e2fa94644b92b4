// The Resize row primitives for AVX2 (resize_isa.h: what each does).
// Compiled with -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has
// the set (resize_ops in resize.cpp); the entry point is its one global
// symbol (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/resize_isa.h"
#include "kernels/cpu/resize_scalar.h"

namespace minirt::cpu {
namespace {

void dup2_avx2(float* dst, const float* src, int64_t npix, int64_t lanes) {
  if (lanes == 1) {
    int64_t p = 0;
    for (; p + 8 <= npix; p += 8) {
      __m256 v = _mm256_loadu_ps(src + p);
      __m256 lo = _mm256_unpacklo_ps(v, v);  // 0 0 1 1 | 4 4 5 5
      __m256 hi = _mm256_unpackhi_ps(v, v);  // 2 2 3 3 | 6 6 7 7
      _mm256_storeu_ps(dst + 2 * p, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(dst + 2 * p + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
    for (; p < npix; ++p) dst[2 * p] = dst[2 * p + 1] = src[p];
    return;
  }
  if (lanes == 8 || lanes == 16) {
    for (int64_t p = 0; p < npix; ++p)
      for (int64_t l = 0; l < lanes; l += 8) {
        __m256 v = _mm256_loadu_ps(src + p * lanes + l);
        _mm256_storeu_ps(dst + 2 * p * lanes + l, v);
        _mm256_storeu_ps(dst + (2 * p + 1) * lanes + l, v);
      }
    return;
  }
  dup2_generic(dst, src, npix, lanes);
}

void blend_avx2(float* dst, const float* h0, const float* h1, float a, float b, int64_t n) {
  const __m256 av = _mm256_set1_ps(a), bv = _mm256_set1_ps(b);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        dst + i, _mm256_add_ps(_mm256_mul_ps(av, _mm256_loadu_ps(h0 + i)), _mm256_mul_ps(bv, _mm256_loadu_ps(h1 + i))));
  for (; i < n; ++i) dst[i] = a * h0[i] + b * h1[i];
}

void scale_avx2(float* dst, const float* h0, float a, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_mul_ps(av, _mm256_loadu_ps(h0 + i)));
  for (; i < n; ++i) dst[i] = a * h0[i];
}

void hblend_avx2(float* dst, const float* src, const int64_t* i0, const int64_t* i1, const float* w0, const float* w1,
                 int64_t npix, int64_t lanes) {
  if (lanes == 8 || lanes == 16) {
    for (int64_t o = 0; o < npix; ++o) {
      __m256 a = _mm256_set1_ps(w0[o]), b = _mm256_set1_ps(w1[o]);
      for (int64_t l = 0; l < lanes; l += 8)
        _mm256_storeu_ps(dst + o * lanes + l,
                         _mm256_add_ps(_mm256_mul_ps(a, _mm256_loadu_ps(src + i0[o] * lanes + l)),
                                       _mm256_mul_ps(b, _mm256_loadu_ps(src + i1[o] * lanes + l))));
    }
    return;
  }
  hblend_generic(dst, src, i0, i1, w0, w1, npix, lanes);
}

constexpr ResizeOps kOps{dup2_avx2, blend_avx2, scale_avx2, hblend_avx2};

}  // namespace

const ResizeOps& resize_ops_avx2() { return kOps; }

}  // namespace minirt::cpu
