// The ops that are the module's own kernels (kernels.h): the activations
// cuDNN lacks and unary math, broadcast arithmetic, Concat and Split (2-D
// device copies), Slice/Transpose/Expand (strided views), Pad, Resize and
// Gather, Cast, and the reshape-like ops and Identity (a device copy, or
// nothing when the planner gave the output the input's memory).
#include <minirt/error.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cuda/common.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/registry.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/resize.h"
#include "runtime/ops/shape_ops.h"

namespace minirt::cuda {

namespace {

size_t value_bytes(const Graph& g, int v) {
  return static_cast<size_t>(shape_numel(g.values[v].shape)) * dtype_size(g.values[v].dtype);
}

// A strided view with axes of length 1 dropped and neighbours that walk the
// input contiguously merged.
ViewArgs make_view(int64_t base, const Shape& out, const std::vector<int64_t>& stride) {
  ViewArgs v;
  v.base = base;
  v.count = shape_numel(out);
  std::vector<int64_t> shape, st;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!shape.empty() && st.back() == stride[d] * out[d]) {
      shape.back() *= out[d];
      st.back() = stride[d];
    } else {
      shape.push_back(out[d]);
      st.push_back(stride[d]);
    }
  }
  if (shape.empty()) {
    shape.push_back(1);
    st.push_back(0);
  }
  v.rank = static_cast<int>(std::min<size_t>(shape.size(), kMaxRank));
  for (int d = 0; d < v.rank; ++d) {
    v.shape[d] = shape[static_cast<size_t>(d)];
    v.stride[d] = st[static_cast<size_t>(d)];
  }
  return v;
}

class CopyKernel final : public CudaKernel {
 public:
  CopyKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)), bytes_(value_bytes(g, n.inputs[0])) {}
  std::string describe() const override { return "device copy (none when the memory is shared)"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    if (!bytes_ || args.outputs[0] == args.inputs[0]) return;
    check_cuda(cudaMemcpyAsync(args.outputs[0], args.inputs[0], bytes_, cudaMemcpyDeviceToDevice, s.stream),
               where() + "cudaMemcpyAsync");
  }

 private:
  size_t bytes_;
};

class UnaryKernel final : public CudaKernel {
 public:
  UnaryKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)), a_(n.attrs_as<UnaryAttrs>()) {
    count_ = shape_numel(in_shape(g, n, 0));
    if (a_.kind != UnaryKind::kActivation && !unary_on_device(a_.kind))
      node_fail(ErrorCode::kInternal, g, n, "no cuda kernel for this elementwise function");
  }
  std::string describe() const override {
    return a_.kind == UnaryKind::kActivation ? "minirt activation kernel" : "minirt elementwise kernel";
  }
  void launch(const KernelArgs& args, StreamState& s) override {
    if (a_.kind == UnaryKind::kActivation)
      launch_activation(in<float>(args, 0), out<float>(args, 0), count_,
                        ActParams{a_.act.kind, a_.act.alpha, a_.act.beta, a_.act.gamma}, s.stream);
    else
      launch_unary(a_.kind, in<float>(args, 0), out<float>(args, 0), count_, s.stream);
    check_launch("an elementwise kernel");
  }

 private:
  UnaryAttrs a_;
  int64_t count_ = 0;
};

