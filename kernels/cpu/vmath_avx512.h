// vmath.h's functions in AVX-512 registers (avx512f, avx2, fma): the
// register forms ISA files inline into their kernels. Only ISA files include
// it (ARCHITECTURE.md, "ISA files"; tests/cli/isa_placement_test.sh), and
// its functions are called only from functions of the same (or a wider)
// target, after run-time detection. The algorithms, their error bounds and
// special values are vmath.h's.
//
//   __m512 v = act_avx512(v, act);   // in a MINIRT_TARGET_AVX512 function
//   __m512 e = exp_avx512(v);        // one function, one register
#pragma once

#include "kernels/cpu/vmath.h"

#include <immintrin.h>

#define MINIRT_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))

// Around code that uses AVX-512 intrinsics: GCC 12 reports the
// self-initialized _mm512_undefined_ps() inside its own intrinsics as
// (maybe-)uninitialized, depending on how they inline (GCC PR 105593), a
// false positive that -Werror would make fatal.
#if defined(__GNUC__) && !defined(__clang__)
#define MINIRT_AVX512_WARNINGS_OFF                                                           \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define MINIRT_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define MINIRT_AVX512_WARNINGS_OFF
#define MINIRT_AVX512_WARNINGS_ON
#endif

namespace minirt::cpu {

MINIRT_AVX512_WARNINGS_OFF

// ---------------------------------------------------------------- AVX-512
//
// Only AVX-512F instructions (the float logic ops, being AVX-512DQ, are
// done on integers), so every CPU with avx512f runs them; the target has no
// avx512dq, so that the compiler holds us to it and these inline into
// the SGEMM kernels of sgemm_avx512.cpp, whose flags are the same (and
// which makes them static, MINIRT_VMATH_INLINE).

namespace vmath_detail {

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 set512(float v) { return _mm512_set1_ps(v); }
MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 abs512(__m512 x) { return _mm512_abs_ps(x); }
// |m| with the sign of s.
MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 copysign512(__m512 m, __m512 s) {
  const __m512i sign = _mm512_set1_epi32(INT32_MIN);
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_andnot_si512(sign, _mm512_castps_si512(m)),
                                             _mm512_and_si512(sign, _mm512_castps_si512(s))));
}
template <size_t N>
MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 poly512(__m512 x, const float (&c)[N]) {
  __m512 p = set512(c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) p = _mm512_fmadd_ps(p, x, set512(c[i]));
  return p;
}
// 1 / d for d in (0, inf): rcp14 and one Newton step.
MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 recip512(__m512 d) {
  __m512 r = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(_mm512_fnmadd_ps(d, r, set512(1.0f)), r, r);
}
// For x already clamped: n = round(x / ln2) into *n, returns e^r - 1.
MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 exp_reduce512(__m512 x, __m512* n) {
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, set512(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, set512(kLn2Hi), x);
  r = _mm512_fnmadd_ps(k, set512(kLn2Lo), r);
  *n = k;
  return _mm512_fmadd_ps(_mm512_mul_ps(r, r), poly512(r, kExpQ), r);
}

}  // namespace vmath_detail

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 exp_avx512(__m512 x) {
  using namespace vmath_detail;
  // max(lo, x), then min(hi, .): a NaN in the second operand passes through.
  x = _mm512_min_ps(set512(kExpHi), _mm512_max_ps(set512(kExpLo), x));
  __m512 n;
  __m512 p = _mm512_add_ps(exp_reduce512(x, &n), set512(1.0f));
  return _mm512_scalef_ps(p, n);  // p 2^n, overflow and gradual underflow rounded once
}

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 expm1_avx512(__m512 x) {
  using namespace vmath_detail;
  x = _mm512_min_ps(set512(kExpHi), _mm512_max_ps(set512(kExpm1Lo), x));
  __m512 n;
  __m512 em1 = exp_reduce512(x, &n);
  __m512 h = _mm512_scalef_ps(set512(0.5f), n);  // 2^(n-1), normal for n in [-43, 128]
  __m512 y = _mm512_fmadd_ps(h, em1, _mm512_sub_ps(h, set512(0.5f)));
  return _mm512_add_ps(y, y);
}

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 log_avx512(__m512 x) {
  using namespace vmath_detail;
  __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);  // [1, 2), denormals too
  __m512 e = _mm512_getexp_ps(x);
  __mmask16 big = _mm512_cmp_ps_mask(m, set512(kSqrt2), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, big, m, set512(0.5f));
  e = _mm512_mask_add_ps(e, big, e, set512(1.0f));
  __m512 f = _mm512_sub_ps(m, set512(1.0f));
  __m512 t = _mm512_fmadd_ps(poly512(f, kLogP), f, set512(-0.5f));
  __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(f, f), t, f);
  y = _mm512_fmadd_ps(e, set512(kLn2Lo), y);
  y = _mm512_fmadd_ps(e, set512(kLn2Hi), y);
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NGE_UQ), set512(kNaN));  // < 0, NaN
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), set512(-kInf));
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, set512(kInf), _CMP_EQ_OQ), x);
}

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 log1p_avx512(__m512 x) {
  using namespace vmath_detail;
  __m512 u = _mm512_add_ps(set512(1.0f), x);
  __m512 l = log_avx512(u);
  __m512 c = _mm512_div_ps(_mm512_sub_ps(x, _mm512_sub_ps(u, set512(1.0f))), u);
  __mmask16 ok =
      _mm512_cmp_ps_mask(u, _mm512_setzero_ps(), _CMP_GT_OQ) & _mm512_cmp_ps_mask(u, set512(kInf), _CMP_LT_OQ);
  return _mm512_mask_add_ps(l, ok, l, c);
}

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 sigmoid_avx512(__m512 x) {
  using namespace vmath_detail;
  __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), abs512(x)));  // (0, 1]
  __m512 r = recip512(_mm512_add_ps(set512(1.0f), e));                   // 1 / (1 + e), of (1, 2]
  __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(r, neg, e, r);
}

