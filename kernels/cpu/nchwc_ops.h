// Pooling, Resize and Concat on the channel-blocked layout (nchwc.h), and
// the engines they share with the plain-layout kernels.
//
//   std::string why;
//   if (nchwc_data_supports(g, node, b, &why)) {
//     std::unique_ptr<Kernel> k = make_nchwc_data_kernel(g, node, threads, b);  // plan time
//     k->run(args);  // every 4-D input and output blocked [N][C/b][H][W][b]
//   }
//
// A pixel of a blocked tensor is b consecutive floats (one SIMD register), a
// row of W pixels is W * b consecutive floats, so the windowed ops work on
// whole vectors: a pooling window is a vertical max or sum of pixels, a
// resize blends pixels with broadcast weights. The plain kernels (pool.cpp,
// resize.cpp) run the same engines with pixels of one float; only the
// factories below know about blocks.
//
// Padding lanes (channels past C in the last block) are computed like real
// lanes from the input's (finite) padding lanes, or written as zeros where a
// kernel moves channels between blocks (Concat at offsets that are not
// multiples of b), so every output's padding lanes are finite.
#pragma once

#include "kernels/cpu/pool_isa.h"  // PoolWindow
#include "kernels/cpu/sgemm.h"
#include "runtime/backend.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/resize.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace minirt::cpu {

// Whether the node can run with its 4-D activation inputs and outputs in the
// blocked layout of block b (8 or 16); why not otherwise. Covers MaxPool and
// AveragePool (2-D windows), GlobalAveragePool, GlobalMaxPool, Resize and
// Upsample that scale only H and W, and Concat on the channel axis.
bool nchwc_data_supports(const Graph& g, const Node& n, int b, std::string* why);

// The kernel: the Kernel interface of kernels/cpu/registry.h's factories
// (logical shapes read from g; `threads` = pool size), but every 4-D
// activation input and output is blocked. Fails (node_fail) where
// nchwc_data_supports says no.
std::unique_ptr<Kernel> make_nchwc_data_kernel(const Graph& g, const Node& n, int threads, int b);

