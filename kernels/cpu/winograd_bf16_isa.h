// What the Winograd convolution's driver (nchwc_winograd.cpp) and its bf16
// products' instruction-set file (winograd_bf16_avx512bf16.cpp) share: plain
// structs and declarations only (see "ISA files" in ARCHITECTURE.md).
//
// The point-wise GEMMs of F(m x m, 3x3) with bf16 operands and float32 sums
// (nchwc_winograd.h, "bf16 products"). Layouts, in bf16 elements, with the
// 16-channel blocks of the AVX-512 kernels:
//   V: [input block][tile][16], a tile's 16 channels of one block in order,
//      so that channels 2k and 2k + 1 are one 32-bit pair;
//   U: [input block][pair 8][output block of the group][16 filters x 2], a
//      pair's two input channels adjacent for each filter:
//        u[((cb * 8 + k) * nb + o) * 32 + lane * 2 + (0|1)]
//      one 64-byte vector, what vdpbf16ps multiplies a broadcast V pair with.
// M, the sums, is float32 as the float32 kernels': [output block][tile][16].
#pragma once

#include <cstdint>

namespace minirt::cpu {

// The GEMM of one point for one group of nb output blocks (1..4) over tiles
// [0, nt), in register tiles of at most ur tiles (the float32 kernels'
// table) cut into near-equal parts.
struct WinogradBf16Gemm {
  const uint16_t* v;  // V at (this point, input block 0, tile 0)
  const uint16_t* u;  // U at (this point, this group, input block 0)
  float* m;           // M at (this point, the group's first block, tile 0)
  int64_t vcb;        // bf16 elements between input blocks in V
  int64_t mob;        // floats between output blocks in M
  int64_t cbs, nt;    // input blocks, tiles
  int nb, ur;
};
void winograd_bf16_gemm_avx512bf16(const WinogradBf16Gemm& g);

// n floats (a multiple of 16) rounded to bf16 (nearest even, NaN kept a
// NaN) and written over the start of the same buffer: bf16 i at byte 2 i.
void winograd_bf16_narrow_avx512bf16(float* v, int64_t n);

}  // namespace minirt::cpu
