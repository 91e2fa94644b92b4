// Direct convolution kernels for the channel-blocked layout (nchwc.h):
// dense (groups == 1) and depthwise (groups == C == M), with the bias, a
// residual and the activation fused into the epilogue.
//
//   NchwcConvSpec s;
//   s.q = conv_geometry(x_shape, y_shape, attrs, groups);
//   s.isa = sgemm_default_isa();                 // kAvx512 or kAvx2
//   s.block = nchwc_block(s.isa);                // 16 or 8
//   s.act = attrs.act;
//   if (nchwc_direct_declined(s).empty()) {
//     NchwcDirectConv conv(s, w, bias, threads);  // plan time: packs the weights
//     conv.run(xb, nullptr, yb, 0, workspace, pool);  // run time: allocates nothing
//   }
//
// Tiles. The output is cut into tiles of up to UR pixels (of one row, or of
// one column at the plane's left and right edges) x NB output blocks of B
// channels, each tile held in UR * NB vector registers while the input
// channels and taps stream past: per (input channel, tap) one vector of
// weights per output block and one broadcast input scalar per pixel (AVX-512:
// NB x UR up to 4 x 6, 3 x 8, 2 x 12; AVX2: 3 x 4, 2 x 6, 1 x 8; NB is chosen
// for the row length, so short rows still fill the FMA pipes). A tile's
// pixels all see the same taps of the window (its rows and columns inside
// the input), so the microkernel skips the taps that fall into the padding
// with no test in its inner loop: interior rows are cut into horizontal
// tiles, the edge columns of interior rows into vertical tiles, and the few
// corner pixels are tiles of one. A 1x1 stride-1 convolution without
// padding treats the whole plane as one row: a GEMM over the blocked tensor
// in place. Depthwise tiles are up to 12 pixels of one block, one FMA per
// tap and pixel. A run of pixels is cut into near-equal tiles, and one call
// of a microkernel computes the run's tiles of one size back to back; along
// a row the pixel stride is a compile-time constant (stride 1 on a blocked
// input, 1 or 2 on a plain one), so a tile's inputs are displacements from
// one register. The last input block stops at its real channels (C = 24 in
// blocks of 16). Every row's and column's taps are found at plan time.
//
// Cache blocking. Output blocks are grouped into chunks whose packed weights
// (for the input channels of one pass) fit a quarter of a MiB of L2. Each
// group of a chunk walks a strip of rows (about 64 KiB of input) in turn,
// so the strip's input comes from memory once and a tile writes only its
// group's blocks. Where the weights of one group over all input channels
// are larger than what L1 keeps (24 KiB; 12 KiB for a flat 1x1), the input
// channels run in passes (one group per chunk) that accumulate into y; the bias and the residual enter with the first
// pass, the activation with the last. Relu and Clip are applied in registers, other activations over the tile right
// after its store. With 2 MiB of packed weights or more (in a model they come from memory), the weights that the next
// pass, group or chunk reads are prefetched into L2 while the current tiles run, spread over their input blocks.
//
// Threads. The work is cut into (image, output-block chunk, output row)
// units (1x1 stride 1: runs of about one tile of pixels instead of rows),
// dealt to the tasks in contiguous runs of near-equal cost, so that a task
// keeps its weights; with 2 or 3 threads the ResNet-50 and MobileNetV2
// layers split within 2%, with 16 within 15% (7x7 planes). A task's thread
// walks its run in a few pieces (of 64 output pixels or more), and a thread
// done early takes pieces from the back of another's run
// (ThreadPool::parallel_ranges): a thread whose core is shared with another
// process no longer holds up the layer.
//
// Layouts. x: blocked [N][ceil(C/B)][H][W][B] (or plain [N][C][H][W] when
// !input_blocked); y: blocked with y_channels channels, the convolution's
// blocks starting at block y_channel_offset / B; r: blocked like the
// convolution's own output (q.m channels). A block of which only some
// channels are real is written whole: its padding lanes get act(0 + r's
// lane), finite. y must not overlap x; it may be r itself (in place), when
// their layouts are the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/dw_bf16_isa.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/ops/activation.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {

