// The int8 convolution (quantized models, issue 25): a dense 2-D
// convolution on the channel-blocked layout (NCHW16c float32 in and out)
// whose input is on an 8-bit quantization grid (x = x_scale * k, k an
// integer in [lo, hi], hi - lo <= 255: what a QuantizeLinear ->
// DequantizeLinear pair leaves) and whose weights are dequantized int8
// codes (w = w_scale[m] * code), run on the codes: uint8 times int8 products
// summed exactly in int32 (AMX-INT8 tiles), scaled once by x_scale *
// w_scale[m], and the bias, a residual and the activation fused into the
// float32 epilogue the bf16 convolution has (conv_tile_isa.h).
//
//   Int8ConvQuant q{x_scale, lo, hi, w_scales};       // per output channel, or one
//   std::string why = int8_conv_declined(s, Int8ConvIsa::kAmx, q, w);   // empty: it runs
//   Int8Conv conv(s, Int8ConvIsa::kAmx, q, w, bias);  // plan time: recovers and packs the codes
//   conv.run(x, r, y, workspace, pool);              // run time: allocates nothing
//
// Semantics: y = act(pre_act(x_scale * w_scale[m] * sum(k * code) + bias)
// (+ r)): the float products of the float32 path, summed exactly (pre_act,
// when the spec has one, is the grid a fused residual Add came after), and
// requantized onto the grids as onnxruntime's int8 kernels do, by float
// multipliers (conv_int8_isa.h), not by the division QuantizeLinear names. Each
// run quantizes its input into the tile layout of conv_int8_isa.h (the
// workspace) with k = rne(clamp(x / x_scale, lo, hi)), which gives back
// each grid value's own k; or copies it from an int8 value (x_u8), or reads
// one in place. An int8 output (y_u8) holds the codes of the activation's grid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/conv_int8_isa.h"
#include "kernels/cpu/nchwc_conv.h"

namespace minirt::cpu {

// kReference: the portable form of the same arithmetic (tests, and the
// yardstick of the others); kAvx512Vnni: vpdpbusd; kAmx: AMX-INT8 tiles.
enum class Int8ConvIsa : uint8_t { kReference, kAvx512Vnni, kAmx };
const char* int8_conv_isa_name(Int8ConvIsa isa);
// AMX where the CPU has AMX-INT8 and cpu_isa() is amx (the tile permission
// granted, MINIRT_CPU_ISA not lower); else AVX512-VNNI where the CPU has it
// and cpu_isa() allows AVX-512; else kReference, with the reason in `why`.
Int8ConvIsa int8_conv_isa(std::string* why = nullptr);

struct Int8ConvQuant {
  float x_scale = 0;
  int32_t lo = 0, hi = 0;       // the input's grid: k in [lo, hi]
  std::vector<float> w_scales;  // per output channel, or one for all
  // A residual read from an int8 value (spec r_u8): its grid's scale and low end.
  float r_scale = 0;
  int32_t r_lo = 0;
  // x not on the input's grid (the image whose pair the stem took,
  // ConvAttrs::in_grid): packing rounds x / x_scale as the division does,
  // not only by the reciprocal.
  bool x_off_grid = false;
};

// Why the int8 convolution cannot run this spec with these operands
// ("needs groups == 1", "weight 3 of output channel 5 is not an int8 code
// times its scale"), empty when it can. w: [M][C][kh][kw] floats.
std::string int8_conv_declined(const NchwcConvSpec& s, const Int8ConvQuant& q, const float* w);

class Int8Conv {
 public:
  // w and bias as for Bf16Conv (int8_conv_declined(s, q, w) empty);
  // w == nullptr: plan the workspace only.
  Int8Conv(const NchwcConvSpec& s, Int8ConvIsa isa, const Int8ConvQuant& q, const float* w, const float* bias);
  size_t workspace_bytes() const { return ws_bytes_; }
  // x, r (or null), y for all q.n images: blocked floats, or int8 values
  // where the spec's x_u8 / r_u8 / y_u8 say so (y_u8: the activation is the
  // grid, ActKind::kQuantGrid, whose codes y holds).
  void run(const void* x, const void* r, void* y, void* workspace, ThreadPool& pool) const;
  std::string describe() const;
  // Of the packed weights and their per-channel terms.
  size_t weight_bytes() const {
    return w_.size() +
           (comp_.size() + mult_.size() + bias_.size() + gmult_.size() + gbias_.size() + ubias_.size()) * 4 +
           gate_table_.size() * sizeof(float);
  }

 private:
  NchwcConvSpec s_;
  Int8ConvIsa isa_;
  Int8ConvQuant q_;
  TileConvGeom g_;
  std::vector<int64_t> tap_off_;
  std::vector<int64_t> phases_read_;
  std::vector<int8_t> w_;      // packed (conv_int8_isa.h)
  std::vector<int32_t> comp_;  // blocks * 16
  std::vector<float> mult_;    // blocks * 16
  std::vector<float> bias_;    // blocks * 16
  Activation grid_;            // the first grid the epilogue requantizes onto (kNone: none)
  std::vector<float> gmult_;   // mult / grid alpha
  std::vector<float> gbias_;   // bias / grid alpha
  std::vector<float> ubias_;   // the grid's codes as the output: Int8ConvStrip::ubias
  // The SiLU as a table of the first grid's codes (AVX-512 kernels; empty: none),
  // with the activation in it when no residual follows.
  AlignedFloats gate_table_;
  bool table_act_ = false;
  size_t image_bytes_ = 0;  // of one image's packed input
  size_t ws_bytes_ = 0;
  bool direct_ = false;  // x (an int8 value) read in place, nothing packed
  bool folded_ = false;  // x plain floats (the image): window columns folded into the channels
  int64_t blocks_per_unit_ = 0, pixels_per_unit_ = 0;
};

}  // namespace minirt::cpu
