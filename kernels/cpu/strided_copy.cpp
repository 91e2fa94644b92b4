// The strided-copy engine (strided_copy.h): views walked row by row, rows
// of one contiguous run copied whole, transposes in square tiles.
#include "kernels/cpu/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/transpose_isa.h"
#include "runtime/node_values.h"  // strides_of, shape_numel

#if defined(__x86_64__) || defined(__i386__)
#define MINIRT_SHAPE_X86 1
#else
#define MINIRT_SHAPE_X86 0
#endif

namespace minirt::cpu {

StridedView::StridedView(int64_t base_offset, const Shape& out, const std::vector<int64_t>& in_stride, size_t elem)
    : base(base_offset), es(elem), avx2(sgemm_default_isa() != SgemmIsa::kGeneric) {
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 0) {  // empty output: nothing to walk
      shape = {0};
      stride = {0};
      out_stride = {1};
      return;
    }
    if (out[d] == 1) continue;
    if (!shape.empty() && stride.back() == in_stride[d] * out[d]) {
      shape.back() *= out[d];
      stride.back() = in_stride[d];
    } else {
      shape.push_back(out[d]);
      stride.push_back(in_stride[d]);
    }
  }
  if (shape.empty()) {
    shape = {1};
    stride = {1};
  }
  out_stride = strides_of(shape);
}

// Copies `rows` runs of `bytes` bytes, src_stride bytes apart in src and
// dst_stride apart in dst. Runs of 4 to 32 bytes (a detector's boxes and
// scores, sliced or concatenated in pairs along the last axis) are moved
// by a copy of a size fixed at compile time, picked once for all rows: a
// few moves per row instead of a memcpy call and a loop.
namespace {

template <int64_t B>
void copy_fixed_runs(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_stride, src + r * src_stride, B);
}

}  // namespace

void copy_runs(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t rows, int64_t bytes) {
  switch (bytes) {
    case 4:
      return copy_fixed_runs<4>(dst, dst_stride, src, src_stride, rows);
    case 8:
      return copy_fixed_runs<8>(dst, dst_stride, src, src_stride, rows);
    case 12:
      return copy_fixed_runs<12>(dst, dst_stride, src, src_stride, rows);
    case 16:
      return copy_fixed_runs<16>(dst, dst_stride, src, src_stride, rows);
    case 20:
      return copy_fixed_runs<20>(dst, dst_stride, src, src_stride, rows);
    case 24:
      return copy_fixed_runs<24>(dst, dst_stride, src, src_stride, rows);
    case 28:
      return copy_fixed_runs<28>(dst, dst_stride, src, src_stride, rows);
    case 32:
      return copy_fixed_runs<32>(dst, dst_stride, src, src_stride, rows);
    default:
      for (int64_t r = 0; r < rows; ++r)
        copy_bytes(dst + r * dst_stride, src + r * src_stride, static_cast<size_t>(bytes));
  }
}

namespace {

// Copies n elements of size ES from src (stride `step` elements) to dst.
template <typename T>
void copy_run(const char* src, int64_t step, char* dst, int64_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  if (step == 0) {
    std::fill(d, d + n, *s);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i * step];
  }
}

void strided_run(const char* src, int64_t step, char* dst, int64_t n, size_t es) {
  if (step == 1 && es == 4 && n <= 8) {
    // Short runs (a detector's [N, 4] boxes sliced in pairs): a call to
    // memcpy would cost more than the copy.
    return copy_run<uint32_t>(src, 1, dst, n);
  }
  if (step == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  switch (es) {
    case 1:
      return copy_run<uint8_t>(src, step, dst, n);
    case 2:
      return copy_run<uint16_t>(src, step, dst, n);
    case 4:
      return copy_run<uint32_t>(src, step, dst, n);
    case 8:
      return copy_run<uint64_t>(src, step, dst, n);
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * es, src + i * step * es, es);
  }
}

// A tile of a 2-D transpose: dst[a * ld_dst + b] = src[a + b * ld_src] for
// a < rows, b < cols. Reading and writing stay within a few cache lines.
template <typename T>
void transpose_tile(const char* src, int64_t ld_src, char* dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t b = 0; b < cols; ++b) d[a * ld_dst + b] = s[a + b * ld_src];
}

constexpr int64_t kTile = 32;        // transpose tile edge
constexpr int64_t kMaxCounted = 16;  // axes walked with counters; more are recomputed per row

// The input offset of output row `row` (all axes but the last), and the
// per-axis indices when `idx` is given.
int64_t row_offset(const StridedView& v, int64_t row, int64_t* idx) {
  int64_t r = static_cast<int64_t>(v.shape.size());
  int64_t src = v.base;
  for (int64_t d = r - 2; d >= 0; --d) {
    int64_t i = row % v.shape[d];
    row /= v.shape[d];
    src += i * v.stride[d];
    if (idx) idx[d] = i;
  }
  return src;
}

}  // namespace