class BroadcastKernel final : public CudaKernel {
 public:
  BroadcastKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    if (n.op == "Max" || n.op == "Min" || n.op == "Sum" || n.op == "Mean") {
      switch (n.attrs_as<VariadicAttrs>().kind) {
        case VariadicKind::kMax:
          op_ = BinaryKind::kMax;
          break;
        case VariadicKind::kMin:
          op_ = BinaryKind::kMin;
          break;
        case VariadicKind::kSum:
          op_ = BinaryKind::kAdd;
          break;
        case VariadicKind::kMean:
          op_ = BinaryKind::kAdd;
          mean_ = true;
          break;
        case VariadicKind::kCount:  // no kind
          break;
      }
    } else {
      op_ = n.attrs_as<BinaryAttrs>().kind;
      if (!binary_on_device(op_))
        node_fail(ErrorCode::kInternal, g, n, std::string("no cuda kernel for ") + binary_name(op_));
    }
    const Shape& y = out_shape(g, n, 0);
    args_.rank = static_cast<int>(y.size());
    args_.inputs = static_cast<int>(n.inputs.size());
    args_.count = shape_numel(y);
    for (int d = 0; d < args_.rank; ++d) args_.shape[d] = y[static_cast<size_t>(d)];
    for (int k = 0; k < args_.inputs; ++k) {
      const Shape& s = in_shape(g, n, static_cast<size_t>(k));
      std::vector<int64_t> st = strides_of(s);
      int lead = args_.rank - static_cast<int>(s.size());
      for (int d = 0; d < args_.rank; ++d) {
        int j = d - lead;
        args_.stride[k][d] = (j < 0 || s[static_cast<size_t>(j)] == 1) ? 0 : st[static_cast<size_t>(j)];
      }
    }
  }
  std::string describe() const override { return "minirt broadcast kernel"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    const float* x[kMaxInputs] = {};
    for (int k = 0; k < args_.inputs; ++k) x[k] = static_cast<const float*>(args.inputs[k]);
    launch_broadcast(op_, mean_, x, out<float>(args, 0), args_, s.stream);
    check_launch("a broadcast kernel");
  }

 private:
  BinaryKind op_ = BinaryKind::kAdd;
  bool mean_ = false;
  BroadcastArgs args_;
};

// Concat and Split: each part is a 2-D block, `outer` rows of its own width,
// at a column offset in the joined tensor's rows.
class ConcatSplitKernel final : public CudaKernel {
 public:
  ConcatSplitKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)), concat_(n.op == "Concat") {
    const auto& a = n.attrs_as<AxisAttrs>();
    int64_t axis = a.axis;
    const Shape& whole = concat_ ? out_shape(g, n, 0) : in_shape(g, n, 0);
    size_t es = dtype_size(concat_ ? g.values[n.outputs[0]].dtype : in_dtype(g, n, 0));
    outer_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= whole[static_cast<size_t>(i)];
    int64_t inner = static_cast<int64_t>(es);
    for (size_t i = static_cast<size_t>(axis) + 1; i < whole.size(); ++i) inner *= whole[i];
    row_ = whole[static_cast<size_t>(axis)] * inner;
    const std::vector<int>& parts = concat_ ? n.inputs : n.outputs;
    for (size_t i = 0; i < parts.size(); ++i) {
      int64_t len = 0;
      if (concat_)
        len = in_shape(g, n, i)[static_cast<size_t>(axis)];
      else
        len = a.split[i];
      widths_.push_back(len * inner);
    }
  }
  std::string describe() const override { return "device 2-D copies"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    int64_t off = 0;
    for (size_t i = 0; i < widths_.size(); ++i) {
      int64_t w = widths_[i];
      char* whole =
          concat_ ? static_cast<char*>(args.outputs[0]) : static_cast<char*>(const_cast<void*>(args.inputs[0]));
      char* part =
          concat_ ? static_cast<char*>(const_cast<void*>(args.inputs[i])) : static_cast<char*>(args.outputs[i]);
      if (w > 0 && part) {
        size_t width = static_cast<size_t>(w), rows = static_cast<size_t>(outer_);
        cudaError_t e = concat_ ? cudaMemcpy2DAsync(whole + off, static_cast<size_t>(row_), part, width, width, rows,
                                                    cudaMemcpyDeviceToDevice, s.stream)
                                : cudaMemcpy2DAsync(part, width, whole + off, static_cast<size_t>(row_), width, rows,
                                                    cudaMemcpyDeviceToDevice, s.stream);
        check_cuda(e, where() + "cudaMemcpy2DAsync");
      }
      off += w;
    }
  }

 private:
  bool concat_;
  int64_t outer_ = 1, row_ = 0;
  std::vector<int64_t> widths_;
};

