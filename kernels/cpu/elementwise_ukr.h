// The float binary ops' and Pow's table, for the ISA files only
// (elementwise_avx512.cpp, elementwise_avx2.cpp): the scalar form of a pair
// (the both-repeated case and AVX2's tail) and the table built from an ISA's
// loops, given as traits F with the member variable templates
// inner<VecBinary> and pow<PowBy>. In an anonymous namespace, no std
// template: each ISA object has its own copy.
#pragma once

#include <cstdint>

#include "kernels/cpu/elementwise_isa.h"

namespace minirt::cpu {
namespace {

// One pair, as elementwise.cpp's apply_binary gives it (a pair of repeated
// operands).
template <VecBinary K>
float scalar_bin(float a, float b) {
  if constexpr (K == VecBinary::kAdd) return a + b;
  if constexpr (K == VecBinary::kSub) return a - b;
  if constexpr (K == VecBinary::kMul) return a * b;
  if constexpr (K == VecBinary::kDiv) return a / b;
  if constexpr (K == VecBinary::kMax) return a > b ? a : b;
  if constexpr (K == VecBinary::kMin) return a < b ? a : b;
  if constexpr (K == VecBinary::kPRelu) return a < 0 ? a * b : a;
  return a;
}

template <class F>
constexpr ElementwiseKernels make_kernels() {
  ElementwiseKernels k{};
  k.binary[static_cast<int>(VecBinary::kAdd)] = F::template inner<VecBinary::kAdd>;
  k.binary[static_cast<int>(VecBinary::kSub)] = F::template inner<VecBinary::kSub>;
  k.binary[static_cast<int>(VecBinary::kMul)] = F::template inner<VecBinary::kMul>;
  k.binary[static_cast<int>(VecBinary::kDiv)] = F::template inner<VecBinary::kDiv>;
  k.binary[static_cast<int>(VecBinary::kMax)] = F::template inner<VecBinary::kMax>;
  k.binary[static_cast<int>(VecBinary::kMin)] = F::template inner<VecBinary::kMin>;
  k.binary[static_cast<int>(VecBinary::kPRelu)] = F::template inner<VecBinary::kPRelu>;
  k.pow[static_cast<int>(PowBy::kTwo)] = F::template pow<PowBy::kTwo>;
  k.pow[static_cast<int>(PowBy::kThree)] = F::template pow<PowBy::kThree>;
  k.pow[static_cast<int>(PowBy::kHalf)] = F::template pow<PowBy::kHalf>;
  k.pow[static_cast<int>(PowBy::kMinusOne)] = F::template pow<PowBy::kMinusOne>;
  return k;
}

}  // namespace
}  // namespace minirt::cpu
