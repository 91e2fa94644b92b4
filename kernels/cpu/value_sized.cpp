// Kernels of the value-sized ops, whose outputs' shapes follow from their
// inputs' values: NonZero, Compress, Unique and NonMaxSuppression. The session runs them
// between plan stages (runtime/stages.h) through ValueSizedKernel::evaluate.
#include "kernels/cpu/registry.h"
#include "runtime/ops/index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

namespace minirt::cpu {

namespace {

// A strict weak order on values with NaN after every number (and NaNs equal
// among themselves), so that sorting data with NaN is well defined.
template <typename T>
bool before(T u, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return !std::isnan(u);
    if (std::isnan(u)) return false;
  }
  return u < v;
}

// Errors name only what is wrong: the session puts the file, node and op in
// front (node_context).
const Tensor& input_of(const std::vector<const Tensor*>& in, size_t i) {
  if (i >= in.size() || !in[i]) fail(ErrorCode::kInternal, "input " + std::to_string(i) + " is missing");
  return *in[i];
}

// The input seen as [outer, n, inner] around the axis (without one: the
// flattened input as [1, numel, 1]), the axis resolved; an axis out of range
// fails naming it. Compress's and Unique's slices.
struct AxisSplit {
  int64_t axis, outer, n, inner;
};
AxisSplit split_at_axis(const Shape& s, bool has_axis, int64_t given) {
  AxisSplit q{0, 1, shape_numel(s), 1};
  if (!has_axis) return q;
  const int64_t r = static_cast<int64_t>(s.size());
  q.axis = given < 0 ? given + r : given;
  if (r == 0 || q.axis < 0 || q.axis >= r)
    fail(ErrorCode::kInvalidArgument, "axis " + std::to_string(given) + " is out of range for input " + shape_str(s));
  q.n = s[static_cast<size_t>(q.axis)];
  for (int64_t d = 0; d < q.axis; ++d) q.outer *= s[static_cast<size_t>(d)];
  for (int64_t d = q.axis + 1; d < r; ++d) q.inner *= s[static_cast<size_t>(d)];
  return q;
}

// NonZero: the indices of the elements that are not zero, one row per axis
// ([rank, count], int64), in row-major order. A scalar counts as one axis.
class NonZeroKernel final : public ValueSizedKernel {
 public:
  NonZeroKernel() = default;
  std::vector<Tensor> evaluate(const std::vector<const Tensor*>& in, ThreadPool&) override {
    const Tensor& x = input_of(in, 0);
    std::vector<int64_t> flat;  // the flat indices of the elements that are not zero
    const int64_t n = x.numel();
    auto scan = [&](auto* p) {
      for (int64_t i = 0; i < n; ++i)
        if (p[i] != 0) flat.push_back(i);
    };
    switch (x.dtype()) {
      case DType::kFloat32:
        scan(x.data<float>());
        break;
      case DType::kInt64:
        scan(x.data<int64_t>());
        break;
      case DType::kInt32:
        scan(x.data<int32_t>());
        break;
      case DType::kInt8:
        scan(x.data<int8_t>());
        break;
      case DType::kUInt8:
      case DType::kBool:
        scan(x.data<uint8_t>());
        break;
      default:
        fail(ErrorCode::kUnsupported, "input dtype " + std::string(dtype_name(x.dtype())) +
                                          " is not supported (float32, int64, int32, int8, uint8, bool)");
    }
    const Shape& s = x.shape();
    const int64_t rank = std::max<int64_t>(1, x.rank());
    const int64_t count = static_cast<int64_t>(flat.size());
    Tensor y = Tensor::zeros(DType::kInt64, {rank, count});
    int64_t* out = y.data<int64_t>();
    for (int64_t k = 0; k < count; ++k) {
      int64_t rest = flat[static_cast<size_t>(k)];
      for (int64_t d = x.rank() - 1; d >= 0; --d) {
        out[d * count + k] = rest % s[d];
        rest /= s[d];
      }
      if (x.rank() == 0) out[k] = 0;
    }
    std::vector<Tensor> outs;
    outs.push_back(std::move(y));
    return outs;
  }
};

// Compress: the elements (no axis: of the flattened input) or the slices
// along an axis whose condition is true; positions past the condition's
// length are left out. Any element type (the bytes move as they are).
class CompressKernel final : public ValueSizedKernel {
 public:
  explicit CompressKernel(const Node& n) : attrs_(n.attrs_as<CompressAttrs>()) {}

