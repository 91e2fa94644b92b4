// Winograd convolution F(2x2, 3x3) and F(4x4, 3x3) on the channel-blocked
// layout (nchwc.h): 3x3 window, stride 1, dilation 1, one group, blocked
// input; any padding (asymmetric too), any plane (partial edge tiles), any
// batch; the bias, a residual and the activation fused into the output
// transform. The same spec and the same layouts as NchwcDirectConv
// (nchwc_conv.h).
//
//   NchwcConvSpec s = ...;                              // as for NchwcDirectConv
//   if (nchwc_winograd_declined(s, 4).empty()) {
//     NchwcWinogradConv conv(s, 4, w, bias, threads);  // plan time: transforms and packs the weights
//     float* ws = ...;                                  // conv.workspace_bytes(), 64-byte aligned
//     conv.run(xb, nullptr, yb, 0, ws, pool);           // run time: allocates nothing
//   }
//
// Algorithm. Each m x m output tile (m = 2 or 4) is A^T [U . V] A, where
// V = B^T d B transforms the tile's (m+2) x (m+2) input patch d and
// U = G g G^T each 3x3 filter g; summed over the input channels, the
// elementwise products become (m+2)^2 GEMMs of (tiles x channels) by
// (channels x filters): 2.25x (F2) or 4x (F4) fewer multiplications than
// the direct sum. In the blocked layout a patch element of one pixel is a
// vector of B channels, so the transforms are plain vector arithmetic, and
// the GEMMs are register tiles of up to UR tiles x NB output blocks of B
// filters (as the direct kernel's: one broadcast of V per tile and input
// channel, one vector of U per output block), over all the input channels.
// Interpolation points: F2 0, 1, -1, inf; F4 0, 1, -1, 1/2, -2, inf (more
// accurate than Lavin and Gray's 0, +-1, +-2: about 3x smaller worst-case
// error in float, for 4 more operations per 1-D input transform).
//
// Work. Per image the tiles (ceil(oh/m) x ceil(ow/m), row-major) are cut
// into groups of T consecutive tiles, the output blocks into chunks; a unit
// is (image, tile group, chunk). A unit transforms its tiles' inputs into V
// ([point][input block][tile][B], all input channels), runs the GEMMs point
// by point into M ([point][output block of the chunk][tile][B]), then
// transforms M back and stores the m x m pixels (clipped at the plane's
// edges). T and the number of chunks come from a cost model: the GEMM at
// the register tile's efficiency, the transforms, U read once per unit from
// L3 when the chunk's U is larger than L2, V and M through L3 when they are
// larger than their L2 budget, and the units dealt to the tasks in equal
// runs (chunks innermost, so a task that runs several chunks of one tile
// group transforms its input once). A task's scratch (V and M) stays within
// 1 MiB unless groups of four register tiles (24 tiles on AVX-512, 16 on
// AVX2) need more (F4 from C + M of 300 to 450, F2 from 700 to 1000).
// Relu and Clip are applied in registers, other activations over each
// tile's pixels right after its store.
//
// Numerics: the error against a double-precision convolution, relative to
// the RMS of the output, on inputs uniform in [0, 1) and weights
// N(0, 1/fan_in), ResNet's 3x3 layers (64 x 56x56 ... 512 x 7x7; measured
// by tests/unit/test_nchwc_winograd.cpp, the same on AVX-512 and AVX2):
// worst element / RMS of the error
//   F2      1.4e-6 ... 4.0e-6  /  1.9e-7 ... 5.2e-7
//   F4      5.6e-6 ... 1.2e-5  /  5.8e-7 ... 1.4e-6
//   direct  4.3e-6 ... 1.0e-5  /  4.1e-7 ... 1.1e-6   (NchwcDirectConv)
// F2 sums C products per point where the direct kernel sums 9 C, so it is
// the more accurate; F4 is about as accurate as the direct kernel.
//
// bf16 products (MathMode::kBf16, the algorithm nchwc_winograd_f2_bf16):
// F(2x2)'s transforms in float32, but V and U rounded to bfloat16 (nearest
// even) and the point-wise GEMMs run with vdpbf16ps (winograd_bf16_isa.h),
// float32 sums into M. Needs AVX512_BF16 and the 16-channel blocks. Half
// the GEMMs' instructions and half U's bytes; on AMD's cores
// (bf16_dot_outpaces_fma) half their cycles too. The rounding of V and U
// dominates the error, and the transforms spread it: on the data below,
// error / output RMS worst 1.3e-2 ... 1.5e-2, RMS 3.0e-3 ... 3.1e-3 (the
// direct bf16 kernel, Bf16Conv: 9.4e-3 ... 9.9e-3 / 2.1e-3 ... 2.3e-3);
// F(4x4) in bf16 would be 4.7e-2 ... 6.4e-2 / 8.3e-3 ... 8.7e-3, past what
// bf16 math's accuracy policy allows, so bf16 products take tile 2 only.
//
// Layouts: as NchwcDirectConv. x blocked [N][ceil(C/B)][H][W][B] (padding
// lanes finite); y blocked with y_channels channels, written from block
// y_channel_offset / B; r blocked like the convolution's own output (M
// channels). Padding lanes of y get act(0 + r's lane). y must not overlap
// x; it may be r itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/nchwc_conv.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {

