// ArgMax, ArgMin, TopK, GatherElements, the scatters (ScatterElements,
// Scatter, ScatterND), OneHot, Trilu and Hardmax on the CPU. ArgMax/ArgMin,
// TopK, OneHot and Hardmax see their tensors as [outer, len, inner] around
// the axis they work along.
#include "kernels/cpu/registry.h"
#include "runtime/ops/index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk, at least

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// ---- ArgMax, ArgMin ----

// Columns are handled kBlock at a time: each step along the axis then reads
// contiguous values, and the best index so far sits in the output.
class ArgKernel final : public Kernel {
 public:
  ArgKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<ArgAttrs>()), dtype_(in_dtype(g, n, 0)) {
    const Shape& x = in_shape(g, n, 0);
    size_t axis = static_cast<size_t>(a_.axis);
    outer_ = product(x, 0, axis);
    len_ = x[axis];
    inner_ = product(x, axis + 1, x.size());
    blocks_ = (inner_ + kBlock - 1) / kBlock;
  }

  void run(const KernelArgs& args) override {
    switch (dtype_) {
      case DType::kInt64:
        return typed<int64_t>(args);
      case DType::kInt32:
        return typed<int32_t>(args);
      case DType::kInt8:
        return typed<int8_t>(args);
      case DType::kUInt8:
        return typed<uint8_t>(args);
      default:
        return typed<float>(args);
    }
  }

 private:
  static constexpr int64_t kBlock = 256;

  // Whether v replaces the best value so far, b.
  template <typename T>
  bool better(T v, T b) const {
    if (a_.max) return a_.select_last_index ? v >= b : v > b;
    return a_.select_last_index ? v <= b : v < b;
  }

  template <typename T>
  void typed(const KernelArgs& args) const {
    const T* x = static_cast<const T*>(args.inputs[0]);
    int64_t* y = static_cast<int64_t*>(args.outputs[0]);
    if (outer_ * inner_ == 0 || len_ == 0) return;
    auto body = [&](int64_t i0, int64_t i1) {
      for (int64_t it = i0; it < i1; ++it) {
        int64_t o = it / blocks_, j0 = (it % blocks_) * kBlock;
        int64_t w = std::min(kBlock, inner_ - j0);
        const T* xo = x + o * len_ * inner_ + j0;
        int64_t* yo = y + o * inner_ + j0;
        std::fill(yo, yo + w, 0);
        for (int64_t k = 1; k < len_; ++k) {
          const T* xk = xo + k * inner_;
          for (int64_t j = 0; j < w; ++j)
            if (better(xk[j], xo[yo[j] * inner_ + j])) yo[j] = k;
        }
      }
    };
    args.pool->parallel_for(outer_ * blocks_, body, std::max<int64_t>(1, kGrain / (len_ * std::min(inner_, kBlock))));
  }

  ArgAttrs a_;
  DType dtype_;
  int64_t outer_ = 1, len_ = 1, inner_ = 1, blocks_ = 1;
};

// ---- TopK ----

// Each (outer, inner) slice of `len` values is ranked by partially sorting
// its indices: larger (or smaller) values first, equal values by lower
// index, NaN above every number. The work is cut into one piece per thread
// at most, each with its own index scratch in the workspace.
class TopKKernel final : public Kernel {
 public:
  TopKKernel(const Graph& g, const Node& n, int threads) : a_(n.attrs_as<TopKAttrs>()), dtype_(in_dtype(g, n, 0)) {
    const Shape& x = in_shape(g, n, 0);
    size_t axis = static_cast<size_t>(a_.axis);
    outer_ = product(x, 0, axis);
    len_ = x[axis];
    inner_ = product(x, axis + 1, x.size());
    slices_ = outer_ * inner_;
    tasks_ = std::max<int64_t>(1, std::min<int64_t>(threads, slices_));
    has_indices_ = n.outputs.size() > 1 && n.outputs[1] >= 0;
  }

  size_t workspace_bytes() const override {
    return a_.k > 0 ? static_cast<size_t>(tasks_ * len_) * sizeof(int64_t) : 0;
  }

  void run(const KernelArgs& args) override {
    switch (dtype_) {
      case DType::kInt64:
        return typed<int64_t>(args);
      case DType::kInt32:
        return typed<int32_t>(args);
      case DType::kInt8:
        return typed<int8_t>(args);
      case DType::kUInt8:
        return typed<uint8_t>(args);
      default:
        return typed<float>(args);
    }
  }

