// The bf16 convolution (SessionOptions::math = kBf16 on the CPU): a dense
// 2-D convolution on the channel-blocked layout (NCHW16c float32 in and
// out) whose products run in bfloat16 with float32 accumulation, on AMX
// tiles or AVX512_BF16, with the bias, a residual and the activation fused
// into a float32 epilogue.
//
//   NchwcConvSpec s = ...;                            // as for NchwcDirectConv, block 16
//   if (bf16_conv_declined(s, Bf16Isa::kAmx).empty()) {
//     Bf16Conv conv(s, Bf16Isa::kAmx, w, bias);   // plan time: packs the weights to bf16
//     conv.run(x, r, y, workspace, pool);                  // run time: allocates nothing
//   }
//
// Semantics: each input value and weight is rounded to bfloat16 (round to
// nearest even, 8 bits of mantissa), products are summed in float32; the
// bias, residual and activation are float32 (the result rounded to bf16
// where it is stored as a bf16 value). The AMX and AVX512_BF16 instructions
// also treat denormal bf16 operands as zero, which the portable reference
// (Bf16Isa::kNone, the tests' yardstick on every host) does not: a
// difference below 2^-126 per product.
//
// Each run packs its input into the tile layout of conv_bf16_isa.h (a
// bf16 copy, channels in groups of 32, the padded plane split into stride
// phases), so that every tap of every stride reads runs of consecutive
// pixels; the workspace holds that copy. The work is cut into (image,
// output blocks, pixel strip) units over the pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/conv_bf16_isa.h"
#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc_conv.h"

namespace minirt::cpu {

// Why the bf16 convolution cannot run this spec on `isa` ("needs groups ==
// 1"), empty when it can.
std::string bf16_conv_declined(const NchwcConvSpec& s, Bf16Isa isa);

class Bf16Conv {
 public:
  // w: [M][C][kh][kw] (ONNX layout), bias: [M] or null; w == nullptr: plan the workspace only.
  // isa kNone runs the portable reference (tests).
  // The work is cut per run, over the pool run() is given.
  Bf16Conv(const NchwcConvSpec& s, Bf16Isa isa, const float* w, const float* bias);
  size_t workspace_bytes() const { return ws_bytes_; }
  // x, r (or null), y for all q.n images: blocked floats, or bf16 groups of
  // 32 channels where the spec's x_bf16 / r_bf16 / y_bf16 say so.
  void run(const void* x, const void* r, void* y, void* workspace, ThreadPool& pool) const;
  std::string describe() const;
  Bf16Isa isa() const { return isa_; }
  // Of the packed weights and bias.
  size_t weight_bytes() const { return w_.size() * sizeof(uint16_t) + bias_.size() * sizeof(float); }

 private:
  NchwcConvSpec s_;
  Bf16Isa isa_;
  TileConvGeom g_;
  std::vector<int64_t> tap_off_;
  std::vector<int64_t> phases_read_;  // the phases some tap reads, ascending (a 1x1 stride-2 one reads 1 of 4)
  std::vector<uint16_t> w_;           // packed (conv_bf16_isa.h)
  std::vector<float> bias_;           // blocks * 16
  size_t image_elems_ = 0;            // uint16s of one image's packed input
  size_t ws_bytes_ = 0;
  bool direct_ = false;  // x (bf16) read in place, nothing packed
  bool folded_ = false;  // x plain floats (the image): window columns folded into the channels
  int64_t blocks_per_unit_ = 0, pixels_per_unit_ = 0;
};

}  // namespace minirt::cpu
