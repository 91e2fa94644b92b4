// Vectorized math for the CPU kernels: exp, expm1, log, log1p, sigmoid,
// tanh and erf as polynomial approximations in AVX-512 and AVX2+FMA
// registers (and a portable scalar form of the same algorithms), every
// activation built from them, and array functions that pick the variant at
// run time.
//
//   apply_activation(act, p, n);                 // in place over n floats, any ISA
//   apply_activation(act, x, y, n);              // y = act(x)
//   apply_math(MathFn::kExp, x, y, n);           // y = exp(x)
//   __m512 v = act_avx512(v, act);               // in a MINIRT_TARGET_AVX512 function
//   __m256 v = act_avx2(v, act);                 // in a MINIRT_TARGET_AVX2 function
//   __m512 e = exp_avx512(v);                    // one function, one register
//
// The register forms are inline functions with target attributes
// (MINIRT_TARGET_AVX512: avx512f, avx2, fma; MINIRT_TARGET_AVX2: avx2, fma):
// call them only from functions with the same (or a wider) target, and
// those only after run-time detection (sgemm_isa_supported). The array functions
// dispatch on sgemm_default_isa() at each call, so MINIRT_SGEMM_ISA and
// sgemm_force_isa choose the variant here too; kGeneric runs the scalar forms.
//
// Algorithms (coefficients: minimax fits of the relative error, Lawson's
// iteration in double, rounded to float):
//   exp    x = n ln2 + r, |r| <= ln2/2 (Cody-Waite, ln2 in two parts);
//          e^r = 1 + r + r^2 Q(r), Q of degree 4; times 2^n by scalef
//          (AVX-512) or two exact power-of-two products (AVX2, scalar), so
//          results below FLT_MIN come out as denormals, rounded once, as
//          std::exp gives them.
//   expm1  the same reduction; 2 (2^(n-1) (e^r - 1) + (2^(n-1) - 1/2)), so
//          no cancellation near 0.
//   log    x = m 2^e, m in [sqrt(1/2), sqrt(2)) (getmant/getexp on AVX-512,
//          denormals rescaled by 2^23 on AVX2); log(1 + f) = f - f^2/2 +
//          f^3 P(f), P of degree 7; plus e ln2 in two parts.
//   log1p  log(u) + (x - (u - 1)) / u with u = 1 + x (the rounding of u
//          put back).
//   sigmoid  e = exp(-|x|); 1 / (1 + e) for x >= 0, e / (1 + e) below, so
//          the tail keeps its relative accuracy down to the denormals;
//          the reciprocal is rcp14 and one Newton step on AVX-512, rcp (12
//          bits) and two on AVX2 (so that 1/1 and 1/2 come out exact), a
//          division in the scalar form.
//   silu   x sigmoid(x) with sigmoid's reduction written out (silu_avx512,
//          silu_avx2): n rounded by a magic-number addition, one
//          reciprocal for both signs, one Newton step on AVX2, 2^n from the
//          rounded value's bits on AVX2 with -|x| clamped to ln(FLT_MIN) (so
//          x sigmoid(x) below FLT_MIN |x| comes out as -0): 24 vector
//          instructions instead of 36 on AVX2, 22 instead of 24 on AVX-512,
//          3.65 ULP from the exact value on both (as x * sigmoid).
//   tanh   |x| < 0.625: x + x^3 P(x^2), P of degree 4; above:
//          sign(x) (1 - 2 / (exp(2|x|) + 1)), |x| clamped to 10 (tanh is 1
//          in float from 9.01).
//   erf    |x| < 0.75: x + x P(x^2), P of degree 5; above: sign(x) (1 -
//          exp(g(t) - x^2)), g a degree-7 fit of log(erfc(x)) + x^2 in
//          t = |x| - 2.35 on [0.75, 3.95], |x| clamped to 3.95 (erf is 1 in
//          float from 3.92).
//
// Special values: NaN in, NaN out (every function and every activation but
// Relu and ThresholdedRelu, which give 0 as Activation::apply does);
// exp(+inf) = inf, exp(-inf) = 0, exp(x > 88.7228) = inf, exp(x < -103.97)
// = 0; expm1(-inf) = -1; log(0) = -inf, log(x < 0) = NaN, log(+inf) = inf,
// log of a denormal exact to the bound below; sigmoid(+-inf) = 1, 0;
// tanh(+-inf) = +-1; erf(+-inf) = +-1; signed zeros kept by tanh and erf.
//
// Maximum error against the exact value, in ULP (units in the last place of
// the result; for a denormal result, the smallest denormal), as
// tests/unit/test_vmath.cpp measures it over every 257th bit pattern of the
// 2^32 floats plus all floats near 1 and near each threshold, the same on
// AVX-512, AVX2 and in the scalar forms; the test asserts the bound:
//             measured   bound
//   exp        0.99       1
//   expm1      1.39       2
//   log        0.90       1
//   log1p      1.44       2
//   sigmoid    2.71       3
//   tanh       1.32       2
//   erf        1.60       2
// The activations built on these agree with Activation::apply (std:: in
// float, itself a few ULP off where it composes functions) to: Sigmoid,
// Tanh, Elu, Selu, Celu, Softplus 4 ULP; Silu 6; Mish, Gelu, Gelu(tanh) 8;
// HardSigmoid 1, HardSwish 2 (it multiplies by 1/6 where apply divides by 6);
// plus 1e-7 |x| absolute for HardSwish, Gelu and Gelu(tanh), where apply
// cancels 1 + erf or 1 + tanh (or the gate) to a few ULP of 1, and FLT_MIN |x|
// where apply's exp overflows and it returns 0 for a denormal. Relu,
// LeakyRelu, Clip, Softsign and ThresholdedRelu are exact.
#pragma once