// x sigmoid(x) in fewer instructions than x times sigmoid_avx512(x): -|x| by
// setting the sign bit, n = round(x / ln2) by the magic-number addition in
// the multiply-add that scales x (no roundscale, no upper clamp: the
// argument is never positive), one reciprocal for both signs (e / (1 + e)
// for x < 0 as a masked product). The same exp polynomial and scalef, so the
// tail below ln(FLT_MIN) keeps its denormal and the accuracy is sigmoid's.
MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 silu_avx512(__m512 x) {
  using namespace vmath_detail;
  __m512 a = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
  a = _mm512_max_ps(set512(kExpLo), a);  // -|x| in [-104, 0]; a NaN stays
  __m512 t = _mm512_fmadd_ps(a, set512(kLog2e), set512(kRoundMagic));
  __m512 k = _mm512_sub_ps(t, set512(kRoundMagic));
  __m512 r = _mm512_fnmadd_ps(k, set512(kLn2Hi), a);
  r = _mm512_fnmadd_ps(k, set512(kLn2Lo), r);
  __m512 p = _mm512_fmadd_ps(_mm512_mul_ps(r, r), poly512(r, kExpQ), r);
  __m512 e = _mm512_scalef_ps(_mm512_add_ps(p, set512(1.0f)), k);  // e^-|x|, (0, 1]
  __m512 s = recip512(_mm512_add_ps(set512(1.0f), e));
  s = _mm512_mask_mul_ps(s, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), e, s);
  return _mm512_mul_ps(x, s);
}

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 tanh_avx512(__m512 x) {
  using namespace vmath_detail;
  __m512 ax = abs512(x);
  __m512 z = _mm512_mul_ps(x, x);
  __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x, z), poly512(z, kTanhP), x);
  __m512 a2 = _mm512_min_ps(set512(2.0f * kTanhClamp), _mm512_add_ps(ax, ax));
  __m512 r = recip512(_mm512_add_ps(exp_avx512(a2), set512(1.0f)));
  __m512 big = _mm512_fnmadd_ps(set512(2.0f), r, set512(1.0f));
  // The sign of x on either branch (-0 stays -0).
  return copysign512(_mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, set512(kTanhSmall), _CMP_LT_OQ), big, small), x);
}

MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 erf_avx512(__m512 x) {
  using namespace vmath_detail;
  __m512 ax = abs512(x);
  __m512 small = _mm512_fmadd_ps(x, poly512(_mm512_mul_ps(x, x), kErfP), x);
  __m512 a = _mm512_min_ps(set512(kErfClamp), ax);
  __m512 g = poly512(_mm512_sub_ps(a, set512(kErfShift)), kErfcG);
  __m512 big = _mm512_sub_ps(set512(1.0f), exp_avx512(_mm512_fnmadd_ps(a, a, g)));
  big = copysign512(big, x);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, set512(kErfSmall), _CMP_LT_OQ), big, small);
}

