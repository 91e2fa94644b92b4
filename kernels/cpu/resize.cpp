// Resize and Upsample on the CPU, modes nearest and linear, any rank.
//
// When the kernel is made, each axis gets a table mapping every output index
// to its source: one input index (nearest) or two neighbours and their
// weights (linear), following the ONNX Resize rules as onnxruntime applies
// them. An axis whose scale is 1 maps each index to itself. run() walks the
// output one row (last axis) at a time: nearest gathers, linear blends the
// 2^k corners of the k interpolated outer axes, each interpolated along the
// row.
#include "kernels/cpu/registry.h"
#include "runtime/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // output elements per parallel chunk, at least

// Output index -> source along one axis. Offsets are premultiplied by the
// axis's input stride.
struct AxisTable {
  bool identity = true;
  std::vector<int64_t> off0, off1;  // nearest uses off0 only
  std::vector<float> w0, w1;        // linear weights of off0 and off1
};

// A coordinate this close to a half is a tie for the round_prefer modes:
// float rounding must not decide an exact tie (a 7 -> 2 resize has the
// source coordinate 7/2, computed as 3.4999998). onnxruntime uses the same
// window.
constexpr float kTieWindow = 1e-6f;

// The nearest input index for source coordinate `c`. Upsample and Resize
// before opset 11 had no nearest_mode: they truncate, and round up when the
// axis shrinks (scale < 1), as onnxruntime and the opset-10 reference do.
int64_t nearest_index(float c, NearestMode mode, bool legacy, bool shrinks) {
  // The caller clamps the index to the axis; keep the float in a range whose
  // conversion is defined first.
  c = c == c ? std::clamp(c, -2.0f, 0x1p40f) : 0.0f;
  if (legacy) return shrinks ? static_cast<int64_t>(std::ceil(c)) : static_cast<int64_t>(c);
  float f = std::floor(c);
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
    case NearestMode::kRoundPreferCeil: {
      float frac = c - f;
      bool up = std::fabs(frac - 0.5f) <= kTieWindow ? mode == NearestMode::kRoundPreferCeil : frac > 0.5f;
      return static_cast<int64_t>(f) + (up ? 1 : 0);
    }
    case NearestMode::kFloor: return static_cast<int64_t>(f);
    case NearestMode::kCeil: return static_cast<int64_t>(std::ceil(c));
  }
  return static_cast<int64_t>(f);
}