#include "runtime/ops/activation.h"
#include "runtime/ops/elementwise_kinds.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

// The coefficient tables' linkage: inline variables (one copy for the
// program) by default; internal in an ISA file (one that defines
// MINIRT_VMATH_INLINE, below), where a register form inlined from here binds
// a reference to a table and clang would emit that table as a weak symbol of
// the ISA file's object (tests/cli/isa_objects_test.sh). The scalar forms
// read the tables' values only, which the one-definition rule allows of
// internal constants.
#ifdef MINIRT_VMATH_INLINE
#define MINIRT_VMATH_TABLE static constexpr
#else
#define MINIRT_VMATH_TABLE inline constexpr
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_VMATH_X86 1
#define MINIRT_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define MINIRT_TARGET_AVX2 __attribute__((target("avx2,fma")))
// The register forms' linkage: inline (one copy for the program) by
// default; an ISA file (compiled with -m flags that add to the target
// attribute's) defines it as `static inline` before including this header,
// so that a copy it leaves out of line (at -O0, say) stays in its object and
// cannot be the one other objects' calls bind to (ARCHITECTURE.md, "ISA files").
#ifndef MINIRT_VMATH_INLINE
#define MINIRT_VMATH_INLINE inline
#endif
#else
#define MINIRT_VMATH_X86 0
#endif

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

// ---------------------------------------------------------------- arrays

// act over p[0, n), in place; vectorized for the variant sgemm_default_isa() names.
void apply_activation(const Activation& act, float* p, int64_t n);
// y[i] = act(x[i]); y may be x.
void apply_activation(const Activation& act, const float* x, float* y, int64_t n);

// Unary math beyond the activations. Sqrt, Abs, Neg, Reciprocal, Floor, Ceil
// and Sign are exact (bit-identical to the std:: functions); the others have
// the error bounds above.
// kCount, their number, sizes the per-function tables (vmath_isa.h, VmathArrays; vmath.cpp).
// Every MathFn has a name (math_fn_name's switch has no default, so -Wswitch asks for one),
// which the op table's unary rows name (runtime/ops/op_table.h, math_fn_of).
enum class MathFn : uint8_t {
  kExp,
  kExpm1,
  kLog,
  kLog1p,
  kErf,
  kSqrt,
  kAbs,
  kNeg,
  kReciprocal,
  kFloor,
  kCeil,
  kSign,
  kCount
};
inline constexpr int kMathFnCount = static_cast<int>(MathFn::kCount);
// "exp", "log1p", ...; "" for a value that is no MathFn.
const char* math_fn_name(MathFn f);
// y[i] = f(x[i]); y may be x.
void apply_math(MathFn f, const float* x, float* y, int64_t n);
// The vector math function a unary op kind runs, if it has one: the one its
// row of the op table names (runtime/ops/op_table.h; false for the
// activations, the copy, and Sin and Cos, which go to libm).
bool math_fn_of(UnaryKind kind, MathFn* fn);

