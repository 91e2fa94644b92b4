// Vectorized math over arrays (see vmath.h): per function, a loop of whole
// registers and a tail (a masked register on AVX-512, a padded register on
// AVX2), one instantiation per activation kind so that the loop holds no
// switch; the variant is picked at each call from sgemm_default_isa().
#include "kernels/cpu/vmath.h"

#include "kernels/cpu/sgemm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

namespace minirt::cpu {

namespace {

// ---------------------------------------------------------------- scalar

template <ActKind K>
void act_array_scalar(const Activation& a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = act_kind_scalar<K>(x[i], a);
}

template <MathFn F>
inline float math_scalar(float x) {
  if constexpr (F == MathFn::kExp)
    return exp_scalar(x);
  else if constexpr (F == MathFn::kExpm1)
    return expm1_scalar(x);
  else if constexpr (F == MathFn::kLog)
    return log_scalar(x);
  else if constexpr (F == MathFn::kLog1p)
    return log1p_scalar(x);
  else if constexpr (F == MathFn::kErf)
    return erf_scalar(x);
  else if constexpr (F == MathFn::kSqrt)
    return std::sqrt(x);
  else if constexpr (F == MathFn::kAbs)
    return std::fabs(x);
  else if constexpr (F == MathFn::kNeg)
    return -x;
  else if constexpr (F == MathFn::kReciprocal)
    return 1.0f / x;
  else if constexpr (F == MathFn::kFloor)
    return std::floor(x);
  else if constexpr (F == MathFn::kCeil)
    return std::ceil(x);
  else
    return x > 0 ? 1.0f : (x < 0 ? -1.0f : x);  // kSign: zeros and NaN as they are
}

template <MathFn F>
void math_array_scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = math_scalar<F>(x[i]);
}

#if MINIRT_VMATH_X86

MINIRT_AVX512_WARNINGS_OFF

// ---------------------------------------------------------------- AVX-512

MINIRT_TARGET_AVX512 inline __mmask16 tail_mask512(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// y = f(x) over n floats, f a callable type with a MINIRT_TARGET_AVX512 operator().
template <typename F>
MINIRT_TARGET_AVX512 inline void map512(const F& f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = tail_mask512(n - i);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

template <ActKind K>
struct Act512 {
  const Activation& a;
  MINIRT_TARGET_AVX512 __m512 operator()(__m512 v) const { return act_kind_avx512<K>(v, a); }
};

template <ActKind K>
MINIRT_TARGET_AVX512 void act_array_avx512(const Activation& a, const float* x, float* y, int64_t n) {
  map512(Act512<K>{a}, x, y, n);
}

template <MathFn F>
struct Math512 {
  MINIRT_TARGET_AVX512 __m512 operator()(__m512 v) const {
    using namespace vmath_detail;
    if constexpr (F == MathFn::kExp)
      return exp_avx512(v);
    else if constexpr (F == MathFn::kExpm1)
      return expm1_avx512(v);
    else if constexpr (F == MathFn::kLog)
      return log_avx512(v);
    else if constexpr (F == MathFn::kLog1p)
      return log1p_avx512(v);
    else if constexpr (F == MathFn::kErf)
      return erf_avx512(v);
    else if constexpr (F == MathFn::kSqrt)
      return _mm512_sqrt_ps(v);
    else if constexpr (F == MathFn::kAbs)
      return _mm512_abs_ps(v);
    else if constexpr (F == MathFn::kNeg)
      return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)));
    else if constexpr (F == MathFn::kReciprocal)
      return _mm512_div_ps(set512(1.0f), v);
    else if constexpr (F == MathFn::kFloor)
      return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    else if constexpr (F == MathFn::kCeil)
      return _mm512_roundscale_ps(v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    else {
      __m512 zero = _mm512_setzero_ps();
      __m512 s = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), set512(1.0f));
      return _mm512_mask_mov_ps(s, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), set512(-1.0f));
    }
  }
};

template <MathFn F>
MINIRT_TARGET_AVX512 void math_array_avx512(const float* x, float* y, int64_t n) {
  map512(Math512<F>{}, x, y, n);
}

