// Normalization and reduction ops on the CPU: BatchNormalization (inference),
// InstanceNormalization, GroupNormalization, LayerNormalization, Softmax and LogSoftmax, the
// Reduce ops (Mean, Sum, Max, Min, L1, L2, LogSum, LogSumExp, Prod,
// SumSquare) and LRN.
// Every kernel reads its shapes once, when it is made, as an
// outer x length x inner decomposition of the input; run() only loops.
// Sums are accumulated in double so long rows keep float accuracy.
// Softmax, LogSoftmax, LRN's power and LogSumExp's exponentials run in the
// vectorized math of vmath.h (exp to 1 ULP, log to 1 ULP).
#include "kernels/cpu/registry.h"
#include "kernels/cpu/vmath.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/linalg.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk, at least

// How many work items of `per_item` elements make one parallel chunk.
int64_t grain_for(int64_t per_item) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(per_item, 1)); }

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// ---- BatchNormalization ----

// y = scale * (x - mean) / sqrt(var + eps) + B, per channel (axis 1),
// folded into y = x * s + b for each (image, channel) plane.
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(const Graph& g, const Node& n, int) : eps_(n.attrs_as<BatchNormAttrs>().epsilon) {
    const Shape& x = in_shape(g, n, 0);
    channels_ = x[1];
    planes_ = x[0] * x[1];
    plane_ = product(x, 2, x.size());
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* scale = static_cast<const float*>(args.inputs[1]);
    const float* bias = static_cast<const float*>(args.inputs[2]);
    const float* mean = static_cast<const float*>(args.inputs[3]);
    const float* var = static_cast<const float*>(args.inputs[4]);
    float* y = static_cast<float*>(args.outputs[0]);
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t c = p % channels_;
        float s = scale[c] / std::sqrt(var[c] + eps_);
        float b = bias[c] - mean[c] * s;
        const float* xp = x + p * plane_;
        float* yp = y + p * plane_;
        for (int64_t i = 0; i < plane_; ++i) yp[i] = xp[i] * s + b;
      }
    };
    args.pool->parallel_for(planes_, body, grain_for(plane_));
  }

 private:
  float eps_;
  int64_t channels_ = 1, planes_ = 0, plane_ = 1;
};

// ---- GroupNormalization ----

// Each (image, group): the mean and variance over the group's channels and
// positions (in double), then per channel (x - mean) * scale * inv + bias.
class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<GroupNormAttrs>()) {
    const Shape& x = in_shape(g, n, 0);
    channels_ = x[1];
    images_ = x[0];
    plane_ = product(x, 2, x.size());
    per_group_ = channels_ / a_.num_groups;
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* scale = static_cast<const float*>(args.inputs[1]);
    const float* bias = static_cast<const float*>(args.inputs[2]);
    float* y = static_cast<float*>(args.outputs[0]);
    const int64_t span = per_group_ * plane_;  // one group of one image, contiguous
    if (span == 0) return;
    auto body = [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t grp = u % a_.num_groups;
        const float* xp = x + u * span;
        float* yp = y + u * span;
        double sum = 0;
        for (int64_t i = 0; i < span; ++i) sum += xp[i];
        const double mean = sum / static_cast<double>(span);
        double sq = 0;
        for (int64_t i = 0; i < span; ++i) {
          const double d = xp[i] - mean;
          sq += d * d;
        }
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(span) + a_.epsilon);
        const float m = static_cast<float>(mean);
        for (int64_t k = 0; k < per_group_; ++k) {
          const int64_t c = grp * per_group_ + k;
          const float s = static_cast<float>(scale[c] * inv), b = bias[c];
          const float* xc = xp + k * plane_;
          float* yc = yp + k * plane_;
          for (int64_t i = 0; i < plane_; ++i) yc[i] = (xc[i] - m) * s + b;
        }
      }
    };
    args.pool->parallel_for(images_ * a_.num_groups, body, grain_for(2 * span));
  }

 private:
  GroupNormAttrs a_;
  int64_t channels_ = 1, images_ = 0, plane_ = 1, per_group_ = 1;
};

