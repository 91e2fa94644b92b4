// What the SGEMM driver (sgemm.cpp) and its instruction-set files
// (sgemm_avx512.cpp, sgemm_avx2.cpp) share: plain structs, constants and
// declarations only, since the ISA files are compiled with wider -m flags
// than the rest (see "ISA files" in ARCHITECTURE.md: an inline function
// defined here would be compiled for AVX-512 in one object and could be the
// copy the linker keeps for every caller).
//
//   const SgemmKernels& k = sgemm_kernels_avx512();  // only after cpuid says avx512f
//   k.wide[in_place][rows - 1][vectors - 1](kc, a, b, koff, out);
#pragma once

#include <cstdint>

namespace minirt {
struct Activation;
}

namespace minirt::cpu {

// One image (and group) of a 2-D convolution, as the B operand of
// W[m x (c*kh*kw)] * B: row (ci, i, j), column (oh, ow) of B is
// x[ci][oh*sh - ph + i*dh][ow*sw - pw + j*dw], zero outside the input.
struct Im2colGeom {
  int64_t c, h, w;  // input channels (of this group), height, width
  int64_t oh, ow;   // output height, width
  int64_t kh, kw, sh, sw, dh, dw, ph, pw;
};

// A microkernel's shape: rows of A per panel (MR), columns of B per panel
// (NR), floats per vector, and the widest column tail given to the narrow
// kernel instead of a mostly empty vector.
struct SgemmShape {
  int mr, nr, vw;
  int narrow_max;
};
constexpr SgemmShape kSgemmAvx512Shape{8, 32, 16, 12};
constexpr SgemmShape kSgemmAvx2Shape{4, 24, 8, 3};
constexpr SgemmShape kSgemmGenericShape{4, 16, 16, 0};

// Where a tile of C goes and what happens to it on the way.
struct SgemmTileOut {
  float* c;
  int64_t ldc;
  int rows, cols;
  bool load_c;  // add to what C holds (later K blocks, or accumulate)
  bool last;    // the sum over K is complete: bias and activation
  float alpha;
  const float* row_bias;  // at the tile's first row
  const float* col_bias;  // at the tile's first column
  const Activation* act;
};

// An MR x (up to NR) tile over kc steps of K from an A panel (MR floats per
// k) and a B source: packed panels (NR floats per k) or, with koff, rows read
// in place at b + koff[k] (the last vector of a short tile read with a mask,
// so nothing past the tile is touched).
using SgemmUkr = void (*)(int64_t kc, const float* a, const float* b, const int64_t* koff, const SgemmTileOut& o);

// A piece of a B block for im2col packing: lanes [t0, t1) of one chunk of a
// panel row, all in output row `oh`, starting at output column `ow0`.
struct SgemmPiece {
  int32_t chunk;  // chunk index within the block (chunk = `lanes` columns)
  int16_t t0, t1;
  int32_t oh, ow0;
};

// Packs rows [k0, k0 + kc) of a convolution's B, columns cut into `np`
// pieces of 16 lanes, into panels of nr columns pstride floats apart.
using SgemmIm2col = void (*)(const Im2colGeom& q, const float* x, int64_t k0, int64_t kc, int64_t nc, int nr,
                             int64_t pstride, float* dst, const SgemmPiece* pieces, int np);

constexpr int kSgemmMaxRows = 8, kSgemmMaxVectors = 3, kSgemmMaxNarrow = 12;

// One instruction set's kernels. Unused slots are null.
struct SgemmKernels {
  // [B read in place][rows - 1][vectors - 1]: whole vectors (the last one masked).
  SgemmUkr wide[2][kSgemmMaxRows][kSgemmMaxVectors];
  // [B read in place][columns - 1]: tails of up to narrow_max columns,
  // vectorized along the rows of the A panel instead.
  SgemmUkr narrow[2][kSgemmMaxNarrow];
  // im2col packing for strides 1 and 2 in 16-lane pieces; null: the driver's portable one.
  SgemmIm2col im2col;
};

// The entry points of the ISA files, each the only global symbol of its
// object; call them only where sgemm_isa_supported says so.
const SgemmKernels& sgemm_kernels_avx512();  // sgemm_avx512.cpp: 8 x 32 tiles
const SgemmKernels& sgemm_kernels_avx2();    // sgemm_avx2.cpp: 4 x 24 tiles

// The end of a narrow kernel, in sgemm.cpp (compiled for the baseline, where
// Activation::apply lives): element (r, j) of the tile is sums[j * lanes + r];
// alpha, C, the biases and the activation as the vector kernels apply them.
void sgemm_finish_narrow(const float* sums, int lanes, int cols, const SgemmTileOut& o);

}  // namespace minirt::cpu