// rne(clamp(fl(x / alpha), lo, hi)) -- the quotient rounded to float,
// clamped (max(lo, .) then min(hi, .), which keep a NaN), then rounded to
// the nearest integer, ties to even: what the QuantizeLinear -> DequantizeLinear
// pair's division gives, signed zeros included -- mostly without dividing
// (16 cycles a vector, longer than a 1x1 int8 convolution's products). inv
// is 1 / alpha within 2^-22 relatively, so t = x * inv is within |t| 2^-21
// of the float quotient, and the same clamp of both is too; where no lane of
// the clamped t is that close to a midpoint k + 0.5 (|t| 2^-19 allowed: all
// but about one vector in 300 at |t| ~ 100), both round to the same
// integer, and elsewhere the vector is divided.
MINIRT_TARGET_AVX512 __attribute__((always_inline)) MINIRT_VMATH_INLINE __m512 quant_round_avx512(__m512 x,
                                                                                                  __m512 alpha,
                                                                                                  __m512 inv, __m512 lo,
                                                                                                  __m512 hi) {
  using namespace vmath_detail;
  const __m512 t = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_mul_ps(x, inv)));
  const __m512 k = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 gap = _mm512_sub_ps(set512(0.5f), abs512(_mm512_sub_ps(t, k)));
  const __mmask16 near = _mm512_cmp_ps_mask(gap, _mm512_mul_ps(abs512(t), set512(0x1p-19f)), _CMP_LE_OQ);
  if (__builtin_expect(near != 0, 0)) {
    const __m512 q = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_div_ps(x, alpha)));
    return _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  return k;
}

// 1 / alpha within 2^-22 relatively (rcp14 and a Newton step), for quant_round_avx512.
MINIRT_TARGET_AVX512 __attribute__((always_inline)) MINIRT_VMATH_INLINE __m512 quant_inverse_avx512(__m512 alpha) {
  const __m512 r = _mm512_rcp14_ps(alpha);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(alpha, r, _mm512_set1_ps(2.0f)));
}

// Entry idx (int32 lanes, each in [0, 256)) of a 64-byte aligned table of
// 256 floats: eight two-register permutes of 32 entries each (bits 0-4 of
// idx), the right one picked by bits 5, 6 and 7. No gather: its cost
// varies with microcode (the GDS mitigation), the permutes' does not.
MINIRT_TARGET_AVX512 __attribute__((always_inline)) MINIRT_VMATH_INLINE __m512 lut256_avx512(const float* t,
                                                                                             __m512i idx) {
  __m512 p[8];
  for (int k = 0; k < 8; ++k)
    p[k] = _mm512_permutex2var_ps(_mm512_load_ps(t + 32 * k), idx, _mm512_load_ps(t + 32 * k + 16));
  const __mmask16 b5 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
  const __mmask16 b6 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64));
  const __mmask16 b7 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(128));
  for (int k = 0; k < 4; ++k) p[k] = _mm512_mask_blend_ps(b5, p[2 * k], p[2 * k + 1]);
  for (int k = 0; k < 2; ++k) p[k] = _mm512_mask_blend_ps(b6, p[2 * k], p[2 * k + 1]);
  return _mm512_mask_blend_ps(b7, p[0], p[1]);
}

