// Vectorized math for the CPU kernels: exp, expm1, log, log1p, sigmoid,
// tanh and erf as polynomial approximations in AVX-512 and AVX2+FMA
// registers (and a portable scalar form of the same algorithms), every
// activation built from them, and array functions that pick the variant at
// run time.
//
//   apply_activation(act, p, n);                 // in place over n floats, any ISA
//   apply_activation(act, x, y, n);              // y = act(x)
//   apply_math(MathFn::kExp, x, y, n);           // y = exp(x)
//   v = act_avx512(v, act);                      // a register: vmath_avx512.h, in an ISA file
//   v = act_avx2(v, act);                        // a register: vmath_avx2.h, in an ISA file
//
// The register forms are inline functions with target attributes (avx512f,
// avx2 and fma; avx2 and fma) in the instruction-set headers
// vmath_avx512.h and vmath_avx2.h, which only
// ISA files include; this header holds what every file may use: the scalar
// forms, the coefficients and the array functions. The array functions
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
// MINIRT_VMATH_INLINE: vmath_avx512.h, vmath_avx2.h), where a register form binds
// a reference to a table and clang would emit that table as a weak symbol of
// the ISA file's object (tests/cli/isa_objects_test.sh). The scalar forms
// read the tables' values only, which the one-definition rule allows of
// internal constants.
#ifdef MINIRT_VMATH_INLINE
#define MINIRT_VMATH_TABLE static constexpr
#else
#define MINIRT_VMATH_TABLE inline constexpr
#endif

// The register forms' linkage (vmath_avx512.h, vmath_avx2.h): inline (one
// copy for the program) by default; an ISA file (compiled with -m flags that
// add to the target attribute's) defines it as `static inline` before
// including them, so that a copy it leaves out of line (at -O0, say) stays in
// its object and cannot be the one other objects' calls bind to
// (ARCHITECTURE.md, "ISA files").
#ifndef MINIRT_VMATH_INLINE
#define MINIRT_VMATH_INLINE inline
#endif

#if defined(__x86_64__) || defined(__i386__)
#define MINIRT_VMATH_X86 1
#else
#define MINIRT_VMATH_X86 0
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

// A quantized SiLU as a table of the codes of the grid before it
// (vmath_avx512.cpp): entry i is what the steps it replaces compute from v =
// grid.alpha * k, k = min(grid.beta + i, grid.gamma): w = v *
// gate(sigmoid(v)), then gate_out(w), act(.) and post(.) where given (null: none),
// each grid by act_kind_avx512<kQuantGrid>, so a kernel that looks its
// outputs up gives what the vector steps would. t: 256 floats. Needs AVX-512.
void quant_silu_table_avx512(float* t, const Activation& grid, const Activation& gate, const Activation* gate_out,
                             const Activation* act, const Activation* post = nullptr);

}  // namespace minirt::cpu