 private:
  // a ranks above b (values only; ties are broken by index by the caller).
  template <typename T>
  static bool above(T a, T b, bool largest) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b))
        return largest ? (std::isnan(a) && !std::isnan(b)) : (std::isnan(b) && !std::isnan(a));
    }
    return largest ? a > b : a < b;
  }

  template <typename T>
  void typed(const KernelArgs& args) const {
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* values = static_cast<T*>(args.outputs[0]);
    int64_t* indices = has_indices_ ? static_cast<int64_t*>(args.outputs[1]) : nullptr;
    int64_t k = a_.k;
    if (k == 0 || slices_ == 0) return;
    int64_t* scratch = static_cast<int64_t*>(args.workspace);
    int64_t per_task = (slices_ + tasks_ - 1) / tasks_;
    bool largest = a_.largest;
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        int64_t* idx = scratch + t * len_;
        int64_t end = std::min(slices_, (t + 1) * per_task);
        for (int64_t s = t * per_task; s < end; ++s) {
          int64_t o = s / inner_, i = s % inner_;
          const T* xs = x + o * len_ * inner_ + i;
          for (int64_t j = 0; j < len_; ++j) idx[j] = j;
          auto cmp = [&](int64_t p, int64_t q) {
            T vp = xs[p * inner_], vq = xs[q * inner_];
            if (above(vp, vq, largest)) return true;
            if (above(vq, vp, largest)) return false;
            return p < q;
          };
          std::partial_sort(idx, idx + k, idx + len_, cmp);
          int64_t base = o * k * inner_ + i;
          for (int64_t j = 0; j < k; ++j) {
            values[base + j * inner_] = xs[idx[j] * inner_];
            if (indices) indices[base + j * inner_] = idx[j];
          }
        }
      }
    };
    args.pool->parallel_for(tasks_, body);
  }

  TopKAttrs a_;
  DType dtype_;
  int64_t outer_ = 1, len_ = 1, inner_ = 1, slices_ = 0, tasks_ = 1;
  bool has_indices_ = true;
};

// ---- GatherElements ----

// out[i0, .., i(r-1)] = data[i0, .., indices[i0, .., i(r-1)], .., i(r-1)], the
// index replacing the coordinate on `axis`. Parallel over rows of the
// output (all axes but the last). Out-of-range indices from run-time data
// read as zero, never out of bounds.
class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(const Graph& g, const Node& n, int) {
    axis_ = n.attrs_as<GatherElementsAttrs>().axis;
    const Shape& x = in_shape(g, n, 0);
    idx_shape_ = in_shape(g, n, 1);
    es_ = dtype_size(in_dtype(g, n, 0));
    idx64_ = in_dtype(g, n, 1) == DType::kInt64;
    data_stride_ = strides_of(x);
    len_ = x[static_cast<size_t>(axis_)];
    rank_ = static_cast<int64_t>(x.size());
    inner_ = idx_shape_.back();
    count_ = shape_numel(idx_shape_);
  }

  void run(const KernelArgs& args) override {
    switch (es_) {
      case 1:
        return typed<uint8_t>(args);
      case 4:
        return typed<uint32_t>(args);
      default:
        return typed<uint64_t>(args);
    }
  }

 private:
  template <typename T>
  void typed(const KernelArgs& args) const {
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.outputs[0]);
    if (count_ == 0) return;
    int64_t rows = count_ / inner_;
    int64_t last = rank_ - 1;
    int64_t axis_stride = data_stride_[static_cast<size_t>(axis_)];
    int64_t inner_stride = axis_ == last ? 0 : data_stride_[static_cast<size_t>(last)];
    auto body = [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        // The data offset of this row, the axis coordinate left out.
        int64_t base = 0, rest = row;
        for (int64_t d = last - 1; d >= 0; --d) {
          int64_t c = rest % idx_shape_[static_cast<size_t>(d)];
          rest /= idx_shape_[static_cast<size_t>(d)];
          if (d != axis_) base += c * data_stride_[static_cast<size_t>(d)];
        }
        for (int64_t j = 0; j < inner_; ++j) {
          int64_t p = row * inner_ + j;
          int64_t i =
              idx64_ ? static_cast<const int64_t*>(args.inputs[1])[p] : static_cast<const int32_t*>(args.inputs[1])[p];
          if (i < 0) i += len_;
          y[p] = i < 0 || i >= len_ ? T(0) : x[base + j * inner_stride + i * axis_stride];
        }
      }
    };
    args.pool->parallel_for(rows, body, std::max<int64_t>(1, kGrain / inner_));
  }

  int64_t axis_ = 0, len_ = 0, rank_ = 1, inner_ = 1, count_ = 0;
  Shape idx_shape_;
  std::vector<int64_t> data_stride_;
  size_t es_ = 4;
  bool idx64_ = true;
};