// ---- InstanceNormalization ----

// Each (image, channel) plane is normalized by its own mean and (biased)
// variance: y = scale[c] * (x - mean) / sqrt(var + eps) + B[c]. Two passes
// over the plane, in double: the mean, then the squared deviations.
class InstanceNormKernel final : public Kernel {
 public:
  InstanceNormKernel(const Graph& g, const Node& n, int) : eps_(n.attrs_as<BatchNormAttrs>().epsilon) {
    const Shape& x = in_shape(g, n, 0);
    channels_ = x[1];
    planes_ = x[0] * x[1];
    plane_ = product(x, 2, x.size());
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* scale = static_cast<const float*>(args.inputs[1]);
    const float* bias = static_cast<const float*>(args.inputs[2]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (plane_ == 0) return;
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t c = p % channels_;
        const float* xp = x + p * plane_;
        float* yp = y + p * plane_;
        double sum = 0;
        for (int64_t i = 0; i < plane_; ++i) sum += xp[i];
        double mean = sum / static_cast<double>(plane_);
        double sq = 0;
        for (int64_t i = 0; i < plane_; ++i) {
          double d = xp[i] - mean;
          sq += d * d;
        }
        double inv = 1.0 / std::sqrt(sq / static_cast<double>(plane_) + eps_);
        // (x - mean) first: folding the mean into the shift would cancel
        // badly when 1/sqrt(var + eps) is large.
        float m = static_cast<float>(mean), s = static_cast<float>(scale[c] * inv), b = bias[c];
        for (int64_t i = 0; i < plane_; ++i) yp[i] = (xp[i] - m) * s + b;
      }
    };
    args.pool->parallel_for(planes_, body, grain_for(2 * plane_));
  }

 private:
  float eps_;
  int64_t channels_ = 1, planes_ = 0, plane_ = 1;
};

// ---- LayerNormalization ----

// The input as [rows, len]: each row (the axes [axis, rank)) is normalized by
// its mean and biased variance, then scaled and shifted elementwise:
//   y = (x - mean) / sqrt(var + eps) * Scale + B
// Scale and B broadcast over the row; when they are not a full row, an index
// map made at plan time says which of their elements each position reads.
// Mean and InvStdDev (optional outputs) hold one value per row.
class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<LayerNormAttrs>();
    eps_ = a.epsilon;
    const Shape& x = in_shape(g, n, 0);
    size_t axis = static_cast<size_t>(a.axis);
    rows_ = product(x, 0, axis);
    len_ = product(x, axis, x.size());
    Shape normalized(x.begin() + a.axis, x.end());
    scale_map_ = param_map(in_shape(g, n, 1), normalized);
    has_bias_ = n.input(2) >= 0;
    if (has_bias_) bias_map_ = param_map(in_shape(g, n, 2), normalized);
    has_mean_ = n.outputs.size() > 1 && n.outputs[1] >= 0;
    has_inv_ = n.outputs.size() > 2 && n.outputs[2] >= 0;
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* scale = static_cast<const float*>(args.inputs[1]);
    const float* bias = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    float* mean_out = has_mean_ ? static_cast<float*>(args.outputs[1]) : nullptr;
    float* inv_out = has_inv_ ? static_cast<float*>(args.outputs[2]) : nullptr;
    auto body = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * len_;
        float* yr = y + r * len_;
        double sum = 0;
        for (int64_t i = 0; i < len_; ++i) sum += xr[i];
        double mean = len_ ? sum / static_cast<double>(len_) : 0.0;
        double sq = 0;
        for (int64_t i = 0; i < len_; ++i) {
          double d = xr[i] - mean;
          sq += d * d;
        }
        double inv = 1.0 / std::sqrt((len_ ? sq / static_cast<double>(len_) : 0.0) + eps_);
        if (mean_out) mean_out[r] = static_cast<float>(mean);
        if (inv_out) inv_out[r] = static_cast<float>(inv);
        float m = static_cast<float>(mean), s = static_cast<float>(inv);
        for (int64_t i = 0; i < len_; ++i) {
          float v = (xr[i] - m) * s * scale[scale_map_.empty() ? i : scale_map_[i]];
          if (bias) v += bias[bias_map_.empty() ? i : bias_map_[i]];
          yr[i] = v;
        }
      }
    };
    args.pool->parallel_for(rows_, body, grain_for(3 * len_));
  }

 private:
  // For a parameter of shape p broadcast over `normalized` (right-aligned,
  // leading axes of p of length 1): the parameter offset of each position,
  // or an empty map when p is the whole normalized shape.
  static std::vector<int64_t> param_map(Shape p, const Shape& normalized) {
    while (p.size() > normalized.size()) p.erase(p.begin());  // leading 1s (checked by infer)
    p.insert(p.begin(), normalized.size() - p.size(), 1);
    if (p == normalized) return {};
    std::vector<int64_t> st = strides_of(p);
    for (size_t d = 0; d < p.size(); ++d)
      if (p[d] == 1) st[d] = 0;
    int64_t len = shape_numel(normalized);
    std::vector<int64_t> map(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) {
      int64_t rest = i, off = 0;
      for (size_t d = normalized.size(); d-- > 0;) {
        off += (rest % normalized[d]) * st[d];
        rest /= normalized[d];
      }
      map[static_cast<size_t>(i)] = off;
    }
    return map;
  }

  float eps_ = 1e-5f;
  int64_t rows_ = 0, len_ = 1;
  bool has_bias_ = false, has_mean_ = false, has_inv_ = false;
  std::vector<int64_t> scale_map_, bias_map_;
};