void copy_view(const StridedView& v, const char* x, char* y, ThreadPool& pool) {
  int64_t r = static_cast<int64_t>(v.shape.size());
  int64_t inner = v.shape[r - 1];
  int64_t step = v.stride[r - 1];
  int64_t rows = shape_numel(v.shape) / std::max<int64_t>(inner, 1);
  if (inner == 0) return;
  size_t es = v.es;
  // The axis the input walks contiguously, when it is not the output's last:
  // a transpose, done in square tiles.
  int64_t j = -1;
  if (step != 1 && step != 0 && es <= 8 && (es & (es - 1)) == 0)
    for (int64_t d = 0; d < r - 1; ++d)
      if (v.stride[d] == 1 && v.shape[d] >= 8 && inner >= 8) j = d;
  if (j >= 0) {
    const std::vector<int64_t>& out_stride = v.out_stride;
    int64_t len_j = v.shape[j];
    int64_t tiles_j = (len_j + kTile - 1) / kTile;
    int64_t outer = rows / len_j;  // positions of the axes other than j and the last
    auto body = [&](int64_t i0, int64_t i1) {
      for (int64_t it = i0; it < i1; ++it) {
        int64_t tj = it % tiles_j, o = it / tiles_j;
        int64_t src = v.base, dst = 0;
        for (int64_t d = r - 2; d >= 0; --d) {
          if (d == j) continue;
          int64_t i = o % v.shape[d];
          o /= v.shape[d];
          src += i * v.stride[d];
          dst += i * out_stride[d];
        }
        int64_t a0 = tj * kTile, na = std::min(kTile, len_j - a0);
        src += a0;
        dst += a0 * out_stride[j];
        for (int64_t b0 = 0; b0 < inner; b0 += kTile) {
          int64_t nb = std::min(kTile, inner - b0);
          const char* s = x + (src + b0 * step) * static_cast<int64_t>(es);
          char* t = y + (dst + b0) * static_cast<int64_t>(es);
          switch (es) {
            case 1:
              transpose_tile<uint8_t>(s, step, t, out_stride[j], na, nb);
              break;
            case 2:
              transpose_tile<uint16_t>(s, step, t, out_stride[j], na, nb);
              break;
            case 4:
#if MINIRT_SHAPE_X86
              if (v.avx2) {
                transpose_tile32_avx2(s, step, t, out_stride[j], na, nb);
                break;
              }
#endif
              transpose_tile<uint32_t>(s, step, t, out_stride[j], na, nb);
              break;
            default:
              transpose_tile<uint64_t>(s, step, t, out_stride[j], na, nb);
              break;
          }
        }
      }
    };
    pool.parallel_for(outer * tiles_j, body, std::max<int64_t>(1, kMoveGrain / (kTile * inner)));
    return;
  }
  if (r == 2 && step == 1) {
    // Rows of one contiguous run each, evenly spaced in the input.
    const int64_t row_bytes = inner * static_cast<int64_t>(es);
    const int64_t src_stride = v.stride[0] * static_cast<int64_t>(es);
    auto rows_body = [&](int64_t r0, int64_t r1) {
      copy_runs(y + r0 * row_bytes, row_bytes, x + v.base * static_cast<int64_t>(es) + r0 * src_stride, src_stride,
                r1 - r0, row_bytes);
    };
    pool.parallel_for(rows, rows_body, std::max<int64_t>(1, kMoveGrain / inner));
    return;
  }
  auto body = [&](int64_t r0, int64_t r1) {
    // Index of row r0 over the outer axes, then counted up row by row (on
    // the stack: a steady-state run allocates nothing).
    int64_t idx[kMaxCounted];
    bool counted = r <= kMaxCounted;
    int64_t src = row_offset(v, r0, counted ? idx : nullptr);
    for (int64_t row = r0; row < r1; ++row) {
      strided_run(x + src * static_cast<int64_t>(es), step, y + row * inner * static_cast<int64_t>(es), inner, es);
      if (!counted) {
        src = row_offset(v, row + 1, nullptr);
        continue;
      }
      for (int64_t d = r - 2; d >= 0; --d) {
        src += v.stride[d];
        if (++idx[d] < v.shape[d]) break;
        src -= idx[d] * v.stride[d];
        idx[d] = 0;
      }
    }
  };
  pool.parallel_for(rows, body, std::max<int64_t>(1, kMoveGrain / inner));
}

}  // namespace minirt::cpu
