// Elementwise ops on the CPU: activations and unary math, and binary math
// with NumPy broadcasting (collapsed to an outer loop over an inner run in
// which each operand either advances or stays put).
#include "kernels/cpu/registry.h"
#include "runtime/ops/elementwise.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk, at least

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<UnaryAttrs>()) {
    count_ = shape_numel(in_shape(g, n, 0));
    dtype_ = in_dtype(g, n, 0);
    bytes_ = static_cast<size_t>(count_) * dtype_size(dtype_);
  }
  void run(const KernelArgs& args) override {
    const void* xin = args.inputs[0];
    void* yout = args.outputs[0];
    if (a_.kind == UnaryKind::kCopy) {
      if (yout != xin && bytes_) std::memcpy(yout, xin, bytes_);
      return;
    }
    if (dtype_ == DType::kInt64) return integer<int64_t>(static_cast<const int64_t*>(xin), static_cast<int64_t*>(yout));
    if (dtype_ == DType::kInt32) return integer<int32_t>(static_cast<const int32_t*>(xin), static_cast<int32_t*>(yout));
    const float* x = static_cast<const float*>(xin);
    float* y = static_cast<float*>(yout);
    auto body = [&](int64_t b, int64_t e) {
      switch (a_.kind) {
        case UnaryKind::kActivation:
          if (y != x) std::memcpy(y + b, x + b, static_cast<size_t>(e - b) * sizeof(float));
          a_.act.apply(y + b, e - b);
          break;
        case UnaryKind::kExp: for (int64_t i = b; i < e; ++i) y[i] = std::exp(x[i]); break;
        case UnaryKind::kLog: for (int64_t i = b; i < e; ++i) y[i] = std::log(x[i]); break;
        case UnaryKind::kSqrt: for (int64_t i = b; i < e; ++i) y[i] = std::sqrt(x[i]); break;
        case UnaryKind::kNeg: for (int64_t i = b; i < e; ++i) y[i] = -x[i]; break;
        case UnaryKind::kAbs: for (int64_t i = b; i < e; ++i) y[i] = std::fabs(x[i]); break;
        case UnaryKind::kReciprocal: for (int64_t i = b; i < e; ++i) y[i] = 1.0f / x[i]; break;
        case UnaryKind::kFloor: for (int64_t i = b; i < e; ++i) y[i] = std::floor(x[i]); break;
        case UnaryKind::kCeil: for (int64_t i = b; i < e; ++i) y[i] = std::ceil(x[i]); break;
        case UnaryKind::kErf: for (int64_t i = b; i < e; ++i) y[i] = std::erf(x[i]); break;
        case UnaryKind::kCopy: break;
      }
    };
    args.pool->parallel_for(count_, body, kGrain);
  }

 private:
  template <typename T>
  void integer(const T* x, T* y) const {
    for (int64_t i = 0; i < count_; ++i) y[i] = a_.kind == UnaryKind::kNeg ? -x[i] : (x[i] < 0 ? -x[i] : x[i]);
  }
  UnaryAttrs a_;
  int64_t count_ = 0;
  DType dtype_ = DType::kFloat32;
  size_t bytes_ = 0;
};

// The broadcast iteration space: outer positions, each an inner run of
// `inner` elements where operand k advances by inner_step[k] (0 or 1).
struct Broadcast {
  int64_t inner = 1;
  int64_t inner_step[2] = {1, 1};
  Shape outer_shape;                  // collapsed outer dims
  std::vector<int64_t> outer_stride[2];
  int64_t outer_count = 1;

  Broadcast(const Shape& a, const Shape& b, const Shape& y) {
    size_t r = y.size();
    auto padded = [&](const Shape& s) {
      Shape p(r - s.size(), 1);
      p.insert(p.end(), s.begin(), s.end());
      return p;
    };
    Shape pa = padded(a), pb = padded(b);
    // Collapse adjacent axes with the same broadcast pattern.
    struct Axis {
      int64_t len;
      bool ba, bb;  // operand broadcasts along this axis
    };
    std::vector<Axis> axes;
    for (size_t i = 0; i < r; ++i) {
      if (y[i] == 1) continue;
      Axis ax{y[i], pa[i] == 1, pb[i] == 1};
      if (!axes.empty() && axes.back().ba == ax.ba && axes.back().bb == ax.bb) axes.back().len *= ax.len;
      else axes.push_back(ax);
    }
    if (axes.empty()) axes.push_back({1, false, false});
    Axis last = axes.back();
    axes.pop_back();
    inner = last.len;
    inner_step[0] = last.ba ? 0 : 1;
    inner_step[1] = last.bb ? 0 : 1;
    // Outer strides in elements of each operand (0 where it broadcasts).
    int64_t sa = last.ba ? 1 : last.len, sb = last.bb ? 1 : last.len;
    std::vector<int64_t> stra, strb;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      stra.insert(stra.begin(), it->ba ? 0 : sa);
      strb.insert(strb.begin(), it->bb ? 0 : sb);
      if (!it->ba) sa *= it->len;
      if (!it->bb) sb *= it->len;
      outer_shape.insert(outer_shape.begin(), it->len);
    }
    outer_stride[0] = stra;
    outer_stride[1] = strb;
    for (int64_t d : outer_shape) outer_count *= d;
  }

  // Element offsets of operands a and b at the start of outer position o.
  void offsets(int64_t o, int64_t& oa, int64_t& ob) const {
    oa = ob = 0;
    for (int64_t d = static_cast<int64_t>(outer_shape.size()) - 1; d >= 0; --d) {
      int64_t i = o % outer_shape[d];
      o /= outer_shape[d];
      oa += i * outer_stride[0][d];
      ob += i * outer_stride[1][d];
    }
  }
};