// Slice, Transpose and Expand as one strided view of the input.
class ViewKernel final : public CudaKernel {
 public:
  ViewKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    es_ = dtype_size(in_dtype(g, n, 0));
    std::vector<int64_t> st = strides_of(x);
    if (n.op == "Slice") {
      const auto& a = n.attrs_as<SliceAttrs>();
      int64_t base = 0;
      std::vector<int64_t> step(st.size());
      for (size_t d = 0; d < st.size(); ++d) {
        base += a.start[d] * st[d];
        step[d] = a.step[d] * st[d];
      }
      view_ = make_view(base, y, step);
    } else if (n.op == "Transpose") {
      const auto& perm = n.attrs_as<TransposeAttrs>().perm;
      std::vector<int64_t> stride;
      for (int64_t p : perm) stride.push_back(st[static_cast<size_t>(p)]);
      view_ = make_view(0, y, stride);
    } else {  // Expand
      Shape xs = x;
      xs.insert(xs.begin(), y.size() - xs.size(), 1);
      std::vector<int64_t> stride = strides_of(xs);
      for (size_t d = 0; d < xs.size(); ++d)
        if (xs[d] == 1) stride[d] = 0;
      view_ = make_view(0, y, stride);
    }
  }
  std::string describe() const override { return "minirt strided copy"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    launch_view_copy(args.inputs[0], args.outputs[0], view_, es_, s.stream);
    check_launch("a strided copy");
  }

 private:
  ViewArgs view_;
  size_t es_ = 4;
};

class PadKernel final : public CudaKernel {
 public:
  PadKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    const auto& a = n.attrs_as<PadAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    DType dtype = in_dtype(g, n, 0);
    es_ = dtype_size(dtype);
    args_.rank = static_cast<int>(x.size());
    switch (a.mode) {  // no default: a new mode must be mapped or declined in support.cpp
      case PadMode::kConstant:
        args_.mode = PadModeGpu::kConstant;
        break;
      case PadMode::kEdge:
        args_.mode = PadModeGpu::kEdge;
        break;
      case PadMode::kReflect:
        args_.mode = PadModeGpu::kReflect;
        break;
      case PadMode::kWrap:
        node_fail(ErrorCode::kInternal, g, n, "pad mode 'wrap' has no kernel on cuda (support.cpp declines it)");
    }
    std::vector<int64_t> st = strides_of(x);
    for (int d = 0; d < args_.rank; ++d) {
      args_.in_shape[d] = x[static_cast<size_t>(d)];
      args_.out_shape[d] = y[static_cast<size_t>(d)];
      args_.in_stride[d] = st[static_cast<size_t>(d)];
      args_.begin[d] = a.pads[static_cast<size_t>(d)];
    }
    args_.count = shape_numel(y);
    // The fill in the data's own type: the constant_value input bit for bit
    // (opset 11 on), else the attribute converted as the CPU kernel does.
    uint64_t fill = 0;
    const Tensor* v = in_const(g, n, 2);
    if (v && v->numel() > 0 && v->dtype() == dtype && es_ <= sizeof fill) {
      std::memcpy(&fill, v->raw(), es_);
    } else {
      switch (dtype) {
        case DType::kFloat32: {
          float f = a.value;
          std::memcpy(&fill, &f, 4);
          break;
        }
        case DType::kInt64: {
          int64_t i = static_cast<int64_t>(a.value);
          std::memcpy(&fill, &i, 8);
          break;
        }
        case DType::kInt32: {
          int32_t i = static_cast<int32_t>(a.value);
          std::memcpy(&fill, &i, 4);
          break;
        }
        case DType::kInt8: {
          int8_t i = static_cast<int8_t>(a.value);
          std::memcpy(&fill, &i, 1);
          break;
        }
        case DType::kUInt8: {
          uint8_t i = static_cast<uint8_t>(a.value);
          std::memcpy(&fill, &i, 1);
          break;
        }
        case DType::kBool:
          fill = a.value != 0.0f ? 1 : 0;
          break;
        default:
          break;
      }
    }
    args_.fill = fill;
  }
  std::string describe() const override { return "minirt pad kernel"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    launch_pad(args.inputs[0], args.outputs[0], args_, es_, s.stream);
    check_launch("the pad kernel");
  }

 private:
  PadArgs args_;
  size_t es_ = 4;
};