  std::vector<Tensor> evaluate(const std::vector<const Tensor*>& in, ThreadPool&) override {
    const Tensor& x = input_of(in, 0);
    const Tensor& cond = input_of(in, 1);
    if (cond.dtype() != DType::kBool || cond.rank() != 1)
      fail(ErrorCode::kInvalidArgument, "condition must be a 1-D bool tensor, got " +
                                            std::string(dtype_name(cond.dtype())) + " " + shape_str(cond.shape()));
    const size_t elem = dtype_size(x.dtype());
    if (elem == 0)
      fail(ErrorCode::kUnsupported, "input dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
    const Shape& s = x.shape();
    const AxisSplit q = split_at_axis(s, attrs_.has_axis, attrs_.axis);
    const int64_t axis = q.axis, outer = q.outer, n = q.n, inner = q.inner;  // plain names: lambdas capture them
    const uint8_t* c = cond.data<uint8_t>();
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < std::min(n, cond.numel()); ++i)
      if (c[i]) kept.push_back(i);
    const int64_t count = static_cast<int64_t>(kept.size());
    Shape ys = attrs_.has_axis ? s : Shape{count};
    if (attrs_.has_axis) ys[static_cast<size_t>(axis)] = count;
    Tensor y = Tensor::zeros(x.dtype(), ys);
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(y.raw());
    const size_t slice = static_cast<size_t>(inner) * elem;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < count; ++k)
        std::memcpy(dst + static_cast<size_t>(o * count + k) * slice,
                    src + static_cast<size_t>(o * n + kept[static_cast<size_t>(k)]) * slice, slice);
    std::vector<Tensor> outs;
    outs.push_back(std::move(y));
    return outs;
  }

 private:
  CompressAttrs attrs_;
};

// Unique: the distinct elements (no axis: of the flattened input) or the
// distinct slices along an axis, ascending (slices compared element by
// element in row-major order; NaN after every number, all NaNs one value) or
// in order of first occurrence; with the index of each one's first
// occurrence, each input element's (slice's) index into the result, and how
// often each occurs.
class UniqueKernel final : public ValueSizedKernel {
 public:
  explicit UniqueKernel(const Node& n) : attrs_(n.attrs_as<UniqueAttrs>()) {}

  std::vector<Tensor> evaluate(const std::vector<const Tensor*>& in, ThreadPool&) override {
    const Tensor& x = input_of(in, 0);
    switch (x.dtype()) {
      case DType::kFloat32:
        return unique<float>(x);
      case DType::kInt64:
        return unique<int64_t>(x);
      case DType::kInt32:
        return unique<int32_t>(x);
      case DType::kInt8:
        return unique<int8_t>(x);
      case DType::kUInt8:
      case DType::kBool:
        return unique<uint8_t>(x);
      default:
        fail(ErrorCode::kUnsupported, "input dtype " + std::string(dtype_name(x.dtype())) +
                                          " is not supported (float32, int64, int32, int8, uint8, bool)");
    }
  }