// ---- Softmax, LogSoftmax ----

// x / ||x||_p along one axis (p = 1 or 2), the input seen as [outer, len,
// inner]; a zero norm gives zeros, as onnxruntime's kernel does. Each
// (outer, inner-block) pair accumulates the norms of kBlock columns at once,
// so every step along the axis reads contiguous values.
class LpNormKernel final : public Kernel {
 public:
  LpNormKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<LpNormAttrs>();
    const Shape& x = in_shape(g, n, 0);
    size_t axis = static_cast<size_t>(a.axis);
    p_ = a.p;
    outer_ = product(x, 0, axis);
    len_ = x[axis];
    inner_ = product(x, axis + 1, x.size());
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    constexpr int64_t kCols = 64;
    const int64_t blocks = (inner_ + kCols - 1) / kCols;
    auto body = [&](int64_t t0, int64_t t1) {
      float norm[kCols];
      for (int64_t t = t0; t < t1; ++t) {
        int64_t o = t / blocks, j0 = (t % blocks) * kCols, nj = std::min(kCols, inner_ - j0);
        const float* xo = x + o * len_ * inner_ + j0;
        float* yo = y + o * len_ * inner_ + j0;
        std::fill(norm, norm + nj, 0.0f);
        for (int64_t i = 0; i < len_; ++i)
          for (int64_t j = 0; j < nj; ++j) {
            float v = xo[i * inner_ + j];
            norm[j] += p_ == 1 ? std::fabs(v) : v * v;
          }
        if (p_ == 2)
          for (int64_t j = 0; j < nj; ++j) norm[j] = std::sqrt(norm[j]);
        for (int64_t i = 0; i < len_; ++i)
          for (int64_t j = 0; j < nj; ++j) yo[i * inner_ + j] = norm[j] == 0.0f ? 0.0f : xo[i * inner_ + j] / norm[j];
      }
    };
    args.pool->parallel_for(outer_ * blocks, body, grain_for(len_ * std::min(kCols, inner_)));
  }

 private:
  int p_ = 2;
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

