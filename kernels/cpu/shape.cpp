// Data-movement and shape ops on the CPU: Reshape and friends (a copy),
// Concat, Split, Slice, Gather, Shape, Size, Cast, CastLike, Constant,
// ConstantOfShape, Range, Transpose, Pad (and CenterCropPad, as a Pad),
// Expand, Tile, DepthToSpace, SpaceToDepth. They move bytes, so most work on any element size.
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/ops/shape_ops.h"

#include <minirt/half.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_SHAPE_X86 1
#define MINIRT_SHAPE_AVX2 __attribute__((target("avx2,fma")))
#else
#define MINIRT_SHAPE_X86 0
#endif

namespace minirt::cpu {

namespace {

// Copies input 0 to output 0 unchanged (Reshape, Flatten, Squeeze, Unsqueeze).
class CopyKernel final : public Kernel {
 public:
  CopyKernel(const Graph& g, const Node& n, int)
      : bytes_(static_cast<size_t>(shape_numel(in_shape(g, n, 0))) * dtype_size(in_dtype(g, n, 0))) {}
  void run(const KernelArgs& args) override {
    if (bytes_ && args.outputs[0] != args.inputs[0]) std::memcpy(args.outputs[0], args.inputs[0], bytes_);
  }

 private:
  size_t bytes_;
};

// Views a tensor as [outer, axis, inner] in bytes for Concat and Split.
struct AxisView {
  int64_t outer = 1, inner_bytes = 1;
};
AxisView axis_view(const Shape& s, int64_t axis, size_t es) {
  AxisView v;
  for (int64_t i = 0; i < axis; ++i) v.outer *= s[i];
  int64_t inner = 1;
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  v.inner_bytes = inner * static_cast<int64_t>(es);
  return v;
}

// Concat and Split copy `parts` runs per outer index. A large copy (more
// than kParallelBytes) is cut into pieces of about kCopyPiece bytes (each
// run into the same number of pieces) dealt across the pool; a small one
// runs on the calling thread, as waking the pool would cost more.
constexpr int64_t kParallelBytes = 1024 * 1024;
constexpr int64_t kCopyPiece = 128 * 1024;

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
template <int64_t B>
void copy_fixed_runs(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_stride, src + r * src_stride, B);
}
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

struct RunCopy {
  int64_t outer = 1, wide = 0;    // outer rows; bytes of a row of the concatenated side
  std::vector<int64_t> len, off;  // per part: bytes per row, offset in the concatenated row
  int64_t pieces = 1;             // per run, when parallel

  RunCopy(const AxisView& v, int64_t wide_row, std::vector<int64_t> parts)
      : outer(v.outer), wide(wide_row), len(std::move(parts)) {
    int64_t at = 0, longest = 0;
    for (int64_t l : len) {
      off.push_back(at);
      at += l;
      longest = std::max(longest, l);
    }
    pieces = std::max<int64_t>(1, longest / kCopyPiece);
  }

  // Concat (gather = true): part i's row o goes to the wide row o at off[i];
  // Split: the other way. `narrow(i)` is part i's buffer (nullptr: skipped);
  // the side copied from is only read.
  template <typename Narrow>
  void run(char* wide_buf, Narrow narrow, bool gather, ThreadPool& pool) const {
    const int64_t parts = static_cast<int64_t>(len.size());
    auto copy = [&](int64_t o, int64_t i, int64_t b0, int64_t b1) {
      char* p = narrow(i);
      if (!p || b1 <= b0) return;
      char* w = wide_buf + o * wide + off[i] + b0;
      char* n = p + o * len[i] + b0;
      if (gather)
        copy_bytes(w, n, static_cast<size_t>(b1 - b0));
      else
        copy_bytes(n, w, static_cast<size_t>(b1 - b0));
    };
    if (outer * wide < kParallelBytes) {
      // Part by part, all rows of a part in one go.
      for (int64_t i = 0; i < parts; ++i) {
        char* p = narrow(i);
        if (!p || len[i] == 0) continue;
        if (gather)
          copy_runs(wide_buf + off[i], wide, p, len[i], outer, len[i]);
        else
          copy_runs(p, len[i], wide_buf + off[i], wide, outer, len[i]);
      }
      return;
    }
    const int64_t units = outer * parts * pieces;
    auto body = [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        int64_t run = u / pieces, piece = u % pieces, i = run % parts;
        copy(run / parts, i, len[i] * piece / pieces, len[i] * (piece + 1) / pieces);
      }
    };
    pool.parallel_for(units, body, std::max<int64_t>(1, kCopyPiece * units / (outer * wide)));
  }
};

