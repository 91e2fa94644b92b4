// Cast and CastLike, Constant and ConstantOfShape, Pad and CenterCropPad on
// the CPU: element conversions, fills, and rows written as fill / input /
// fill. They work on any element size (Cast between the types in convert_from).
#include "kernels/cpu/registry.h"
#include "kernels/cpu/strided_copy.h"
#include "runtime/ops/shape_ops.h"

#include <minirt/half.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

namespace minirt::cpu {

namespace {

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

void add_cast_pad_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Cast", make<CastKernel>});
  out.push_back({"CastLike", make<CastKernel>});
  out.push_back({"Constant", make<FillKernel>});
  out.push_back({"ConstantOfShape", make<FillKernel>});
  out.push_back({"Pad", make<PadKernel>});
  out.push_back({"CenterCropPad", make<PadKernel>});  // its pads resolved by shape inference
}

}  // namespace minirt::cpu
