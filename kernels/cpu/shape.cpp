// Data-movement and shape ops on the CPU: Reshape and friends (a copy),
// Concat, Split, Slice, Gather, Shape, Cast, Constant, ConstantOfShape,
// Transpose, Pad, Expand. They move bytes, so most work on any element size.
#include "kernels/cpu/registry.h"
#include "runtime/ops/shape_ops.h"

#include <algorithm>
#include <cstring>

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

class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const Graph& g, const Node& n, int) {
    int64_t axis = n.attrs_as<AxisAttrs>().axis;
    size_t es = dtype_size(in_dtype(g, n, 0));
    const Shape& y = out_shape(g, n, 0);
    view_ = axis_view(y, axis, es);
    out_row_ = y[axis] * view_.inner_bytes;
    for (size_t i = 0; i < n.inputs.size(); ++i) parts_.push_back(in_shape(g, n, i)[axis] * view_.inner_bytes);
  }
  void run(const KernelArgs& args) override {
    char* y = static_cast<char*>(args.outputs[0]);
    int64_t off = 0;
    for (size_t i = 0; i < parts_.size(); ++i) {
      const char* x = static_cast<const char*>(args.inputs[i]);
      int64_t len = parts_[i];
      if (len)
        for (int64_t o = 0; o < view_.outer; ++o) std::memcpy(y + o * out_row_ + off, x + o * len, static_cast<size_t>(len));
      off += len;
    }
  }

 private:
  AxisView view_;
  int64_t out_row_ = 0;
  std::vector<int64_t> parts_;
};

class SplitKernel final : public Kernel {
 public:
  SplitKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<AxisAttrs>();
    size_t es = dtype_size(in_dtype(g, n, 0));
    const Shape& x = in_shape(g, n, 0);
    view_ = axis_view(x, a.axis, es);
    in_row_ = x[a.axis] * view_.inner_bytes;
    for (int64_t s : a.split) parts_.push_back(s * view_.inner_bytes);
  }
  void run(const KernelArgs& args) override {
    const char* x = static_cast<const char*>(args.inputs[0]);
    int64_t off = 0;
    for (size_t i = 0; i < parts_.size(); ++i) {
      char* y = static_cast<char*>(args.outputs[i]);
      int64_t len = parts_[i];
      if (y && len)
        for (int64_t o = 0; o < view_.outer; ++o) std::memcpy(y + o * len, x + o * in_row_ + off, static_cast<size_t>(len));
      off += len;
    }
  }

 private:
  AxisView view_;
  int64_t in_row_ = 0;
  std::vector<int64_t> parts_;
};

// Walks every output element, mapping it to an input element offset given
// per-axis input strides (in elements) and per-axis starts; shared by
// Slice, Transpose and Expand.
template <typename Map>
void gather_strided(const char* x, char* y, const Shape& out, size_t es, Map in_offset_of_axis) {
  int64_t r = static_cast<int64_t>(out.size());
  int64_t total = shape_numel(out);
  if (total == 0) return;
  if (r == 0) {
    std::memcpy(y, x + in_offset_of_axis(-1, 0) * es, es);
    return;
  }
  int64_t inner = out[r - 1];
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < total; o += inner) {
    int64_t base = in_offset_of_axis(-1, 0);
    for (int64_t d = 0; d < r - 1; ++d) base += in_offset_of_axis(d, idx[d]);
    int64_t step = in_offset_of_axis(r - 1, 1) - in_offset_of_axis(r - 1, 0);
    int64_t first = in_offset_of_axis(r - 1, 0);
    char* dst = y + o * es;
    if (step == 1) {
      std::memcpy(dst, x + (base + first) * es, static_cast<size_t>(inner) * es);
    } else if (es == 4) {
      const float* src = reinterpret_cast<const float*>(x) + base + first;
      float* d4 = reinterpret_cast<float*>(dst);
      for (int64_t i = 0; i < inner; ++i) d4[i] = src[i * step];
    } else {
      for (int64_t i = 0; i < inner; ++i) std::memcpy(dst + i * es, x + (base + first + i * step) * es, es);
    }
    for (int64_t d = r - 2; d >= 0; --d) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
}