// ---- ScatterElements, Scatter, ScatterND ----

// Calls f with a null pointer of the C++ type of a data dtype.
template <typename F>
void with_data_type(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32:
      return f(static_cast<float*>(nullptr));
    case DType::kInt64:
      return f(static_cast<int64_t*>(nullptr));
    case DType::kInt32:
      return f(static_cast<int32_t*>(nullptr));
    case DType::kInt8:
      return f(static_cast<int8_t*>(nullptr));
    default:
      return f(static_cast<uint8_t*>(nullptr));  // uint8, bool (reduction none only)
  }
}

template <typename T>
inline void combine(T& y, T u, ScatterReduction r) {
  switch (r) {
    case ScatterReduction::kNone:
      y = u;
      break;
    case ScatterReduction::kAdd:
      y = static_cast<T>(y + u);
      break;
    case ScatterReduction::kMul:
      y = static_cast<T>(y * u);
      break;
    case ScatterReduction::kMax:
      y = std::max(y, u);
      break;
    case ScatterReduction::kMin:
      y = std::min(y, u);
      break;
  }
}

inline int64_t index_at(const void* p, bool i64, int64_t i) {
  return i64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

[[noreturn]] void index_fail(const std::string& where, int64_t i, int64_t len, const std::string& axis) {
  throw Error(ErrorCode::kInvalidArgument,
              where + "index " + std::to_string(i) + " is out of range for " + axis + " of length " +
                  std::to_string(len) + " (valid: " + std::to_string(-len) + " to " + std::to_string(len - 1) + ")");
}

// ---- GatherND ----

// Per batch (the first batch_dims axes), each index tuple of k picks the
// slice of data past axis batch_dims + k; slices move as bytes.
class GatherNDKernel final : public Kernel {
 public:
  GatherNDKernel(const Graph& g, const Node& n, int) : where_(node_context(g, n)) {
    const int64_t b = n.attrs_as<GatherNDAttrs>().batch_dims;
    const Shape& x = in_shape(g, n, 0);
    const Shape& idx = in_shape(g, n, 1);
    k_ = idx.back();
    batches_ = shape_numel(Shape(x.begin(), x.begin() + b));
    tuples_ = shape_numel(Shape(idx.begin() + b, idx.end() - 1));
    block_ = shape_numel(Shape(x.begin() + b, x.end()));
    dims_.assign(x.begin() + b, x.begin() + b + k_);
    std::vector<int64_t> st = strides_of(Shape(x.begin() + b, x.end()));
    stride_.assign(st.begin(), st.begin() + k_);
    slice_bytes_ = static_cast<size_t>(shape_numel(Shape(x.begin() + b + k_, x.end()))) * dtype_size(in_dtype(g, n, 0));
    elem_ = dtype_size(in_dtype(g, n, 0));
  }
  void run(const KernelArgs& args) override {
    const auto* x = static_cast<const uint8_t*>(args.inputs[0]);
    const auto* idx = static_cast<const int64_t*>(args.inputs[1]);
    auto* y = static_cast<uint8_t*>(args.outputs[0]);
    if (slice_bytes_ == 0) return;
    for (int64_t bi = 0; bi < batches_; ++bi)
      for (int64_t t = 0; t < tuples_; ++t) {
        const int64_t* tuple = idx + (bi * tuples_ + t) * k_;
        int64_t off = 0;
        for (int64_t j = 0; j < k_; ++j) {
          int64_t i = tuple[j], len = dims_[static_cast<size_t>(j)];
          if (i < -len || i >= len) index_fail(where_, i, len, "axis " + std::to_string(j) + " past the batch of data");
          off += (i < 0 ? i + len : i) * stride_[static_cast<size_t>(j)];
        }
        std::memcpy(y + static_cast<size_t>(bi * tuples_ + t) * slice_bytes_,
                    x + static_cast<size_t>(bi * block_ + off) * elem_, slice_bytes_);
      }
  }

 private:
  std::string where_;
  int64_t k_ = 1, batches_ = 1, tuples_ = 0, block_ = 0;
  std::vector<int64_t> dims_, stride_;
  size_t slice_bytes_ = 0, elem_ = 4;
};

// The scatters' first step: the output starts as a copy of data (input 0),
// split over the pool in 64 KiB chunks.
void copy_data(const KernelArgs& args, int64_t bytes) {
  const char* x = static_cast<const char*>(args.inputs[0]);
  char* y = static_cast<char*>(args.outputs[0]);
  if (x == y || bytes == 0) return;
  constexpr int64_t kChunk = 1 << 16;
  args.pool->parallel_for((bytes + kChunk - 1) / kChunk, [&](int64_t c0, int64_t c1) {
    int64_t b0 = c0 * kChunk, b1 = std::min(bytes, c1 * kChunk);
    std::memcpy(y + b0, x + b0, static_cast<size_t>(b1 - b0));
  });
}

// out = data, then out[i0, .., indices[i0, .., i(r-1)], .., i(r-1)] (op)=
// updates[i0, .., i(r-1)]: the index replaces the coordinate on `axis`. The
// updates go in the order of their elements (so duplicate indices give the
// last one's value, or combine in that order), on the calling thread. An index outside [-len, len) stops
// the run with an error naming the node; nothing is written out of bounds.
class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(const Graph& g, const Node& n, int)
      : a_(n.attrs_as<ScatterAttrs>()), dtype_(in_dtype(g, n, 0)), where_(node_context(g, n)) {
    const Shape& x = in_shape(g, n, 0);
    idx_shape_ = in_shape(g, n, 1);
    data_stride_ = strides_of(x);
    len_ = x[static_cast<size_t>(a_.axis)];
    count_ = shape_numel(idx_shape_);
    bytes_ = shape_numel(x) * dtype_size(dtype_);
    idx64_ = in_dtype(g, n, 1) == DType::kInt64;
  }

  void run(const KernelArgs& args) override {
    copy_data(args, bytes_);
    with_data_type(dtype_, [&](auto* tag) { typed<std::remove_pointer_t<decltype(tag)>>(args); });
  }

 private:
  template <typename T>
  void typed(const KernelArgs& args) const {
    T* y = static_cast<T*>(args.outputs[0]);
    const T* u = static_cast<const T*>(args.inputs[2]);
    const void* idx = args.inputs[1];
    int64_t r = static_cast<int64_t>(idx_shape_.size());
    std::vector<int64_t> coord(static_cast<size_t>(r), 0);
    for (int64_t p = 0; p < count_; ++p) {
      int64_t i = index_at(idx, idx64_, p);
      if (i < -len_ || i >= len_) index_fail(where_, i, len_, "axis " + std::to_string(a_.axis));
      if (i < 0) i += len_;
      int64_t off = 0;
      for (int64_t d = 0; d < r; ++d)
        off += (d == a_.axis ? i : coord[static_cast<size_t>(d)]) * data_stride_[static_cast<size_t>(d)];
      combine(y[off], u[p], a_.reduction);
      for (int64_t d = r - 1; d >= 0; --d) {  // next coordinate of indices
        if (++coord[static_cast<size_t>(d)] < idx_shape_[static_cast<size_t>(d)]) break;
        coord[static_cast<size_t>(d)] = 0;
      }
    }
  }

  ScatterAttrs a_;
  DType dtype_;
  std::string where_;
  Shape idx_shape_;
  std::vector<int64_t> data_stride_;
  int64_t len_ = 0, count_ = 0, bytes_ = 0;
  bool idx64_ = true;
};

