// What the blocked float32 convolution's driver (nchwc_conv.cpp) and its
// instruction-set files (nchwc_conv_avx512.cpp, nchwc_conv_plain_avx512.cpp,
// nchwc_conv_avx2.cpp) share:
// plain structs, constants and declarations only (see "ISA files" in
// ARCHITECTURE.md). The microkernels' one body is nchwc_conv_ukr.h; each ISA
// gives it its vector traits and exports two tables of kernels.
//
// A dense tile is UR pixels x NB output blocks of B channels (B = 16 with
// AVX-512, 8 with AVX2), its sums in registers; a depthwise tile is UR
// pixels of one block. The driver cuts a plane into runs of `count` tiles
// (nchwc_conv.h, "Tiling") and calls the kernel for the run's UR.
#pragma once

#include <cstdint>

#include "runtime/ops/activation.h"  // the Activation struct's fields (no function of it is called in an ISA file)

namespace minirt::cpu::nchwc_tiles {

// Output blocks per dense tile at most, per ISA.
constexpr int kMaxNb512 = 4, kMaxNb256 = 3;
// Pixels per dense tile at most for NB output blocks: UR * NB accumulators
// plus NB weight vectors and a broadcast fit the 32 zmm (16 ymm) registers,
// and at least 8 independent FMA chains cover the FMA latency.
constexpr int kUr512[kMaxNb512] = {12, 12, 8, 6};
constexpr int kUr256[kMaxNb256] = {8, 6, 4};
constexpr int kMaxUr = 12;
// Depthwise: pixels per tile (one accumulator each).
constexpr int kDwUr = 12;

// How a tile's epilogue applies the activation: Relu as max(v, 0) (a NaN
// becomes 0, as Relu's does), Clip as max(lo, v) then min(hi, .) (a NaN
// stays), on the registers; any other activation after the store, over the
// tile while it is in L1 (the activation inlined into the unrolled stores
// would take the registers the accumulators need).
enum class FinMode { kStore, kRelu, kClip };
struct Finish {
  FinMode mode;
  float lo, hi;
  bool after;
};

// One call of the dense microkernel: `count` tiles of UR pixels x NB output
// blocks, each UR pixels on from the one before.
struct DirectArgs {
  const float* x;         // input: the first tile's first pixel at tap (i0, j0), the pass's first input block
  const float* w;         // the group's packed weights at (the pass's first block, i0, j0)
  const float* bias;      // the group's bias (first pass)
  const float* r;         // the residual at the first tile's first pixel and the group's first block, or null
  float* y;               // the output there
  int64_t count;          // tiles
  int64_t xps, yps;       // floats between the tiles' pixels in x, in y (and r)
  int64_t ncb, ni, nj;    // input blocks of this pass, window rows, window columns
  int64_t xcb, xdi, xdj;  // floats between input blocks, window rows, window columns in x
  int64_t kh, kw;         // the window (strides of the packed weights)
  int64_t yob;            // floats between output blocks in y (and r)
  int64_t tail;           // real lanes of the pass's last input block when fewer than L, else 0
  const char* pf;         // lines to prefetch into L2 while the tiles run (weights a later call reads)
  int64_t pf_lines;
  bool first;  // the first pass: start from bias (+ r), else from y
  Finish fin;  // the last pass: the activation, else none
  const Activation* act;
};
using DirectFn = void (*)(const DirectArgs&);

// One call of the depthwise microkernel: `count` tiles of UR pixels of one
// block of B channels, each UR pixels on from the one before.
struct DwArgs {
  const float* x;  // input: the first tile's first pixel at tap (i0, j0)
  const float* w;  // the block's packed weights at tap (i0, j0)
  const float* bias;
  const float* r;
  float* y;
  int64_t count, xps, yps, ni, nj, xdi, xdj, kw;
  Finish fin;
  const Activation* act;
  // A quantized SiLU (NchwcConvSpec::gate), or null: after the store,
  // y = act(v gate(sigmoid(v))), v = pre(y), pre a grid; with AVX-512
  // looked up in `table` by the code of v on pre's grid.
  const Activation* pre;
  const Activation* gate;
  const float* table;
};
using DwFn = void (*)(const DwArgs&);

// One ISA's kernels, by pixel stride: [nb - 1][ur - 1] for the dense tiles
// (null past the ISA's UR for nb, and for nb past its largest), [ur - 1]
// for the depthwise ones.
//   Kernels::blocked[0]: pixels of a blocked input any distance apart (read
//               at run time); blocked[1]: B floats apart (a stride-1 row);
//   Kernels::dw[0]: any distance; dw[1], dw[2]: B or 2B floats apart;
//   PlainKernels::plain[0]: pixels of a plain (one-lane) input any distance
//               apart; plain[1], plain[2]: 1 or 2 floats apart (the stems' rows).
// Blocked stride-2 rows with the stride known measured no faster than read
// at run time. Two tables, so that an ISA's two halves can be two objects
// that compile side by side (AVX-512 under the sanitizers: three and a half
// minutes each, seven as one).
struct Kernels {
  DirectFn blocked[2][kMaxNb512][kMaxUr];
  DwFn dw[3][kDwUr];
};
struct PlainKernels {
  DirectFn plain[3][kMaxNb512][kMaxUr];
};

}  // namespace minirt::cpu::nchwc_tiles

namespace minirt::cpu {
const nchwc_tiles::Kernels& nchwc_conv_kernels_avx512();             // nchwc_conv_avx512.cpp
const nchwc_tiles::PlainKernels& nchwc_conv_plain_kernels_avx512();  // nchwc_conv_plain_avx512.cpp
const nchwc_tiles::Kernels& nchwc_conv_kernels_avx2();               // nchwc_conv_avx2.cpp
const nchwc_tiles::PlainKernels& nchwc_conv_plain_kernels_avx2();    // nchwc_conv_avx2.cpp
}  // namespace minirt::cpu
