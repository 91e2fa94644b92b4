// The blocked binary ops' loop and kind table, one template over a vector
// traits struct, for the two ISA files that include it
// (nchwc_binary_avx512.cpp, nchwc_binary_avx2.cpp); everything here is in an
// anonymous namespace, so each object keeps its own copy (see "ISA files" in
// ARCHITECTURE.md).
//
// V: kLanes; V::load, V::store; V::add, sub, mul, max, min, div, prelu.
#pragma once

#include <cstdint>

#include "kernels/cpu/nchwc_binary_isa.h"

namespace minirt::cpu {
namespace {

template <class V, BinaryKind K>
void binary_loop(const float* a, int64_t sa, const float* c, int64_t sc, float* out, int64_t n) {
  for (int64_t p = 0; p < n; ++p) {
    const auto x = V::load(a + p * sa), y = V::load(c + p * sc);
    if constexpr (K == BinaryKind::kAdd) V::store(out + p * V::kLanes, V::add(x, y));
    if constexpr (K == BinaryKind::kSub) V::store(out + p * V::kLanes, V::sub(x, y));
    if constexpr (K == BinaryKind::kMul) V::store(out + p * V::kLanes, V::mul(x, y));
    if constexpr (K == BinaryKind::kMax) V::store(out + p * V::kLanes, V::max(x, y));
    if constexpr (K == BinaryKind::kMin) V::store(out + p * V::kLanes, V::min(x, y));
    if constexpr (K == BinaryKind::kDiv) V::store(out + p * V::kLanes, V::div(x, y));
    if constexpr (K == BinaryKind::kPRelu) V::store(out + p * V::kLanes, V::prelu(x, y));
  }
}

template <class V>
BlockedBinaryRun binary_table(BinaryKind k) {
  switch (k) {
    case BinaryKind::kAdd:
      return binary_loop<V, BinaryKind::kAdd>;
    case BinaryKind::kSub:
      return binary_loop<V, BinaryKind::kSub>;
    case BinaryKind::kMul:
      return binary_loop<V, BinaryKind::kMul>;
    case BinaryKind::kMax:
      return binary_loop<V, BinaryKind::kMax>;
    case BinaryKind::kMin:
      return binary_loop<V, BinaryKind::kMin>;
    case BinaryKind::kDiv:
      return binary_loop<V, BinaryKind::kDiv>;
    case BinaryKind::kPRelu:
      return binary_loop<V, BinaryKind::kPRelu>;
    case BinaryKind::kPow:
    case BinaryKind::kMod:
    case BinaryKind::kFMod:
    case BinaryKind::kCount:
      break;
  }
  return nullptr;
}

}  // namespace
}  // namespace minirt::cpu
