// What the pooling engines (pool.cpp, nchwc_ops.cpp) and their
// instruction-set files (pool_avx512.cpp, pool_avx2.cpp) share: the pooling
// window, the table of the engines' primitives and the direct MaxPool's
// arguments, plain structs and declarations only (see "ISA files" in
// ARCHITECTURE.md). The scalar pieces both sides use are pool_scalar.h.
#pragma once

#include <cstdint>

namespace minirt::cpu {

// A 2-D pooling window, all attributes resolved (1-D pooling is h = kh = 1).
struct PoolWindow {
  int64_t h = 1, w = 1, oh = 1, ow = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t ph = 0, pw = 0, peh = 0, pew = 0;  // pads: begin (top, left), end (bottom, right)
  bool is_max = true;
  bool count_include_pad = false;  // AveragePool
};

// Strided 2-D runs: `rows` rows of `npix` pixels of `lanes` floats. Row r of
// an operand starts at its pointer + r * its ld (in floats); pixel p of a
// source row is at + p * sa (sa == lanes: the row is one contiguous run),
// pixel p of a destination row at + p * lanes. Calls with one row may work
// in place (dst == a, b = a + shift with shift >= 0): each vector is loaded
// before the store that could overlap it. Inputs of max2 hold no NaN.
struct PixelOps {
  using Pair = void (*)(float* dst, int64_t ldd, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows,
                        int64_t npix, int64_t lanes, int64_t sa);
  Pair max2;
  // Padded tile rows: `left` pixels of `fill`, the `mid` pixels of the
  // source row (floored at the lowest float when `floor`: NaN becomes the
  // lowest float too), `right` pixels of `fill`.
  void (*pad_rows)(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t rows, int64_t left, int64_t mid,
                   int64_t right, int64_t lanes, float fill, bool floor);
  // A window over input rows: output row r (r < rows) is `left` pixels of
  // `fill`, then `mid` pixels each reducing the taps t < kh of input row
  // first + r * sh + t * dh (row stride ldx; taps outside [0, h) skipped),
  // then `right` pixels of `fill`. Max starts from the lowest float and
  // ignores NaN; sum starts from 0.
  void (*vert)(float* dst, int64_t ldd, const float* x, int64_t ldx, int64_t h, int64_t first, int64_t sh, int64_t kh,
               int64_t dh, int64_t rows, int64_t left, int64_t mid, int64_t right, int64_t lanes, float fill,
               bool is_max);
  // A window along rows: pixel p of output row r reduces v[r * ldv + p * sa +
  // t * step + l] over t < k (NaN-free for max), divided by q[r * ldq + p]
  // when q is given.
  void (*hwin)(float* dst, int64_t ldd, const float* v, int64_t ldv, int64_t rows, int64_t npix, int64_t lanes,
               int64_t sa, int64_t k, int64_t step, bool is_max, const float* q, int64_t ldq);
  // out[l] over the npix pixels of a: the largest number (NaN ignored, -inf
  // when none), or the mean (summed in double).
  void (*reduce_max)(float* out, const float* a, int64_t npix, int64_t lanes);
  void (*reduce_mean)(float* out, const float* a, int64_t npix, int64_t lanes);
};

// The primitives for AVX-512 (16-float vectors; 8-float pixels in ymm) and
// for AVX2 (8-float vectors), called only where the CPU has the set.
const PixelOps& pool_pixel_ops_avx512();
const PixelOps& pool_pixel_ops_avx2();

// MaxPool on the blocked layout, directly (nchwc_ops.cpp): each output pixel
// the maximum of its window's taps, one vector of L lanes each, read straight
// from the input rows, the window unrolled for the interior columns and the
// taps inside the input looped over at the edges. One call: output rows
// [r0, r1) of one plane; interior columns [col_lo, col_hi) see every tap.
// Max starts from the lowest float and takes max(tap, acc), which is acc
// when the tap is NaN: the largest non-NaN value, as the separable engine
// gives.
struct MaxRows {
  const PoolWindow* q;
  const float* x;  // the plane's input
  float* y;        // the plane's output
  int64_t r0, r1, col_lo, col_hi;
};
using MaxRowsFn = void (*)(const MaxRows&);
// The 2x2 and 3x3 windows' kernels (any stride, dilation, padding).
struct DirectMaxPool {
  MaxRowsFn k2, k3;
};
// Pixels of 16 lanes (AVX-512) and of 8 lanes (AVX2; also the 8-lane layout under AVX-512).
const DirectMaxPool& pool_direct_max_avx512();
const DirectMaxPool& pool_direct_max_avx2();

}  // namespace minirt::cpu
