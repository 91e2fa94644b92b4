// vmath.h's functions in AVX2 registers (avx2, fma): the register forms
// ISA files inline into their kernels. Only ISA files include it
// (ARCHITECTURE.md, "ISA files"; tests/cli/isa_placement_test.sh), and its
// functions are called only from functions of the same (or a wider) target,
// after run-time detection. The algorithms, their error bounds and special
// values are vmath.h's.
//
//   __m256 v = act_avx2(v, act);     // in a MINIRT_TARGET_AVX2 function
#pragma once

#include "kernels/cpu/vmath.h"

#include <immintrin.h>

#define MINIRT_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace minirt::cpu {

// ---------------------------------------------------------------- AVX2 + FMA

namespace vmath_detail {

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 set256(float v) { return _mm256_set1_ps(v); }
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 abs256(__m256 x) { return _mm256_andnot_ps(set256(-0.0f), x); }
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 copysign256(__m256 m, __m256 s) {
  const __m256 sign = set256(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(sign, m), _mm256_and_ps(sign, s));
}
template <size_t N>
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 poly256(__m256 x, const float (&c)[N]) {
  __m256 p = set256(c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) p = _mm256_fmadd_ps(p, x, set256(c[i]));
  return p;
}
// 1 / d: rcp (12 bits) and two Newton steps (one leaves 2^-23, and 1/1 as 1 - 2^-24).
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 recip256(__m256 d) {
  __m256 r = _mm256_rcp_ps(d);
  r = _mm256_fmadd_ps(_mm256_fnmadd_ps(d, r, set256(1.0f)), r, r);
  return _mm256_fmadd_ps(_mm256_fnmadd_ps(d, r, set256(1.0f)), r, r);
}
// 2^k for integer k in [-126, 127].
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 pow2i256(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 exp_reduce256(__m256 x, __m256i* n) {
  __m256 k = _mm256_round_ps(_mm256_mul_ps(x, set256(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, set256(kLn2Hi), x);
  r = _mm256_fnmadd_ps(k, set256(kLn2Lo), r);
  *n = _mm256_cvtps_epi32(k);  // NaN gives INT_MIN: garbage scale, but p is NaN
  return _mm256_fmadd_ps(_mm256_mul_ps(r, r), poly256(r, kExpQ), r);
}

}  // namespace vmath_detail

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 exp_avx2(__m256 x) {
  using namespace vmath_detail;
  x = _mm256_min_ps(set256(kExpHi), _mm256_max_ps(set256(kExpLo), x));
  __m256i n;
  __m256 p = _mm256_add_ps(exp_reduce256(x, &n), set256(1.0f));
  // p 2^n as p 2^n1 2^n2, both factors normal (n in [-150, 128]): the first
  // product is exact, the second rounds once into the denormals or to inf.
  __m256i n1 = _mm256_srai_epi32(n, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2i256(n1)), pow2i256(_mm256_sub_epi32(n, n1)));
}

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 expm1_avx2(__m256 x) {
  using namespace vmath_detail;
  x = _mm256_min_ps(set256(kExpHi), _mm256_max_ps(set256(kExpm1Lo), x));
  __m256i n;
  __m256 em1 = exp_reduce256(x, &n);
  __m256 h = pow2i256(_mm256_sub_epi32(n, _mm256_set1_epi32(1)));
  __m256 y = _mm256_fmadd_ps(h, em1, _mm256_sub_ps(h, set256(0.5f)));
  return _mm256_add_ps(y, y);
}

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 log_avx2(__m256 x) {
  using namespace vmath_detail;
  // Denormals (and zeros and negatives, fixed below) scaled by 2^23 first.
  __m256 tiny = _mm256_cmp_ps(x, set256(std::numeric_limits<float>::min()), _CMP_LT_OQ);
  __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, set256(8388608.0f)), tiny);
  __m256i bits = _mm256_castps_si256(xs);
  __m256i ei = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127));
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f800000)));
  __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(ei), _mm256_and_ps(tiny, set256(-23.0f)));
  __m256 big = _mm256_cmp_ps(m, set256(kSqrt2), _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, set256(0.5f)), big);
  e = _mm256_add_ps(e, _mm256_and_ps(big, set256(1.0f)));
  __m256 f = _mm256_sub_ps(m, set256(1.0f));
  __m256 t = _mm256_fmadd_ps(poly256(f, kLogP), f, set256(-0.5f));
  __m256 y = _mm256_fmadd_ps(_mm256_mul_ps(f, f), t, f);
  y = _mm256_fmadd_ps(e, set256(kLn2Lo), y);
  y = _mm256_fmadd_ps(e, set256(kLn2Hi), y);
  y = _mm256_blendv_ps(y, set256(kNaN), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NGE_UQ));
  y = _mm256_blendv_ps(y, set256(-kInf), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, set256(kInf), _CMP_EQ_OQ));
}

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 log1p_avx2(__m256 x) {
  using namespace vmath_detail;
  __m256 u = _mm256_add_ps(set256(1.0f), x);
  __m256 l = log_avx2(u);
  __m256 c = _mm256_div_ps(_mm256_sub_ps(x, _mm256_sub_ps(u, set256(1.0f))), u);
  __m256 ok =
      _mm256_and_ps(_mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_GT_OQ), _mm256_cmp_ps(u, set256(kInf), _CMP_LT_OQ));
  return _mm256_add_ps(l, _mm256_and_ps(ok, c));
}

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 sigmoid_avx2(__m256 x) {
  using namespace vmath_detail;
  __m256 e = exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), abs256(x)));
  __m256 r = recip256(_mm256_add_ps(set256(1.0f), e));
  __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_blendv_ps(r, _mm256_mul_ps(e, r), neg);
}