MINIRT_TARGET_AVX512 float max_of_avx512(const float* x, int64_t n) {
  const float inf = vmath_detail::kInf;
  __m512 m0 = _mm512_set1_ps(-inf), m1 = m0;
  int64_t i = 0;
  // max(x, m) is x > m ? x : m: a NaN in x leaves m.
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
    m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
  }
  for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
  if (i < n) {
    __mmask16 k = tail_mask512(n - i);
    m1 = _mm512_mask_max_ps(m1, k, _mm512_maskz_loadu_ps(k, x + i), m1);
  }
  return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

MINIRT_TARGET_AVX512 double exp_shifted_sum_avx512(const float* x, float shift, float* y, int64_t n) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512d sum0 = _mm512_setzero_pd(), sum1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask512(n - i);
    __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), s));
    e = _mm512_maskz_mov_ps(k, e);
    if (y) _mm512_mask_storeu_ps(y + i, k, e);
    sum0 = _mm512_add_pd(sum0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    sum1 = _mm512_add_pd(sum1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1));
}

MINIRT_TARGET_AVX512 void exp_shifted_avx512(const float* x, const float* shift, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask512(n - i);
    __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, shift + i));
    _mm512_mask_storeu_ps(y + i, k, exp_avx512(d));
  }
}

MINIRT_TARGET_AVX512 void mul_pow_avx512(const float* x, const float* base, float p, float* y, int64_t n) {
  const __m512 pv = _mm512_set1_ps(p);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask512(n - i);
    __m512 b = _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), k, base + i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), exp_avx512(_mm512_mul_ps(pv, log_avx512(b))));
    _mm512_mask_storeu_ps(y + i, k, v);
  }
}

// ---------------------------------------------------------------- AVX2

// y = f(x) over n floats; the tail through a zero-padded register.
template <typename F>
MINIRT_TARGET_AVX2 inline void map256(const F& f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float t[8] = {};
    size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(t, x + i, bytes);
    _mm256_store_ps(t, f(_mm256_load_ps(t)));
    std::memcpy(y + i, t, bytes);
  }
}

template <ActKind K>
struct Act256 {
  const Activation& a;
  MINIRT_TARGET_AVX2 __m256 operator()(__m256 v) const { return act_kind_avx2<K>(v, a); }
};

template <ActKind K>
MINIRT_TARGET_AVX2 void act_array_avx2(const Activation& a, const float* x, float* y, int64_t n) {
  map256(Act256<K>{a}, x, y, n);
}

