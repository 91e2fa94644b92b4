// What the tiled convolutions (the bf16 one, conv_bf16.h, and the int8 one,
// conv_int8.h) share with their instruction-set files: the geometry of the
// packed input, the strip a call works on, and the AVX-512 epilogue. Plain
// structs and declarations only (see "ISA files" in ARCHITECTURE.md).
//
// The packed input (one image): its channels in groups of 64 bytes (32 bf16
// or 64 8-bit channels), each group's padded plane split into sh x sw phases
// (pixel (a, b) of phase (pa, pb) is padded pixel (a sh + pa, b sw + pb)),
// each phase a grid of hq x wq pixels plus `slack` pixels, each pixel 64
// bytes, so that every tap of a convolution of any stride reads a run of
// consecutive pixels: output pixel f = oh * wq + ow of the "flat" output grid
// (columns ow >= OW computed and dropped) reads, for tap t, pixel f +
// tap_off[t] of the group. 16 output pixels are one AMX A tile (16 rows of
// 64 bytes). conv_bf16_isa.h and conv_int8_isa.h give the element layouts.
//
// C (the sums) of up to 32 pixels x 32 output channels is kept as
// cbuf[mt][2][16 pixels][16 channels] floats, the layout of AMX's C tiles
// stored (the int8 strips keep int32 sums there, and an epilogue of their own).
#pragma once

#include <cstddef>
#include <cstdint>

namespace minirt {
struct Activation;
}

namespace minirt::cpu {

struct TileConvGeom {
  int64_t c = 0, h = 0, w = 0;  // input channels and plane (x blocked, 16 channels per block)
  int64_t m = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  int64_t groups = 0;                // of 64 bytes of input channels: ceil(c / 32) bf16, ceil(c / 64) int8
  int64_t blocks = 0;                // of 16 output channels: ceil(m / 16)
  int64_t hq = 0, wq = 0;            // a phase's grid
  int64_t phases = 1;                // sh * sw
  int64_t phase_pixels = 0;          // hq * wq + slack
  int64_t taps = 0;                  // kh * kw (folded: kh, or 1 with fold_kh == kh)
  int64_t fold_kh = 1;               // folded: the window rows folded into the channels too (kh), or 1
  int64_t last_words = 16;           // 32-bit words (bf16 pairs, int8 quads) of the last group holding channels
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
struct TileConvStrip {
  const TileConvGeom* g;
  const uint16_t* xin;  // this image's packed input
  const uint16_t* w;    // the packed weights (all blocks)
  const float* bias;
  const void* r;  // null: no residual; floats, or bf16 with g.r_bf16
  const Activation* act;
  void* y;
  int64_t f0, f1, b0, b1;
};

// The epilogue of up to 32 pixels x 32 channels from cbuf (AVX-512; called
// by both strips): pixels [f, f + 16 mt) of the flat grid, blocks [b, b + nt).
void tile_conv_epilogue_avx512(const TileConvStrip& s, const float* cbuf, int64_t f, int mt, int64_t b, int nt);
// Defined in conv_bf16_avx512bf16.cpp.

}  // namespace minirt::cpu