// The input as [outer, len, inner]: softmax runs over `len` for each
// (outer, inner) pair. Opset 13 takes one axis; before 13 the axes
// [axis, rank) are flattened into `len` and inner is 1.
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<SoftmaxAttrs>();
    const Shape& x = in_shape(g, n, 0);
    size_t axis = static_cast<size_t>(a.axis);
    log_ = a.log;
    outer_ = product(x, 0, axis);
    if (a.coerce_2d) {
      len_ = product(x, axis, x.size());
      inner_ = 1;
    } else {
      len_ = x[axis];
      inner_ = product(x, axis + 1, x.size());
    }
    blocks_ = (inner_ + kBlock - 1) / kBlock;
  }

  std::string describe() const override { return inner_ == 1 ? "rows" : "strided"; }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (len_ == 0 || outer_ * inner_ == 0) return;
    if (inner_ == 1 && len_ <= kShortRow) {
      // Many short rows (a detector's per-anchor scores): one vector exp
      // over the whole run of rows instead of a few calls per row.
      auto body = [&](int64_t r0, int64_t r1) { short_rows(x, y, r0, r1); };
      args.pool->parallel_for(outer_, body, std::max<int64_t>(1, 4096 / len_));
    } else if (inner_ == 1) {
      auto body = [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) row(x + r * len_, y + r * len_);
      };
      args.pool->parallel_for(outer_, body, grain_for(len_));
    } else {
      auto body = [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) block(x, y, i / blocks_, i % blocks_);
      };
      args.pool->parallel_for(outer_ * blocks_, body, grain_for(len_ * std::min(inner_, kBlock)));
    }
  }

 private:
  // Columns handled together when the softmax axis is strided: each step
  // along the axis then reads `kBlock` contiguous floats.
  static constexpr int64_t kBlock = 64;

  static constexpr int64_t kShortRow = 16;

  // As max_of: from -inf, x > m ? x : m (a NaN never wins).
  float row_max(const float* x) const {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < len_; ++i) m = x[i] > m ? x[i] : m;
    return m;
  }

  // Rows [r0, r1) of at most kShortRow values: each row's maximum written
  // over its slots of y, e^(x - max) over the whole range at once, then
  // each row's sum (in double, like row()) and its scaling.
  void short_rows(const float* x, float* y, int64_t r0, int64_t r1) const {
    const float* xs = x + r0 * len_;
    float* ys = y + r0 * len_;
    const int64_t rows = r1 - r0, n = rows * len_;
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = xs + r * len_;
      float m = row_max(xr);
      for (int64_t i = 0; i < len_; ++i) ys[r * len_ + i] = m;
    }
    exp_shifted(xs, ys, ys, n);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = xs + r * len_;
      float* yr = ys + r * len_;
      double sum = 0;
      for (int64_t i = 0; i < len_; ++i) sum += yr[i];
      if (log_) {
        // y held e^(x - m); x - m is recovered from x and the maximum.
        float m = row_max(xr);
        float log_sum = static_cast<float>(std::log(sum));
        for (int64_t i = 0; i < len_; ++i) yr[i] = (xr[i] - m) - log_sum;
      } else {
        float inv = static_cast<float>(1.0 / sum);
        for (int64_t i = 0; i < len_; ++i) yr[i] *= inv;
      }
    }
  }

  // One contiguous row of len_ values.
  void row(const float* x, float* y) const {
    float m = max_of(x, len_);
    if (log_) {
      double sum = exp_shifted_sum(x, m, nullptr, len_);
      // (x - m) first: adding log(sum) to a large m would round it away.
      float log_sum = static_cast<float>(std::log(sum));
      for (int64_t i = 0; i < len_; ++i) y[i] = (x[i] - m) - log_sum;
      return;
    }
    double sum = exp_shifted_sum(x, m, y, len_);
    float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < len_; ++i) y[i] *= inv;
  }

  // Up to kBlock columns (inner positions) of one outer slice.
  void block(const float* x, float* y, int64_t o, int64_t b) const {
    int64_t j0 = b * kBlock;
    int64_t w = std::min(kBlock, inner_ - j0);
    int64_t base = o * len_ * inner_ + j0;
    float m[kBlock];
    double sum[kBlock];
    for (int64_t j = 0; j < w; ++j) {
      m[j] = -std::numeric_limits<float>::infinity();
      sum[j] = 0;
    }
    for (int64_t k = 0; k < len_; ++k) {
      const float* xr = x + base + k * inner_;
      for (int64_t j = 0; j < w; ++j) m[j] = xr[j] > m[j] ? xr[j] : m[j];
    }
    float e[kBlock];
    for (int64_t k = 0; k < len_; ++k) {
      const float* xr = x + base + k * inner_;
      float* yr = log_ ? e : y + base + k * inner_;
      exp_shifted(xr, m, yr, w);
      for (int64_t j = 0; j < w; ++j) sum[j] += yr[j];
    }
    // Per column: log of the sum (log) or its reciprocal (softmax).
    for (int64_t j = 0; j < w; ++j) sum[j] = log_ ? std::log(sum[j]) : 1.0 / sum[j];
    for (int64_t k = 0; k < len_; ++k) {
      const float* xr = x + base + k * inner_;
      float* yr = y + base + k * inner_;
      if (log_) {
        for (int64_t j = 0; j < w; ++j) yr[j] = (xr[j] - m[j]) - static_cast<float>(sum[j]);
      } else {
        for (int64_t j = 0; j < w; ++j) yr[j] *= static_cast<float>(sum[j]);
      }
    }
  }

  bool log_ = false;
  int64_t outer_ = 1, len_ = 1, inner_ = 1, blocks_ = 1;
};