template <MathFn F>
struct Math256 {
  MINIRT_TARGET_AVX2 __m256 operator()(__m256 v) const {
    using namespace vmath_detail;
    if constexpr (F == MathFn::kExp)
      return exp_avx2(v);
    else if constexpr (F == MathFn::kExpm1)
      return expm1_avx2(v);
    else if constexpr (F == MathFn::kLog)
      return log_avx2(v);
    else if constexpr (F == MathFn::kLog1p)
      return log1p_avx2(v);
    else if constexpr (F == MathFn::kErf)
      return erf_avx2(v);
    else if constexpr (F == MathFn::kSqrt)
      return _mm256_sqrt_ps(v);
    else if constexpr (F == MathFn::kAbs)
      return abs256(v);
    else if constexpr (F == MathFn::kNeg)
      return _mm256_xor_ps(v, set256(-0.0f));
    else if constexpr (F == MathFn::kReciprocal)
      return _mm256_div_ps(set256(1.0f), v);
    else if constexpr (F == MathFn::kFloor)
      return _mm256_round_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    else if constexpr (F == MathFn::kCeil)
      return _mm256_round_ps(v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    else {
      __m256 zero = _mm256_setzero_ps();
      __m256 s = _mm256_blendv_ps(v, set256(1.0f), _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
      return _mm256_blendv_ps(s, set256(-1.0f), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    }
  }
};

template <MathFn F>
MINIRT_TARGET_AVX2 void math_array_avx2(const float* x, float* y, int64_t n) {
  map256(Math256<F>{}, x, y, n);
}

MINIRT_TARGET_AVX2 float max_of_avx2(const float* x, int64_t n) {
  const float inf = vmath_detail::kInf;
  __m256 m0 = _mm256_set1_ps(-inf), m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, _mm256_max_ps(m0, m1));
  float m = -inf;
  for (float v : t) m = v > m ? v : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// The tail of the AVX2 loops below: n - i < 8 floats of x (and of a second
// operand) copied into zero-padded registers.
struct Tail256 {
  alignas(32) float a[8] = {};
  alignas(32) float b[8] = {};
};

MINIRT_TARGET_AVX2 inline __m256d sum_halves_pd(__m256d acc, __m256 e) {
  acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
  return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

MINIRT_TARGET_AVX2 double exp_shifted_sum_avx2(const float* x, float shift, float* y, int64_t n) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256d sum0 = _mm256_setzero_pd(), sum1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 e0 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    __m256 e1 = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), s));
    if (y) {
      _mm256_storeu_ps(y + i, e0);
      _mm256_storeu_ps(y + i + 8, e1);
    }
    sum0 = sum_halves_pd(sum0, e0);
    sum1 = sum_halves_pd(sum1, e1);
  }
  for (; i < n; i += 8) {
    int64_t w = std::min<int64_t>(8, n - i);
    Tail256 t;
    std::memcpy(t.a, x + i, static_cast<size_t>(w) * sizeof(float));
    __m256 e = exp_avx2(_mm256_sub_ps(_mm256_load_ps(t.a), s));
    _mm256_store_ps(t.b, e);
    for (int64_t j = w; j < 8; ++j) t.b[j] = 0.0f;
    if (y) std::memcpy(y + i, t.b, static_cast<size_t>(w) * sizeof(float));
    sum0 = sum_halves_pd(sum0, _mm256_load_ps(t.b));
  }
  alignas(32) double d[4];
  _mm256_store_pd(d, _mm256_add_pd(sum0, sum1));
  return (d[0] + d[1]) + (d[2] + d[3]);
}

MINIRT_TARGET_AVX2 void exp_shifted_avx2(const float* x, const float* shift, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(shift + i))));
  if (i < n) {
    Tail256 t;
    size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(t.a, x + i, bytes);
    std::memcpy(t.b, shift + i, bytes);
    _mm256_store_ps(t.a, exp_avx2(_mm256_sub_ps(_mm256_load_ps(t.a), _mm256_load_ps(t.b))));
    std::memcpy(y + i, t.a, bytes);
  }
}

MINIRT_TARGET_AVX2 inline __m256 mul_pow256(__m256 x, __m256 b, __m256 p) {
  return _mm256_mul_ps(x, exp_avx2(_mm256_mul_ps(p, log_avx2(b))));
}

MINIRT_TARGET_AVX2 void mul_pow_avx2(const float* x, const float* base, float p, float* y, int64_t n) {
  const __m256 pv = _mm256_set1_ps(p);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, mul_pow256(_mm256_loadu_ps(x + i), _mm256_loadu_ps(base + i), pv));
  if (i < n) {
    Tail256 t;
    size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(t.a, x + i, bytes);
    for (float& v : t.b) v = 1.0f;
    std::memcpy(t.b, base + i, bytes);
    _mm256_store_ps(t.a, mul_pow256(_mm256_load_ps(t.a), _mm256_load_ps(t.b), pv));
    std::memcpy(y + i, t.a, bytes);
  }
}

MINIRT_AVX512_WARNINGS_ON

#endif  // MINIRT_VMATH_X86

// ---------------------------------------------------------------- tables

using ActArrayFn = void (*)(const Activation&, const float*, float*, int64_t);
using MathArrayFn = void (*)(const float*, float*, int64_t);

template <template <ActKind> typename Fn, int... K>
constexpr std::array<ActArrayFn, sizeof...(K)> act_table(std::integer_sequence<int, K...>) {
  return {{Fn<static_cast<ActKind>(K)>::fn...}};
}
template <template <MathFn> typename Fn, int... F>
constexpr std::array<MathArrayFn, sizeof...(F)> math_table(std::integer_sequence<int, F...>) {
  return {{Fn<static_cast<MathFn>(F)>::fn...}};
}

