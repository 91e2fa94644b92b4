// The depthwise convolution between bf16 values (MathMode::kBf16's values
// between bf16 steps), read and written in place: its AVX-512 code is in an
// ISA file of its own, dw_bf16_avx512bf16.cpp. Plain structs and
// declarations only (see "ISA files" in ARCHITECTURE.md).
//
// A bf16 value is [N][ceil(C / 32)][H][W][32] bfloat16 (bf16_values_isa.h):
// one 64-byte load is a pixel's 32 channels of a group, and each 32-bit lane
// holds two neighbours, channel 2k in its low half and 2k + 1 in its high
// half. A bf16 is the top half of a float32, so one shift gives the even
// channels as 16 floats and one AND the odd ones, without the frame of
// floats the other forms go through (NchwcDepthwiseConv): the kernel works
// on the group as its even and odd channels, and its weights and bias come
// in that order ("pair order": lanes 0-15 the channels 2k of the group,
// lanes 16-31 the channels 2k + 1).
//
//   DwBf16Geom q{...};
//   dw_bf16_rows_avx512bf16(q, x_plane, w_pairs, bias_pairs, epilogue, lanes, y_plane, row0, row1);
#pragma once

#include <cstdint>

namespace minirt::cpu {

// A 2-D window, resolved: input h x w, output oh x ow, begin pads ph, pw
// (the end pads are what oh and ow imply).
struct DwBf16Geom {
  int64_t h = 1, w = 1, oh = 1, ow = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
};

// The activation applied to the float sums before they are rounded to bf16,
// as Activation::apply computes it (a NaN stays a NaN, Relu's becomes 0).
enum class DwBf16Act : int { kNone, kRelu, kClip, kLeakyRelu, kHardSwish };
struct DwBf16Epilogue {
  DwBf16Act kind = DwBf16Act::kNone;
  float lo = 0, hi = 0;  // Clip's bounds
  float slope = 0;       // LeakyRelu's alpha
};

// Output rows [row0, row1) of one group's plane: y = act(bias + sum of the
// window's taps), float32 sums (each tap one FMA, taps in row-major window
// order), rounded to nearest even bf16; zeros in the window's reach outside
// the input (the padding). x: the group's input plane [h][w][32]; y: its
// output plane [oh][ow][32]; w: [kh][kw][32] and bias: [32], both in pair
// order; lanes: the group's real channels (the last group may have fewer
// than 32), the lanes past them written 0.
void dw_bf16_rows_avx512bf16(const DwBf16Geom& q, const uint16_t* x, const float* w, const float* bias,
                             const DwBf16Epilogue& e, int64_t lanes, uint16_t* y, int64_t row0, int64_t row1);

}  // namespace minirt::cpu