class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const Graph& g, const Node& n, int) : copy_(plan(g, n)) {}
  void run(const KernelArgs& args) override {
    auto in = [&](int64_t i) { return static_cast<char*>(const_cast<void*>(args.inputs[i])); };
    copy_.run(static_cast<char*>(args.outputs[0]), in, true, *args.pool);
  }

 private:
  static RunCopy plan(const Graph& g, const Node& n) {
    int64_t axis = n.attrs_as<AxisAttrs>().axis;
    size_t es = dtype_size(in_dtype(g, n, 0));
    const Shape& y = out_shape(g, n, 0);
    AxisView v = axis_view(y, axis, es);
    std::vector<int64_t> parts;
    for (size_t i = 0; i < n.inputs.size(); ++i) parts.push_back(in_shape(g, n, i)[axis] * v.inner_bytes);
    return RunCopy(v, y[axis] * v.inner_bytes, std::move(parts));
  }
  RunCopy copy_;
};

class SplitKernel final : public Kernel {
 public:
  SplitKernel(const Graph& g, const Node& n, int) : copy_(plan(g, n)) {}
  void run(const KernelArgs& args) override {
    auto out = [&](int64_t i) { return static_cast<char*>(args.outputs[i]); };
    copy_.run(static_cast<char*>(const_cast<void*>(args.inputs[0])), out, false, *args.pool);
  }

 private:
  static RunCopy plan(const Graph& g, const Node& n) {
    const auto& a = n.attrs_as<AxisAttrs>();
    size_t es = dtype_size(in_dtype(g, n, 0));
    const Shape& x = in_shape(g, n, 0);
    AxisView v = axis_view(x, a.axis, es);
    std::vector<int64_t> parts;
    for (int64_t s : a.split) parts.push_back(s * v.inner_bytes);
    return RunCopy(v, x[a.axis] * v.inner_bytes, std::move(parts));
  }
  RunCopy copy_;
};

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

  StridedView(int64_t base_offset, const Shape& out, const std::vector<int64_t>& in_stride, size_t elem)
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
};

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