template <ActKind K>
struct ActScalarFn {
  static constexpr ActArrayFn fn = act_array_scalar<K>;
};
template <MathFn F>
struct MathScalarFn {
  static constexpr MathArrayFn fn = math_array_scalar<F>;
};
constexpr auto kActScalar = act_table<ActScalarFn>(std::make_integer_sequence<int, kActKindCount>{});
constexpr auto kMathScalar = math_table<MathScalarFn>(std::make_integer_sequence<int, kMathFnCount>{});

#if MINIRT_VMATH_X86
template <ActKind K>
struct Act512Fn {
  static constexpr ActArrayFn fn = act_array_avx512<K>;
};
template <ActKind K>
struct Act256Fn {
  static constexpr ActArrayFn fn = act_array_avx2<K>;
};
template <MathFn F>
struct Math512Fn {
  static constexpr MathArrayFn fn = math_array_avx512<F>;
};
template <MathFn F>
struct Math256Fn {
  static constexpr MathArrayFn fn = math_array_avx2<F>;
};
constexpr auto kAct512 = act_table<Act512Fn>(std::make_integer_sequence<int, kActKindCount>{});
constexpr auto kAct256 = act_table<Act256Fn>(std::make_integer_sequence<int, kActKindCount>{});
constexpr auto kMath512 = math_table<Math512Fn>(std::make_integer_sequence<int, kMathFnCount>{});
constexpr auto kMath256 = math_table<Math256Fn>(std::make_integer_sequence<int, kMathFnCount>{});
#endif

}  // namespace

#if MINIRT_VMATH_X86
MINIRT_AVX512_WARNINGS_OFF
MINIRT_TARGET_AVX512 __m512 act_costly_avx512(__m512 x, const Activation& a) {
  switch (a.kind) {
    case ActKind::kSigmoid:
      return act_kind_avx512<ActKind::kSigmoid>(x, a);
    case ActKind::kHardSigmoid:
      return act_kind_avx512<ActKind::kHardSigmoid>(x, a);
    case ActKind::kHardSwish:
      return act_kind_avx512<ActKind::kHardSwish>(x, a);
    case ActKind::kThresholdedRelu:
      return act_kind_avx512<ActKind::kThresholdedRelu>(x, a);
    case ActKind::kTanh:
      return act_kind_avx512<ActKind::kTanh>(x, a);
    case ActKind::kElu:
      return act_kind_avx512<ActKind::kElu>(x, a);
    case ActKind::kSelu:
      return act_kind_avx512<ActKind::kSelu>(x, a);
    case ActKind::kCelu:
      return act_kind_avx512<ActKind::kCelu>(x, a);
    case ActKind::kSoftplus:
      return act_kind_avx512<ActKind::kSoftplus>(x, a);
    case ActKind::kSoftsign:
      return act_kind_avx512<ActKind::kSoftsign>(x, a);
    case ActKind::kMish:
      return act_kind_avx512<ActKind::kMish>(x, a);
    case ActKind::kGelu:
      return act_kind_avx512<ActKind::kGelu>(x, a);
    case ActKind::kGeluTanh:
      return act_kind_avx512<ActKind::kGeluTanh>(x, a);
    case ActKind::kSilu:
      return act_kind_avx512<ActKind::kSilu>(x, a);
    case ActKind::kQuantGrid:
      return act_kind_avx512<ActKind::kQuantGrid>(x, a);
    case ActKind::kNone:
    case ActKind::kRelu:
    case ActKind::kLeakyRelu:
    case ActKind::kClip:
      return act_avx512(x, a);  // the cheap ones, inline there
  }
  return x;  // not reached: every kind has its case (no default, so -Wswitch names a kind added without one)
}

