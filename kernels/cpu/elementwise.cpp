// Elementwise ops on the CPU: activations and unary math, binary math with
// NumPy broadcasting (collapsed to an outer loop over an inner run in which
// each operand either advances or stays put, see broadcast.h), and the
// variadic Max, Min, Sum and Mean (one broadcast pass per input).
//
// Float math is vectorized: the activations and Exp, Log, Erf, Sqrt, Abs,
// Neg, Reciprocal, Floor, Ceil, Sign through vmath.h; the inner runs of Add,
// Sub, Mul, Div, Max, Min, PRelu (and Pow by a scalar 0, 1, 2, 3, 0.5 or -1)
// in AVX-512 or AVX2 registers, whichever the kernel was made for, in each
// of the four shapes a run takes (both operands advancing, one of them a
// repeated value, both repeated). Those binary ops give the same bits as the
// scalar expressions (IEEE operations, and max/min/blend instructions whose
// NaN and signed-zero rules are those of a > b ? a : b). Integer types keep
// the scalar loops and their exact semantics.
//
// Threads: the work is cut into chunks of at least a grain of elements
// (smaller for costly math), so inputs of a few thousand elements run
// inline on the calling thread without waking the pool.
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise_isa.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vmath.h"
#include "runtime/ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 32768;     // elements per parallel chunk, at least, for cheap ops
constexpr int64_t kGrainMath = 8192;  // for the vectorized transcendental math
constexpr int64_t kGrainLibm = 2048;  // for math left to the scalar std:: functions
constexpr int64_t kBlock = 64;        // unary chunks start at multiples of this many elements

// Whether an activation costs an exp, log or division per element.
bool costly(const Activation& a) {
  const ActKind k = a.kind;
  return !(k == ActKind::kNone || k == ActKind::kRelu || k == ActKind::kLeakyRelu || k == ActKind::kClip ||
           k == ActKind::kHardSigmoid || k == ActKind::kHardSwish || k == ActKind::kThresholdedRelu);
}

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<UnaryAttrs>()) {
    count_ = shape_numel(in_shape(g, n, 0));
    dtype_ = in_dtype(g, n, 0);
    bytes_ = static_cast<size_t>(count_) * dtype_size(dtype_);
    mask_ = n.outputs.size() > 1 && n.outputs[1] >= 0;  // Dropout's mask
    if (mask_) mask_dtype_ = g.values[n.outputs[1]].dtype;
    has_math_ = math_fn_of(a_.kind, &math_);
    bool math = a_.kind == UnaryKind::kExp || a_.kind == UnaryKind::kLog || a_.kind == UnaryKind::kErf ||
                (a_.kind == UnaryKind::kActivation && costly(a_.act));
    bool libm = a_.kind == UnaryKind::kSin || a_.kind == UnaryKind::kCos;
    grain_ = libm ? kGrainLibm : math ? kGrainMath : kGrain;
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
    // Blocks of kBlock elements, so that every chunk but the last starts
    // and ends on a whole number of vectors.
    auto body = [&](int64_t b0, int64_t b1) {
      int64_t b = b0 * kBlock, e = std::min(count_, b1 * kBlock);
      if (a_.kind == UnaryKind::kActivation) {
        apply_activation(a_.act, x + b, y + b, e - b);
      } else if (has_math_) {  // the vector function the op table's row names
        apply_math(math_, x + b, y + b, e - b);
      } else if (a_.kind == UnaryKind::kSin) {
        for (int64_t i = b; i < e; ++i) y[i] = std::sin(x[i]);
      } else if (a_.kind == UnaryKind::kCos) {
        for (int64_t i = b; i < e; ++i) y[i] = std::cos(x[i]);
      }
    };
    args.pool->parallel_for((count_ + kBlock - 1) / kBlock, body, std::max<int64_t>(1, grain_ / kBlock));
  }

 private:
  // Neg, Abs, Sign of integers.
  template <typename T>
  void integer(const T* x, T* y) const {
    if (a_.kind == UnaryKind::kNeg) {
      for (int64_t i = 0; i < count_; ++i) y[i] = -x[i];
    } else if (a_.kind == UnaryKind::kSign) {
      for (int64_t i = 0; i < count_; ++i) y[i] = static_cast<T>((x[i] > 0) - (x[i] < 0));
    } else {  // Abs: the op table's third kSigned row
      for (int64_t i = 0; i < count_; ++i) y[i] = x[i] < 0 ? -x[i] : x[i];
    }
  }
  // Dropout's mask: bool from opset 10, the input's type before.
  void fill_ones(void* m) const {
    switch (mask_dtype_) {
      case DType::kFloat32:
        std::fill_n(static_cast<float*>(m), count_, 1.0f);
        return;
      case DType::kInt64:
        std::fill_n(static_cast<int64_t*>(m), count_, int64_t{1});
        return;
      case DType::kInt32:
        std::fill_n(static_cast<int32_t*>(m), count_, int32_t{1});
        return;
      default:
        std::memset(m, 1, static_cast<size_t>(count_));  // bool, uint8, int8
    }
  }
  UnaryAttrs a_;
  MathFn math_ = MathFn::kAbs;  // the function of the math kinds
  bool has_math_ = false;       // math_fn_of found one
  int64_t grain_ = kGrain;
  int64_t count_ = 0;
  DType dtype_ = DType::kFloat32;
  size_t bytes_ = 0;
  bool mask_ = false;
  DType mask_dtype_ = DType::kBool;
};

