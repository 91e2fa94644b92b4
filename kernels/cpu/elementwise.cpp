// Elementwise ops on the CPU: activations and unary math, binary math with
// NumPy broadcasting (collapsed to an outer loop over an inner run in which
// each operand either advances or stays put, see broadcast.h), and the
// variadic Max, Min, Sum and Mean (one broadcast pass per input).
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/elementwise.h"

#include <algorithm>
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
    mask_ = n.outputs.size() > 1 && n.outputs[1] >= 0;  // Dropout's mask
    if (mask_) mask_dtype_ = g.values[n.outputs[1]].dtype;
  }
  void run(const KernelArgs& args) override {
    const void* xin = args.inputs[0];
    void* yout = args.outputs[0];
    if (a_.kind == UnaryKind::kCopy) {
      if (yout != xin && bytes_) std::memcpy(yout, xin, bytes_);
      // In inference (or with ratio 0) Dropout keeps every element.
      if (mask_) fill_ones(args.outputs[1]);
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
        case UnaryKind::kSin: for (int64_t i = b; i < e; ++i) y[i] = std::sin(x[i]); break;
        case UnaryKind::kCos: for (int64_t i = b; i < e; ++i) y[i] = std::cos(x[i]); break;
        case UnaryKind::kSign:
          // -1, 1, or the input itself for zeros and NaN.
          for (int64_t i = b; i < e; ++i) y[i] = x[i] > 0 ? 1.0f : (x[i] < 0 ? -1.0f : x[i]);
          break;
        case UnaryKind::kCopy: break;
      }
    };
    args.pool->parallel_for(count_, body, kGrain);
  }

 private:
  // Neg, Abs, Sign of integers.
  template <typename T>
  void integer(const T* x, T* y) const {
    switch (a_.kind) {
      case UnaryKind::kNeg:
        for (int64_t i = 0; i < count_; ++i) y[i] = -x[i];
        return;
      case UnaryKind::kSign:
        for (int64_t i = 0; i < count_; ++i) y[i] = static_cast<T>((x[i] > 0) - (x[i] < 0));
        return;
      default:
        for (int64_t i = 0; i < count_; ++i) y[i] = x[i] < 0 ? -x[i] : x[i];
    }
  }
  // Dropout's mask: bool from opset 10, the input's type before.
  void fill_ones(void* m) const {
    switch (mask_dtype_) {
      case DType::kFloat32: std::fill_n(static_cast<float*>(m), count_, 1.0f); return;
      case DType::kInt64: std::fill_n(static_cast<int64_t*>(m), count_, int64_t{1}); return;
      case DType::kInt32: std::fill_n(static_cast<int32_t*>(m), count_, int32_t{1}); return;
      default: std::memset(m, 1, static_cast<size_t>(count_));  // bool, uint8, int8
    }
  }
  UnaryAttrs a_;
  int64_t count_ = 0;
  DType dtype_ = DType::kFloat32;
  size_t bytes_ = 0;
  bool mask_ = false;
  DType mask_dtype_ = DType::kBool;
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
        if constexpr (std::is_signed_v<T>)
          if (b == T(-1)) return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
      }
      return static_cast<T>(a / b);
    case BinaryKind::kPow: return static_cast<T>(std::pow(a, b));
    case BinaryKind::kPRelu: return a < 0 ? a * b : a;
    case BinaryKind::kMax: return a > b ? a : b;
    case BinaryKind::kMin: return a < b ? a : b;
    case BinaryKind::kMod:
    case BinaryKind::kFMod:
      if constexpr (std::is_integral_v<T>) {
        // x mod 0 gives 0 rather than trapping; so does MIN mod -1 (whose
        // remainder is 0 anyway, but whose division overflows).
        if (b == 0) return T(0);
        if constexpr (std::is_signed_v<T>) {
          if (b == T(-1)) return T(0);
          T r = static_cast<T>(a % b);  // the sign of a
          if (k == BinaryKind::kMod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
          return r;
        } else {
          return static_cast<T>(a % b);
        }
      } else {
        T r = std::fmod(a, b);
        if (k == BinaryKind::kMod && r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
      }
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
    case BinaryKind::kMod: return inner_loop<T, BinaryKind::kMod>;
    case BinaryKind::kFMod: return inner_loop<T, BinaryKind::kFMod>;
  }
  return nullptr;
}

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(const Graph& g, const Node& n, int)
      : kind_(n.attrs_as<BinaryAttrs>().kind),
        bc_({in_shape(g, n, 0), in_shape(g, n, 1)}, out_shape(g, n, 0)),
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
      case DType::kInt8: return typed<int8_t>(args, args.inputs[1]);
      case DType::kUInt8: return typed<uint8_t>(args, args.inputs[1]);
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
        int64_t off[2];
        bc_.offsets(o, off);
        f(a + off[0], bc_.inner_step[0], b + off[1], bc_.inner_step[1], y + o * inner, inner);
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
  Broadcast<2> bc_;
  DType dtype_, exp_dtype_;
  int64_t exp_count_;
};