#if MINIRT_SHAPE_X86
// A tile of 4-byte elements as in transpose_tile, in 8 x 8 blocks of AVX2
// registers (8 source rows loaded, transposed by unpacks, shuffles and lane
// permutes, stored as 8 destination rows); the edges element by element.
// Only called when the CPU has AVX2.
MINIRT_SHAPE_AVX2 void transpose_tile32_avx2(const char* src, int64_t ld_src, char* dst, int64_t ld_dst, int64_t rows,
                                             int64_t cols) {
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (int64_t b = 0; b < cols8; b += 8)
    for (int64_t a = 0; a < rows8; a += 8) {
      const float* p = s + a + b * ld_src;
      __m256 r0 = _mm256_loadu_ps(p), r1 = _mm256_loadu_ps(p + ld_src), r2 = _mm256_loadu_ps(p + 2 * ld_src),
             r3 = _mm256_loadu_ps(p + 3 * ld_src), r4 = _mm256_loadu_ps(p + 4 * ld_src),
             r5 = _mm256_loadu_ps(p + 5 * ld_src), r6 = _mm256_loadu_ps(p + 6 * ld_src),
             r7 = _mm256_loadu_ps(p + 7 * ld_src);
      __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
      __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
      __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
      __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
      __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* q = d + a * ld_dst + b;
      _mm256_storeu_ps(q, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(q + ld_dst, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(q + 2 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(q + 3 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(q + 4 * ld_dst, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(q + 5 * ld_dst, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(q + 6 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(q + 7 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
  // The right edge (columns past cols8) and the bottom edge (rows past rows8).
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t b = a < rows8 ? cols8 : 0; b < cols; ++b) d[a * ld_dst + b] = s[a + b * ld_src];
}
#endif

constexpr int64_t kMoveGrain = 16384;  // elements per parallel chunk, at least
constexpr int64_t kTile = 32;          // transpose tile edge
constexpr int64_t kMaxCounted = 16;    // axes walked with counters; more are recomputed per row

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

// Writes the view of x into y (dense, row-major), in parallel over rows.
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

class SliceKernel final : public Kernel {
 public:
  SliceKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<SliceAttrs>();
    std::vector<int64_t> st = strides_of(in_shape(g, n, 0));
    int64_t base = 0;
    std::vector<int64_t> step(st.size());
    for (size_t d = 0; d < st.size(); ++d) {
      base += a.start[d] * st[d];
      step[d] = a.step[d] * st[d];
    }
    view_ = std::make_unique<StridedView>(base, out_shape(g, n, 0), step, dtype_size(in_dtype(g, n, 0)));
  }
  void run(const KernelArgs& args) override {
    copy_view(*view_, static_cast<const char*>(args.inputs[0]), static_cast<char*>(args.outputs[0]), *args.pool);
  }

 private:
  std::unique_ptr<StridedView> view_;
};

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(const Graph& g, const Node& n, int) {
    const auto& perm = n.attrs_as<TransposeAttrs>().perm;
    std::vector<int64_t> st = strides_of(in_shape(g, n, 0));
    std::vector<int64_t> stride;
    for (int64_t p : perm) stride.push_back(st[p]);
    view_ = std::make_unique<StridedView>(0, out_shape(g, n, 0), stride, dtype_size(in_dtype(g, n, 0)));
  }
  void run(const KernelArgs& args) override {
    copy_view(*view_, static_cast<const char*>(args.inputs[0]), static_cast<char*>(args.outputs[0]), *args.pool);
  }

 private:
  std::unique_ptr<StridedView> view_;
};

class ExpandKernel final : public Kernel {
 public:
  ExpandKernel(const Graph& g, const Node& n, int) {
    const Shape& out = out_shape(g, n, 0);
    Shape x = in_shape(g, n, 0);
    x.insert(x.begin(), out.size() - x.size(), 1);
    std::vector<int64_t> stride = strides_of(x);
    for (size_t d = 0; d < x.size(); ++d)
      if (x[d] == 1) stride[d] = 0;
    view_ = std::make_unique<StridedView>(0, out, stride, dtype_size(in_dtype(g, n, 0)));
  }
  void run(const KernelArgs& args) override {
    copy_view(*view_, static_cast<const char*>(args.inputs[0]), static_cast<char*>(args.outputs[0]), *args.pool);
  }

 private:
  std::unique_ptr<StridedView> view_;
};

// Tile: the output seen as [r0, d0, r1, d1, ...], each repeat axis r_i with
// stride 0 in the input.
class TileKernel final : public Kernel {
 public:
  TileKernel(const Graph& g, const Node& n, int) {
    const Shape& x = in_shape(g, n, 0);
    const auto& rep = n.attrs_as<TileAttrs>().repeats;
    std::vector<int64_t> st = strides_of(x);
    Shape view;
    std::vector<int64_t> stride;
    for (size_t d = 0; d < x.size(); ++d) {
      view.push_back(rep[d]);
      stride.push_back(0);
      view.push_back(x[d]);
      stride.push_back(st[d]);
    }
    view_ = std::make_unique<StridedView>(0, view, stride, dtype_size(in_dtype(g, n, 0)));
  }
  void run(const KernelArgs& args) override {
    copy_view(*view_, static_cast<const char*>(args.inputs[0]), static_cast<char*>(args.outputs[0]), *args.pool);
  }

 private:
  std::unique_ptr<StridedView> view_;
};

// DepthToSpace and SpaceToDepth are a reshape, a transpose and a reshape:
// one strided view of the (N, C, H, W) input laid over the output, seen as
// six axes.
class BlockKernel final : public Kernel {
 public:
  BlockKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<BlockAttrs>();
    const Shape& x = in_shape(g, n, 0);
    int64_t b = a.blocksize;
    int64_t sn = x[1] * x[2] * x[3], sc = x[2] * x[3], sh = x[3];
    Shape view;
    std::vector<int64_t> stride;
    if (n.op == "DepthToSpace") {
      // Output [N, C', H, b1, W, b2], the input channel being
      // (b1 * b + b2) * C' + c (DCR) or c * b * b + b1 * b + b2 (CRD).
      int64_t c2 = x[1] / (b * b);
      view = {x[0], c2, x[2], b, x[3], b};
      if (a.crd)
        stride = {sn, b * b * sc, sh, b * sc, 1, sc};
      else
        stride = {sn, sc, sh, b * c2 * sc, 1, c2 * sc};
    } else {
      // Output [N, b1, b2, C, H', W'], the output channel being
      // (b1 * b + b2) * C + c.
      view = {x[0], b, b, x[1], x[2] / b, x[3] / b};
      stride = {sn, sh, 1, sc, b * sh, b};
    }
    view_ = std::make_unique<StridedView>(0, view, stride, dtype_size(in_dtype(g, n, 0)));
  }
  void run(const KernelArgs& args) override {
    copy_view(*view_, static_cast<const char*>(args.inputs[0]), static_cast<char*>(args.outputs[0]), *args.pool);
  }

 private:
  std::unique_ptr<StridedView> view_;
};

class GatherKernel final : public Kernel {
 public:
  GatherKernel(const Graph& g, const Node& n, int) {
    int64_t axis = n.attrs_as<AxisAttrs>().axis;
    const Shape& x = in_shape(g, n, 0);
    es_ = dtype_size(in_dtype(g, n, 0));
    idx64_ = in_dtype(g, n, 1) == DType::kInt64;
    count_ = shape_numel(in_shape(g, n, 1));
    view_ = axis_view(x, axis, es_);
    len_ = x[axis];
  }
  void run(const KernelArgs& args) override {
    const char* x = static_cast<const char*>(args.inputs[0]);
    char* y = static_cast<char*>(args.outputs[0]);
    for (int64_t o = 0; o < view_.outer; ++o)
      for (int64_t k = 0; k < count_; ++k) {
        int64_t i =
            idx64_ ? static_cast<const int64_t*>(args.inputs[1])[k] : static_cast<const int32_t*>(args.inputs[1])[k];
        if (i < 0) i += len_;
        char* dst = y + (o * count_ + k) * view_.inner_bytes;
        if (i < 0 || i >= len_) {
          // Out-of-range indices from run-time data read as zeros, never out of bounds.
          std::memset(dst, 0, static_cast<size_t>(view_.inner_bytes));
          continue;
        }
        std::memcpy(dst, x + (o * len_ + i) * view_.inner_bytes, static_cast<size_t>(view_.inner_bytes));
      }
  }

 private:
  size_t es_;
  bool idx64_;
  int64_t count_ = 0, len_ = 0;
  AxisView view_;
};

class ShapeKernel final : public Kernel {
 public:
  ShapeKernel(const Graph& g, const Node& n, int) {
    const Shape& x = in_shape(g, n, 0);
    const auto& a = n.attrs_as<ShapeAttrs>();
    int64_t r = static_cast<int64_t>(x.size());
    int64_t s = a.start < 0 ? a.start + r : a.start;
    int64_t e = !a.has_end ? r : (a.end < 0 ? a.end + r : a.end);
    s = std::clamp<int64_t>(s, 0, r);
    e = std::clamp<int64_t>(e, 0, r);
    for (int64_t i = s; i < e; ++i) dims_.push_back(x[i]);
  }
  void run(const KernelArgs& args) override {
    std::copy(dims_.begin(), dims_.end(), static_cast<int64_t*>(args.outputs[0]));
  }

 private:
  std::vector<int64_t> dims_;
};

class SizeKernel final : public Kernel {
 public:
  SizeKernel(const Graph& g, const Node& n, int) : count_(shape_numel(in_shape(g, n, 0))) {}
  void run(const KernelArgs& args) override { *static_cast<int64_t*>(args.outputs[0]) = count_; }

 private:
  int64_t count_;
};

// Range: start + i * delta, with start and delta read at run time.
class RangeKernel final : public Kernel {
 public:
  RangeKernel(const Graph& g, const Node& n, int)
      : dtype_(in_dtype(g, n, 0)), count_(shape_numel(out_shape(g, n, 0))) {}
  void run(const KernelArgs& args) override {
    switch (dtype_) {
      case DType::kInt64:
        return typed<int64_t>(args);
      case DType::kInt32:
        return typed<int32_t>(args);
      default:
        return typed<float>(args);
    }
  }

 private:
  template <typename T>
  void typed(const KernelArgs& args) const {
    T start = *static_cast<const T*>(args.inputs[0]);
    T delta = *static_cast<const T*>(args.inputs[2]);
    T* y = static_cast<T*>(args.outputs[0]);
    for (int64_t i = 0; i < count_; ++i) {
      if constexpr (std::is_floating_point_v<T>)
        y[i] = start + static_cast<T>(i) * delta;
      else
        y[i] = static_cast<T>(static_cast<int64_t>(start) + i * static_cast<int64_t>(delta));
    }
  }
  DType dtype_;
  int64_t count_;
};

// A float that does not fit the integer type converts to the nearest end of
// its range, and NaN to 0: C++ leaves those conversions undefined, and a
// model's data must not be able to cause undefined behaviour.
template <typename To>
To saturate_from_float(float v) {
  if (!(v == v)) return To(0);
  constexpr float lo = static_cast<float>(std::numeric_limits<To>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<To>::max());
  if (v <= lo) return std::numeric_limits<To>::min();
  if (v >= hi) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

template <typename To, typename From>
void convert(const From* x, To* y, int64_t n) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    for (int64_t i = 0; i < n; ++i) y[i] = saturate_from_float<To>(x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<To>(x[i]);
  }
}

template <typename From>
void to_bool(const From* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] != From(0);
}

template <typename To>
void convert_from(DType from, const void* x, To* y, int64_t n) {
  switch (from) {
    case DType::kFloat32:
      return convert(static_cast<const float*>(x), y, n);
    case DType::kInt64:
      return convert(static_cast<const int64_t*>(x), y, n);
    case DType::kInt32:
      return convert(static_cast<const int32_t*>(x), y, n);
    case DType::kInt8:
      return convert(static_cast<const int8_t*>(x), y, n);
    case DType::kUInt8:
      return convert(static_cast<const uint8_t*>(x), y, n);
    case DType::kBool:
      return convert(static_cast<const uint8_t*>(x), y, n);
    default:
      return;
  }
}

// Cast and CastLike. float16 and bfloat16 go through float32: the input is
// widened first (into the workspace when the target is not float32), and a
// half target is narrowed from float32 with round to nearest even. A Cast
// the half lowering made (CastAttrs::round) writes float32 values rounded
// to the half type's precision.
class CastKernel final : public Kernel {
 public:
  CastKernel(const Graph& g, const Node& n, int)
      : from_(in_dtype(g, n, 0)),
        to_(n.attrs_as<CastAttrs>().to),
        round_(n.attrs_as<CastAttrs>().round),
        count_(shape_numel(in_shape(g, n, 0))) {
    // A staging float32 buffer: half input to a non-float32 target, or a
    // non-float32 input to a half target (other than the same half type).
    const bool widen = is_half_dtype(from_) && to_ != DType::kFloat32;
    const bool narrow = is_half_dtype(to_) && from_ != DType::kFloat32 && from_ != to_;
    staged_ = widen || narrow;
  }
  size_t workspace_bytes() const override { return staged_ ? static_cast<size_t>(count_) * sizeof(float) : 0; }
  std::string describe() const override {
    if (round_ != DType::kUndefined)
      return std::string(dtype_name(from_)) + " -> float32 rounded to " + dtype_name(round_) + " precision";
    if (is_half_dtype(from_) || is_half_dtype(to_)) return std::string(dtype_name(from_)) + " -> " + dtype_name(to_);
    return {};
  }
  void run(const KernelArgs& args) override {
    const void* x = args.inputs[0];
    void* y = args.outputs[0];
    const size_t n = static_cast<size_t>(count_);
    DType from = from_;
    if (is_half_dtype(from_)) {
      if (from_ == to_) {
        if (n) std::memcpy(y, x, n * 2);
        return;
      }
      // Widen to float32: into the output when that is the target, else the workspace.
      float* f = to_ == DType::kFloat32 ? static_cast<float*>(y) : static_cast<float*>(args.workspace);
      if (from_ == DType::kFloat16)
        half_to_float(static_cast<const uint16_t*>(x), f, n);
      else
        bfloat16_to_float(static_cast<const uint16_t*>(x), f, n);
      if (to_ == DType::kFloat32) return round(f, n);
      x = f;
      from = DType::kFloat32;
    }
    if (is_half_dtype(to_)) {
      const float* f = static_cast<const float*>(x);
      if (from != DType::kFloat32) {
        float* w = static_cast<float*>(args.workspace);
        convert_from(from, x, w, count_);
        f = w;
      }
      if (to_ == DType::kFloat16)
        float_to_half(f, static_cast<uint16_t*>(y), n);
      else
        float_to_bfloat16(f, static_cast<uint16_t*>(y), n);
      return;
    }
    switch (to_) {
      case DType::kFloat32:
        convert_from(from, x, static_cast<float*>(y), count_);
        return round(static_cast<float*>(y), n);
      case DType::kInt64:
        return convert_from(from, x, static_cast<int64_t*>(y), count_);
      case DType::kInt32:
        return convert_from(from, x, static_cast<int32_t*>(y), count_);
      case DType::kInt8:
        return convert_from(from, x, static_cast<int8_t*>(y), count_);
      case DType::kUInt8:
        return convert_from(from, x, static_cast<uint8_t*>(y), count_);
      case DType::kBool: {
        // Any non-zero value is true.
        uint8_t* b = static_cast<uint8_t*>(y);
        switch (from) {
          case DType::kFloat32:
            return to_bool(static_cast<const float*>(x), b, count_);
          case DType::kInt64:
            return to_bool(static_cast<const int64_t*>(x), b, count_);
          case DType::kInt32:
            return to_bool(static_cast<const int32_t*>(x), b, count_);
          case DType::kInt8:
            return to_bool(static_cast<const int8_t*>(x), b, count_);
          case DType::kUInt8:
          case DType::kBool:
            return to_bool(static_cast<const uint8_t*>(x), b, count_);
          default:
            return;
        }
      }
      default:
        return;
    }
  }

 private:
  void round(float* f, size_t n) const {
    if (round_ == DType::kFloat16)
      round_to_half(f, n);
    else if (round_ == DType::kBFloat16)
      round_to_bfloat16(f, n);
  }
  DType from_, to_, round_;
  int64_t count_;
  bool staged_ = false;
};

// Constant and ConstantOfShape: fill the output from the attribute value.
class FillKernel final : public Kernel {
 public:
  FillKernel(const Graph& g, const Node& n, int) : value_(n.attrs_as<ConstantAttrs>().value) {
    whole_ = n.op == "Constant";
    count_ = shape_numel(out_shape(g, n, 0));
  }
  void run(const KernelArgs& args) override {
    char* y = static_cast<char*>(args.outputs[0]);
    size_t es = dtype_size(value_.dtype());
    if (whole_) {
      if (value_.nbytes()) std::memcpy(y, value_.raw(), value_.nbytes());
      return;
    }
    for (int64_t i = 0; i < count_; ++i) std::memcpy(y + i * es, value_.raw(), es);
  }

 private:
  Tensor value_;
  bool whole_ = false;
  int64_t count_ = 0;
};

// Fills n elements of size es with the element at `value`.
void fill_elems(char* dst, int64_t n, const char* value, size_t es) {
  switch (es) {
    case 1:
      std::memset(dst, value[0], static_cast<size_t>(n));
      return;
    case 2: {
      uint16_t v;
      std::memcpy(&v, value, 2);
      std::fill_n(reinterpret_cast<uint16_t*>(dst), n, v);
      return;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, value, 4);
      std::fill_n(reinterpret_cast<uint32_t*>(dst), n, v);
      return;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, value, 8);
      std::fill_n(reinterpret_cast<uint64_t*>(dst), n, v);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * es, value, es);
  }
}

// Pad: every output axis index maps to an input index (or to the fill
// value), computed once per axis at plan time. Rows of the output are then
// written as fill / one contiguous copy of the input row / fill, with the
// reflected or repeated edge elements picked from the last axis's map.
class PadKernel final : public Kernel {
 public:
  PadKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<PadAttrs>();
    const Shape& in = in_shape(g, n, 0);
    out_ = out_shape(g, n, 0);
    DType dtype = in_dtype(g, n, 0);
    es_ = dtype_size(dtype);
    in_stride_ = strides_of(in);
    int64_t r = static_cast<int64_t>(in.size());
    map_.resize(r);
    for (int64_t d = 0; d < r; ++d) {
      int64_t len = in[d];
      for (int64_t o = 0; o < out_[d]; ++o) {
        int64_t i = o - a.pads[d];
        if (i < 0 || i >= len) {
          if (a.mode == PadMode::kConstant || len == 0) {
            i = -1;
          } else if (a.mode == PadMode::kEdge) {
            i = i < 0 ? 0 : len - 1;
          } else if (a.mode == PadMode::kWrap) {  // the axis repeated periodically
            i = ((i % len) + len) % len;
          } else {  // reflect, without repeating the edge
            int64_t period = 2 * (len - 1);
            if (period == 0) {
              i = 0;
            } else {
              i = ((i % period) + period) % period;
              if (i >= len) i = period - i;
            }
          }
        }
        map_[d].push_back(i);
      }
    }
    // The last axis: the output range that is one contiguous input run.
    if (r > 0) {
      int64_t len = in[r - 1], pb = a.pads[r - 1];
      run_begin_ = std::clamp<int64_t>(pb, 0, out_[r - 1]);
      run_end_ = std::clamp<int64_t>(pb + len, run_begin_, out_[r - 1]);
    }
    // The fill value, in the tensor's own type. From opset 11 it is the
    // constant_value input (same type as the data), read here bit for bit.
    std::memset(fill_, 0, sizeof fill_);
    const Tensor* v = in_const(g, n, 2);
    if (v && v->numel() > 0 && v->dtype() == dtype && es_ <= sizeof fill_) {
      std::memcpy(fill_, v->raw(), es_);
    } else {
      switch (dtype) {
        case DType::kFloat32: {
          float f = a.value;
          std::memcpy(fill_, &f, 4);
          break;
        }
        case DType::kInt64: {
          int64_t i = saturate_from_float<int64_t>(a.value);
          std::memcpy(fill_, &i, 8);
          break;
        }
        case DType::kInt32: {
          int32_t i = saturate_from_float<int32_t>(a.value);
          std::memcpy(fill_, &i, 4);
          break;
        }
        case DType::kInt8: {
          int8_t i = saturate_from_float<int8_t>(a.value);
          std::memcpy(fill_, &i, 1);
          break;
        }
        case DType::kUInt8: {
          uint8_t i = saturate_from_float<uint8_t>(a.value);
          std::memcpy(fill_, &i, 1);
          break;
        }
        case DType::kBool:
          fill_[0] = a.value != 0.0f;
          break;
        default:
          break;
      }
    }
  }

  void run(const KernelArgs& args) override {
    const char* x = static_cast<const char*>(args.inputs[0]);
    char* y = static_cast<char*>(args.outputs[0]);
    int64_t r = static_cast<int64_t>(out_.size());
    int64_t total = shape_numel(out_);
    if (total == 0) return;
    int64_t es = static_cast<int64_t>(es_);
    if (r == 0) {
      std::memcpy(y, x, es_);
      return;
    }
    int64_t inner = out_[r - 1];
    int64_t rows = total / inner;
    const std::vector<int64_t>& last = map_[r - 1];
    auto body = [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        char* dst = y + row * inner * es;
        // The input row this output row reads, or none (constant padding).
        int64_t src = 0;
        bool filled = false;
        int64_t rest = row;
        for (int64_t d = r - 2; d >= 0; --d) {
          int64_t i = map_[d][rest % out_[d]];
          rest /= out_[d];
          if (i < 0) {
            filled = true;
            break;
          }
          src += i * in_stride_[d];
        }
        if (filled) {
          fill_elems(dst, inner, fill_, es_);
          continue;
        }
        const char* xr = x + src * es;
        for (int64_t o = 0; o < run_begin_; ++o) {
          if (last[o] < 0)
            fill_elems(dst + o * es, 1, fill_, es_);
          else
            std::memcpy(dst + o * es, xr + last[o] * es, es_);
        }
        if (run_end_ > run_begin_)
          std::memcpy(dst + run_begin_ * es, xr + last[run_begin_] * es,
                      static_cast<size_t>((run_end_ - run_begin_) * es));
        for (int64_t o = run_end_; o < inner; ++o) {
          if (last[o] < 0)
            fill_elems(dst + o * es, 1, fill_, es_);
          else
            std::memcpy(dst + o * es, xr + last[o] * es, es_);
        }
      }
    };
    args.pool->parallel_for(rows, body, std::max<int64_t>(1, kMoveGrain / inner));
  }

 private:
  Shape out_;
  size_t es_;
  std::vector<int64_t> in_stride_;
  std::vector<std::vector<int64_t>> map_;  // per axis: output index -> input index, -1 for the fill
  int64_t run_begin_ = 0, run_end_ = 0;    // last-axis outputs that copy one contiguous input run
  char fill_[8];
};