template <typename T>
inline T apply_binary(BinaryKind k, T a, T b) {
  switch (k) {
    case BinaryKind::kAdd:
      return a + b;
    case BinaryKind::kSub:
      return a - b;
    case BinaryKind::kMul:
      return a * b;
    case BinaryKind::kDiv:
      if constexpr (std::is_integral_v<T>) {
        // Integer division by zero, and MIN / -1, trap and would end the
        // process; from run-time data they give 0 and MIN (wrapping) instead.
        if (b == 0) return T(0);
        if constexpr (std::is_signed_v<T>)
          if (b == T(-1)) return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
      }
      return static_cast<T>(a / b);
    case BinaryKind::kPow:
      return static_cast<T>(std::pow(a, b));
    case BinaryKind::kPRelu:
      return a < 0 ? a * b : a;
    case BinaryKind::kMax:
      return a > b ? a : b;
    case BinaryKind::kMin:
      return a < b ? a : b;
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
    case BinaryKind::kCount:  // no kind
      break;
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
    case BinaryKind::kAdd:
      return inner_loop<T, BinaryKind::kAdd>;
    case BinaryKind::kSub:
      return inner_loop<T, BinaryKind::kSub>;
    case BinaryKind::kMul:
      return inner_loop<T, BinaryKind::kMul>;
    case BinaryKind::kDiv:
      return inner_loop<T, BinaryKind::kDiv>;
    case BinaryKind::kPow:
      return inner_loop<T, BinaryKind::kPow>;
    case BinaryKind::kPRelu:
      return inner_loop<T, BinaryKind::kPRelu>;
    case BinaryKind::kMax:
      return inner_loop<T, BinaryKind::kMax>;
    case BinaryKind::kMin:
      return inner_loop<T, BinaryKind::kMin>;
    case BinaryKind::kMod:
      return inner_loop<T, BinaryKind::kMod>;
    case BinaryKind::kFMod:
      return inner_loop<T, BinaryKind::kFMod>;
    case BinaryKind::kCount:  // no kind
      break;
  }
  return nullptr;
}

// ---- Vectorized float inner runs
//
// The same four shapes as inner_loop: a and b advancing, a advancing against
// a repeated b, the reverse, both repeated.

// The exponent a cheaper operation replaces (PowBy, elementwise_isa.h), or kNone.
PowBy pow_by(float e) {
  if (e == 0.0f) return PowBy::kZero;
  if (e == 1.0f) return PowBy::kOne;
  if (e == 2.0f) return PowBy::kTwo;
  if (e == 3.0f) return PowBy::kThree;
  if (e == 0.5f) return PowBy::kHalf;
  if (e == -1.0f) return PowBy::kMinusOne;
  return PowBy::kNone;
}

