// ArgMax, ArgMin, TopK and GatherElements on the CPU. ArgMax/ArgMin and TopK
// see their input as [outer, len, inner] around the axis they work along.
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
      case DType::kInt64: return typed<int64_t>(args);
      case DType::kInt32: return typed<int32_t>(args);
      case DType::kInt8: return typed<int8_t>(args);
      case DType::kUInt8: return typed<uint8_t>(args);
      default: return typed<float>(args);
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
      case DType::kInt64: return typed<int64_t>(args);
      case DType::kInt32: return typed<int32_t>(args);
      case DType::kInt8: return typed<int8_t>(args);
      case DType::kUInt8: return typed<uint8_t>(args);
      default: return typed<float>(args);
    }
  }

 private:
  // a ranks above b (values only; ties are broken by index by the caller).
  template <typename T>
  static bool above(T a, T b, bool largest) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return largest ? (std::isnan(a) && !std::isnan(b)) : (std::isnan(b) && !std::isnan(a));
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
      case 1: return typed<uint8_t>(args);
      case 4: return typed<uint32_t>(args);
      default: return typed<uint64_t>(args);
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
          int64_t i = idx64_ ? static_cast<const int64_t*>(args.inputs[1])[p]
                             : static_cast<const int32_t*>(args.inputs[1])[p];
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
}

}  // namespace minirt::cpu
