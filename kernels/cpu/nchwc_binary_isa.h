// The blocked binary ops' vector loops (nchwc_elementwise.cpp's
// BlockedBinaryKernel), in ISA files of their own: nchwc_binary_avx512.cpp
// (16 lanes) and nchwc_binary_avx2.cpp (8 lanes). Declarations only (see "ISA
// files" in ARCHITECTURE.md).
//
//   BlockedBinaryRun run = nchwc_binary_run_avx512(BinaryKind::kAdd);  // only where cpuid says avx512f
//   run(a, sa, c, sc, out, n);
#pragma once

#include <cstdint>

#include "runtime/ops/elementwise_kinds.h"

namespace minirt::cpu {

// out[p] = a[p * sa] op c[p * sc] for pixels p in [0, n) of B lanes each (a
// step of 0 repeats one pixel: a channel operand); max and min as a > b ? a : b.
using BlockedBinaryRun = void (*)(const float* a, int64_t sa, const float* c, int64_t sc, float* out, int64_t n);

// The loop for kind k (Add, Sub, Mul, Div, Max, Min, PRelu), or null for a
// kind the blocked kernels do not take.
BlockedBinaryRun nchwc_binary_run_avx512(BinaryKind k);
BlockedBinaryRun nchwc_binary_run_avx2(BinaryKind k);

}  // namespace minirt::cpu