// The pieces of Softmax, LogSoftmax and LogSumExp:
// the largest of x[0, n) as (x > m ? x : m) finds it from -inf, so NaNs are
// skipped; -inf for n == 0.
float max_of(const float* x, int64_t n);
// y[i] = exp(x[i] - shift) (y may be null, or x), and their sum in double.
double exp_shifted_sum(const float* x, float shift, float* y, int64_t n);
// y[i] = exp(x[i] - shift[i]); y may be x.
void exp_shifted(const float* x, const float* shift, float* y, int64_t n);
// y[i] = x[i] * base[i]^p, for base[i] > 0 (through exp(p log base)); y may be x or base.
void mul_pow(const float* x, const float* base, float p, float* y, int64_t n);

// ---------------------------------------------------------------- constants

namespace vmath_detail {

inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;     // 9 bits: n * kLn2Hi is exact for |n| < 2^15
inline constexpr float kLn2Lo = -2.12194440e-4f;  // ln 2 - kLn2Hi
inline constexpr float kExpHi = 88.75f;           // exp overflows above 88.7228: clamped here, still inf
inline constexpr float kExpLo = -104.0f;          // exp rounds to 0 below -103.973: clamped here, still 0
inline constexpr float kExpm1Lo = -30.0f;         // expm1 is -1 in float below -17.33
// e^r = 1 + r + r^2 (Q0 + Q1 r + ... + Q4 r^4), |r| <= ln2/2: relative error 2^-28.3.
MINIRT_VMATH_TABLE float kExpQ[5] = {0.4999999403953552f, 0.1666652113199234f, 0.04166838899254799f,
                                     0.008368710055947304f, 0.001381461275741458f};
inline constexpr float kSqrt2 = 1.41421356237309505f;
// log(1 + f) = f - f^2/2 + f^3 (P0 + ... + P7 f^7), f in [sqrt(1/2) - 1, sqrt(2) - 1]: relative error 2^-27.4.
MINIRT_VMATH_TABLE float kLogP[8] = {0.3333333134651184f,   -0.2500081956386566f, 0.20001226663589478f,
                                     -0.16623356938362122f, 0.14201757311820984f, -0.13160182535648346f,
                                     0.1276157796382904f,   -0.07634497433900833f};
// tanh(x) = x + x^3 (T0 + T1 x^2 + ... + T4 x^8), |x| < 0.625: relative error 2^-27.8.
inline constexpr float kTanhSmall = 0.625f;
inline constexpr float kTanhClamp = 10.0f;
MINIRT_VMATH_TABLE float kTanhP[5] = {-0.3333328068256378f, 0.13331441581249237f, -0.05373971536755562f,
                                      0.0206390880048275f, -0.005704987328499556f};
// erf(x) = x + x (E0 + E1 x^2 + ... + E5 x^10), |x| < 0.75: relative error 2^-29.4. (E0 is 2/sqrt(pi) - 1:
// the leading 1 kept apart, so that E0's rounding costs 1/9 of what 2/sqrt(pi)'s would.)
inline constexpr float kErfSmall = 0.75f;
MINIRT_VMATH_TABLE float kErfP[6] = {0.12837916612625122f,   -0.3761261999607086f,  0.11283376812934875f,
                                     -0.026834625750780106f, 0.005114347208291292f, -0.000674952520057559f};
// log(erfc(x)) + x^2 = G0 + G1 t + ... + G7 t^7, t = x - 2.35, x in [0.75, 3.95]; the error it
// leaves in erf is 2^-31.5 relative.
inline constexpr float kErfShift = 2.35f;
inline constexpr float kErfClamp = 3.95f;
MINIRT_VMATH_TABLE float kErfcG[8] = {-1.5026133060455322f,   -0.37027865648269653f,   0.061296574771404266f,
                                      -0.012242226861417294f, 0.0025527020916342735f,  -0.00045325671089813113f,
                                      0.0001062741648638621f, -1.7573285731486976e-05f};
inline constexpr float kRoundMagic =
    12583039.0f;  // 1.5 * 2^23 + 127: t = v + this rounds v, bits(t) << 23 = 2^round(v)
inline constexpr float kLnFltMin = -87.33654475f;  // ln(FLT_MIN): e^x below it is a denormal
inline constexpr float kMishClamp = 20.0f;         // tanh(softplus(x)) is 1 in float from x = 9.1
inline constexpr float kInvSqrt2 = 0.70710678118654752f;
inline constexpr float kGeluTanhK = 0.79788456080286536f;  // sqrt(2 / pi)
inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// 2^k as a float, for k in [-126, 127].
inline float pow2i(int32_t k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }

}  // namespace vmath_detail

