// What the bf16 matrix product's driver (gemm_bf16.cpp) and its
// instruction-set file (gemm_bf16_avx512bf16.cpp) share: plain structs and
// declarations only (see "ISA files" in ARCHITECTURE.md).
//
// A: m rows of kp bfloat16 (kp = groups * 32, zero past k), row-major.
// W: the weights as conv_bf16_isa.h's B tiles with one tap: per 16 output
// columns (a block) and 32 rows of k (a group), 16 pairs of rows x 16
// columns, a pair's two bf16 adjacent:
//   w[((block * groups + group) * 16 + pair) * 32 + column * 2 + (0|1)]
// so that pair p = group * 16 + pair of a block is one 64-byte vector, what
// vdpbf16ps multiplies a broadcast pair of A with.
#pragma once

#include <cstdint>

namespace minirt {
struct Activation;
}

namespace minirt::cpu {

// Rows [r0, r1) x blocks [b0, b1) of y = act(alpha * (A W) + bias): y is
// row-major floats with row stride ldy, n valid columns (the last block's
// columns past n are not written); bias holds blocks * 16 floats (zero
// past n) or is null.
struct Bf16GemmTile {
  const uint16_t* a;
  const uint16_t* w;
  const float* bias;
  const Activation* act;
  float* y;
  int64_t ldy, n, groups;
  float alpha;
  int64_t r0, r1, b0, b1;
};

// The products with vdpbf16ps, float32 accumulation; up to 8 rows and 2
// blocks a pass, so the weights are read once per 8 rows.
void bf16_gemm_tile_avx512bf16(const Bf16GemmTile& t);

}  // namespace minirt::cpu
