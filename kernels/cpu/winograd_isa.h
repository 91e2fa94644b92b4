// What the float32 Winograd convolution's driver (nchwc_winograd.cpp) and
// its instruction-set files (nchwc_winograd_avx512.cpp,
// nchwc_winograd_avx2.cpp) share: plain structs, constants and declarations
// only (see "ISA files" in ARCHITECTURE.md). The kernels' one body is
// winograd_ukr.h.
#pragma once

#include <cstdint>

#include "kernels/cpu/nchwc_conv_isa.h"  // the register tiles
#include "runtime/ops/activation.h"      // the Activation struct's fields (no function of it is called in an ISA file)

namespace minirt::cpu::winograd_tiles {

// Register tiles of the GEMMs: the direct kernel's (nchwc_conv_isa.h), UR *
// NB accumulators, NB vectors of U and a broadcast of V in the 32 zmm / 16
// ymm registers.
using nchwc_tiles::kMaxNb256;
using nchwc_tiles::kMaxNb512;
using nchwc_tiles::kMaxUr;
using nchwc_tiles::kUr256;
using nchwc_tiles::kUr512;

// How the output transform applies the activation: as max(lo, v) (max(v,
// lo) when a NaN must become lo, as Relu's does) then min(hi, .) on the
// registers, which is Relu, Clip and none exactly; any other activation
// over the tile's pixels right after their store.
struct Finish {
  float lo, hi;
  bool nan_to_lo, after;
};

// The input transform of tiles [t0, t0 + nt) of one image, every input block.
struct InArgs {
  const float* x;            // the image's input (block 0)
  float* v;                  // V: [point][input block][tile][B]
  int64_t h, w, ph, pw, tw;  // input plane, padding (top, left), tiles per row
  int64_t cbs, t0, nt;       // input blocks, first tile, tiles
};
using InFn = void (*)(const InArgs&);

// One register tile of one GEMM: UR tiles x NB output blocks, over every input block.
struct GemmArgs {
  const float* v;  // V at (point, input block 0, the first tile)
  const float* u;  // U at (point, the group, input block 0): [input block][lane][NB][B]
  float* m;        // M at (point, the group's first block, the first tile)
  int64_t vcb;     // floats between input blocks in V
  int64_t mob;     // floats between output blocks in M
  int64_t cbs;     // input blocks
};
using GemmFn = void (*)(const GemmArgs&);

// The output transform of one output block for the nt tiles of a unit.
struct OutArgs {
  const float* m;     // M at (point 0, this block, tile 0)
  int64_t mxi;        // floats between points in M
  const float* bias;  // this block's B biases
  const float* r;     // the residual's plane of this block, or null
  float* y;           // the output's plane of this block
  int64_t oh, ow, tw, t0, nt;
  Finish fin;
  const Activation* act;
};
using OutFn = void (*)(const OutArgs&);

// One ISA's kernels: the input and output transforms of F(2x2) ([0]) and
// F(4x4) ([1]), the GEMMs' register tiles [nb - 1][ur - 1] (null past the
// ISA's UR for nb, and for nb past its largest).
struct Kernels {
  InFn in[2];
  OutFn out[2];
  GemmFn gemm[kMaxNb512][kMaxUr];
};

}  // namespace minirt::cpu::winograd_tiles

namespace minirt::cpu {
const winograd_tiles::Kernels& nchwc_winograd_kernels_avx512();
const winograd_tiles::Kernels& nchwc_winograd_kernels_avx2();
}  // namespace minirt::cpu