// ---- The Reduce ops ----

// How one reduction starts, takes a value, merges partial results and
// finishes. Held in double: sums keep their accuracy, max and min stay exact.
// LogSumExp sums exp(v - shift), the shift being the maximum of the values
// reduced (found by a first pass), so that large inputs do not overflow.
struct Acc {
  ReduceKind kind;
  double init() const {
    switch (kind) {
      case ReduceKind::kMax:
        return -std::numeric_limits<double>::infinity();
      case ReduceKind::kMin:
        return std::numeric_limits<double>::infinity();
      case ReduceKind::kProd:
        return 1.0;
      default:
        return 0.0;
    }
  }
  double add(double acc, float v, double shift) const {
    switch (kind) {
      case ReduceKind::kMax:
        return v > acc ? v : acc;
      case ReduceKind::kMin:
        return v < acc ? v : acc;
      case ReduceKind::kL1:
        return acc + std::fabs(static_cast<double>(v));
      case ReduceKind::kL2:
      case ReduceKind::kSumSquare:
        return acc + static_cast<double>(v) * v;
      case ReduceKind::kProd:
        return acc * v;
      case ReduceKind::kLogSumExp:
        return acc + std::exp(static_cast<double>(v) - shift);
      default:
        return acc + v;  // Mean, Sum, LogSum
    }
  }
  double merge(double a, double b) const {
    switch (kind) {
      case ReduceKind::kMax:
        return b > a ? b : a;
      case ReduceKind::kMin:
        return b < a ? b : a;
      case ReduceKind::kProd:
        return a * b;
      default:
        return a + b;
    }
  }
};

// A run of adjacent input axes collapsed into one: its length and its
// stride in the input, in elements.
struct AxisRun {
  int64_t len, stride;
};

// Offset in the input of position `i` of the row-major space spanned by `runs`.
int64_t run_offset(const std::vector<AxisRun>& runs, int64_t i) {
  int64_t off = 0;
  for (size_t k = runs.size(); k-- > 0;) {
    off += (i % runs[k].len) * runs[k].stride;
    i /= runs[k].len;
  }
  return off;
}

// Adjacent axes of the same kind (kept or reduced) are collapsed and axes of
// length 1 dropped. The innermost run decides the loop: when it is reduced,
// each output is a sum of contiguous stretches; when it is kept, each output
// row accumulates contiguous input rows. LogSumExp makes each of these two
// passes: the maximum, then the shifted sum.
class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(const Graph& g, const Node& n, int threads) {
    const auto& a = n.attrs_as<ReduceAttrs>();
    acc_.kind = a.kind;
    lse_ = a.kind == ReduceKind::kLogSumExp;
    const Shape& x = in_shape(g, n, 0);
    in_count_ = shape_numel(x);
    out_count_ = shape_numel(out_shape(g, n, 0));
    copy_ = a.axes.empty();  // noop_with_empty_axes
    reduced_count_ = 1;
    for (int64_t ax : a.axes) reduced_count_ *= x[static_cast<size_t>(ax)];
    if (copy_ || in_count_ == 0) return;