// Max, Min, Sum, Mean of one or more inputs: the first input broadcast into
// the output, then each further one combined into it in place (the output
// as operand a, never broadcast, the input as operand b), Mean divided at
// the end. Each pass splits its outer positions (or its one long run)
// across the pool.
class VariadicKernel final : public Kernel {
 public:
  VariadicKernel(const Graph& g, const Node& n, int) : kind_(n.attrs_as<VariadicAttrs>().kind) {
    dtype_ = in_dtype(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    count_ = shape_numel(y);
    for (size_t i = 0; i < n.inputs.size(); ++i) passes_.emplace_back(std::array<Shape, 2>{y, in_shape(g, n, i)}, y);
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
  // y = x broadcast (k == kNone), or y = k(y, x).
  template <typename T>
  static void copy_in(const T*, int64_t, const T* b, int64_t sb, T* y, int64_t n) {
    if (sb) std::memcpy(y, b, static_cast<size_t>(n) * sizeof(T));
    else std::fill(y, y + n, *b);
  }

  template <typename T>
  void pass(const Broadcast<2>& bc, InnerFn<T> f, const T* x, T* y, ThreadPool& pool) const {
    int64_t inner = bc.inner;
    if (bc.outer_count == 1) {
      auto flat = [&](int64_t i0, int64_t i1) {
        f(y + i0, 1, x + (bc.inner_step[1] ? i0 : 0), bc.inner_step[1], y + i0, i1 - i0);
      };
      pool.parallel_for(inner, flat, kGrain);
      return;
    }
    auto body = [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        int64_t off[2];
        bc.offsets(o, off);
        f(y + off[0], 1, x + off[1], bc.inner_step[1], y + off[0], inner);
      }
    };
    pool.parallel_for(bc.outer_count, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)));
  }

  template <typename T>
  void typed(const KernelArgs& args) const {
    T* y = static_cast<T*>(args.outputs[0]);
    if (count_ == 0) return;
    InnerFn<T> f = pick_inner<T>(kind_ == VariadicKind::kMax   ? BinaryKind::kMax
                                 : kind_ == VariadicKind::kMin ? BinaryKind::kMin
                                                               : BinaryKind::kAdd);
    for (size_t i = 0; i < passes_.size(); ++i)
      pass<T>(passes_[i], i == 0 ? copy_in<T> : f, static_cast<const T*>(args.inputs[i]), y, *args.pool);
    if constexpr (std::is_floating_point_v<T>) {
      if (kind_ == VariadicKind::kMean) {
        T n = static_cast<T>(passes_.size());
        auto body = [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) y[i] /= n;
        };
        args.pool->parallel_for(count_, body, kGrain);
      }
    }
  }

  VariadicKind kind_;
  DType dtype_;
  int64_t count_ = 0;
  std::vector<Broadcast<2>> passes_;  // per input: (output, input) -> output
};

std::unique_ptr<Kernel> make_unary(const Graph& g, const Node& n, int t) { return std::make_unique<UnaryKernel>(g, n, t); }
std::unique_ptr<Kernel> make_binary(const Graph& g, const Node& n, int t) { return std::make_unique<BinaryKernel>(g, n, t); }
std::unique_ptr<Kernel> make_variadic(const Graph& g, const Node& n, int t) {
  return std::make_unique<VariadicKernel>(g, n, t);
}

}  // namespace

void add_elementwise_kernels(std::vector<KernelEntry>& out) {
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu",
                         "Softplus", "Softsign", "ThresholdedRelu", "Mish", "Gelu", "Clip", "Exp", "Log", "Sqrt",
                         "Reciprocal", "Floor", "Ceil", "Erf", "Sin", "Cos", "Sign", "Neg", "Abs", "Identity",
                         "Dropout"})
    out.push_back({op, make_unary});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Mod"}) out.push_back({op, make_binary});
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) out.push_back({op, make_variadic});
}

}  // namespace minirt::cpu