class SliceKernel final : public Kernel {
 public:
  SliceKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<SliceAttrs>()) {
    es_ = dtype_size(in_dtype(g, n, 0));
    out_ = out_shape(g, n, 0);
    stride_ = strides_of(in_shape(g, n, 0));
  }
  void run(const KernelArgs& args) override {
    gather_strided(static_cast<const char*>(args.inputs[0]), static_cast<char*>(args.outputs[0]), out_, es_,
                   [&](int64_t d, int64_t i) -> int64_t {
                     if (d < 0) return 0;
                     return (a_.start[d] + i * a_.step[d]) * stride_[d];
                   });
  }

 private:
  SliceAttrs a_;
  size_t es_;
  Shape out_;
  std::vector<int64_t> stride_;
};

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(const Graph& g, const Node& n, int) {
    const auto& perm = n.attrs_as<TransposeAttrs>().perm;
    es_ = dtype_size(in_dtype(g, n, 0));
    out_ = out_shape(g, n, 0);
    std::vector<int64_t> st = strides_of(in_shape(g, n, 0));
    for (int64_t p : perm) stride_.push_back(st[p]);
  }
  void run(const KernelArgs& args) override {
    const char* x = static_cast<const char*>(args.inputs[0]);
    char* y = static_cast<char*>(args.outputs[0]);
    int64_t r = static_cast<int64_t>(out_.size());
    // Parallel over the outermost output axis.
    if (r == 0 || out_[0] == 0) {
      if (r == 0) std::memcpy(y, x, es_);
      return;
    }
    int64_t slab = shape_numel(out_) / out_[0];
    Shape sub(out_.begin() + 1, out_.end());
    auto body = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        gather_strided(x + i * stride_[0] * es_, y + i * slab * es_, sub, es_,
                       [&](int64_t d, int64_t k) -> int64_t { return d < 0 ? 0 : k * stride_[d + 1]; });
    };
    args.pool->parallel_for(out_[0], body);
  }

 private:
  size_t es_;
  Shape out_;
  std::vector<int64_t> stride_;
};

class ExpandKernel final : public Kernel {
 public:
  ExpandKernel(const Graph& g, const Node& n, int) {
    es_ = dtype_size(in_dtype(g, n, 0));
    out_ = out_shape(g, n, 0);
    Shape x = in_shape(g, n, 0);
    x.insert(x.begin(), out_.size() - x.size(), 1);
    stride_ = strides_of(x);
    for (size_t d = 0; d < x.size(); ++d)
      if (x[d] == 1) stride_[d] = 0;
  }
  void run(const KernelArgs& args) override {
    gather_strided(static_cast<const char*>(args.inputs[0]), static_cast<char*>(args.outputs[0]), out_, es_,
                   [&](int64_t d, int64_t i) -> int64_t { return d < 0 ? 0 : i * stride_[d]; });
  }

