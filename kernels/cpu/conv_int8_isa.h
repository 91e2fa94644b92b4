// What the int8 convolution's driver (conv_int8.cpp) and its instruction-set
// files (conv_int8_amx.cpp, conv_int8_avx512vnni.cpp) share: plain structs and declarations only (see
// "ISA files" in ARCHITECTURE.md).
//
// The packed input (one image; the geometry in conv_tile_isa.h): its
// channels in groups of 64 (or, folded, the window columns of the plain
// image's channels: channel ci kw + j; where C kh kw <= 64 the window's rows
// too, fold_kh = kh: channel (ci kh + i) kw + j, one tap), each pixel 64 uint8 codes u = k - lo, where the
// input value is x_scale * k with k an integer in [lo, hi] (hi - lo <= 255:
// the grid a QuantizeLinear -> DequantizeLinear pair put it on):
//   xin[((group * phases + phase) * phase_pixels + pixel) * 64 + channel]
// Padding, channels >= c and the slack hold -lo, the code of 0.
//
// The packed weights: per 16 output channels (a block), group and tap, a
// 16 x 16 x 4 tile of int8 codes (row: a quad of input channels; column: the
// output channel; the quad's four bytes adjacent):
//   w[(((block * groups + group) * taps + tap) * 16 + quad) * 64 + channel * 4 + (0..3)]
// that is one AMX B tile for tdpbusd (uint8 rows of A times int8 B).
//
// The sums: acc[p][n] = sum of u * w over the window, exact in int32; the
// real product is x_scale * w_scale[n] * (acc + comp[n]) with comp[n] = lo
// times the sum of output channel n's codes (the -lo of every u put back).
// The epilogue requantizes as onnxruntime's int8 kernels do, by float
// multipliers: a grid that follows the sums directly (the pair after the
// convolution, or before its fused residual) gives k = rne(clamp(fma(acc +
// comp[n], mult[n] / alpha, bias[n] / alpha), beta, gamma)), mult[n] =
// x_scale * w_scale[n]; the value is alpha * k. Otherwise v = fma(acc +
// comp[n], mult[n], bias[n]) and pre_act. Then the residual, and the
// activation: as a grid's codes (an int8 output: k = rne(clamp(v * (1 /
// alpha), beta, gamma))), or as floats (Activation's AVX-512 form).
//
// An int8 value (between int8 convolutions: nchwc_int8_values) is uint8
// codes in groups of 64 channels, [ceil(C / 64)][H][W][64] per image plus 32
// pixels of slack, u = k - lo of its maker's grid (the pair it ends in):
// the packed input of a 1x1, stride-1, unpadded reader as it is (phases 1,
// no slack of its own), a copy of whole pixels for the others. A residual
// read from one is r_scale * (u + r_lo); an output written as one holds u =
// k - beta of the activation's grid (ActKind::kQuantGrid: alpha * k, k in
// [beta, gamma]), the value alpha * k the float path would have stored.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/conv_tile_isa.h"

