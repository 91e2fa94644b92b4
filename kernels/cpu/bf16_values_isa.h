// Moving bf16 values (MathMode::kBf16's values between bf16 steps): MaxPool
// on them (nchwc_ops.cpp's bf16 MaxPool kernel) and the conversions the
// depthwise convolution reads and writes them with (nchwc_conv.cpp), in an
// ISA file of their own: bf16_values_avx512.cpp. Plain structs and
// declarations only (see "ISA files" in ARCHITECTURE.md).
//
// A bf16 value between bf16 convolutions is [N][ceil(C / 32)][H][W][32]
// bfloat16 (conv_bf16_isa.h); one plane is one group of 32 channels of one
// image, one pixel 64 bytes.
//
//   bf16_max_rows_avx512(q, x_plane, y_plane, row0, row1);  // only where cpuid has AVX512_BF16 (bf16 values imply it)
//   bf16_lanes_to_floats_avx512(src, 32, dst, n);             // 16 lanes a pixel out of a 32-channel group
//   floats_to_bf16_lanes_avx512(src, dst, 32, n);             // and back, rounded to nearest even
#pragma once

#include <cstdint>

namespace minirt::cpu {

// A 2-D max window, resolved: input h x w, output oh x ow, begin pads ph, pw
// (the end pads are what oh and ow imply).
struct Bf16PoolGeom {
  int64_t h = 1, w = 1, oh = 1, ow = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
};

// Output rows [row0, row1) of one plane: each pixel the largest non-NaN value
// of its window's pixels inside the input, lane by lane, or the lowest float
// rounded to bf16 (-inf) where there is none -- what the float32 MaxPool
// gives on the same numbers, rounded to bf16 (exact: the inputs are bf16).
void bf16_max_rows_avx512(const Bf16PoolGeom& q, const uint16_t* x, uint16_t* y, int64_t row0, int64_t row1);

// n pixels of 16 lanes between a bf16 value (pixel stride `stride` uint16s)
// and float rows (16 floats a pixel): exact one way (a bf16 is the top half
// of a float), rounded to nearest even the other (NaN kept a NaN).
void bf16_lanes_to_floats_avx512(const uint16_t* src, int64_t stride, float* dst, int64_t n);
void floats_to_bf16_lanes_avx512(const float* src, uint16_t* dst, int64_t stride, int64_t n);

}  // namespace minirt::cpu
