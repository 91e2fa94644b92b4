// Typed attributes of the windowed ops: Conv, ConvTranspose and the pools.
// parse() fills what the file says; infer() resolves them against the real
// shapes (kernel size from the weights, auto_pad into explicit pads, one
// entry per spatial axis), so kernels read only resolved values.
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/activation.h"

#include <string>
#include <vector>

namespace minirt {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowAttrs : OpAttrs {
  std::vector<int64_t> kernel_shape;  // per spatial axis
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begins then ends, 2 * spatial rank
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t spatial() const { return static_cast<int64_t>(kernel_shape.size()); }
  int64_t pad_begin(int64_t i) const { return pads[i]; }
  int64_t pad_end(int64_t i) const { return pads[i + spatial()]; }
};

struct ConvAttrs : WindowAttrs {
  int64_t group = 1;
  Activation act;  // fused by the activation-fusion pass
  // Applied before a fused residual is added (y = act(pre_act(conv) + r)):
  // set only on convolutions the CPU runs as nchwc_int8, by
  // nchwc_fuse_chosen after the algorithms are chosen.
  Activation pre_act;
  // A QDQ SiLU taken into the same epilogue (nchwc_fuse_chosen):
  // y = act(v * gate(sigmoid(v))), v = pre_act(conv); gate is the grid of
  // the pair after the Sigmoid. Set only on nchwc_int8 and nchwc_depthwise
  // convolutions (the latter without a residual). With a
  // residual Add after the SiLU too: y = act(gate_out(v * gate(sigmoid(v)))
  // + r), gate_out the pair after the Mul (YOLO's bottleneck).
  Activation gate;
  Activation gate_out;
  // A second grid after act: the pair after a Concat the convolution writes
  // its slice of (nchwc_fuse_chosen; nchwc_int8 only): y = post(act(...)).
  Activation post;
  // The pair before the convolution, taken into its input packing
  // (nchwc_fuse_chosen; nchwc_int8 only, reading a float value the pair
  // alone read, such as the image): x is the value before the pair, quantized
  // onto this grid as it is packed.
  Activation in_grid;
  // ConvTranspose only.
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;
  std::string recipe() const override {
    return act.recipe() + " pre " + pre_act.recipe() + " gate " + gate.recipe() + " " + gate_out.recipe() + " post " +
           post.recipe() + " in " + in_grid.recipe();
  }
};

enum class PoolKind { kMax, kAverage };

struct PoolAttrs : WindowAttrs {
  PoolKind kind = PoolKind::kMax;
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// LpPool: y = (sum over the window of |x|^p)^(1/p), padding adding zeros.
struct LpPoolAttrs : WindowAttrs {
  float p = 2.0f;  // an int from version 2, a float in version 1
  bool ceil_mode = false;
};

struct LrnAttrs : OpAttrs {
  float alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
  int64_t size = 1;
};

// Conv's shape checks and output shape (x input 0, weights input 1, and a
// bias at input 2 when `bias_input`); completes the attributes (kernel
// shape, pads) with set_attrs. Shared with ConvInteger.
class InferContext;
Shape infer_conv_geometry(InferContext& ctx, bool bias_input);

// Output length of one spatial axis of a forward window op.
int64_t window_out_size(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb, int64_t pe, bool ceil);

}  // namespace minirt