// out = data, then for each index tuple t of indices (its last axis, k
// long), the slice out[t] (data's axes after the first k) (op)= the matching
// slice of updates, in order, on the calling thread.
class ScatterNDKernel final : public Kernel {
 public:
  ScatterNDKernel(const Graph& g, const Node& n, int)
      : reduction_(n.attrs_as<ScatterAttrs>().reduction), dtype_(in_dtype(g, n, 0)), where_(node_context(g, n)) {
    x_shape_ = in_shape(g, n, 0);
    const Shape& idx = in_shape(g, n, 1);
    k_ = idx.back();
    tuples_ = shape_numel(idx) / k_;
    std::vector<int64_t> st = strides_of(x_shape_);
    stride_.assign(st.begin(), st.begin() + k_);
    slice_ = shape_numel(Shape(x_shape_.begin() + k_, x_shape_.end()));
    bytes_ = shape_numel(x_shape_) * dtype_size(dtype_);
    idx64_ = in_dtype(g, n, 1) == DType::kInt64;
  }

  void run(const KernelArgs& args) override {
    copy_data(args, bytes_);
    with_data_type(dtype_, [&](auto* tag) { typed<std::remove_pointer_t<decltype(tag)>>(args); });
  }

 private:
  template <typename T>
  void typed(const KernelArgs& args) const {
    T* y = static_cast<T*>(args.outputs[0]);
    const T* u = static_cast<const T*>(args.inputs[2]);
    const void* idx = args.inputs[1];
    for (int64_t t = 0; t < tuples_; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k_; ++j) {
        int64_t len = x_shape_[static_cast<size_t>(j)];
        int64_t i = index_at(idx, idx64_, t * k_ + j);
        if (i < -len || i >= len) index_fail(where_, i, len, "axis " + std::to_string(j) + " of data");
        off += (i < 0 ? i + len : i) * stride_[static_cast<size_t>(j)];
      }
      T* dst = y + off;
      const T* src = u + t * slice_;
      if (reduction_ == ScatterReduction::kNone)
        std::memcpy(dst, src, static_cast<size_t>(slice_) * sizeof(T));
      else
        for (int64_t e = 0; e < slice_; ++e) combine(dst[e], src[e], reduction_);
    }
  }

  ScatterReduction reduction_;
  DType dtype_;
  std::string where_;
  Shape x_shape_;
  std::vector<int64_t> stride_;
  int64_t k_ = 1, tuples_ = 0, slice_ = 1, bytes_ = 0;
  bool idx64_ = true;
};

