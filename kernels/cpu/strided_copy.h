// The strided-copy engine the data-movement kernels share: a strided view
// of an input laid over a dense output (Slice, Transpose, Expand, Tile,
// DepthToSpace and SpaceToDepth in shape.cpp) and the fixed-size row copies
// of Concat and Split. Transposes of 4-byte elements run in AVX2 registers
// where the CPU has them (transpose_avx2.cpp).
//
//   StridedView v(base, out_shape, in_strides, elem_size);   // plan time
//   copy_view(v, x, y, pool);                                // run time
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include <minirt/tensor.h>  // Shape
#include "runtime/thread_pool.h"

namespace minirt::cpu {

constexpr int64_t kMoveGrain = 16384;  // elements per parallel chunk, at least

// A strided view of the input laid over the output: output element at index
// (i0, ..., ik) reads input element base + sum(i_d * stride[d]). Slice,
// Transpose and Expand are all such views (Expand with stride 0 where it
// broadcasts). Axes of length 1 are dropped and neighbours that walk the
// input contiguously are merged, so the inner loop is as long as it can be.
struct StridedView {
  int64_t base = 0;
  Shape shape;
  std::vector<int64_t> stride;      // in the input, per output axis
  std::vector<int64_t> out_stride;  // in the output
  size_t es = 4;
  bool avx2 = false;  // 4-byte transposes in AVX2 registers (the ISA kernels are made for has it)

  StridedView(int64_t base_offset, const Shape& out, const std::vector<int64_t>& in_stride, size_t elem);
};

// Writes the view of x into y (dense, row-major), in parallel over rows.
void copy_view(const StridedView& v, const char* x, char* y, ThreadPool& pool);

// memcpy for the short runs of a Concat or Split along an inner axis (a
// detector's [N, 2] and [N, 4] pieces): a call costs more than the copy.
inline void copy_bytes(char* dst, const char* src, size_t n) {
  if (n <= 32 && n % 4 == 0) {
    for (size_t i = 0; i < n; i += 4) std::memcpy(dst + i, src + i, 4);
    return;
  }
  std::memcpy(dst, src, n);
}

// Copies `rows` runs of `bytes` bytes, src_stride bytes apart in src and
// dst_stride apart in dst. Runs of 4 to 32 bytes (a detector's boxes and
// scores, sliced or concatenated in pairs along the last axis) are moved
// by a copy of a size fixed at compile time, picked once for all rows: a
// few moves per row instead of a memcpy call and a loop.
void copy_runs(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t rows, int64_t bytes);

}  // namespace minirt::cpu