AxisTable make_table(const ResizeAttrs& a, bool legacy, float scale, int64_t in, int64_t out, int64_t stride) {
  AxisTable t;
  if (scale == 1.0f && in == out) return t;
  t.identity = false;
  bool linear = a.mode == ResizeMode::kLinear;
  t.off0.resize(static_cast<size_t>(out));
  if (linear) {
    t.off1.resize(static_cast<size_t>(out));
    t.w0.resize(static_cast<size_t>(out));
    t.w1.resize(static_cast<size_t>(out));
  }
  float last = static_cast<float>(in - 1);
  for (int64_t o = 0; o < out; ++o) {
    float c = resize_source_coord(a.coord, static_cast<float>(o), scale, in, out);
    size_t k = static_cast<size_t>(o);
    if (!linear) {
      int64_t i = std::clamp<int64_t>(nearest_index(c, a.nearest, legacy, scale < 1.0f), 0, in - 1);
      t.off0[k] = i * stride;
      continue;
    }
    c = std::clamp(c, 0.0f, last);
    int64_t i0 = std::min(static_cast<int64_t>(c), in - 1);
    int64_t i1 = std::min(i0 + 1, in - 1);
    t.off0[k] = i0 * stride;
    t.off1[k] = i1 * stride;
    if (i0 == i1) {
      t.w0[k] = 1.0f;
      t.w1[k] = 0.0f;
    } else {
      t.w0[k] = static_cast<float>(i1) - c;
      t.w1[k] = c - static_cast<float>(i0);
    }
  }
  return t;
}

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<ResizeAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    linear_ = a.mode == ResizeMode::kLinear;
    bool legacy = n.op == "Upsample" || g.opset < 11;
    out_shape_ = y;
    out_count_ = shape_numel(y);
    if (x.empty() || out_count_ == 0) return;
    std::vector<int64_t> st = strides_of(x);
    for (size_t d = 0; d < x.size(); ++d) axes_.push_back(make_table(a, legacy, a.scales[d], x[d], y[d], st[d]));
    in_strides_ = st;
    row_ = y.back();
    rows_ = out_count_ / row_;
    for (size_t d = 0; d + 1 < x.size(); ++d)
      if (linear_ && !axes_[d].identity) blended_.push_back(d);
    if (blended_.size() > kMaxBlended)
      node_fail(ErrorCode::kUnsupported, g, n,
                "linear resize of more than " + std::to_string(kMaxBlended) +
                    " axes besides the last is not supported");
  }

  std::string describe() const override { return linear_ ? "linear" : "nearest"; }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (out_count_ == 0) return;
    if (axes_.empty()) {  // a scalar
      y[0] = x[0];
      return;
    }
    auto body = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        if (linear_) linear_row(x, y + r * row_, r);
        else nearest_row(x, y + r * row_, r);
      }
    };
    int64_t corners = int64_t{1} << blended_.size();
    args.pool->parallel_for(rows_, body, std::max<int64_t>(1, kGrain / (row_ * corners)));
  }

 private:
  static constexpr size_t kMaxBlended = 16;  // 2^16 corners per output row at most

  // Source offset of output index `i` along axis d, for a nearest or
  // identity axis (the first neighbour for a linear one).
  int64_t source(size_t d, int64_t i) const {
    const AxisTable& t = axes_[d];
    return t.identity ? i * in_strides_[d] : t.off0[static_cast<size_t>(i)];
  }

  void nearest_row(const float* x, float* y, int64_t r) const {
    int64_t base = 0;
    for (size_t d = axes_.size() - 1; d-- > 0;) {
      base += source(d, r % out_shape_[d]);
      r /= out_shape_[d];
    }
    const float* xb = x + base;
    const AxisTable& t = axes_.back();
    if (t.identity) {
      std::memcpy(y, xb, static_cast<size_t>(row_) * sizeof(float));
      return;
    }
    for (int64_t j = 0; j < row_; ++j) y[j] = xb[t.off0[static_cast<size_t>(j)]];
  }

  void linear_row(const float* x, float* y, int64_t r) const {
    // Identity outer axes add a fixed offset; blended ones are looked up per corner.
    int64_t base = 0;
    int64_t at[kMaxBlended];  // output index along each blended axis
    size_t slot = blended_.size();
    for (size_t d = axes_.size() - 1; d-- > 0;) {
      int64_t i = r % out_shape_[d];
      r /= out_shape_[d];
      if (axes_[d].identity) base += i * in_strides_[d];
      else at[--slot] = i;
    }
    const AxisTable& t = axes_.back();
    std::fill(y, y + row_, 0.0f);
    int64_t corners = int64_t{1} << blended_.size();
    for (int64_t mask = 0; mask < corners; ++mask) {
      int64_t off = base;
      float w = 1.0f;
      for (size_t b = 0; b < blended_.size(); ++b) {
        const AxisTable& a = axes_[blended_[b]];
        size_t i = static_cast<size_t>(at[b]);
        bool second = (mask >> b) & 1;
        off += second ? a.off1[i] : a.off0[i];
        w *= second ? a.w1[i] : a.w0[i];
      }
      if (w == 0.0f) continue;
      const float* xb = x + off;
      if (t.identity) {
        for (int64_t j = 0; j < row_; ++j) y[j] += w * xb[j];
      } else {
        for (int64_t j = 0; j < row_; ++j) {
          size_t k = static_cast<size_t>(j);
          y[j] += w * (t.w0[k] * xb[t.off0[k]] + t.w1[k] * xb[t.off1[k]]);
        }
      }
    }
  }

  bool linear_ = false;
  Shape out_shape_;
  int64_t out_count_ = 0, rows_ = 0, row_ = 1;
  std::vector<AxisTable> axes_;
  std::vector<int64_t> in_strides_;
  std::vector<size_t> blended_;  // outer axes interpolated linearly
};

std::unique_ptr<Kernel> make_resize(const Graph& g, const Node& n, int t) {
  return std::make_unique<ResizeKernel>(g, n, t);
}

}  // namespace

void add_resize_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Resize", make_resize});
  out.push_back({"Upsample", make_resize});
}

}  // namespace minirt::cpu