class GatherKernel final : public CudaKernel {
 public:
  GatherKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    int64_t axis = n.attrs_as<AxisAttrs>().axis;
    const Shape& x = in_shape(g, n, 0);
    es_ = dtype_size(in_dtype(g, n, 0));
    for (int64_t i = 0; i < axis; ++i) args_.outer *= x[static_cast<size_t>(i)];
    args_.len = x[static_cast<size_t>(axis)];
    for (size_t i = static_cast<size_t>(axis) + 1; i < x.size(); ++i) args_.inner *= x[i];
    args_.count = shape_numel(in_shape(g, n, 1));
    args_.index64 = in_dtype(g, n, 1) == DType::kInt64;
  }
  std::string describe() const override { return "minirt gather kernel"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    launch_gather(args.inputs[0], args.inputs[1], args.outputs[0], args_, es_, s.stream);
    check_launch("the gather kernel");
  }

 private:
  GatherArgs args_;
  size_t es_ = 4;
};

// ---- Resize: the per-axis tables, built as the CPU kernel builds them ----

// The nearest index: resize_nearest_index (runtime/ops/resize.h), shared
// with the CPU kernel, NaN and range clamp included.

class ResizeKernel final : public CudaKernel {
 public:
  ResizeKernel(const DeviceContext& ctx, const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    const auto& a = n.attrs_as<ResizeAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    bool legacy = n.op == "Upsample" || g.opset < 11;
    bool linear = a.mode == ResizeMode::kLinear;
    std::vector<int64_t> st = strides_of(x);
    args_.rank = static_cast<int>(x.size());
    args_.linear = linear;
    args_.count = shape_numel(y);
    // Host copies of the tables, one block per non-identity axis: off0, off1 (int64), w0, w1 (float).
    std::vector<char> host;
    struct At {
      size_t off0 = 0, off1 = 0, w0 = 0, w1 = 0;
      bool used = false;
    };
    std::vector<At> at(x.size());
    auto put = [&host](const void* p, size_t bytes) {
      size_t pos = (host.size() + 15) / 16 * 16;
      host.resize(pos + bytes);
      std::memcpy(host.data() + pos, p, bytes);
      return pos;
    };
    for (size_t d = 0; d < x.size(); ++d) {
      args_.out_shape[d] = y[d];
      args_.in_stride[d] = st[d];
      float scale = a.scales[d];
      int64_t in = x[d], out = y[d];
      if (scale == 1.0f && in == out) continue;
      std::vector<int64_t> o0(static_cast<size_t>(out)), o1(static_cast<size_t>(out));
      std::vector<float> w0(static_cast<size_t>(out)), w1(static_cast<size_t>(out));
      float last = static_cast<float>(in - 1);
      for (int64_t o = 0; o < out; ++o) {
        float c = resize_source_coord(a.coord, static_cast<float>(o), scale, in, out);
        size_t k = static_cast<size_t>(o);
        if (!linear) {
          o0[k] = std::clamp<int64_t>(resize_nearest_index(c, a.nearest, legacy, scale < 1.0f), 0, in - 1) * st[d];
          continue;
        }
        c = std::clamp(c, 0.0f, last);
        int64_t i0 = std::min(static_cast<int64_t>(c), in - 1);
        int64_t i1 = std::min(i0 + 1, in - 1);
        o0[k] = i0 * st[d];
        o1[k] = i1 * st[d];
        if (i0 == i1) {
          w0[k] = 1.0f;
          w1[k] = 0.0f;
        } else {
          w0[k] = static_cast<float>(i1) - c;
          w1[k] = c - static_cast<float>(i0);
        }
      }
      at[d].used = true;
      at[d].off0 = put(o0.data(), o0.size() * sizeof(int64_t));
      if (linear) {
        at[d].off1 = put(o1.data(), o1.size() * sizeof(int64_t));
        at[d].w0 = put(w0.data(), w0.size() * sizeof(float));
        at[d].w1 = put(w1.data(), w1.size() * sizeof(float));
      }
    }
    if (host.empty()) return;
    tables_ = DeviceBuffer(ctx.device, host.size(), where() + "the resize tables");
    tables_.upload(host.data(), host.size(), where() + "the resize tables");
    char* base = static_cast<char*>(tables_.get());
    for (size_t d = 0; d < x.size(); ++d) {
      if (!at[d].used) continue;
      args_.off0[d] = reinterpret_cast<const int64_t*>(base + at[d].off0);
      if (linear) {
        args_.off1[d] = reinterpret_cast<const int64_t*>(base + at[d].off1);
        args_.w0[d] = reinterpret_cast<const float*>(base + at[d].w0);
        args_.w1[d] = reinterpret_cast<const float*>(base + at[d].w1);
      }
    }
  }
  std::string describe() const override {
    return args_.linear ? "minirt resize kernel, linear" : "minirt resize kernel, nearest";
  }
  void launch(const KernelArgs& args, StreamState& s) override {
    launch_resize(in<float>(args, 0), out<float>(args, 0), args_, s.stream);
    check_launch("the resize kernel");
  }