// ---------------------------------------------------------------- scalar forms
//
// The same algorithms in plain C++ (the kGeneric variant): no FMA, divisions
// instead of reciprocal estimates. Clamps are written `x < lo ? lo : x` so a
// NaN passes through them.

inline float exp_scalar(float x) {
  using namespace vmath_detail;
  if (x != x) return x;
  x = x < kExpLo ? kExpLo : (x > kExpHi ? kExpHi : x);
  float n = (x * kLog2e + 12582912.0f) - 12582912.0f;  // round to nearest (1.5 * 2^23)
  float r = x - n * kLn2Hi;                            // exact (Sterbenz)
  r = r - n * kLn2Lo;
  float q = kExpQ[4];
  for (int i = 3; i >= 0; --i) q = q * r + kExpQ[i];
  float p = (r * r * q + r) + 1.0f;
  int32_t k = static_cast<int32_t>(n), k1 = k >> 1;
  return p * pow2i(k1) * pow2i(k - k1);  // two normal factors: one rounding into the denormals
}

inline float expm1_scalar(float x) {
  using namespace vmath_detail;
  if (x != x) return x;
  x = x < kExpm1Lo ? kExpm1Lo : (x > kExpHi ? kExpHi : x);
  float n = (x * kLog2e + 12582912.0f) - 12582912.0f;
  float r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float q = kExpQ[4];
  for (int i = 3; i >= 0; --i) q = q * r + kExpQ[i];
  float em1 = r * r * q + r;  // e^r - 1
  float h = pow2i(static_cast<int32_t>(n) - 1);
  float y = h * em1 + (h - 0.5f);
  return y + y;
}

inline float log_scalar(float x) {
  using namespace vmath_detail;
  if (!(x > 0.0f)) return x == 0.0f ? -kInf : kNaN;  // negative or NaN
  if (x == kInf) return x;
  float e = 0.0f;
  if (x < std::numeric_limits<float>::min()) {  // denormal
    x *= 8388608.0f;
    e = -23.0f;
  }
  uint32_t bits = std::bit_cast<uint32_t>(x);
  e += static_cast<float>(static_cast<int32_t>(bits >> 23) - 127);
  float m = std::bit_cast<float>((bits & 0x007fffffu) | 0x3f800000u);
  if (m > kSqrt2) {
    m *= 0.5f;
    e += 1.0f;
  }
  float f = m - 1.0f;
  float p = kLogP[7];
  for (int i = 6; i >= 0; --i) p = p * f + kLogP[i];
  float y = f * f * (p * f - 0.5f) + f;
  return (y + e * kLn2Lo) + e * kLn2Hi;
}

inline float log1p_scalar(float x) {
  float u = 1.0f + x;
  float l = log_scalar(u);
  if (u > 0.0f && u < vmath_detail::kInf) l += (x - (u - 1.0f)) / u;
  return l;
}

inline float sigmoid_scalar(float x) {
  float e = exp_scalar(-std::fabs(x));
  float r = 1.0f / (1.0f + e);
  return x < 0.0f ? e * r : r;
}

