// Data-movement and shape ops on the CPU: Reshape and friends (a copy),
// Concat, Split, Slice, Gather, Shape, Size, Range, Transpose, Expand, Tile,
// DepthToSpace, SpaceToDepth, on the strided-copy engine (strided_copy.h).
// Cast, the fills and Pad are cast_pad.cpp. They move bytes, so most work on
// any element size.
#include "kernels/cpu/registry.h"
#include "kernels/cpu/strided_copy.h"
#include "runtime/ops/shape_ops.h"

#include <minirt/half.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

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
  out.push_back({"Range", make<RangeKernel>});
  out.push_back({"Tile", make<TileKernel>});
  out.push_back({"DepthToSpace", make<BlockKernel>});
  out.push_back({"SpaceToDepth", make<BlockKernel>});
}

}  // namespace minirt::cpu
