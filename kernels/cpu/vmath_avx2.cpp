// vmath's array functions for AVX2 (vmath_isa.h): per function a loop
// of whole registers and a tail, one instantiation per activation kind and
// math function so that the loop holds no switch; and the out-of-line
// register forms vmath.h declares (act_costly_avx2).
// Compiled with -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has
// the set; its entry points are its only global symbols
// (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

// vmath_avx2.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx2.h"
#include "kernels/cpu/vmath_isa.h"

namespace minirt::cpu {
namespace {

inline int64_t min64(int64_t a, int64_t b) { return b < a ? b : a; }

// y = f(x) over n floats; the tail through a zero-padded register.
template <typename F>
inline void map256(const F& f, const float* x, float* y, int64_t n) {
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
  __m256 operator()(__m256 v) const { return act_kind_avx2<K>(v, a); }
};

template <ActKind K>
void act_array_avx2(const Activation& a, const float* x, float* y, int64_t n) {
  map256(Act256<K>{a}, x, y, n);
}

template <MathFn F>
struct Math256 {
  __m256 operator()(__m256 v) const {
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
void math_array_avx2(const float* x, float* y, int64_t n) {
  map256(Math256<F>{}, x, y, n);
}

float max_of_avx2(const float* x, int64_t n) {
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

inline __m256d sum_halves_pd(__m256d acc, __m256 e) {
  acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
  return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

double exp_shifted_sum_avx2(const float* x, float shift, float* y, int64_t n) {
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
    int64_t w = min64(8, n - i);
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

void exp_shifted_avx2(const float* x, const float* shift, float* y, int64_t n) {
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

inline __m256 mul_pow256(__m256 x, __m256 b, __m256 p) {
  return _mm256_mul_ps(x, exp_avx2(_mm256_mul_ps(p, log_avx2(b))));
}

void mul_pow_avx2(const float* x, const float* base, float p, float* y, int64_t n) {
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

// arrays.act[k] = act_array_avx2<k> for k < K, arrays.math likewise (no std template in an ISA file).
template <int K>
constexpr void fill_act(VmathArrays& t) {
  t.act[K - 1] = &act_array_avx2<static_cast<ActKind>(K - 1)>;
  if constexpr (K > 1) fill_act<K - 1>(t);
}
template <int F>
constexpr void fill_math(VmathArrays& t) {
  t.math[F - 1] = &math_array_avx2<static_cast<MathFn>(F - 1)>;
  if constexpr (F > 1) fill_math<F - 1>(t);
}
constexpr VmathArrays make_arrays() {
  VmathArrays t{};
  fill_act<kActKindCount>(t);
  fill_math<kMathFnCount>(t);
  t.max_of = &max_of_avx2;
  t.exp_shifted_sum = &exp_shifted_sum_avx2;
  t.exp_shifted = &exp_shifted_avx2;
  t.mul_pow = &mul_pow_avx2;
  return t;
}
constexpr VmathArrays kArrays = make_arrays();

}  // namespace

const VmathArrays& vmath_arrays_avx2() { return kArrays; }

MINIRT_TARGET_AVX2 __m256 act_costly_avx2(__m256 x, const Activation& a) {
  // A case per row of the op table (runtime/ops/op_table.h); act_kind_avx2's
  // static_assert names a kind without a form.
  switch (a.kind) {
#define MINIRT_ACT_CASE(Kind, ...) \
  case ActKind::k##Kind:           \
    return act_kind_avx2<ActKind::k##Kind>(x, a);
    MINIRT_ACTIVATIONS(MINIRT_ACT_CASE)
#undef MINIRT_ACT_CASE
    case ActKind::kCount:  // no kind
      break;
  }
  return x;
}

}  // namespace minirt::cpu
