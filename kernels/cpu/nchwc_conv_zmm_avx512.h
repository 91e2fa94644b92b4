// The blocked float32 convolution's AVX-512 vector traits for the one body
// nchwc_conv_ukr.h, included by its two AVX-512 objects only:
// nchwc_conv_avx512.cpp (blocked-input and depthwise tiles) and
// nchwc_conv_plain_avx512.cpp (plain-input tiles), both compiled with
// -mavx512f -mavx2 -mfma (CMakeLists.txt). Everything here is in an
// anonymous namespace, as the body is: each object has its own copy.
//
// GCC 12 takes the self-initialized _mm512_undefined_ps() inside
// _mm512_min_ps for an uninitialized read when it inlines it into the
// microkernels, a false positive: an including file wraps this header and its
// table in `#pragma GCC diagnostic ignored "-Wuninitialized"`.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/nchwc_conv_isa.h"

// vmath_avx512.h's register forms local to the object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"

#include "kernels/cpu/nchwc_conv_ukr.h"

namespace minirt::cpu {
namespace {

struct Zmm {
  static constexpr int kLanes = 16;
  using V = __m512;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_load_ps(p); }
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V act(V x, const Activation& a) { return act_avx512(x, a); }
  template <ActKind K>
  static V act_kind(V x, const Activation& a) {
    return act_kind_avx512<K>(x, a);
  }
  // The quantized SiLU by its table: the code of v on pre's grid looks up
  // act(v gate(sigmoid(v))) (quant_silu_table_avx512, built by the driver).
  __attribute__((noinline)) static void gated(float* y, int64_t ps, int64_t bs, int n, int nb,
                                              const nchwc_tiles::DwArgs& a) {
    const Activation& pre = *a.pre;
    const __m512 alpha = _mm512_set1_ps(pre.alpha), lo = _mm512_set1_ps(pre.beta), hi = _mm512_set1_ps(pre.gamma);
    const __m512 inv = quant_inverse_avx512(alpha);
    const __m512i ilo = _mm512_set1_epi32(static_cast<int32_t>(pre.beta));
    for (int p = 0; p < n; ++p)
      for (int o = 0; o < nb; ++o) {
        float* q = y + p * ps + o * bs;
        const __m512 k = quant_round_avx512(_mm512_loadu_ps(q), alpha, inv, lo, hi);
        _mm512_storeu_ps(q, lut256_avx512(a.table, _mm512_sub_epi32(_mm512_cvtps_epi32(k), ilo)));
      }
  }
};

}  // namespace
}  // namespace minirt::cpu