namespace minirt::cpu {

struct Int8ConvStrip {
  TileConvStrip s;            // the output side: g, bias, r, act, y, f0..b1 (its xin and w unused)
  const uint8_t* xin;         // this image's packed input
  const int8_t* w;            // the packed weights (all blocks)
  const int32_t* comp;        // blocks * 16
  const float* mult;          // blocks * 16
  const Activation* pre_act;  // null, or applied before r is added (a fused residual Add)
  // The first grid (kQuantGrid: pre_act, or the activation where there is no
  // residual), applied by requantization: k = rne(clamp(fma(acc + comp,
  // gmult, gbias), beta, gamma)), gmult = mult / alpha, gbias = bias /
  // alpha; null: none (then pre_act, when set, is applied to the float).
  const Activation* grid;
  // null, or a QDQ SiLU after the first grid: v = v * gate(sigmoid(v)), gate
  // a grid applied by the reciprocal of its scale (the reference kernel; the
  // AVX-512 epilogue, after a first grid of at most 256 codes, looks the
  // whole SiLU up in gate_table, whose grids round as the division does).
  const Activation* gate;
  // null, or the grid after the SiLU's Mul (then a residual follows), applied as gate is.
  const Activation* gate_out;
  // null, or a second grid after act (a Concat's pair): the output is
  // post(act(v)), written as post's codes into an int8 value.
  const Activation* post;
  // null, or the SiLU (gate, gate_out, and act and post when table_act) as a table
  // of the first grid's codes (quant_silu_table_avx512): entry k - beta.
  const float* gate_table;
  bool table_act;
  const float* gmult;  // blocks * 16
  const float* gbias;
  // null, or where the first grid's codes are the output (no residual, SiLU
  // or second grid after it, y_u8): gbias + comp gmult - beta, so that the
  // code is u = rne(clamp(fma(acc, gmult, ubias), 0, gamma - beta)).
  const float* ubias;
  bool r_u8, y_u8;  // r read from, y written as, an int8 value
  float r_scale;    // r_u8: r = r_scale * (u + r_lo)
  int32_t r_lo;
};

// One image's rows [row0, row1) of the packed input (row = (group * phases
// + phase) * (hq + 1) + a; row hq of a phase writes the phase's slack), from
// x blocked [ceil(c / 16)][h][w][16] floats: u = rne(clamp(x / scale, lo,
// hi)) - lo, NaN to lo (AVX-512; the arithmetic of conv_int8.cpp's
// reference). On the grid's own values (x = scale k) the reciprocal's
// product is k; off_grid (any x) rounds as the division does.
void int8_pack_rows_avx512(const TileConvGeom& g, const float* x, uint8_t* xin, int64_t row0, int64_t row1, float scale,
                           bool off_grid, int32_t lo, int32_t hi);

// The same for a folded input (conv_tile_isa.h: the plain image x
// [C][H][W] floats, C x kw <= 64) whose window has dw == 1 and kw <= 16:
// each image row quantized once into a padded uint8 copy, each pixel
// gathered from it with one masked load per channel and one 64-byte store.
void int8_pack_rows_folded_avx512(const TileConvGeom& g, const float* x, uint8_t* xin, int64_t row0, int64_t row1,
                                  float scale, bool off_grid, int32_t lo, int32_t hi);

// n pixels of 16 lanes between an int8 value (uint8 codes u, pixel stride
// `stride` bytes) and float rows (16 floats a pixel), for the depthwise
// convolution that reads and writes them (nchwc_conv.cpp), whose weights
// carry the grids (NchwcDepthwiseConv's codes_in_ and codes_out_): in, the
// codes as floats, exact; out, u = rne(clamp(v, 0, top)), v already the code
// before rounding. Where they cannot carry the output's grid (a quantized
// SiLU after the convolution), out is u = rne(clamp(v / alpha, lo, hi)) - lo
// with the division's rounding exactly (quant_round_avx512, vmath.h), applied
// as the row is stored (no pass of its own over the float row).
void u8_lanes_to_code_floats_avx512(const uint8_t* src, int64_t stride, float* dst, int64_t n);
void code_floats_to_u8_lanes_avx512(const float* src, uint8_t* dst, int64_t stride, int64_t n, float top);
void floats_to_u8_lanes_avx512(const float* src, uint8_t* dst, int64_t stride, int64_t n, float alpha, int32_t lo,
                               int32_t hi);

// Output rows [row0, row1) of one 64-channel group of a MaxPool on int8
// values (q: a 2-D window, bf16_values_isa.h's struct; x, y [h][w][64] and
// [oh][ow][64] codes): each lane the largest code of its window's pixels
// inside the input. The largest code is the code of the largest value (the
// grid rises with the code), so this is the float MaxPool, exactly.
struct Bf16PoolGeom;
void u8_max_rows_avx512(const Bf16PoolGeom& q, const uint8_t* x, uint8_t* y, int64_t row0, int64_t row1);

// A strip, its products on AMX tiles (tdpbusd; conv_int8_amx.cpp:
// configures the tiles on entry and releases them on return) or with
// AVX512-VNNI (vpdpbusd; conv_int8_avx512vnni.cpp), its epilogue on AVX-512.
void int8_conv_strip_amx(const Int8ConvStrip& s);
void int8_conv_strip_avx512vnni(const Int8ConvStrip& s);

// The epilogue of up to 32 pixels x 32 output channels whose int32 sums
// cbuf holds as C tiles [t][n] (t < mt, n < nt; conv_tile_isa.h): flat
// pixels [f, f + 16 mt), blocks [b, b + nt). Both strips call it.
void int8_conv_epilogue_avx512(const Int8ConvStrip& s, const int32_t* cbuf, int64_t f, int mt, int64_t b, int nt);

}  // namespace minirt::cpu
