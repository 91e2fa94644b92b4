// vmath's array functions for AVX-512 (vmath_isa.h): per function a loop
// of whole registers and a tail, one instantiation per activation kind and
// math function so that the loop holds no switch; and the out-of-line
// register forms vmath.h declares (act_costly_avx512, quant_silu_table_avx512).
// Compiled with -mavx512f -mavx2 -mfma (CMakeLists.txt) and called only where the CPU has
// the set; its entry points are its only global symbols
// (tests/cli/isa_objects_test.sh).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"
#include "kernels/cpu/vmath_isa.h"

// GCC 12 takes the self-initialized _mm512_undefined_ps() inside
// _mm512_min_ps for an uninitialized read when it inlines it: a false
// positive.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace minirt::cpu {
namespace {

inline int32_t min32(int32_t a, int32_t b) { return b < a ? b : a; }

inline __mmask16 tail_mask512(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// y = f(x) over n floats, f a callable type with a operator().
template <typename F>
inline void map512(const F& f, const float* x, float* y, int64_t n) {
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
  __m512 operator()(__m512 v) const { return act_kind_avx512<K>(v, a); }
};

template <ActKind K>
void act_array_avx512(const Activation& a, const float* x, float* y, int64_t n) {
  map512(Act512<K>{a}, x, y, n);
}

template <MathFn F>
struct Math512 {
  __m512 operator()(__m512 v) const {
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
void math_array_avx512(const float* x, float* y, int64_t n) {
  map512(Math512<F>{}, x, y, n);
}

float max_of_avx512(const float* x, int64_t n) {
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

double exp_shifted_sum_avx512(const float* x, float shift, float* y, int64_t n) {
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

void exp_shifted_avx512(const float* x, const float* shift, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask512(n - i);
    __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, shift + i));
    _mm512_mask_storeu_ps(y + i, k, exp_avx512(d));
  }
}

void mul_pow_avx512(const float* x, const float* base, float p, float* y, int64_t n) {
  const __m512 pv = _mm512_set1_ps(p);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask512(n - i);
    __m512 b = _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), k, base + i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), exp_avx512(_mm512_mul_ps(pv, log_avx512(b))));
    _mm512_mask_storeu_ps(y + i, k, v);
  }
}

// arrays.act[k] = act_array_avx512<k> for k < K, arrays.math likewise (no std template in an ISA file).
template <int K>
constexpr void fill_act(VmathArrays& t) {
  t.act[K - 1] = &act_array_avx512<static_cast<ActKind>(K - 1)>;
  if constexpr (K > 1) fill_act<K - 1>(t);
}
template <int F>
constexpr void fill_math(VmathArrays& t) {
  t.math[F - 1] = &math_array_avx512<static_cast<MathFn>(F - 1)>;
  if constexpr (F > 1) fill_math<F - 1>(t);
}
constexpr VmathArrays make_arrays() {
  VmathArrays t{};
  fill_act<kActKindCount>(t);
  fill_math<kMathFnCount>(t);
  t.max_of = &max_of_avx512;
  t.exp_shifted_sum = &exp_shifted_sum_avx512;
  t.exp_shifted = &exp_shifted_avx512;
  t.mul_pow = &mul_pow_avx512;
  return t;
}
constexpr VmathArrays kArrays = make_arrays();

}  // namespace

const VmathArrays& vmath_arrays_avx512() { return kArrays; }

MINIRT_TARGET_AVX512 __m512 act_costly_avx512(__m512 x, const Activation& a) {
  // A case per row of the op table (runtime/ops/op_table.h); act_kind_avx512's
  // static_assert names a kind without a form.
  switch (a.kind) {
#define MINIRT_ACT_CASE(Kind, ...) \
  case ActKind::k##Kind:           \
    return act_kind_avx512<ActKind::k##Kind>(x, a);
    MINIRT_ACTIVATIONS(MINIRT_ACT_CASE)
#undef MINIRT_ACT_CASE
    case ActKind::kCount:  // no kind
      break;
  }
  return x;
}

MINIRT_TARGET_AVX512 void quant_silu_table_avx512(float* t, const Activation& grid, const Activation& gate,
                                                  const Activation* gate_out, const Activation* act,
                                                  const Activation* post) {
  const int32_t lo = static_cast<int32_t>(grid.beta), hi = static_cast<int32_t>(grid.gamma);
  for (int32_t i = 0; i < 256; i += 16) {
    alignas(64) float k[16];
    for (int32_t j = 0; j < 16; ++j) k[j] = static_cast<float>(min32(lo + i + j, hi));
    const __m512 v = _mm512_mul_ps(_mm512_set1_ps(grid.alpha), _mm512_load_ps(k));
    const __m512 sg = act_kind_avx512<ActKind::kQuantGrid>(act_kind_avx512<ActKind::kSigmoid>(v, gate), gate);
    __m512 w = _mm512_mul_ps(v, sg);
    if (gate_out) w = act_avx512(w, *gate_out);
    if (act) w = act_avx512(w, *act);
    if (post) w = act_avx512(w, *post);
    _mm512_storeu_ps(t + i, w);
  }
}

}  // namespace minirt::cpu

#pragma GCC diagnostic pop