 private:
  template <typename T>
  std::vector<Tensor> unique(const Tensor& x) const {
    const Shape& s = x.shape();
    const AxisSplit q = split_at_axis(s, attrs_.has_axis, attrs_.axis);
    const int64_t axis = q.axis, outer = q.outer, n = q.n, inner = q.inner;  // plain names: lambdas capture them
    const T* p = x.data<T>();
    // Slice i: the elements p[(o * n + i) * inner + j], o and j in order.
    auto less = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          T u = p[(o * n + a) * inner + j], v = p[(o * n + b) * inner + j];
          if (before(u, v)) return true;
          if (before(v, u)) return false;
        }
      return false;
    };
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), less);  // equal slices keep their order: first occurrence first
    // Groups of equal slices, each named by its first occurrence.
    std::vector<int64_t> group_of(static_cast<size_t>(n)), first, count;
    for (size_t k = 0; k < order.size(); ++k) {
      if (k == 0 || less(order[k - 1], order[k])) {
        first.push_back(order[k]);
        count.push_back(0);
      }
      group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size()) - 1;
      ++count.back();
    }
    // The result's order: ascending as sorted, or by first occurrence.
    const int64_t u = static_cast<int64_t>(first.size());
    std::vector<int64_t> rank(static_cast<size_t>(u));  // group -> position in the result
    std::iota(rank.begin(), rank.end(), int64_t{0});
    if (!attrs_.sorted) {
      std::vector<int64_t> by_first(static_cast<size_t>(u));
      std::iota(by_first.begin(), by_first.end(), int64_t{0});
      std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
      for (int64_t k = 0; k < u; ++k) rank[static_cast<size_t>(by_first[k])] = k;
    }
    Shape ys = attrs_.has_axis ? s : Shape{u};
    if (attrs_.has_axis) ys[static_cast<size_t>(axis)] = u;
    Tensor y = Tensor::zeros(x.dtype(), ys);
    Tensor indices = Tensor::zeros(DType::kInt64, {u});
    Tensor inverse = Tensor::zeros(DType::kInt64, {n});
    Tensor counts = Tensor::zeros(DType::kInt64, {u});
    T* yp = y.data<T>();
    for (int64_t g = 0; g < u; ++g) {
      const int64_t at = rank[static_cast<size_t>(g)], src = first[static_cast<size_t>(g)];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) yp[(o * u + at) * inner + j] = p[(o * n + src) * inner + j];
      indices.data<int64_t>()[at] = src;
      counts.data<int64_t>()[at] = count[static_cast<size_t>(g)];
    }
    for (int64_t i = 0; i < n; ++i)
      inverse.data<int64_t>()[i] = rank[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
    std::vector<Tensor> outs;
    outs.push_back(std::move(y));
    outs.push_back(std::move(indices));
    outs.push_back(std::move(inverse));
    outs.push_back(std::move(counts));
    return outs;
  }

  UniqueAttrs attrs_;
};

// NonMaxSuppression: per batch and class, the boxes over score_threshold in
// order of falling score (ties: the lower box index first; a NaN score last), each kept unless
// its IoU with a box kept before is above iou_threshold, at most
// max_output_boxes_per_class of them. Output rows [batch, class, box], by
// batch, then class, then the order kept.
class NmsKernel final : public ValueSizedKernel {
 public:
  explicit NmsKernel(const Node& n) : attrs_(n.attrs_as<NmsAttrs>()) {}