struct NchwcConvSpec {
  Geometry q;                        // conv_geometry() of the node; 2-D (1-D as height 1)
  int block = 16;                    // 8 (AVX2) or 16 (AVX-512): the layout of y (and of x when input_blocked)
  SgemmIsa isa = SgemmIsa::kAvx512;  // kAvx2 or kAvx512, matching block
  bool input_blocked = true;         // false: x is plain NCHW (a stem reading the image; any C)
  Activation act;                    // applied in the epilogue
  bool residual = false;             // y = act(conv(x) + bias + r), r blocked like the conv's output
  Activation pre_act;                // y = act(pre_act(conv(x) + bias) + r): nchwc_int8 only
  Activation gate;                   // y = act(v gate(sigmoid(v))), v = pre_act(...): nchwc_int8 only
  Activation gate_out;               // and then y = act(gate_out(v gate(sigmoid(v))) + r)
  Activation post;                   // y = post(act(...)): nchwc_int8 only
  int64_t y_channels = 0;            // channels of the tensor y points to (0: q.m)
  // The bf16 convolution's narrow values (conv_bf16.h): x (y) is bfloat16 in
  // groups of 32 channels, [N][ceil(C/32)][H][W][32], instead of blocked floats.
  bool x_bf16 = false, y_bf16 = false, r_bf16 = false;
  // The int8 convolution's values (conv_int8_isa.h): uint8 codes in groups
  // of 64 channels, [N][ceil(C/64)][H][W][64].
  bool x_u8 = false, y_u8 = false, r_u8 = false;
  // x_u8: the grid of x's codes (kQuantGrid, x = alpha * (u + beta)), for the
  // depthwise convolution (nchwc_int8 reads it from Int8ConvQuant). y_u8:
  // act is y's grid.
  Activation x_grid;
};

// Why each kernel cannot run a spec ("needs groups == 1"), empty when it can.
std::string nchwc_direct_declined(const NchwcConvSpec& s);
std::string nchwc_depthwise_declined(const NchwcConvSpec& s);

namespace nchwc_detail {
// Where a convolution's output tiles lie: interior rows and columns see
// every tap of the window; the rest see a sub-range of the window's rows
// (columns). Shared by both kernels.
struct TileGeom {
  int64_t oh = 0, ow = 0;                                  // output plane (1 x H*W for a 1x1 stride-1 conv)
  int64_t row_lo = 0, row_hi = 0, col_lo = 0, col_hi = 0;  // interior rows, columns: [lo, hi)
  int64_t units = 0;                                       // spatial work units: rows, or pixel chunks (flat)
  bool flat = false;                                       // the plane as one row of pixels, cut into chunks
  int ur = 1;                                              // pixels per tile at most
  std::vector<int64_t> row_taps, col_taps;                 // per output row (column): its window rows
                                                           // (columns) inside the input, [2 o], [2 o + 1)
};
}  // namespace nchwc_detail

// groups == 1, any window, stride, dilation and padding.
class NchwcDirectConv {
 public:
  // w: [M][C][kh][kw] (ONNX layout), bias: [M] or null; w == nullptr: plan the workspace only.
  NchwcDirectConv(const NchwcConvSpec& s, const float* w, const float* bias, int threads);
  size_t workspace_bytes() const { return 0; }
  // Of the packed weights and bias.
  size_t weight_bytes() const { return (w_.size() + bias_.size()) * sizeof(float); }
  // x, r, y for all q.n images; y_channel_offset in channels, a multiple of block.
  void run(const float* x, const float* r, float* y, int64_t y_channel_offset, float* workspace,
           ThreadPool& pool) const;
  // For describe() and benchmarks: output blocks per tile, pixels per tile,
  // input-channel passes, output-block chunks.
  std::string describe() const;

 private:
  struct Group {
    int64_t ob = 0, nb = 0;  // first output block, blocks
    size_t w_at = 0;         // its packed weights, in floats
  };
  void segment(const float* x, const float* r, float* y, int64_t yob0, int64_t chunk, int64_t s0, int64_t s1) const;

  NchwcConvSpec s_;
  Geometry q_;  // as the kernel walks it (1 x H*W when flat)
  nchwc_detail::TileGeom tg_;
  int lanes_ = 1;    // input channels per input block: B, or 1 for a plain input
  int64_t cbs_ = 0;  // input blocks (plain: channels)
  int64_t mb_ = 0;   // output blocks
  std::vector<Group> groups_;
  int64_t chunk_groups_ = 1, chunks_ = 1;  // groups per output chunk, chunks
  std::vector<int64_t> pass_cb_;           // first input block of each pass, and the end
  AlignedFloats w_, bias_;
  int64_t tasks_ = 1;
  bool empty_ = false;
  bool prefetch_ = false;  // prefetch the weights of the next pass or group (large weights)
};