// The inner-run function for floats: vectorized for the ISA where the op
// has a vector form (elementwise_avx512.cpp, elementwise_avx2.cpp), else the
// scalar inner_loop.
InnerFn<float> pick_inner_float(BinaryKind k, SgemmIsa isa) {
#if MINIRT_VMATH_X86
  VecBinary v = VecBinary::kCount;
  switch (k) {
    case BinaryKind::kAdd:
      v = VecBinary::kAdd;
      break;
    case BinaryKind::kSub:
      v = VecBinary::kSub;
      break;
    case BinaryKind::kMul:
      v = VecBinary::kMul;
      break;
    case BinaryKind::kDiv:
      v = VecBinary::kDiv;
      break;
    case BinaryKind::kMax:
      v = VecBinary::kMax;
      break;
    case BinaryKind::kMin:
      v = VecBinary::kMin;
      break;
    case BinaryKind::kPRelu:
      v = VecBinary::kPRelu;
      break;
    case BinaryKind::kPow:  // its own kernel (pow_special), or libm
    case BinaryKind::kMod:
    case BinaryKind::kFMod:
    case BinaryKind::kCount:
      break;
  }
  if (v != VecBinary::kCount && isa == SgemmIsa::kAvx512)
    return elementwise_kernels_avx512().binary[static_cast<int>(v)];
  if (v != VecBinary::kCount && isa == SgemmIsa::kAvx2) return elementwise_kernels_avx2().binary[static_cast<int>(v)];
#endif
  return pick_inner<float>(k);
}

// y[0, n) = x^e for a special exponent e, in the kernel's ISA.
void pow_special(PowBy p, SgemmIsa isa, const float* x, float* y, int64_t n) {
  switch (p) {
    case PowBy::kZero:
      std::fill(y, y + n, 1.0f);
      return;  // even of NaN
    case PowBy::kOne:
      if (y != x) std::memmove(y, x, static_cast<size_t>(n) * sizeof(float));
      return;
    default:
      break;
  }
#if MINIRT_VMATH_X86
  if (isa == SgemmIsa::kAvx512) return elementwise_kernels_avx512().pow[static_cast<int>(p)](x, y, n);
  if (isa == SgemmIsa::kAvx2) return elementwise_kernels_avx2().pow[static_cast<int>(p)](x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    switch (p) {
      case PowBy::kTwo:
        y[i] = v * v;
        break;
      case PowBy::kThree:
        y[i] = static_cast<float>(static_cast<double>(v) * v * v);
        break;
      case PowBy::kHalf:
        y[i] = v == -vmath_detail::kInf ? vmath_detail::kInf : std::sqrt(v) + 0.0f;
        break;
      default:
        y[i] = 1.0f / v;
    }
  }
}

class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(const Graph& g, const Node& n, int)
      : kind_(n.attrs_as<BinaryAttrs>().kind),
        act_(n.attrs_as<BinaryAttrs>().act),
        bc_({in_shape(g, n, 0), in_shape(g, n, 1)}, out_shape(g, n, 0)),
        dtype_(in_dtype(g, n, 0)),
        exp_dtype_(in_dtype(g, n, 1)),
        exp_count_(shape_numel(in_shape(g, n, 1))),
        count_(shape_numel(out_shape(g, n, 0))),
        isa_(sgemm_default_isa()),
        float_fn_(pick_inner_float(kind_, isa_)) {
    bool libm = kind_ == BinaryKind::kPow || kind_ == BinaryKind::kMod || kind_ == BinaryKind::kFMod;
    grain_ = libm ? kGrainLibm : kGrain;
  }

  size_t workspace_bytes() const override {
    // Pow with an integer exponent converts it to float first.
    return exp_dtype_ != dtype_ ? static_cast<size_t>(exp_count_) * sizeof(float) : 0;
  }

  void run(const KernelArgs& args) override {
    switch (dtype_) {
      case DType::kInt64:
        return typed<int64_t>(args, args.inputs[1], pick_inner<int64_t>(kind_), kGrain);
      case DType::kInt32:
        return typed<int32_t>(args, args.inputs[1], pick_inner<int32_t>(kind_), kGrain);
      case DType::kInt8:
        return typed<int8_t>(args, args.inputs[1], pick_inner<int8_t>(kind_), kGrain);
      case DType::kUInt8:
        return typed<uint8_t>(args, args.inputs[1], pick_inner<uint8_t>(kind_), kGrain);
      default:
        break;
    }
    const void* b = args.inputs[1];
    if (exp_dtype_ != dtype_) {
      float* f = static_cast<float*>(args.workspace);
      for (int64_t i = 0; i < exp_count_; ++i)
        f[i] = exp_dtype_ == DType::kInt64 ? static_cast<float>(static_cast<const int64_t*>(b)[i])
                                           : static_cast<float>(static_cast<const int32_t*>(b)[i]);
      b = f;
    }
    if (kind_ == BinaryKind::kPow && exp_count_ == 1) {
      // One exponent for all (then y has a's elements, in a's order).
      PowBy p = pow_by(*static_cast<const float*>(b));
      if (p != PowBy::kNone) {
        const float* a = static_cast<const float*>(args.inputs[0]);
        float* y = static_cast<float*>(args.outputs[0]);
        auto body = [&](int64_t i0, int64_t i1) { pow_special(p, isa_, a + i0, y + i0, i1 - i0); };
        args.pool->parallel_for(count_, body, kGrain);
        return;
      }
    }
    typed<float>(args, b, float_fn_, grain_);
    if (!act_.none()) {
      // An activation fused after (BinaryAttrs::act; set on blocked ones only, applied here too).
      float* y = static_cast<float*>(args.outputs[0]);
      args.pool->parallel_for(
          count_, [&](int64_t i0, int64_t i1) { apply_activation(act_, y + i0, i1 - i0); }, kGrain);
    }
  }

 private:
  template <typename T>
  void typed(const KernelArgs& args, const void* bin, InnerFn<T> f, int64_t grain) const {
    const T* a = static_cast<const T*>(args.inputs[0]);
    const T* b = static_cast<const T*>(bin);
    T* y = static_cast<T*>(args.outputs[0]);
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
      args.pool->parallel_for(inner, flat, grain);
    } else {
      args.pool->parallel_for(bc_.outer_count, body, std::max<int64_t>(1, grain / std::max<int64_t>(inner, 1)));
    }
  }

  BinaryKind kind_;
  Activation act_;
  Broadcast<2> bc_;
  DType dtype_, exp_dtype_;
  int64_t exp_count_;
  int64_t count_;
  SgemmIsa isa_;  // the variant of the float loops, chosen when the kernel is made
  InnerFn<float> float_fn_;
  int64_t grain_ = kGrain;
};