inline float tanh_scalar(float x) {
  using namespace vmath_detail;
  float ax = std::fabs(x);
  if (ax < kTanhSmall) {
    float z = x * x, p = kTanhP[4];
    for (int i = 3; i >= 0; --i) p = p * z + kTanhP[i];
    return std::copysign(x * z * p + x, x);  // -0 stays -0
  }
  float a2 = ax > kTanhClamp ? 2.0f * kTanhClamp : ax + ax;
  float y = 1.0f - 2.0f / (exp_scalar(a2) + 1.0f);
  return std::copysign(y, x);
}

inline float erf_scalar(float x) {
  using namespace vmath_detail;
  float ax = std::fabs(x);
  if (ax < kErfSmall) {
    float z = x * x, p = kErfP[5];
    for (int i = 4; i >= 0; --i) p = p * z + kErfP[i];
    return x * p + x;
  }
  float a = ax > kErfClamp ? kErfClamp : ax;
  float t = a - kErfShift, g = kErfcG[7];
  for (int i = 6; i >= 0; --i) g = g * t + kErfcG[i];
  return std::copysign(1.0f - exp_scalar(g - a * a), x);
}

// Activation K of x, in the scalar forms above (Activation::apply is the
// std:: reference they are tested against).
template <ActKind K>
inline float act_kind_scalar(float x, const Activation& a) {
  using namespace vmath_detail;
  if constexpr (K == ActKind::kSigmoid) {
    return sigmoid_scalar(x);
  } else if constexpr (K == ActKind::kSilu) {
    return x * sigmoid_scalar(x);
  } else if constexpr (K == ActKind::kTanh) {
    return tanh_scalar(x);
  } else if constexpr (K == ActKind::kElu) {
    return x >= 0.0f ? x : a.alpha * expm1_scalar(x);
  } else if constexpr (K == ActKind::kSelu) {
    return x > 0.0f ? a.beta * x : (a.beta * a.alpha) * expm1_scalar(x);
  } else if constexpr (K == ActKind::kCelu) {
    float v = a.alpha * expm1_scalar(x / a.alpha);
    return (x < 0.0f ? 0.0f : x) + (v > 0.0f ? 0.0f : v);
  } else if constexpr (K == ActKind::kSoftplus) {
    return (x < 0.0f ? 0.0f : x) + log1p_scalar(exp_scalar(-std::fabs(x)));
  } else if constexpr (K == ActKind::kMish) {
    // tanh(log(1 + e)) = ((1 + e)^2 - 1) / ((1 + e)^2 + 1) = n / (n + 2), n = e (e + 2).
    float e = exp_scalar(x > kMishClamp ? kMishClamp : x);
    float n = e * (e + 2.0f);
    return x * (n / (n + 2.0f));
  } else if constexpr (K == ActKind::kGelu) {
    return 0.5f * x * (1.0f + erf_scalar(x * kInvSqrt2));
  } else if constexpr (K == ActKind::kGeluTanh) {
    // 0.5 (1 + tanh(u)) = sigmoid(2u)
    float u = kGeluTanhK * (x + 0.044715f * x * x * x);
    return x * sigmoid_scalar(u + u);
  } else {
    return a.apply(x);  // the exact ones: Relu, LeakyRelu, Clip, HardSigmoid, HardSwish, Softsign, ThresholdedRelu
  }
}

#if MINIRT_VMATH_X86

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

// A quantized SiLU as a table of the codes of the grid before it
// (vmath_avx512.cpp): entry i is what the steps it replaces compute from v =
// grid.alpha * k, k = min(grid.beta + i, grid.gamma): w = v *
// gate(sigmoid(v)), then gate_out(w), act(.) and post(.) where given (null: none),
// each grid by act_kind_avx512<kQuantGrid>, so a kernel that looks its
// outputs up gives what the vector steps would. t: 256 floats. Needs AVX-512.
void quant_silu_table_avx512(float* t, const Activation& grid, const Activation& gate, const Activation* gate_out,
                             const Activation* act, const Activation* post = nullptr);

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

MINIRT_AVX512_WARNINGS_ON

#endif  // MINIRT_VMATH_X86

}  // namespace minirt::cpu