// How the depthwise kernel treats the border, where the window reaches past
// the input: kAuto chooses; kPadded copies each block's input into a zeroed
// frame in the workspace so that every output row is one run of full-window
// tiles; kDirect walks the border in tiles of partial windows, in place.
enum class DwBorder { kAuto, kPadded, kDirect };

// groups == C == M (depthwise), input blocked; any window, stride, dilation, padding.
//
// Small planes (EfficientNet's 5x5 on 7x7 and 14x14) are mostly border: on
// 7x7 with a 5x5 window, 40 of 49 outputs see a partial window, and walking
// them in place takes 27 kernel calls per block for 49 pixels. With kAuto the
// kernel copies such a block (when the border is more than half the plane and
// the padded frame fits in L2) into a zeroed frame and runs each row as
// full-window tiles: 7 calls for the same pixels.
class NchwcDepthwiseConv {
 public:
  // w: [C][1][kh][kw] (ONNX layout), bias: [C] or null; w == nullptr: plan the workspace only.
  NchwcDepthwiseConv(const NchwcConvSpec& s, const float* w, const float* bias, int threads,
                     DwBorder border = DwBorder::kAuto);
  // The padded frames, one per task; 0 when the border is walked in place.
  size_t workspace_bytes() const {
    return padded_ ? static_cast<size_t>(tasks_ * group_blocks_ * (frame_floats_ + row_floats_)) * sizeof(float) : 0;
  }
  void run(const float* x, const float* r, float* y, int64_t y_channel_offset, float* workspace,
           ThreadPool& pool) const;
  std::string describe() const;
  // Of the packed weights and bias (and their tables).
  size_t weight_bytes() const {
    return (w_.size() + bias_.size() + w_pairs_.size() + bias_pairs_.size() + gate_table_.size()) * sizeof(float);
  }

 private:
  NchwcConvSpec s_;
  Geometry q_;
  nchwc_detail::TileGeom tg_;
  int64_t cbs_ = 0;
  AlignedFloats w_, bias_;
  int64_t tasks_ = 1;
  bool empty_ = false;
  bool padded_ = false;
  // The padded frame: rows and columns the windows of all outputs read
  // (input row r at frame row r + ph), and the floats of one block's frame
  // rows for one band (band_rows_).
  int64_t frame_h_ = 0, frame_w_ = 0, frame_floats_ = 0;
  // x or y a bf16 value (spec x_bf16, y_bf16), or an int8 one (x_u8, y_u8):
  // always the padded frame, which is filled from them; with y_bf16 or
  // y_u8, each output row goes through a float row of row_floats_ per task,
  // rounded (requantized) into y.
  bool bf16_io_ = false;
  int64_t row_floats_ = 0;
  // Blocks a task runs together over one frame each: the 16-channel blocks
  // of one cache line of a narrow value (2 of bf16, 4 of int8), else 1.
  int64_t group_blocks_ = 1;
  // Output rows of one band: the frame holds the input rows of one band (all
  // of them where the plane is small).
  int64_t band_rows_ = 1;
  // bf16 values in and out with an activation of the registers: in place,
  // one group of 32 channels at a time (dw_bf16_rows_avx512bf16), with its
  // weights and bias in pair order.
  bool pairs_ = false;
  DwBf16Epilogue pair_act_;
  AlignedFloats w_pairs_, bias_pairs_;
  // A quantized SiLU after it (spec gate) on AVX-512: the output of each
  // code of pre_act's grid (quant_silu_table_avx512).
  AlignedFloats gate_table_;
  // int8 values folded into the weights and bias. codes_in_ (x_u8): the
  // frame holds x's codes u as floats, the rows and columns outside the
  // input the code of zero, and x's scale sits in the weights, its zero
  // point in the bias (sum of w alpha (u + lo) = sum of (w alpha) u + alpha lo
  // sum of w, padding included). codes_out_ (y_u8, no residual, no SiLU):
  // the weights and bias also carry 1 / the output grid's scale and its
  // offset, so that the float row holds the codes before rounding, clamped
  // and rounded (nearest, ties to even) as they are stored.
  bool codes_in_ = false, codes_out_ = false;
  float frame_pad_ = 0.0f;
};

}  // namespace minirt::cpu
