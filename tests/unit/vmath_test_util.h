// What the vmath tests (test_vmath.cpp, test_vmath_kernels.cpp) share: the
// variants the CPU can run, forcing one, and float comparisons in ULPs.
#pragma once

#include "kernels/cpu/sgemm.h"
#include "minirt/tensor.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace minirt::vmath_test {

using cpu::SgemmIsa;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline std::vector<SgemmIsa> supported_isas() {
  std::vector<SgemmIsa> out;
  for (SgemmIsa isa : {SgemmIsa::kAvx512, SgemmIsa::kAvx2, SgemmIsa::kGeneric})
    if (cpu::sgemm_isa_supported(isa)) out.push_back(isa);
  return out;
}

// Forces a variant for the scope (kernels made and array calls made in it).
struct ForceIsa {
  explicit ForceIsa(SgemmIsa isa) { cpu::sgemm_force_isa(isa); }
  ~ForceIsa() { cpu::sgemm_reset_isa(); }
};

inline float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// The same bits, or both NaN (whose payloads depend on operand order).
inline bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// One unit in the last place of a float near v (the smallest denormal for
// results below FLT_MIN).
inline double ulp_of(double v) {
  double a = std::fabs(v);
  if (a < std::numeric_limits<float>::min()) return 0x1p-149;
  if (a >= 0x1p128) return 0x1p104;
  return std::ldexp(1.0, std::ilogb(a) - 23);
}

// |got - want| in ULPs of want; NaN must meet NaN, an infinity the same
// infinity (or, near FLT_MAX, counts as 2^128).
inline double ulp_error(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0.0 : INFINITY;
  float wf = static_cast<float>(want);
  if (std::isinf(got) || std::isinf(wf)) {
    if (got == wf) return 0.0;
    double g = std::isinf(got) ? std::copysign(0x1p128, got) : got;
    double w = std::isinf(want) ? std::copysign(0x1p128, want) : want;
    return std::fabs(g - w) / 0x1p104;
  }
  return std::fabs(static_cast<double>(got) - want) / ulp_of(want);
}

inline Tensor float_tensor(const Shape& shape, const std::vector<float>& v) {
  Tensor t = Tensor::zeros(DType::kFloat32, shape);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// Random values in [lo, hi) with NaNs, infinities and signed zeros sprinkled in.
inline std::vector<float> random_values(int64_t n, std::mt19937& rng, float lo, float hi, bool specials) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  if (specials) {
    const float sp[] = {kNaN, kInf, -kInf, 0.0f, -0.0f};
    for (size_t i = 0; i < v.size(); i += 37) v[i] = sp[(i / 37) % 5];
  }
  return v;
}

}  // namespace minirt::vmath_test