// The same ops between bf16 convolutions (MathMode::kBf16): MaxPool (2-D, no
// Indices) and Concat on channels, their inputs and output bf16 values
// ([N][C/32][H][W][32] bfloat16, nchwc_bf16_values). Max and copies are
// exact on bf16 numbers. The kernel fails (node_fail) where supports says no.
bool nchwc_bf16_data_supports(const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_nchwc_bf16_data_kernel(const Graph& g, const Node& n, int threads);

// MaxPool (2-D, no Indices) and Concat on channels between int8
// convolutions, their inputs and output int8 values ([N][C/64][H][W][64]
// uint8 codes of one grid, nchwc_int8_values): the max of codes and copies
// are exact. Only where the int8 convolution runs (AVX-512).
bool nchwc_u8_maxpool_supports(const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_nchwc_u8_data_kernel(const Graph& g, const Node& n, int threads);

// ---------------------------------------------------------------- shared engines
//
// Planes of pixels, each pixel `lanes` floats: lanes = 1 is the plain layout
// (a plane is one channel of one image), lanes = b the blocked one (a plane
// is one block of b channels of one image). The ISA is the one kernels are
// made with (sgemm_default_isa) when the engine is made.

// PoolWindow: a 2-D pooling window, all attributes resolved (pool_isa.h).

// The window of a MaxPool or AveragePool node: attrs resolved by shape
// inference, x and y its [N, C, W] or [N, C, H, W] input and output shapes.
PoolWindow pool_window(const PoolAttrs& a, const Shape& x, const Shape& y);

// MaxPool and AveragePool by separable passes: each band of output rows is
// reduced over the window's rows (vertically, whole rows at a time, padding
// columns added as the lowest float for max or 0 for average) and then over
// the window's columns, so a k x k window costs about 2k taps rather than
// k^2. Long max windows on pixels of one float (the SPP block's 9 and 13)
// instead copy the rows into a padded tile (NaN and padding become the
// lowest float) and double spans in place: the max over 2m taps is the max
// of two overlapping m-spans, about log2(k) + 1 passes per axis. Max is exact (the result is the largest non-NaN value
// in the window, or the lowest float when there is none, as in the per-element definition); an average divides the
// separable sum by the count of the window's positions inside the input (or inside the pads with count_include_pad), as
// onnxruntime does.
class PoolEngine {
 public:
  PoolEngine(const PoolWindow& q, int64_t planes, int64_t lanes, int threads);
  size_t workspace_bytes() const { return static_cast<size_t>(tasks_) * slice_ * sizeof(float); }
  // x: planes x h x w pixels; y: planes x oh x ow pixels.
  void run(const float* x, float* y, float* workspace, ThreadPool& pool) const;

 private:
  void band(const float* xp, float* yp, int64_t g, int64_t o0, int64_t o1, float* scratch) const;

  PoolWindow q_;
  int64_t planes_, lanes_;
  SgemmIsa isa_;
  int64_t wp_ = 0;                 // padded tile width in pixels: (ow - 1) * sw + (kw - 1) * dw + 1
  int64_t band_ = 1;               // output rows per band
  int64_t bands_ = 1;              // bands per plane
  int64_t group_ = 1;              // whole planes per unit (when bands_ == 1)
  int64_t double_from_ = 8;        // max windows of this many taps along an axis double their spans
  int64_t units_ = 0, tasks_ = 1;  // units of work; tasks, one workspace slice each
  size_t slice_ = 0;               // floats of scratch per task: the stacked tiles of a unit
  std::vector<float> divisors_;    // AveragePool: per output pixel, the count it divides by (inf for none)
};

// GlobalMaxPool and GlobalAveragePool: each plane of `npix` pixels reduced
// to one pixel. Max ignores NaN (-inf when a plane has no number), averages
// are summed in double.
class GlobalPoolEngine {
 public:
  GlobalPoolEngine(bool is_max, int64_t planes, int64_t npix, int64_t lanes);
  void run(const float* x, float* y, ThreadPool& pool) const;

 private:
  bool is_max_;
  int64_t planes_, npix_, lanes_;
  SgemmIsa isa_;
};

// One resized axis: each output index's source index (nearest: i0 only;
// linear: i0 and i1 with weights w0 and w1), by the rules of
// runtime/ops/resize.h as onnxruntime applies them. `legacy`: Upsample and
// Resize before opset 11 (truncating nearest that rounds up on shrinking
// axes). An axis of scale 1 and equal length maps each index to itself.
struct ResizeAxis {
  bool identity = true;
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};
ResizeAxis make_resize_axis(const ResizeAttrs& a, bool legacy, float scale, int64_t in, int64_t out);

// Resize of the last two axes (H, W) of planes of pixels, nearest or
// linear; the other axes are identities. Rows are made once per distinct
// source row: nearest copies the row before when two output rows share a
// source, and a 2x nearest upsample duplicates pixels with vector shuffles;
// linear blends each source row horizontally once (kept while output rows
// still read it) and then blends two such rows vertically, whole rows at a
// time.
class Resize2dEngine {
 public:
  Resize2dEngine(const ResizeAxis& ah, const ResizeAxis& aw, bool linear, int64_t planes, int64_t h, int64_t w,
                 int64_t oh, int64_t ow, int64_t lanes, int threads);
  size_t workspace_bytes() const { return static_cast<size_t>(tasks_) * slice_ * sizeof(float); }
  void run(const float* x, float* y, float* workspace, ThreadPool& pool) const;

 private:
  void band(const float* xp, float* yp, int64_t o0, int64_t o1, float* scratch) const;

  bool linear_;
  bool w_identity_ = true;
  int64_t planes_, h_, w_, oh_, ow_, lanes_;
  SgemmIsa isa_;
  std::vector<int64_t> hi0_, hi1_, wi0_, wi1_;  // source rows and columns
  std::vector<float> hw0_, hw1_, ww0_, ww1_;    // linear weights
  int64_t dup_ = 0;  // nearest along W: 1 identity, 2 each pixel twice (i0[o] = o / 2), 0 any other map
  int64_t band_ = 1, bands_ = 1, tasks_ = 1;
  size_t slice_ = 0;
};

}  // namespace minirt::cpu