// x sigmoid(x) in about two thirds of the instructions of x times
// sigmoid_avx2(x): -|x| by setting the sign bit, clamped to ln(FLT_MIN) so
// that e = e^-|x| is normal; n = round(x / ln2) by the magic-number addition,
// whose bits shifted left by 23 are 2^n (one product instead of exp_avx2's
// two scale factors); rcp and one Newton step; e / (1 + e) for x < 0 with the
// numerator picked by x's sign bit. Below ln(FLT_MIN) the numerator is 0:
// x sigmoid(x) is then under FLT_MIN |x|, given as -0 (and NaN for -inf,
// as -inf times Sigmoid's 0 is).
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 silu_avx2(__m256 x) {
  using namespace vmath_detail;
  const __m256 one = set256(1.0f);
  __m256 a = _mm256_or_ps(x, set256(-0.0f));                    // -|x|
  __m256 in = _mm256_cmp_ps(a, set256(kLnFltMin), _CMP_GE_OQ);  // false below, and for NaN
  __m256 c = _mm256_max_ps(set256(kLnFltMin), a);               // a NaN stays
  __m256 t = _mm256_fmadd_ps(c, set256(kLog2e), set256(kRoundMagic));
  __m256 k = _mm256_sub_ps(t, set256(kRoundMagic));
  __m256 r = _mm256_fnmadd_ps(k, set256(kLn2Hi), c);
  r = _mm256_fnmadd_ps(k, set256(kLn2Lo), r);
  __m256 p = _mm256_fmadd_ps(_mm256_mul_ps(r, r), poly256(r, kExpQ), r);
  __m256 pow2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));  // 2^n, n in [-126, 0]
  __m256 e = _mm256_mul_ps(_mm256_add_ps(p, one), pow2);
  __m256 d = _mm256_add_ps(one, e);
  __m256 s = _mm256_rcp_ps(d);
  s = _mm256_fmadd_ps(_mm256_fnmadd_ps(d, s, one), s, s);
  __m256 num = _mm256_blendv_ps(one, _mm256_and_ps(e, in), x);  // sign bit of x: e (0 in the tail), else 1
  return _mm256_mul_ps(x, _mm256_mul_ps(num, s));
}

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 tanh_avx2(__m256 x) {
  using namespace vmath_detail;
  __m256 ax = abs256(x);
  __m256 z = _mm256_mul_ps(x, x);
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(x, z), poly256(z, kTanhP), x);
  __m256 a2 = _mm256_min_ps(set256(2.0f * kTanhClamp), _mm256_add_ps(ax, ax));
  __m256 r = recip256(_mm256_add_ps(exp_avx2(a2), set256(1.0f)));
  __m256 big = _mm256_fnmadd_ps(set256(2.0f), r, set256(1.0f));
  return copysign256(_mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, set256(kTanhSmall), _CMP_LT_OQ)), x);
}

MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 erf_avx2(__m256 x) {
  using namespace vmath_detail;
  __m256 ax = abs256(x);
  __m256 small = _mm256_fmadd_ps(x, poly256(_mm256_mul_ps(x, x), kErfP), x);
  __m256 a = _mm256_min_ps(set256(kErfClamp), ax);
  __m256 g = poly256(_mm256_sub_ps(a, set256(kErfShift)), kErfcG);
  __m256 big = _mm256_sub_ps(set256(1.0f), exp_avx2(_mm256_fnmadd_ps(a, a, g)));
  big = copysign256(big, x);
  return _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, set256(kErfSmall), _CMP_LT_OQ));
}

