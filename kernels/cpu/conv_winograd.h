// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution on the SGEMM engine, for
// any CPU: 3x3 window, stride 1, dilation 1, one group, constant weights;
// any padding and size (partial edge tiles), any batch.
//
//   WinogradConv wc(q, /*tile=*/4, isa, threads, weights);   // plan time
//   size_t ws = wc.workspace_floats() * sizeof(float);
//   wc.run(x, bias, act, y, workspace, pool);                  // run time, allocates nothing
//
// Y = A^T [(G g G^T) . (B^T d B)] A per m x m output tile (d its (m+2)^2
// input patch, g a 3x3 filter): (m+2)^2 GEMMs of (filters x channels) by
// (channels x tiles) replace the direct sum, 2.25x (F2) or 4x (F4) fewer
// multiplications, paid for by the transforms and by rounding (F4's
// matrices hold 1/24 and 8, so it loses more precision than F2).
#pragma once

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/ops/activation.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {

class WinogradConv {
 public:
  // tile: 2 or 4 (the m of F(m x m, 3x3)). weights: [m][c][3][3]; nullptr
  // plans the split and the workspace only (nothing transformed or packed).
  WinogradConv(const Geometry& q, int tile, SgemmIsa isa, int threads, const float* weights);
  size_t workspace_floats() const { return ws_floats_; }
  size_t weight_bytes() const { return packed_u_.size() * sizeof(float); }  // the transformed, packed weights
  void run(const float* x, const float* bias, const Activation& act, float* y, float* ws, ThreadPool& pool) const;

 private:
  template <int M>
  void run_tiles(const float* x, const float* bias, const Activation& act, float* y, float* ws, ThreadPool& pool) const;

  Geometry q_;
  int tile_ = 2, xis_ = 16;  // m, (m + 2)^2 transform points
  SgemmIsa isa_;
  int64_t nr_ = 0;
  // Tiles: th x tw per image, indexed t = ty * wq + tx over phase planes wq =
  // tw + 1 wide, so that a patch element of consecutive tiles is consecutive
  // floats; tile tx = tw of each row is junk (computed, never stored).
  int64_t th_ = 0, tw_ = 0, wq_ = 0, hq_ = 0, tiles_ = 0;
  PhasePlanes pp_;
  // Work: blocks of tb tiles (a multiple of 8) per image, times parts of
  // the filters; a unit is one (image, block, part).
  int64_t tb_ = 0, tbp_ = 0, blocks_ = 1, mparts_ = 1, mpart_ = 0, units_ = 1, tasks_ = 1;
  AlignedFloats packed_u_;  // per (xi, part): U[xi] rows of the part as SGEMM A panels
  int64_t a_stride_ = 0;
  // Workspace: [phase planes of every image, slack][per task: V, M].
  size_t planes_floats_ = 0, task_floats_ = 0, ws_floats_ = 0;
};

}  // namespace minirt::cpu