template <typename K>
std::unique_ptr<Kernel> make(const Graph& g, const Node& n, int t) {
  return std::make_unique<K>(g, n, t);
}

}  // namespace

void add_shape_kernels(std::vector<KernelEntry>& out) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) out.push_back({op, make<CopyKernel>});
  out.push_back({"Concat", make<ConcatKernel>});
  out.push_back({"Split", make<SplitKernel>});
  out.push_back({"Slice", make<SliceKernel>});
  out.push_back({"Transpose", make<TransposeKernel>});
  out.push_back({"Expand", make<ExpandKernel>});
  out.push_back({"Gather", make<GatherKernel>});
  out.push_back({"Shape", make<ShapeKernel>});
  out.push_back({"Size", make<SizeKernel>});
  out.push_back({"Cast", make<CastKernel>});
  out.push_back({"CastLike", make<CastKernel>});
  out.push_back({"Range", make<RangeKernel>});
  out.push_back({"Tile", make<TileKernel>});
  out.push_back({"DepthToSpace", make<BlockKernel>});
  out.push_back({"SpaceToDepth", make<BlockKernel>});
  out.push_back({"Constant", make<FillKernel>});
  out.push_back({"ConstantOfShape", make<FillKernel>});
  out.push_back({"Pad", make<PadKernel>});
  out.push_back({"CenterCropPad", make<PadKernel>});  // its pads resolved by shape inference
}

}  // namespace minirt::cpu