// Activation K of the 16 lanes of x.
template <ActKind K>
MINIRT_TARGET_AVX512 MINIRT_VMATH_INLINE __m512 act_kind_avx512(__m512 x, const Activation& a) {
  using namespace vmath_detail;
  const __m512 zero = _mm512_setzero_ps(), one = set512(1.0f);
  if constexpr (K == ActKind::kNone) {
    return x;
  } else if constexpr (K == ActKind::kRelu) {
    return _mm512_max_ps(x, zero);  // NaN gives 0, as x > 0 ? x : 0
  } else if constexpr (K == ActKind::kClip) {
    // max(lo, x) then min(hi, .) keep a NaN as the scalar Clip does.
    return _mm512_min_ps(set512(a.beta), _mm512_max_ps(set512(a.alpha), x));
  } else if constexpr (K == ActKind::kLeakyRelu) {
    __mmask16 ge = _mm512_cmp_ps_mask(x, zero, _CMP_GE_OQ);
    return _mm512_mask_blend_ps(ge, _mm512_mul_ps(x, set512(a.alpha)), x);
  } else if constexpr (K == ActKind::kSigmoid) {
    return sigmoid_avx512(x);
  } else if constexpr (K == ActKind::kSilu) {
    return silu_avx512(x);
  } else if constexpr (K == ActKind::kHardSigmoid) {
    __m512 v = _mm512_fmadd_ps(set512(a.alpha), x, set512(a.beta));  // as Activation::apply: one rounding
    return _mm512_min_ps(one, _mm512_max_ps(zero, v));
  } else if constexpr (K == ActKind::kHardSwish) {
    __m512 v = _mm512_fmadd_ps(x, set512(1.0f / 6.0f), set512(0.5f));
    return _mm512_mul_ps(x, _mm512_min_ps(one, _mm512_max_ps(zero, v)));
  } else if constexpr (K == ActKind::kTanh) {
    return tanh_avx512(x);
  } else if constexpr (K == ActKind::kElu) {
    __mmask16 ge = _mm512_cmp_ps_mask(x, zero, _CMP_GE_OQ);
    return _mm512_mask_blend_ps(ge, _mm512_mul_ps(set512(a.alpha), expm1_avx512(x)), x);
  } else if constexpr (K == ActKind::kSelu) {
    __mmask16 gt = _mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ);
    return _mm512_mask_blend_ps(gt, _mm512_mul_ps(set512(a.beta * a.alpha), expm1_avx512(x)),
                                _mm512_mul_ps(set512(a.beta), x));
  } else if constexpr (K == ActKind::kCelu) {
    __m512 v = _mm512_mul_ps(set512(a.alpha), expm1_avx512(_mm512_div_ps(x, set512(a.alpha))));
    return _mm512_add_ps(_mm512_max_ps(zero, x), _mm512_min_ps(zero, v));
  } else if constexpr (K == ActKind::kSoftplus) {
    __m512 e = exp_avx512(_mm512_sub_ps(zero, abs512(x)));
    return _mm512_add_ps(_mm512_max_ps(zero, x), log1p_avx512(e));
  } else if constexpr (K == ActKind::kSoftsign) {
    return _mm512_div_ps(x, _mm512_add_ps(one, abs512(x)));
  } else if constexpr (K == ActKind::kThresholdedRelu) {
    __mmask16 gt = _mm512_cmp_ps_mask(x, set512(a.alpha), _CMP_GT_OQ);
    return _mm512_maskz_mov_ps(gt, x);
  } else if constexpr (K == ActKind::kMish) {
    __m512 e = exp_avx512(_mm512_min_ps(set512(kMishClamp), x));
    __m512 n = _mm512_mul_ps(e, _mm512_add_ps(e, set512(2.0f)));
    return _mm512_mul_ps(x, _mm512_div_ps(n, _mm512_add_ps(n, set512(2.0f))));
  } else if constexpr (K == ActKind::kGelu) {
    __m512 h = _mm512_add_ps(one, erf_avx512(_mm512_mul_ps(x, set512(kInvSqrt2))));
    return _mm512_mul_ps(_mm512_mul_ps(set512(0.5f), x), h);
  } else if constexpr (K == ActKind::kGeluTanh) {
    __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(set512(0.044715f), x), x), x);
    __m512 u = _mm512_mul_ps(set512(kGeluTanhK), _mm512_add_ps(x, x3));
    return _mm512_mul_ps(x, sigmoid_avx512(_mm512_add_ps(u, u)));
  } else if constexpr (K == ActKind::kQuantGrid) {
    // A product by the reciprocal alone would differ from the division next
    // to the grid's midpoints (Vmath.QuantGridRoundsMidpointsAsTheDivision):
    // quant_round_avx512 divides only there.
    const __m512 s = set512(a.alpha);
    return _mm512_mul_ps(s, quant_round_avx512(x, s, quant_inverse_avx512(s), set512(a.beta), set512(a.gamma)));
  } else {
    static_assert(K == ActKind::kNone, "an ActKind without an AVX-512 form");
    return x;
  }
}

// Out of line (vmath_avx512.cpp, vmath_avx2.cpp): every activation but None, Relu, LeakyRelu,
// Clip and QuantGrid (a quantized model's every convolution ends in it); a
// call is small next to an exp or a log, and keeps each tile kernel's
// epilogue short.
MINIRT_TARGET_AVX512 __m512 act_costly_avx512(__m512 x, const Activation& a);

// Activation a of the 16 lanes of x. Always inlined (Relu, LeakyRelu,
// Clip and QuantGrid in place, the others a call), so that a GEMM tile kernel's epilogue
// pays no call for them; its caller's target must include avx512f, avx2, fma.
MINIRT_TARGET_AVX512 __attribute__((always_inline)) MINIRT_VMATH_INLINE __m512 act_avx512(__m512 x,
                                                                                          const Activation& a) {
  if (a.kind == ActKind::kNone) return x;
  if (a.kind == ActKind::kRelu) return act_kind_avx512<ActKind::kRelu>(x, a);
  if (a.kind == ActKind::kLeakyRelu) return act_kind_avx512<ActKind::kLeakyRelu>(x, a);
  if (a.kind == ActKind::kClip) return act_kind_avx512<ActKind::kClip>(x, a);
  if (a.kind == ActKind::kQuantGrid) return act_kind_avx512<ActKind::kQuantGrid>(x, a);
  return act_costly_avx512(x, a);  // every kind has its case there
}

MINIRT_AVX512_WARNINGS_ON

}  // namespace minirt::cpu
