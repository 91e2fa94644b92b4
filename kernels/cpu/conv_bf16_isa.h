// What the bf16 convolution's driver (conv_bf16.cpp) and its instruction-set
// files (conv_bf16_amx.cpp, conv_bf16_avx512bf16.cpp) share: plain structs
// and declarations only (see "ISA files" in ARCHITECTURE.md).
//
// The packed input (one image): its channels in groups of 32, each group's
// padded plane split into sh x sw phases (pixel (a, b) of phase (pa, pb) is
// padded pixel (a sh + pa, b sw + pb)), each phase a grid of hq x wq pixels
// plus `slack` zero pixels, each pixel 32 bf16 channels (64 bytes):
//   xin[((group * phases + phase) * phase_pixels + pixel) * 32 + channel]
// so every tap of a convolution of any stride reads a run of consecutive
// pixels: output pixel f = oh * wq + ow of the "flat" output grid (columns
// ow >= OW computed and dropped) reads, for tap t, pixel f + tap_off[t] of
// the group. 16 output pixels are one AMX A tile (16 rows of 64 bytes).
//
// A convolution reading a few plain channels (the image, x [C][H][W] floats)
// folds its window's columns into the channels instead ("folded"): pixel
// (a, b) of phase pa holds the C x kw values x[ci][a sh + pa - ph][b sw - pw
// + j dw] as channel ci kw + j (at most 32: one group), the phases split the
// rows only, and the taps are the window's kh rows.
//
// The packed weights: per 16 output channels (a block), group and tap, a
// 16 x 16 x 2 VNNI tile (row: a pair of input channels; column: the output
// channel; the pair's two bf16 adjacent):
//   w[(((block * groups + group) * taps + tap) * 16 + pair) * 32 + channel * 2 + (0|1)]
// that is one AMX B tile, and the vector a vdpbf16ps reads per pair.
//
// C (the sums) of up to 32 pixels x 32 channels is kept as cbuf[mt][nt][16
// pixels][16 channels] floats, the layout of AMX's C tiles stored.
#pragma once

#include <cstddef>
#include <cstdint>

namespace minirt {
struct Activation;
}

namespace minirt::cpu {

struct Bf16ConvGeom {
  int64_t c = 0, h = 0, w = 0;  // input channels and plane (x blocked, 16 channels per block)
  int64_t m = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  int64_t groups = 0;                // of 32 input channels: ceil(c / 32)
  int64_t blocks = 0;                // of 16 output channels: ceil(m / 16)
  int64_t hq = 0, wq = 0;            // a phase's grid
  int64_t phases = 1;                // sh * sw
  int64_t phase_pixels = 0;          // hq * wq + slack
  int64_t taps = 0;                  // kh * kw
  int64_t flat = 0;                  // oh * wq: pixels of the flat output grid
  const int64_t* tap_off = nullptr;  // per tap, in pixels from the group's start
  bool y_bf16 = false;               // y is bf16 [ceil(m / 32)][oh][ow][32] (the epilogue rounds)
  bool r_bf16 = false;               // r (the residual) is bf16 in the same groups
};

// The work of one call: flat output pixels [f0, f1) and output blocks
// [b0, b1) of one image (b0 even); y = act(sum + bias (+ r)), y and r
// blocked [blocks][oh][ow][16] floats of this image or, with g.y_bf16
// (g.r_bf16), bf16 [ceil(m / 32)][oh][ow][32]. bias holds blocks * 16
// floats (zero past m).
//
// A bf16 value (x_bf16) whose convolution is 1x1, stride 1, unpadded is its
// own packed input (phases 1, hq x wq = h x w, no slack of its own): the
// rows read past a group's plane fall in the next group's or in the
// value's slack (value_bytes adds 32 pixels to every bf16 blocked value),
// and feed only rows of C that the epilogue drops.
struct Bf16ConvStrip {
  const Bf16ConvGeom* g;
  const uint16_t* xin;  // this image's packed input
  const uint16_t* w;    // the packed weights (all blocks)
  const float* bias;
  const void* r;  // null: no residual; floats, or bf16 with g.r_bf16
  const Activation* act;
  void* y;
  int64_t f0, f1, b0, b1;
};

// One image's rows [row0, row1) of the packed input (row = (group * phases
// + phase) * hq + a, each wq pixels; row hq of a phase also writes the
// phase's zero slack), from x blocked [ceil(c / 16)][h][w][16] floats,
// rounded to nearest even; channels >= c are zero.
void bf16_pack_rows_avx512bf16(const Bf16ConvGeom& g, const float* x, uint16_t* xin, int64_t row0, int64_t row1);

// The same for a folded input (the plain image x [C][H][W] floats) whose
// window has dw == 1 and kw <= 16: each image row converted once into a
// zero-padded bf16 copy, and each pixel gathered from it with one masked
// load per channel and one 64-byte store.
void bf16_pack_rows_folded_avx512bf16(const Bf16ConvGeom& g, const float* x, uint16_t* xin, int64_t row0, int64_t row1);

// A strip, its products on AVX512_BF16 (vdpbf16ps) or AMX tiles; the AMX
// one configures the tiles on entry and releases them on return.
void bf16_conv_strip_avx512bf16(const Bf16ConvStrip& s);
void bf16_conv_strip_amx(const Bf16ConvStrip& s);

// The epilogue of up to 32 pixels x 32 channels from cbuf (AVX-512; called
// by both strips): pixels [f, f + 16 mt) of the flat grid, blocks [b, b + nt).
void bf16_conv_epilogue_avx512(const Bf16ConvStrip& s, const float* cbuf, int64_t f, int mt, int64_t b, int nt);

}  // namespace minirt::cpu