template <typename T>
inline T apply_binary(BinaryKind k, T a, T b) {
  switch (k) {
    case BinaryKind::kAdd: return a + b;
    case BinaryKind::kSub: return a - b;
    case BinaryKind::kMul: return a * b;
    case BinaryKind::kDiv:
      if constexpr (std::is_integral_v<T>) {
        // Integer division by zero, and MIN / -1, trap and would end the
        // process; from run-time data they give 0 and MIN (wrapping) instead.
        if (b == 0) return T(0);
        if (b == T(-1)) return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
      }
      return a / b;
    case BinaryKind::kPow: return static_cast<T>(std::pow(a, b));
    case BinaryKind::kPRelu: return a < 0 ? a * b : a;
    case BinaryKind::kMax: return a > b ? a : b;
    case BinaryKind::kMin: return a < b ? a : b;
  }
  return a;
}

template <typename T, BinaryKind K>
void inner_loop(const T* a, int64_t sa, const T* b, int64_t sb, T* y, int64_t n) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) y[i] = apply_binary<T>(K, a[i], b[i]);
  } else if (sa) {
    T bv = *b;
    for (int64_t i = 0; i < n; ++i) y[i] = apply_binary<T>(K, a[i], bv);
  } else if (sb) {
    T av = *a;
    for (int64_t i = 0; i < n; ++i) y[i] = apply_binary<T>(K, av, b[i]);
  } else {
    T v = apply_binary<T>(K, *a, *b);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

template <typename T>
using InnerFn = void (*)(const T*, int64_t, const T*, int64_t, T*, int64_t);

template <typename T>
InnerFn<T> pick_inner(BinaryKind k) {
  switch (k) {
    case BinaryKind::kAdd: return inner_loop<T, BinaryKind::kAdd>;
    case BinaryKind::kSub: return inner_loop<T, BinaryKind::kSub>;
    case BinaryKind::kMul: return inner_loop<T, BinaryKind::kMul>;
    case BinaryKind::kDiv: return inner_loop<T, BinaryKind::kDiv>;
    case BinaryKind::kPow: return inner_loop<T, BinaryKind::kPow>;
    case BinaryKind::kPRelu: return inner_loop<T, BinaryKind::kPRelu>;
    case BinaryKind::kMax: return inner_loop<T, BinaryKind::kMax>;
    case BinaryKind::kMin: return inner_loop<T, BinaryKind::kMin>;
  }
  return nullptr;
}

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(const Graph& g, const Node& n, int)
      : kind_(n.attrs_as<BinaryAttrs>().kind),
        bc_(in_shape(g, n, 0), in_shape(g, n, 1), out_shape(g, n, 0)),
        dtype_(in_dtype(g, n, 0)),
        exp_dtype_(in_dtype(g, n, 1)),
        exp_count_(shape_numel(in_shape(g, n, 1))) {}

  size_t workspace_bytes() const override {
    // Pow with an integer exponent converts it to float first.
    return exp_dtype_ != dtype_ ? static_cast<size_t>(exp_count_) * sizeof(float) : 0;
  }

  void run(const KernelArgs& args) override {
    switch (dtype_) {
      case DType::kInt64: return typed<int64_t>(args, args.inputs[1]);
      case DType::kInt32: return typed<int32_t>(args, args.inputs[1]);
      default: break;
    }
    const void* b = args.inputs[1];
    if (exp_dtype_ != dtype_) {
      float* f = static_cast<float*>(args.workspace);
      for (int64_t i = 0; i < exp_count_; ++i)
        f[i] = exp_dtype_ == DType::kInt64 ? static_cast<float>(static_cast<const int64_t*>(b)[i])
                                           : static_cast<float>(static_cast<const int32_t*>(b)[i]);
      b = f;
    }
    typed<float>(args, b);
  }

 private:
  template <typename T>
  void typed(const KernelArgs& args, const void* bin) const {
    const T* a = static_cast<const T*>(args.inputs[0]);
    const T* b = static_cast<const T*>(bin);
    T* y = static_cast<T*>(args.outputs[0]);
    InnerFn<T> f = pick_inner<T>(kind_);
    int64_t inner = bc_.inner;
    auto body = [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        int64_t oa, ob;
        bc_.offsets(o, oa, ob);
        f(a + oa, bc_.inner_step[0], b + ob, bc_.inner_step[1], y + o * inner, inner);
      }
    };
    if (bc_.outer_count == 1) {
      // One long run: split it instead.
      auto flat = [&](int64_t i0, int64_t i1) {
        f(a + (bc_.inner_step[0] ? i0 : 0), bc_.inner_step[0], b + (bc_.inner_step[1] ? i0 : 0), bc_.inner_step[1],
          y + i0, i1 - i0);
      };
      args.pool->parallel_for(inner, flat, kGrain);
    } else {
      args.pool->parallel_for(bc_.outer_count, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)));
    }
  }

  BinaryKind kind_;
  Broadcast bc_;
  DType dtype_, exp_dtype_;
  int64_t exp_count_;
};

std::unique_ptr<Kernel> make_unary(const Graph& g, const Node& n, int t) { return std::make_unique<UnaryKernel>(g, n, t); }
std::unique_ptr<Kernel> make_binary(const Graph& g, const Node& n, int t) { return std::make_unique<BinaryKernel>(g, n, t); }

}  // namespace

void add_elementwise_kernels(std::vector<KernelEntry>& out) {
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Clip", "Exp", "Log",
                         "Sqrt", "Reciprocal", "Floor", "Ceil", "Erf", "Neg", "Abs", "Identity", "Dropout"})
    out.push_back({op, make_unary});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "PRelu"}) out.push_back({op, make_binary});
}

}  // namespace minirt::cpu