// Why NchwcWinogradConv cannot run the spec with this tile (2 or 4) and
// these products (bf16: bf16 products), empty when it can.
std::string nchwc_winograd_declined(const NchwcConvSpec& s, int tile, bool bf16 = false);

class NchwcWinogradConv {
 public:
  // w: [M][C][3][3] (ONNX layout), bias: [M] or null; w == nullptr: plan the workspace only.
  NchwcWinogradConv(const NchwcConvSpec& s, int tile, const float* w, const float* bias, int threads,
                    bool bf16 = false);
  // Scratch for all tasks; the caller allocates it, 64-byte aligned.
  size_t workspace_bytes() const { return static_cast<size_t>(tasks_) * task_floats_ * sizeof(float); }
  // x, r, y for all q.n images; y_channel_offset in channels, a multiple of block.
  void run(const float* x, const float* r, float* y, int64_t y_channel_offset, float* workspace,
           ThreadPool& pool) const;
  // "nchwc_winograd_f4 isa=avx512 nb=4 ur=6 tiles=196 tiles/group=14 chunks=1 tasks=2"
  // ("nchwc_winograd_f2_bf16 isa=avx512_bf16 ..." with bf16 products)
  std::string describe() const;
  bool bf16_products() const { return bf16_; }
  // Of the transformed weights and bias.
  size_t weight_bytes() const { return (u_.size() + bias_.size()) * sizeof(float); }

 private:
  struct Group {
    int64_t ob = 0, nb = 0;  // first output block, blocks
  };
  void unit(const float* x, const float* r, float* y, int64_t chunk, int64_t t0, int64_t t1, bool transform_input,
            float* ws) const;

  NchwcConvSpec s_;
  int m_ = 4;                                  // output tile: m x m
  int64_t cbs_ = 0;                            // input blocks
  int64_t mb_ = 0;                             // output blocks
  int64_t tw_ = 0, tiles_ = 0;                 // tiles per image: per row, all
  std::vector<Group> groups_;                  // output blocks in register tiles of nb blocks
  int ur_ = 1;                                 // tiles per register tile at most (of the widest group)
  int64_t tile_groups_ = 1, group_tiles_ = 1;  // tile groups per image, tiles per group at most
  int64_t chunks_ = 1;                         // output chunks (of near-equal numbers of groups)
  int64_t chunk_blocks_ = 1;                   // output blocks per chunk at most
  int64_t tasks_ = 1;
  size_t v_floats_ = 0, task_floats_ = 0;  // a task's V, and its whole scratch (V, M)
  AlignedFloats u_, bias_;                 // U: [point][group][input block][lane][nb][B] (bf16: winograd_bf16_isa.h's)
  bool empty_ = false;
  bool bf16_ = false;  // bf16 products
};

}  // namespace minirt::cpu