// Max, Min, Sum, Mean of one or more inputs: the first input broadcast into
// the output, then each further one combined into it in place (the output
// as operand a, never broadcast, the input as operand b), Mean divided at
// the end. Each pass splits its outer positions (or its one long run)
// across the pool.
class VariadicKernel final : public Kernel {
 public:
  VariadicKernel(const Graph& g, const Node& n, int)
      : kind_(n.attrs_as<VariadicAttrs>().kind), isa_(sgemm_default_isa()) {
    dtype_ = in_dtype(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    count_ = shape_numel(y);
    for (size_t i = 0; i < n.inputs.size(); ++i) passes_.emplace_back(std::array<Shape, 2>{y, in_shape(g, n, i)}, y);
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
  // y = x broadcast (k == kNone), or y = k(y, x).
  template <typename T>
  static void copy_in(const T*, int64_t, const T* b, int64_t sb, T* y, int64_t n) {
    if (sb)
      std::memcpy(y, b, static_cast<size_t>(n) * sizeof(T));
    else
      std::fill(y, y + n, *b);
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
    BinaryKind k = kind_ == VariadicKind::kMax   ? BinaryKind::kMax
                   : kind_ == VariadicKind::kMin ? BinaryKind::kMin
                                                 : BinaryKind::kAdd;
    InnerFn<T> f;
    if constexpr (std::is_same_v<T, float>)
      f = pick_inner_float(k, isa_);
    else
      f = pick_inner<T>(k);
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
  SgemmIsa isa_;
  DType dtype_;
  int64_t count_ = 0;
  std::vector<Broadcast<2>> passes_;  // per input: (output, input) -> output
};

std::unique_ptr<Kernel> make_unary(const Graph& g, const Node& n, int t) {
  return std::make_unique<UnaryKernel>(g, n, t);
}
std::unique_ptr<Kernel> make_binary(const Graph& g, const Node& n, int t) {
  return std::make_unique<BinaryKernel>(g, n, t);
}
std::unique_ptr<Kernel> make_variadic(const Graph& g, const Node& n, int t) {
  return std::make_unique<VariadicKernel>(g, n, t);
}

}  // namespace

void add_elementwise_kernels(std::vector<KernelEntry>& out) {
  // The activation and unary math ops of the op table (runtime/ops/op_table.h).
  for (const ActInfo& e : kActInfo)
    if (e.op) out.push_back({e.op, make_unary});
  for (const UnaryInfo& e : kUnaryInfo)
    if (e.op) out.push_back({e.op, make_unary});
  for (const char* op : {"Identity", "Dropout"}) out.push_back({op, make_unary});
  // A QuantizeLinear -> DequantizeLinear pair (fold_quantize_pairs, domain minirt).
  out.push_back({"QuantizeDequantize", make_unary});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Mod"}) out.push_back({op, make_binary});
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) out.push_back({op, make_variadic});
}

}  // namespace minirt::cpu
