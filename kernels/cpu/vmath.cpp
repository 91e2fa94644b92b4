// Vectorized math over arrays (see vmath.h): the portable forms and the
// dispatch; the AVX-512 and AVX2 loops (a masked register's tail on AVX-512,
// a padded register's on AVX2, one instantiation per activation kind so that
// the loop holds no switch) are vmath_avx512.cpp and vmath_avx2.cpp
// (vmath_isa.h). The variant is picked at each call from sgemm_default_isa().
#include "kernels/cpu/vmath.h"
#include "kernels/cpu/vmath_isa.h"

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

// ---------------------------------------------------------------- tables

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

}  // namespace

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
      return vmath_arrays_avx512().act[k](act, x, y, n);
    case SgemmIsa::kAvx2:
      return vmath_arrays_avx2().act[k](act, x, y, n);
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
      return vmath_arrays_avx512().math[k](x, y, n);
    case SgemmIsa::kAvx2:
      return vmath_arrays_avx2().math[k](x, y, n);
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
      return vmath_arrays_avx512().max_of(x, n);
    case SgemmIsa::kAvx2:
      return vmath_arrays_avx2().max_of(x, n);
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
      return vmath_arrays_avx512().exp_shifted_sum(x, shift, y, n);
    case SgemmIsa::kAvx2:
      return vmath_arrays_avx2().exp_shifted_sum(x, shift, y, n);
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
      return vmath_arrays_avx512().exp_shifted(x, shift, y, n);
    case SgemmIsa::kAvx2:
      return vmath_arrays_avx2().exp_shifted(x, shift, y, n);
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
      return vmath_arrays_avx512().mul_pow(x, base, p, y, n);
    case SgemmIsa::kAvx2:
      return vmath_arrays_avx2().mul_pow(x, base, p, y, n);
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
    case MathFn::kCount:  // no function
      break;
  }
  return "";
}

bool math_fn_of(UnaryKind kind, MathFn* fn) {
  const char* name = unary_info(kind).math;
  if (!name) return false;
  for (int f = 0; f < kMathFnCount; ++f)
    if (std::strcmp(math_fn_name(static_cast<MathFn>(f)), name) == 0) return *fn = static_cast<MathFn>(f), true;
  return false;  // a name no MathFn has: Vmath.UnaryKindsMapToTheirMathFunctions fails
}

}  // namespace minirt::cpu