MINIRT_TARGET_AVX512 void quant_silu_table_avx512(float* t, const Activation& grid, const Activation& gate,
                                                  const Activation* gate_out, const Activation* act,
                                                  const Activation* post) {
  const int32_t lo = static_cast<int32_t>(grid.beta), hi = static_cast<int32_t>(grid.gamma);
  for (int32_t i = 0; i < 256; i += 16) {
    alignas(64) float k[16];
    for (int32_t j = 0; j < 16; ++j) k[j] = static_cast<float>(std::min(lo + i + j, hi));
    const __m512 v = _mm512_mul_ps(_mm512_set1_ps(grid.alpha), _mm512_load_ps(k));
    const __m512 sg = act_kind_avx512<ActKind::kQuantGrid>(act_kind_avx512<ActKind::kSigmoid>(v, gate), gate);
    __m512 w = _mm512_mul_ps(v, sg);
    if (gate_out) w = act_avx512(w, *gate_out);
    if (act) w = act_avx512(w, *act);
    if (post) w = act_avx512(w, *post);
    _mm512_storeu_ps(t + i, w);
  }
}

MINIRT_TARGET_AVX2 __m256 act_costly_avx2(__m256 x, const Activation& a) {
  switch (a.kind) {
    case ActKind::kSigmoid:
      return act_kind_avx2<ActKind::kSigmoid>(x, a);
    case ActKind::kHardSigmoid:
      return act_kind_avx2<ActKind::kHardSigmoid>(x, a);
    case ActKind::kHardSwish:
      return act_kind_avx2<ActKind::kHardSwish>(x, a);
    case ActKind::kThresholdedRelu:
      return act_kind_avx2<ActKind::kThresholdedRelu>(x, a);
    case ActKind::kTanh:
      return act_kind_avx2<ActKind::kTanh>(x, a);
    case ActKind::kElu:
      return act_kind_avx2<ActKind::kElu>(x, a);
    case ActKind::kSelu:
      return act_kind_avx2<ActKind::kSelu>(x, a);
    case ActKind::kCelu:
      return act_kind_avx2<ActKind::kCelu>(x, a);
    case ActKind::kSoftplus:
      return act_kind_avx2<ActKind::kSoftplus>(x, a);
    case ActKind::kSoftsign:
      return act_kind_avx2<ActKind::kSoftsign>(x, a);
    case ActKind::kMish:
      return act_kind_avx2<ActKind::kMish>(x, a);
    case ActKind::kGelu:
      return act_kind_avx2<ActKind::kGelu>(x, a);
    case ActKind::kGeluTanh:
      return act_kind_avx2<ActKind::kGeluTanh>(x, a);
    case ActKind::kSilu:
      return act_kind_avx2<ActKind::kSilu>(x, a);
    case ActKind::kQuantGrid:
      return act_kind_avx2<ActKind::kQuantGrid>(x, a);
    case ActKind::kNone:
    case ActKind::kRelu:
    case ActKind::kLeakyRelu:
    case ActKind::kClip:
      return act_avx2(x, a);  // the cheap ones, inline there
  }
  return x;  // not reached: every kind has its case (no default, so -Wswitch names a kind added without one)
}
MINIRT_AVX512_WARNINGS_ON
#endif

