// vmath's array functions in instruction-set files (vmath_avx512.cpp,
// vmath_avx2.cpp): one table per ISA, which vmath.cpp dispatches to (see
// "ISA files" in ARCHITECTURE.md). vmath.h is included for the enums and
// counts; an ISA file defines MINIRT_VMATH_INLINE as `static inline` before
// including it and vmath_avx512.h or vmath_avx2.h, so that the register
// forms are local to it.
#pragma once

#include <cstdint>

#include "kernels/cpu/vmath.h"

namespace minirt::cpu {

using ActArrayFn = void (*)(const Activation&, const float*, float*, int64_t);
using MathArrayFn = void (*)(const float*, float*, int64_t);

// What apply_activation, apply_math, max_of, exp_shifted_sum, exp_shifted
// and mul_pow (vmath.h) run for one ISA: act[kind], math[fn] over n floats.
struct VmathArrays {
  ActArrayFn act[kActKindCount];
  MathArrayFn math[kMathFnCount];
  float (*max_of)(const float* x, int64_t n);
  double (*exp_shifted_sum)(const float* x, float shift, float* y, int64_t n);
  void (*exp_shifted)(const float* x, const float* shift, float* y, int64_t n);
  void (*mul_pow)(const float* x, const float* base, float p, float* y, int64_t n);
};

// Call only where the CPU has the set.
const VmathArrays& vmath_arrays_avx512();
const VmathArrays& vmath_arrays_avx2();

}  // namespace minirt::cpu