// ---- OneHot ----

// Output [outer, depth, inner]: off everywhere, on at each valid index.
class OneHotKernel final : public Kernel {
 public:
  OneHotKernel(const Graph& g, const Node& n, int)
      : a_(n.attrs_as<OneHotAttrs>()), idx_type_(in_dtype(g, n, 0)), out_type_(out_dtype(g, n)) {
    const Shape& idx = in_shape(g, n, 0);
    outer_ = product(idx, 0, static_cast<size_t>(a_.axis));
    inner_ = product(idx, static_cast<size_t>(a_.axis), idx.size());
  }

  void run(const KernelArgs& args) override {
    with_data_type(out_type_, [&](auto* tag) { typed<std::remove_pointer_t<decltype(tag)>>(args); });
  }

 private:
  static DType out_dtype(const Graph& g, const Node& n) { return g.values[n.outputs[0]].dtype; }

  int64_t index(const void* p, int64_t i) const {
    switch (idx_type_) {
      case DType::kInt64:
        return static_cast<const int64_t*>(p)[i];
      case DType::kInt32:
        return static_cast<const int32_t*>(p)[i];
      case DType::kInt8:
        return static_cast<const int8_t*>(p)[i];
      case DType::kUInt8:
        return static_cast<const uint8_t*>(p)[i];
      default: {
        float f = static_cast<const float*>(p)[i];  // truncated toward zero, as a cast to int64
        return std::isfinite(f) && std::fabs(f) < 9.2e18f ? static_cast<int64_t>(f) : INT64_MIN;
      }
    }
  }

  template <typename T>
  void typed(const KernelArgs& args) const {
    const T* values = static_cast<const T*>(args.inputs[2]);
    const T off = values[0], on = values[1];
    T* y = static_cast<T*>(args.outputs[0]);
    const int64_t depth = a_.depth;
    auto body = [&](int64_t o0, int64_t o1) {
      std::fill(y + o0 * depth * inner_, y + o1 * depth * inner_, off);
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t j = 0; j < inner_; ++j) {
          int64_t v = index(args.inputs[0], o * inner_ + j);
          if (v < 0 && a_.negative && v >= -depth) v += depth;
          if (v >= 0 && v < depth) y[(o * depth + v) * inner_ + j] = on;
        }
    };
    args.pool->parallel_for(outer_, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, depth * inner_)));
  }

  OneHotAttrs a_;
  DType idx_type_, out_type_;
  int64_t outer_ = 1, inner_ = 1;
};

