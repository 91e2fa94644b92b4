// The float binary ops' and Pow's vector loops (elementwise.cpp), in ISA
// files of their own: elementwise_avx512.cpp and elementwise_avx2.cpp.
// Plain enums and declarations only (see "ISA files" in ARCHITECTURE.md).
#pragma once

#include <cstdint>

namespace minirt::cpu {

// The binary ops with a vector form (BinaryKind's kAdd ... kPRelu).
enum class VecBinary : uint8_t { kAdd, kSub, kMul, kDiv, kMax, kMin, kPRelu, kCount };

// Pow by one repeated exponent that a cheaper operation replaces, or kNone:
// x^2 and x^-1 are one IEEE rounding, x^3 is computed in double and rounded
// once to float, x^0.5 is sqrt with pow's +0 for -0 and +inf for -inf. Each
// is correctly rounded (x^3 but for a double rounding about once in 2^29),
// and so the same bits as std::pow wherever the result is a normal float
// (glibc's powf is 1 ULP off on some denormal results, where these are not).
enum class PowBy : uint8_t { kNone, kZero, kOne, kTwo, kThree, kHalf, kMinusOne };
constexpr int kPowByCount = static_cast<int>(PowBy::kMinusOne) + 1;

// y[i] = a[i * sa] op b[i * sb], i < n (sa, sb: 1, or 0 for a repeated operand).
using FloatBinaryFn = void (*)(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n);
// y[i] = x[i]^e, i < n.
using FloatPowFn = void (*)(const float* x, float* y, int64_t n);

// binary[op]; pow[p] for kTwo, kThree, kHalf, kMinusOne (null for the others).
struct ElementwiseKernels {
  FloatBinaryFn binary[static_cast<int>(VecBinary::kCount)];
  FloatPowFn pow[kPowByCount];
};

// Call only where the CPU has the set.
const ElementwiseKernels& elementwise_kernels_avx512();
const ElementwiseKernels& elementwise_kernels_avx2();

}  // namespace minirt::cpu