void apply_activation(const Activation& act, const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  if (act.kind == ActKind::kNone) {
    if (x != y) std::memmove(y, x, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  size_t k = static_cast<size_t>(act.kind);
#if MINIRT_VMATH_X86
  switch (sgemm_default_isa()) {
    case SgemmIsa::kAvx512:
      return kAct512[k](act, x, y, n);
    case SgemmIsa::kAvx2:
      return kAct256[k](act, x, y, n);
    case SgemmIsa::kGeneric:
      break;
  }
#endif
  kActScalar[k](act, x, y, n);
}

void apply_activation(const Activation& act, float* p, int64_t n) { apply_activation(act, p, p, n); }

void apply_math(MathFn f, const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  size_t k = static_cast<size_t>(f);
#if MINIRT_VMATH_X86
  switch (sgemm_default_isa()) {
    case SgemmIsa::kAvx512:
      return kMath512[k](x, y, n);
    case SgemmIsa::kAvx2:
      return kMath256[k](x, y, n);
    case SgemmIsa::kGeneric:
      break;
  }
#endif
  kMathScalar[k](x, y, n);
}

float max_of(const float* x, int64_t n) {
#if MINIRT_VMATH_X86
  switch (sgemm_default_isa()) {
    case SgemmIsa::kAvx512:
      return max_of_avx512(x, n);
    case SgemmIsa::kAvx2:
      return max_of_avx2(x, n);
    case SgemmIsa::kGeneric:
      break;
  }
#endif
  float m = -vmath_detail::kInf;
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

double exp_shifted_sum(const float* x, float shift, float* y, int64_t n) {
  if (n <= 0) return 0.0;
#if MINIRT_VMATH_X86
  switch (sgemm_default_isa()) {
    case SgemmIsa::kAvx512:
      return exp_shifted_sum_avx512(x, shift, y, n);
    case SgemmIsa::kAvx2:
      return exp_shifted_sum_avx2(x, shift, y, n);
    case SgemmIsa::kGeneric:
      break;
  }
#endif
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    float e = exp_scalar(x[i] - shift);
    if (y) y[i] = e;
    sum += e;
  }
  return sum;
}

void exp_shifted(const float* x, const float* shift, float* y, int64_t n) {
  if (n <= 0) return;
#if MINIRT_VMATH_X86
  switch (sgemm_default_isa()) {
    case SgemmIsa::kAvx512:
      return exp_shifted_avx512(x, shift, y, n);
    case SgemmIsa::kAvx2:
      return exp_shifted_avx2(x, shift, y, n);
    case SgemmIsa::kGeneric:
      break;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = exp_scalar(x[i] - shift[i]);
}

void mul_pow(const float* x, const float* base, float p, float* y, int64_t n) {
  if (n <= 0) return;
#if MINIRT_VMATH_X86
  switch (sgemm_default_isa()) {
    case SgemmIsa::kAvx512:
      return mul_pow_avx512(x, base, p, y, n);
    case SgemmIsa::kAvx2:
      return mul_pow_avx2(x, base, p, y, n);
    case SgemmIsa::kGeneric:
      break;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * exp_scalar(p * log_scalar(base[i]));
}

const char* math_fn_name(MathFn f) {
  switch (f) {
    case MathFn::kExp:
      return "exp";
    case MathFn::kExpm1:
      return "expm1";
    case MathFn::kLog:
      return "log";
    case MathFn::kLog1p:
      return "log1p";
    case MathFn::kErf:
      return "erf";
    case MathFn::kSqrt:
      return "sqrt";
    case MathFn::kAbs:
      return "abs";
    case MathFn::kNeg:
      return "neg";
    case MathFn::kReciprocal:
      return "reciprocal";
    case MathFn::kFloor:
      return "floor";
    case MathFn::kCeil:
      return "ceil";
    case MathFn::kSign:
      return "sign";
  }
  return "";
}

bool math_fn_of(UnaryKind kind, MathFn* fn) {
  switch (kind) {
    case UnaryKind::kExp:
      return *fn = MathFn::kExp, true;
    case UnaryKind::kLog:
      return *fn = MathFn::kLog, true;
    case UnaryKind::kErf:
      return *fn = MathFn::kErf, true;
    case UnaryKind::kSqrt:
      return *fn = MathFn::kSqrt, true;
    case UnaryKind::kNeg:
      return *fn = MathFn::kNeg, true;
    case UnaryKind::kAbs:
      return *fn = MathFn::kAbs, true;
    case UnaryKind::kReciprocal:
      return *fn = MathFn::kReciprocal, true;
    case UnaryKind::kFloor:
      return *fn = MathFn::kFloor, true;
    case UnaryKind::kCeil:
      return *fn = MathFn::kCeil, true;
    case UnaryKind::kSign:
      return *fn = MathFn::kSign, true;
    case UnaryKind::kActivation:
    case UnaryKind::kSin:
    case UnaryKind::kCos:
    case UnaryKind::kCopy:
      return false;
  }
  return false;
}

}  // namespace minirt::cpu