  std::vector<Tensor> evaluate(const std::vector<const Tensor*>& in, ThreadPool&) override {
    const Tensor& boxes = input_of(in, 0);
    const Tensor& scores = input_of(in, 1);
    if (boxes.dtype() != DType::kFloat32 || scores.dtype() != DType::kFloat32)
      fail(ErrorCode::kInvalidArgument, "boxes and scores must be float32");
    if (boxes.rank() != 3 || boxes.shape()[2] != 4)
      fail(ErrorCode::kInvalidArgument, "boxes must be [batches, boxes, 4], got " + shape_str(boxes.shape()));
    if (scores.rank() != 3 || scores.shape()[0] != boxes.shape()[0] || scores.shape()[2] != boxes.shape()[1])
      fail(ErrorCode::kInvalidArgument, "scores must be [batches, classes, boxes] = [" +
                                            std::to_string(boxes.shape()[0]) + ", C, " +
                                            std::to_string(boxes.shape()[1]) + "] for boxes " +
                                            shape_str(boxes.shape()) + ", got " + shape_str(scores.shape()));
    int64_t max_per_class = 0;
    float iou_threshold = 0.f;
    bool has_score_threshold = false;
    float score_threshold = 0.f;
    if (in.size() > 2 && in[2] && in[2]->numel() > 0) {
      if (in[2]->dtype() != DType::kInt64)
        fail(ErrorCode::kInvalidArgument, "max_output_boxes_per_class must be int64");
      max_per_class = in[2]->data<int64_t>()[0];
    }
    if (in.size() > 3 && in[3] && in[3]->numel() > 0) {
      if (in[3]->dtype() != DType::kFloat32) fail(ErrorCode::kInvalidArgument, "iou_threshold must be float32");
      iou_threshold = in[3]->data<float>()[0];
      if (!(iou_threshold >= 0.f && iou_threshold <= 1.f))
        fail(ErrorCode::kInvalidArgument, "iou_threshold must be in [0, 1], got " + std::to_string(iou_threshold));
    }
    if (in.size() > 4 && in[4] && in[4]->numel() > 0) {
      if (in[4]->dtype() != DType::kFloat32) fail(ErrorCode::kInvalidArgument, "score_threshold must be float32");
      has_score_threshold = true;
      score_threshold = in[4]->data<float>()[0];
    }
    const int64_t batches = boxes.shape()[0], nboxes = boxes.shape()[1], classes = scores.shape()[1];
    std::vector<int64_t> rows;  // batch, class, box triples
    if (max_per_class > 0 && nboxes > 0) {
      std::vector<Corners> c(static_cast<size_t>(nboxes));
      std::vector<int64_t> order, kept;
      for (int64_t b = 0; b < batches; ++b) {
        const float* bx = boxes.data<float>() + b * nboxes * 4;
        for (int64_t i = 0; i < nboxes; ++i) c[static_cast<size_t>(i)] = corners(bx + 4 * i);
        for (int64_t k = 0; k < classes; ++k) {
          const float* sc = scores.data<float>() + (b * classes + k) * nboxes;
          order.clear();
          for (int64_t i = 0; i < nboxes; ++i)
            if (!has_score_threshold || sc[i] > score_threshold) order.push_back(i);
          // Falling score (a NaN score last), ties by the lower box index.
          std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
            if (std::isnan(sc[x])) return false;
            return std::isnan(sc[y]) || sc[x] > sc[y];
          });
          kept.clear();
          for (int64_t i : order) {
            if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
            bool suppressed = false;
            for (int64_t j : kept)
              if (overlaps(c[static_cast<size_t>(i)], c[static_cast<size_t>(j)], iou_threshold)) {
                suppressed = true;
                break;
              }
            if (suppressed) continue;
            kept.push_back(i);
            rows.insert(rows.end(), {b, k, i});
          }
        }
      }
    }
    const int64_t count = static_cast<int64_t>(rows.size() / 3);
    Tensor y = Tensor::zeros(DType::kInt64, {count, 3});
    std::copy(rows.begin(), rows.end(), y.data<int64_t>());
    std::vector<Tensor> outs;
    outs.push_back(std::move(y));
    return outs;
  }

 private:
  struct Corners {
    float x0, y0, x1, y1;  // x0 <= x1, y0 <= y1
  };
  Corners corners(const float* p) const {
    if (attrs_.center_point_box) {
      // [x_center, y_center, width, height]
      float hw = p[2] / 2, hh = p[3] / 2;
      return {p[0] - hw, p[1] - hh, p[0] + hw, p[1] + hh};
    }
    // [y1, x1, y2, x2], any diagonal pair of corners
    return {std::min(p[1], p[3]), std::min(p[0], p[2]), std::max(p[1], p[3]), std::max(p[0], p[2])};
  }
  // True when a's IoU with b is above the threshold; boxes without area never
  // overlap anything.
  static bool overlaps(const Corners& a, const Corners& b, float threshold) {
    float w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
    float h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
    float inter = std::max(w, 0.f) * std::max(h, 0.f);
    if (inter <= 0.f) return false;
    float area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
    float uni = area_a + area_b - inter;
    if (area_a <= 0.f || area_b <= 0.f || uni <= 0.f) return false;
    return inter / uni > threshold;
  }

  NmsAttrs attrs_;
};

std::unique_ptr<Kernel> make_nonzero(const Graph&, const Node&, int) { return std::make_unique<NonZeroKernel>(); }
std::unique_ptr<Kernel> make_compress(const Graph&, const Node& n, int) { return std::make_unique<CompressKernel>(n); }
std::unique_ptr<Kernel> make_unique_kernel(const Graph&, const Node& n, int) {
  return std::make_unique<UniqueKernel>(n);
}
std::unique_ptr<Kernel> make_nms(const Graph&, const Node& n, int) { return std::make_unique<NmsKernel>(n); }

}  // namespace

void add_value_sized_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"NonZero", make_nonzero});
  out.push_back({"Compress", make_compress});
  out.push_back({"Unique", make_unique_kernel});
  out.push_back({"NonMaxSuppression", make_nms});
}

}  // namespace minirt::cpu