// Activation K of the 8 lanes of x.
template <ActKind K>
MINIRT_TARGET_AVX2 MINIRT_VMATH_INLINE __m256 act_kind_avx2(__m256 x, const Activation& a) {
  using namespace vmath_detail;
  const __m256 zero = _mm256_setzero_ps(), one = set256(1.0f);
  if constexpr (K == ActKind::kNone) {
    return x;
  } else if constexpr (K == ActKind::kRelu) {
    return _mm256_max_ps(x, zero);
  } else if constexpr (K == ActKind::kClip) {
    return _mm256_min_ps(set256(a.beta), _mm256_max_ps(set256(a.alpha), x));
  } else if constexpr (K == ActKind::kLeakyRelu) {
    __m256 ge = _mm256_cmp_ps(x, zero, _CMP_GE_OQ);
    return _mm256_blendv_ps(_mm256_mul_ps(x, set256(a.alpha)), x, ge);
  } else if constexpr (K == ActKind::kSigmoid) {
    return sigmoid_avx2(x);
  } else if constexpr (K == ActKind::kSilu) {
    return silu_avx2(x);
  } else if constexpr (K == ActKind::kHardSigmoid) {
    __m256 v = _mm256_fmadd_ps(set256(a.alpha), x, set256(a.beta));  // as Activation::apply: one rounding
    return _mm256_min_ps(one, _mm256_max_ps(zero, v));
  } else if constexpr (K == ActKind::kHardSwish) {
    __m256 v = _mm256_fmadd_ps(x, set256(1.0f / 6.0f), set256(0.5f));
    return _mm256_mul_ps(x, _mm256_min_ps(one, _mm256_max_ps(zero, v)));
  } else if constexpr (K == ActKind::kTanh) {
    return tanh_avx2(x);
  } else if constexpr (K == ActKind::kElu) {
    __m256 ge = _mm256_cmp_ps(x, zero, _CMP_GE_OQ);
    return _mm256_blendv_ps(_mm256_mul_ps(set256(a.alpha), expm1_avx2(x)), x, ge);
  } else if constexpr (K == ActKind::kSelu) {
    __m256 gt = _mm256_cmp_ps(x, zero, _CMP_GT_OQ);
    return _mm256_blendv_ps(_mm256_mul_ps(set256(a.beta * a.alpha), expm1_avx2(x)), _mm256_mul_ps(set256(a.beta), x),
                            gt);
  } else if constexpr (K == ActKind::kCelu) {
    __m256 v = _mm256_mul_ps(set256(a.alpha), expm1_avx2(_mm256_div_ps(x, set256(a.alpha))));
    return _mm256_add_ps(_mm256_max_ps(zero, x), _mm256_min_ps(zero, v));
  } else if constexpr (K == ActKind::kSoftplus) {
    __m256 e = exp_avx2(_mm256_sub_ps(zero, abs256(x)));
    return _mm256_add_ps(_mm256_max_ps(zero, x), log1p_avx2(e));
  } else if constexpr (K == ActKind::kSoftsign) {
    return _mm256_div_ps(x, _mm256_add_ps(one, abs256(x)));
  } else if constexpr (K == ActKind::kThresholdedRelu) {
    return _mm256_and_ps(_mm256_cmp_ps(x, set256(a.alpha), _CMP_GT_OQ), x);
  } else if constexpr (K == ActKind::kMish) {
    __m256 e = exp_avx2(_mm256_min_ps(set256(kMishClamp), x));
    __m256 n = _mm256_mul_ps(e, _mm256_add_ps(e, set256(2.0f)));
    return _mm256_mul_ps(x, _mm256_div_ps(n, _mm256_add_ps(n, set256(2.0f))));
  } else if constexpr (K == ActKind::kGelu) {
    __m256 h = _mm256_add_ps(one, erf_avx2(_mm256_mul_ps(x, set256(kInvSqrt2))));
    return _mm256_mul_ps(_mm256_mul_ps(set256(0.5f), x), h);
  } else if constexpr (K == ActKind::kGeluTanh) {
    __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(set256(0.044715f), x), x), x);
    __m256 u = _mm256_mul_ps(set256(kGeluTanhK), _mm256_add_ps(x, x3));
    return _mm256_mul_ps(x, sigmoid_avx2(_mm256_add_ps(u, u)));
  } else if constexpr (K == ActKind::kQuantGrid) {
    __m256 q = _mm256_div_ps(x, set256(a.alpha));
    q = _mm256_min_ps(set256(a.gamma), _mm256_max_ps(set256(a.beta), q));
    return _mm256_mul_ps(set256(a.alpha), _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  } else {
    static_assert(K == ActKind::kNone, "an ActKind without an AVX2 form");
    return x;
  }
}

MINIRT_TARGET_AVX2 __m256 act_costly_avx2(__m256 x, const Activation& a);

// Activation a of the 8 lanes of x; always inlined, as act_avx512; its
// caller's target must include avx2 and fma.
MINIRT_TARGET_AVX2 __attribute__((always_inline)) MINIRT_VMATH_INLINE __m256 act_avx2(__m256 x, const Activation& a) {
  if (a.kind == ActKind::kNone) return x;
  if (a.kind == ActKind::kRelu) return act_kind_avx2<ActKind::kRelu>(x, a);
  if (a.kind == ActKind::kLeakyRelu) return act_kind_avx2<ActKind::kLeakyRelu>(x, a);
  if (a.kind == ActKind::kClip) return act_kind_avx2<ActKind::kClip>(x, a);
  if (a.kind == ActKind::kQuantGrid) return act_kind_avx2<ActKind::kQuantGrid>(x, a);
  return act_costly_avx2(x, a);  // every kind has its case there
}

}  // namespace minirt::cpu