    struct Dim {
      int64_t len, stride;
      bool reduced;
    };
    std::vector<int64_t> st = strides_of(x);
    std::vector<Dim> dims;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == 1) continue;
      bool red = std::binary_search(a.axes.begin(), a.axes.end(), static_cast<int64_t>(i));
      if (!dims.empty() && dims.back().reduced == red) {
        dims.back().len *= x[i];
        dims.back().stride = st[i];
      } else {
        dims.push_back({x[i], st[i], red});
      }
    }
    if (!dims.empty()) {
      inner_reduced_ = dims.back().reduced;
      inner_ = dims.back().len;
      dims.pop_back();
    }
    for (const Dim& d : dims) (d.reduced ? reduced_ : kept_).push_back({d.len, d.stride});
    outer_reduced_ = 1;
    for (const auto& r : reduced_) outer_reduced_ *= r.len;
    // Everything reduces into one value: split the (contiguous) input
    // across tasks and merge their partial results.
    if (out_count_ == 1 && in_count_ >= 2 * kGrain)
      tasks_ = std::min<int64_t>(std::max(threads, 1), in_count_ / kGrain);
  }

  size_t workspace_bytes() const override { return tasks_ > 1 ? static_cast<size_t>(tasks_) * sizeof(double) : 0; }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (copy_) {
      // No axes (noop_with_empty_axes): each element is reduced alone, which
      // leaves it as it is except for L1, L2, LogSum and SumSquare.
      bool identity = acc_.kind != ReduceKind::kL1 && acc_.kind != ReduceKind::kL2 &&
                      acc_.kind != ReduceKind::kLogSum && acc_.kind != ReduceKind::kSumSquare;
      if (identity) {
        if (in_count_) std::memcpy(y, x, static_cast<size_t>(in_count_) * sizeof(float));
      } else {
        for (int64_t i = 0; i < in_count_; ++i) y[i] = finish(acc_.add(acc_.init(), x[i], 0.0), 0.0);
      }
      return;
    }
    if (out_count_ == 0) return;
    if (in_count_ == 0) {  // reducing over an empty axis
      std::fill(y, y + out_count_, finish(acc_.init(), -std::numeric_limits<double>::infinity()));
      return;
    }
    if (tasks_ > 1) return reduce_all(x, y, static_cast<double*>(args.workspace), *args.pool);
    if (inner_reduced_) {
      int64_t per_item = outer_reduced_ * inner_ * (lse_ ? 2 : 1);
      auto body = [&](int64_t m0, int64_t m1) {
        for (int64_t m = m0; m < m1; ++m) {
          const float* base = x + run_offset(kept_, m);
          double shift = lse_ ? reduce_stretches(base, kMaxAcc, 0.0) : 0.0;
          y[m] = lse_ && !std::isfinite(shift) ? static_cast<float>(shift)
                                               : finish(reduce_stretches(base, acc_, shift), shift);
        }
      };
      args.pool->parallel_for(out_count_, body, grain_for(per_item));
    } else {
      int64_t rows = out_count_ / inner_;
      int64_t blocks = (inner_ + kBlock - 1) / kBlock;
      auto body = [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) reduce_rows(x, y, i / blocks, i % blocks);
      };
      args.pool->parallel_for(rows * blocks, body,
                              grain_for(outer_reduced_ * std::min(inner_, kBlock) * (lse_ ? 2 : 1)));
    }
  }

 private:
  static constexpr int64_t kBlock = 256;  // output columns accumulated together
  static constexpr Acc kMaxAcc{ReduceKind::kMax};

  // The result from the accumulated value (and LogSumExp's shift).
  float finish(double acc, double shift) const {
    switch (acc_.kind) {
      case ReduceKind::kMean:
        return reduced_count_ ? static_cast<float>(acc / static_cast<double>(reduced_count_))
                              : std::numeric_limits<float>::quiet_NaN();
      case ReduceKind::kL2:
        return static_cast<float>(std::sqrt(acc));
      case ReduceKind::kLogSum:
        return static_cast<float>(std::log(acc));
      case ReduceKind::kLogSumExp:
        // All -inf (or an empty set): -inf; any +inf: +inf.
        return std::isfinite(shift) ? static_cast<float>(shift + std::log(acc)) : static_cast<float>(shift);
      default:
        return static_cast<float>(acc);
    }
  }

  // The inner run is reduced: all outer-reduced positions of `inner_`
  // contiguous values from `base`. LogSumExp's sum of exp(v - shift) runs
  // vectorized, in float (the shift is a float: the maximum of the values),
  // summed in double.
  double reduce_stretches(const float* base, const Acc& acc, double shift) const {
    double v = acc.init();
    for (int64_t r = 0; r < outer_reduced_; ++r) {
      const float* p = base + run_offset(reduced_, r);
      if (acc.kind == ReduceKind::kLogSumExp) {
        v += exp_shifted_sum(p, static_cast<float>(shift), nullptr, inner_);
        continue;
      }
      for (int64_t i = 0; i < inner_; ++i) v = acc.add(v, p[i], shift);
    }
    return v;
  }

  // Accumulates the columns [0, w) of `base`'s rows into acc (shift per column).
  void accumulate_rows(const float* base, int64_t w, const Acc& a, double* acc, const double* shift) const {
    std::fill(acc, acc + w, a.init());
    if (a.kind == ReduceKind::kLogSumExp) {
      float s[kBlock], e[kBlock];
      for (int64_t j = 0; j < w; ++j) s[j] = static_cast<float>(shift[j]);
      for (int64_t r = 0; r < outer_reduced_; ++r) {
        exp_shifted(base + run_offset(reduced_, r), s, e, w);
        for (int64_t j = 0; j < w; ++j) acc[j] += e[j];
      }
      return;
    }
    for (int64_t r = 0; r < outer_reduced_; ++r) {
      const float* p = base + run_offset(reduced_, r);
      for (int64_t j = 0; j < w; ++j) acc[j] = a.add(acc[j], p[j], shift ? shift[j] : 0.0);
    }
  }

  // The inner run is kept: output row `row`, columns of block `b`.
  void reduce_rows(const float* x, float* y, int64_t row, int64_t b) const {
    int64_t j0 = b * kBlock;
    int64_t w = std::min(kBlock, inner_ - j0);
    const float* base = x + run_offset(kept_, row) + j0;
    double acc[kBlock];
    double shift[kBlock];
    if (lse_) accumulate_rows(base, w, kMaxAcc, shift, nullptr);
    accumulate_rows(base, w, acc_, acc, lse_ ? shift : nullptr);
    float* yr = y + row * inner_ + j0;
    for (int64_t j = 0; j < w; ++j) yr[j] = finish(acc[j], lse_ ? shift[j] : 0.0);
  }

  // One value from `in_count_` contiguous inputs, in tasks_ pieces.
  double reduce_contiguous(const float* x, double* partial, ThreadPool& pool, const Acc& a, double shift) const {
    int64_t piece = (in_count_ + tasks_ - 1) / tasks_;
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        double v = a.init();
        int64_t begin = std::min(in_count_, t * piece), end = std::min(in_count_, (t + 1) * piece);
        if (a.kind == ReduceKind::kLogSumExp) {
          v += exp_shifted_sum(x + begin, static_cast<float>(shift), nullptr, end - begin);
        } else {
          for (int64_t i = begin; i < end; ++i) v = a.add(v, x[i], shift);
        }
        partial[t] = v;
      }
    };
    pool.parallel_for(tasks_, body);
    double v = a.init();
    for (int64_t t = 0; t < tasks_; ++t) v = a.merge(v, partial[t]);
    return v;
  }

  // One output from the whole input.
  void reduce_all(const float* x, float* y, double* partial, ThreadPool& pool) const {
    double shift = lse_ ? reduce_contiguous(x, partial, pool, kMaxAcc, 0.0) : 0.0;
    if (lse_ && !std::isfinite(shift)) {
      y[0] = static_cast<float>(shift);
      return;
    }
    y[0] = finish(reduce_contiguous(x, partial, pool, acc_, shift), shift);
  }

  Acc acc_{};
  bool lse_ = false;
  bool copy_ = false;
  int64_t in_count_ = 0, out_count_ = 0, reduced_count_ = 1;
  bool inner_reduced_ = true;
  int64_t inner_ = 1;                    // length of the innermost run
  std::vector<AxisRun> kept_, reduced_;  // the outer runs, outermost first
  int64_t outer_reduced_ = 1;            // positions in the outer reduced runs
  int64_t tasks_ = 1;
};