 private:
  ResizeArgs args_;
  DeviceBuffer tables_;
};

class CastKernel final : public CudaKernel {
 public:
  CastKernel(const Graph& g, const Node& n)
      : CudaKernel(node_context(g, n)),
        from_(in_dtype(g, n, 0)),
        to_(n.attrs_as<CastAttrs>().to),
        count_(shape_numel(in_shape(g, n, 0))) {}
  std::string describe() const override {
    return std::string("minirt cast kernel, ") + dtype_name(from_) + " -> " + dtype_name(to_);
  }
  void launch(const KernelArgs& args, StreamState& s) override {
    if (!launch_cast(args.inputs[0], from_, args.outputs[0], to_, count_, s.stream))
      throw Error(ErrorCode::kInternal, where() + "no cuda cast from " + dtype_name(from_) + " to " + dtype_name(to_));
    check_launch("the cast kernel");
  }

 private:
  DType from_, to_;
  int64_t count_;
};

constexpr auto kSimpleKernels = with_op_table_rows<ActGpu::kModule, true, KernelEntry>(
    make<UnaryKernel>, {
                           // the copies (the activations and unary math: the op table's rows)
                           {"Identity", make<CopyKernel>},
                           {"Dropout", make<CopyKernel>},
                           // broadcast arithmetic
                           {"Add", make<BroadcastKernel>},
                           {"Sub", make<BroadcastKernel>},
                           {"Mul", make<BroadcastKernel>},
                           {"Div", make<BroadcastKernel>},
                           {"Pow", make<BroadcastKernel>},
                           {"PRelu", make<BroadcastKernel>},
                           {"Max", make<BroadcastKernel>},
                           {"Min", make<BroadcastKernel>},
                           {"Sum", make<BroadcastKernel>},
                           {"Mean", make<BroadcastKernel>},
                           // data movement and conversion
                           {"Reshape", make<CopyKernel>},
                           {"Flatten", make<CopyKernel>},
                           {"Squeeze", make<CopyKernel>},
                           {"Unsqueeze", make<CopyKernel>},
                           {"Concat", make<ConcatSplitKernel>},
                           {"Split", make<ConcatSplitKernel>},
                           {"Transpose", make<ViewKernel>},
                           {"Slice", make<ViewKernel>},
                           {"Expand", make<ViewKernel>},
                           {"Pad", make<PadKernel>},
                           {"Gather", make<GatherKernel>},
                           {"Resize", make<ResizeKernel>},
                           {"Upsample", make<ResizeKernel>},
                           {"Cast", make<CastKernel>},
                       });
static_assert(same_ops(kSimpleKernels, kSimpleSupport),
              "simple_ops.cpp's kernel table and support.h's kSimpleSupport must name the same ops");

}  // namespace

std::span<const KernelEntry> simple_kernels() { return kSimpleKernels; }

std::unique_ptr<Kernel> make_unary_kernel(const DeviceContext& ctx, const Graph& g, const Node& n) {
  return make<UnaryKernel>(ctx, g, n);
}

}  // namespace minirt::cuda