// ---- Trilu ----

// Keeps (i, j) of each matrix of the last two axes where j - i >= k (upper)
// or j - i <= k (lower), zeros the rest.
class TriluKernel final : public Kernel {
 public:
  TriluKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<TriluAttrs>()), dtype_(in_dtype(g, n, 0)) {
    const Shape& x = in_shape(g, n, 0);
    rows_ = x[x.size() - 2];
    cols_ = x.back();
    mats_ = rows_ * cols_ == 0 ? 0 : shape_numel(x) / (rows_ * cols_);
  }

  void run(const KernelArgs& args) override {
    with_data_type(dtype_, [&](auto* tag) { typed<std::remove_pointer_t<decltype(tag)>>(args); });
  }

 private:
  template <typename T>
  void typed(const KernelArgs& args) const {
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.outputs[0]);
    auto body = [&](int64_t r0, int64_t r1) {  // rows of all matrices
      for (int64_t r = r0; r < r1; ++r) {
        int64_t i = r % rows_;
        // Columns kept: [max(0, i + k), cols) when upper, [0, min(cols, i + k + 1)) when lower.
        int64_t lo = a_.upper ? std::clamp<int64_t>(i + a_.k, 0, cols_) : 0;
        int64_t hi = a_.upper ? cols_ : std::clamp<int64_t>(i + a_.k + 1, 0, cols_);
        const T* xr = x + r * cols_;
        T* yr = y + r * cols_;
        for (int64_t j = 0; j < cols_; ++j) yr[j] = j >= lo && j < hi ? xr[j] : T(0);
      }
    };
    args.pool->parallel_for(mats_ * rows_, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cols_)));
  }

  TriluAttrs a_;
  DType dtype_;
  int64_t rows_ = 0, cols_ = 0, mats_ = 0;
};

// ---- Hardmax ----

// 1 at the first largest value along the axis (of the 2-D coercion before
// opset 13), 0 elsewhere.
class HardmaxKernel final : public Kernel {
 public:
  HardmaxKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<HardmaxAttrs>();
    const Shape& x = in_shape(g, n, 0);
    size_t axis = static_cast<size_t>(a.axis);
    outer_ = product(x, 0, axis);
    if (a.coerce_2d) {
      len_ = product(x, axis, x.size());
      inner_ = 1;
    } else {
      len_ = x[axis];
      inner_ = product(x, axis + 1, x.size());
    }
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    auto body = [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const float* xo = x + o * len_ * inner_;
        float* yo = y + o * len_ * inner_;
        std::fill(yo, yo + len_ * inner_, 0.0f);
        for (int64_t j = 0; j < inner_ && len_ > 0; ++j) {
          int64_t best = 0;
          for (int64_t i = 1; i < len_; ++i)
            if (xo[i * inner_ + j] > xo[best * inner_ + j]) best = i;
          yo[best * inner_ + j] = 1.0f;
        }
      }
    };
    args.pool->parallel_for(outer_, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, len_ * inner_)));
  }

 private:
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

template <typename K>
std::unique_ptr<Kernel> make(const Graph& g, const Node& n, int t) {
  return std::make_unique<K>(g, n, t);
}

}  // namespace

void add_index_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"ArgMax", make<ArgKernel>});
  out.push_back({"ArgMin", make<ArgKernel>});
  out.push_back({"TopK", make<TopKKernel>});
  out.push_back({"GatherElements", make<GatherElementsKernel>});
  out.push_back({"GatherND", make<GatherNDKernel>});
  out.push_back({"ScatterElements", make<ScatterElementsKernel>});
  out.push_back({"Scatter", make<ScatterElementsKernel>});
  out.push_back({"ScatterND", make<ScatterNDKernel>});
  out.push_back({"OneHot", make<OneHotKernel>});
  out.push_back({"Trilu", make<TriluKernel>});
  out.push_back({"Hardmax", make<HardmaxKernel>});
}

}  // namespace minirt::cpu