// ---- LRN ----

// Across-channel local response normalization:
//   y = x / (bias + alpha / size * sum of x^2 over channels
//            [c - floor((size-1)/2), c + ceil((size-1)/2)]) ^ beta
// Parallel over (image, channel) planes; each plane's square sum is built
// in its output before the division.
class LrnKernel final : public Kernel {
 public:
  LrnKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<LrnAttrs>()) {
    const Shape& x = in_shape(g, n, 0);
    channels_ = x[1];
    planes_ = x[0] * x[1];
    plane_ = product(x, 2, x.size());
    before_ = (a_.size - 1) / 2;
    after_ = a_.size - 1 - before_;
    // bias > 0 and alpha >= 0 (as models have them) keep the base positive,
    // where pow is exp(beta log base); else std::pow's rules for the rest.
    positive_base_ = a_.bias > 0.0f && a_.alpha >= 0.0f && std::isfinite(a_.bias) && std::isfinite(a_.alpha);
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    float alpha_over_size = a_.alpha / static_cast<float>(a_.size);
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t c = p % channels_;
        const float* image = x + (p - c) * plane_;
        int64_t lo = std::max<int64_t>(0, c - before_);
        int64_t hi = std::min<int64_t>(channels_ - 1, c + after_);
        float* yp = y + p * plane_;
        std::fill(yp, yp + plane_, 0.0f);
        for (int64_t k = lo; k <= hi; ++k) {
          const float* xk = image + k * plane_;
          for (int64_t i = 0; i < plane_; ++i) yp[i] += xk[i] * xk[i];
        }
        const float* xp = x + p * plane_;
        for (int64_t i = 0; i < plane_; ++i) yp[i] = a_.bias + alpha_over_size * yp[i];
        if (positive_base_) {
          mul_pow(xp, yp, -a_.beta, yp, plane_);  // x * base^-beta, vectorized
        } else {
          for (int64_t i = 0; i < plane_; ++i) yp[i] = xp[i] / std::pow(yp[i], a_.beta);
        }
      }
    };
    args.pool->parallel_for(planes_, body, grain_for(plane_ * (before_ + after_ + 2)));
  }

 private:
  LrnAttrs a_;
  int64_t channels_ = 1, planes_ = 0, plane_ = 1, before_ = 0, after_ = 0;
  bool positive_base_ = true;
};

template <typename K>
std::unique_ptr<Kernel> make(const Graph& g, const Node& n, int threads) {
  return std::make_unique<K>(g, n, threads);
}

}  // namespace

void add_norm_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"BatchNormalization", make<BatchNormKernel>});
  out.push_back({"InstanceNormalization", make<InstanceNormKernel>});
  out.push_back({"GroupNormalization", make<GroupNormKernel>});
  out.push_back({"LayerNormalization", make<LayerNormKernel>});
  out.push_back({"LpNormalization", make<LpNormKernel>});
  out.push_back({"Softmax", make<SoftmaxKernel>});
  out.push_back({"LogSoftmax", make<SoftmaxKernel>});
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceProd", "ReduceSumSquare"})
    out.push_back({op, make<ReduceKernel>});
  out.push_back({"LRN", make<LrnKernel>});
}

}  // namespace minirt::cpu