 private:
  size_t es_;
  Shape out_;
  std::vector<int64_t> stride_;
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
        int64_t i = idx64_ ? static_cast<const int64_t*>(args.inputs[1])[k]
                           : static_cast<const int32_t*>(args.inputs[1])[k];
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

template <typename To, typename From>
void convert(const From* x, To* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<To>(x[i]);
}

template <typename To>
void convert_from(DType from, const void* x, To* y, int64_t n) {
  switch (from) {
    case DType::kFloat32: return convert(static_cast<const float*>(x), y, n);
    case DType::kInt64: return convert(static_cast<const int64_t*>(x), y, n);
    case DType::kInt32: return convert(static_cast<const int32_t*>(x), y, n);
    case DType::kInt8: return convert(static_cast<const int8_t*>(x), y, n);
    case DType::kUInt8: return convert(static_cast<const uint8_t*>(x), y, n);
    case DType::kBool: return convert(static_cast<const uint8_t*>(x), y, n);
    default: return;
  }
}

class CastKernel final : public Kernel {
 public:
  CastKernel(const Graph& g, const Node& n, int)
      : from_(in_dtype(g, n, 0)), to_(n.attrs_as<CastAttrs>().to), count_(shape_numel(in_shape(g, n, 0))) {}
  void run(const KernelArgs& args) override {
    const void* x = args.inputs[0];
    void* y = args.outputs[0];
    switch (to_) {
      case DType::kFloat32: return convert_from(from_, x, static_cast<float*>(y), count_);
      case DType::kInt64: return convert_from(from_, x, static_cast<int64_t*>(y), count_);
      case DType::kInt32: return convert_from(from_, x, static_cast<int32_t*>(y), count_);
      case DType::kInt8: return convert_from(from_, x, static_cast<int8_t*>(y), count_);
      case DType::kUInt8: return convert_from(from_, x, static_cast<uint8_t*>(y), count_);
      case DType::kBool: {
        // Any non-zero value is true.
        std::vector<float> tmp;
        uint8_t* b = static_cast<uint8_t*>(y);
        if (from_ == DType::kFloat32) {
          const float* f = static_cast<const float*>(x);
          for (int64_t i = 0; i < count_; ++i) b[i] = f[i] != 0.0f;
        } else {
          std::vector<int64_t> v(static_cast<size_t>(count_));
          convert_from(from_, x, v.data(), count_);
          for (int64_t i = 0; i < count_; ++i) b[i] = v[i] != 0;
        }
        return;
      }
      default: return;
    }
  }

 private:
  DType from_, to_;
  int64_t count_;
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

class PadKernel final : public Kernel {
 public:
  PadKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<PadAttrs>()) {
    in_ = in_shape(g, n, 0);
    out_ = out_shape(g, n, 0);
    dtype_ = in_dtype(g, n, 0);
    es_ = dtype_size(dtype_);
    in_stride_ = strides_of(in_);
  }
  void run(const KernelArgs& args) override {
    const char* x = static_cast<const char*>(args.inputs[0]);
    char* y = static_cast<char*>(args.outputs[0]);
    int64_t r = static_cast<int64_t>(out_.size());
    int64_t total = shape_numel(out_);
    if (total == 0) return;
    char fill[8] = {0};
    switch (dtype_) {
      case DType::kFloat32: { float v = a_.value; std::memcpy(fill, &v, 4); break; }
      case DType::kInt64: { int64_t v = static_cast<int64_t>(a_.value); std::memcpy(fill, &v, 8); break; }
      case DType::kInt32: { int32_t v = static_cast<int32_t>(a_.value); std::memcpy(fill, &v, 4); break; }
      default: { uint8_t v = static_cast<uint8_t>(a_.value); fill[0] = static_cast<char>(v); break; }
    }
    std::vector<int64_t> idx(r, 0);
    for (int64_t o = 0; o < total; ++o) {
      int64_t off = 0;
      bool outside = false;
      for (int64_t d = 0; d < r; ++d) {
        int64_t i = idx[d] - a_.pads[d];
        int64_t len = in_[d];
        if (i < 0 || i >= len) {
          if (a_.mode == PadMode::kConstant) { outside = true; break; }
          if (a_.mode == PadMode::kEdge) i = i < 0 ? 0 : len - 1;
          else {  // reflect, without repeating the edge
            int64_t period = 2 * (len - 1);
            if (period == 0) i = 0;
            else {
              i = ((i % period) + period) % period;
              if (i >= len) i = period - i;
            }
          }
        }
        off += i * in_stride_[d];
      }
      std::memcpy(y + o * es_, outside ? fill : x + off * es_, es_);
      for (int64_t d = r - 1; d >= 0; --d) {
        if (++idx[d] < out_[d]) break;
        idx[d] = 0;
      }
    }
  }

 private:
  PadAttrs a_;
  Shape in_, out_;
  DType dtype_;
  size_t es_;
  std::vector<int64_t> in_stride_;
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
  out.push_back({"Cast", make<CastKernel>});
  out.push_back({"Constant", make<FillKernel>});
  out.push_back({"ConstantOfShape", make<FillKernel>});
  out.push_back({"Pad", make<PadKernel>});
}

}  // namespace minirt::cpu
