// What the bf16 convolution's driver (conv_bf16.cpp) and its instruction-set
// files (conv_bf16_amx.cpp, conv_bf16_avx512bf16.cpp) share: plain structs
// and declarations only (see "ISA files" in ARCHITECTURE.md).
//
// The packed input (one image; the geometry in conv_tile_isa.h): its
// channels in groups of 32, each pixel 32 bf16 channels (64 bytes):
//   xin[((group * phases + phase) * phase_pixels + pixel) * 32 + channel]
//
// A convolution reading a few plain channels (the image, x [C][H][W] floats)
// folds its window's columns into the channels instead ("folded"): pixel
// (a, b) of phase pa holds the C x kw values x[ci][a sh + pa - ph][b sw - pw
// + j dw] as channel ci kw + j (at most 32: one group), the phases split the
// rows only, and the taps are the window's kh rows. Where C x kh x kw <= 32
// (a 3x3 stem on three channels) the rows are folded too (TileConvGeom's
// fold_kh = kh): channel (ci kh + i) kw + j holds row a sh - ph + i dh, one
// phase, one tap.
//
// The packed weights: per 16 output channels (a block), group and tap, a
// 16 x 16 x 2 VNNI tile (row: a pair of input channels; column: the output
// channel; the pair's two bf16 adjacent):
//   w[(((block * groups + group) * taps + tap) * 16 + pair) * 32 + channel * 2 + (0|1)]
// that is one AMX B tile, and the vector a vdpbf16ps reads per pair.
//
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/conv_tile_isa.h"

namespace minirt::cpu {

// One image's rows [row0, row1) of the packed input (row = (group * phases
// + phase) * hq + a, each wq pixels; row hq of a phase also writes the
// phase's zero slack), from x blocked [ceil(c / 16)][h][w][16] floats,
// rounded to nearest even; channels >= c are zero.
void bf16_pack_rows_avx512bf16(const TileConvGeom& g, const float* x, uint16_t* xin, int64_t row0, int64_t row1);

// The same for a folded input (the plain image x [C][H][W] floats) whose
// window has dw == 1 and kw <= 16: each image row converted once into a
// zero-padded bf16 copy, and each pixel gathered from it with one masked
// load per channel and one 64-byte store.
void bf16_pack_rows_folded_avx512bf16(const TileConvGeom& g, const float* x, uint16_t* xin, int64_t row0, int64_t row1);

// A strip, its products on AVX512_BF16 (vdpbf16ps) or AMX tiles; the AMX
// one configures the tiles on entry and releases them on return.
void bf16_conv_strip_avx512bf16(const TileConvStrip& s);
void bf16_conv_strip_amx(const TileConvStrip& s);

}  // namespace minirt::cpu
