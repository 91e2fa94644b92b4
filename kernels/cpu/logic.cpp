// Comparisons, boolean ops and Where on the CPU. Bools are one byte, 0 or 1.
// The two- and three-input ops walk the broadcast iteration space of
// broadcast.h: an outer loop over inner runs in which each operand either
// advances or stays put.
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/logic.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace minirt::cpu {

namespace {

constexpr int64_t kGrain = 16384;  // elements per parallel chunk, at least

template <LogicKind K, typename T>
inline uint8_t apply_logic(T a, T b) {
  if constexpr (K == LogicKind::kEqual)
    return a == b;
  else if constexpr (K == LogicKind::kGreater)
    return a > b;
  else if constexpr (K == LogicKind::kLess)
    return a < b;
  else if constexpr (K == LogicKind::kGreaterOrEqual)
    return a >= b;
  else if constexpr (K == LogicKind::kLessOrEqual)
    return a <= b;
  else if constexpr (K == LogicKind::kAnd)
    return (a != 0) & (b != 0);
  else if constexpr (K == LogicKind::kOr)
    return (a != 0) | (b != 0);
  else
    return (a != 0) ^ (b != 0);  // kXor
}

template <LogicKind K, typename T>
void logic_run(const T* a, int64_t sa, const T* b, int64_t sb, uint8_t* y, int64_t n) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) y[i] = apply_logic<K, T>(a[i], b[i]);
  } else if (sa) {
    T bv = *b;
    for (int64_t i = 0; i < n; ++i) y[i] = apply_logic<K, T>(a[i], bv);
  } else if (sb) {
    T av = *a;
    for (int64_t i = 0; i < n; ++i) y[i] = apply_logic<K, T>(av, b[i]);
  } else {
    std::memset(y, apply_logic<K, T>(*a, *b), static_cast<size_t>(n));
  }
}

using RunFn = void (*)(const void*, int64_t, const void*, int64_t, uint8_t*, int64_t);

template <LogicKind K, typename T>
void logic_run_erased(const void* a, int64_t sa, const void* b, int64_t sb, uint8_t* y, int64_t n) {
  logic_run<K, T>(static_cast<const T*>(a), sa, static_cast<const T*>(b), sb, y, n);
}

template <LogicKind K>
RunFn pick_type(DType t) {
  switch (t) {
    case DType::kFloat32:
      return logic_run_erased<K, float>;
    case DType::kInt64:
      return logic_run_erased<K, int64_t>;
    case DType::kInt32:
      return logic_run_erased<K, int32_t>;
    case DType::kInt8:
      return logic_run_erased<K, int8_t>;
    default:
      return logic_run_erased<K, uint8_t>;  // uint8, bool
  }
}

RunFn pick(LogicKind k, DType t) {
  switch (k) {
    case LogicKind::kEqual:
      return pick_type<LogicKind::kEqual>(t);
    case LogicKind::kGreater:
      return pick_type<LogicKind::kGreater>(t);
    case LogicKind::kLess:
      return pick_type<LogicKind::kLess>(t);
    case LogicKind::kGreaterOrEqual:
      return pick_type<LogicKind::kGreaterOrEqual>(t);
    case LogicKind::kLessOrEqual:
      return pick_type<LogicKind::kLessOrEqual>(t);
    case LogicKind::kAnd:
      return logic_run_erased<LogicKind::kAnd, uint8_t>;
    case LogicKind::kOr:
      return logic_run_erased<LogicKind::kOr, uint8_t>;
    case LogicKind::kXor:
      return logic_run_erased<LogicKind::kXor, uint8_t>;
    default:
      return nullptr;
  }
}

// Equal, Greater, Less, GreaterOrEqual, LessOrEqual, And, Or, Xor.
class CompareKernel final : public Kernel {
 public:
  CompareKernel(const Graph& g, const Node& n, int)
      : fn_(pick(n.attrs_as<LogicAttrs>().kind, in_dtype(g, n, 0))),
        es_(static_cast<int64_t>(dtype_size(in_dtype(g, n, 0)))),
        bc_({in_shape(g, n, 0), in_shape(g, n, 1)}, out_shape(g, n, 0)),
        count_(shape_numel(out_shape(g, n, 0))) {}

  void run(const KernelArgs& args) override {
    const char* a = static_cast<const char*>(args.inputs[0]);
    const char* b = static_cast<const char*>(args.inputs[1]);
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]);
    if (count_ == 0) return;
    int64_t inner = bc_.inner, sa = bc_.inner_step[0], sb = bc_.inner_step[1];
    if (bc_.outer_count == 1) {
      auto flat = [&](int64_t i0, int64_t i1) {
        fn_(a + (sa ? i0 : 0) * es_, sa, b + (sb ? i0 : 0) * es_, sb, y + i0, i1 - i0);
      };
      args.pool->parallel_for(inner, flat, kGrain);
      return;
    }
    auto body = [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        int64_t off[2];
        bc_.offsets(o, off);
        fn_(a + off[0] * es_, sa, b + off[1] * es_, sb, y + o * inner, inner);
      }
    };
    args.pool->parallel_for(bc_.outer_count, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)));
  }

 private:
  RunFn fn_;
  int64_t es_;
  Broadcast<2> bc_;
  int64_t count_;
};

class NotKernel final : public Kernel {
 public:
  NotKernel(const Graph& g, const Node& n, int) : count_(shape_numel(in_shape(g, n, 0))) {}
  void run(const KernelArgs& args) override {
    const uint8_t* x = static_cast<const uint8_t*>(args.inputs[0]);
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]);
    for (int64_t i = 0; i < count_; ++i) y[i] = x[i] == 0;
  }

 private:
  int64_t count_;
};

// IsNaN, IsInf: float32 in, bool out.
class ClassifyKernel final : public Kernel {
 public:
  ClassifyKernel(const Graph& g, const Node& n, int)
      : count_(shape_numel(in_shape(g, n, 0))), attrs_(n.attrs_as<LogicAttrs>()) {}
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    uint8_t* y = static_cast<uint8_t*>(args.outputs[0]);
    if (attrs_.kind == LogicKind::kIsNaN) {
      for (int64_t i = 0; i < count_; ++i) y[i] = std::isnan(x[i]);
      return;
    }
    const bool pos = attrs_.detect_positive, neg = attrs_.detect_negative;
    for (int64_t i = 0; i < count_; ++i) y[i] = std::isinf(x[i]) && (x[i] > 0 ? pos : neg);
  }

 private:
  int64_t count_;
  LogicAttrs attrs_;
};

// Where(cond, x, y): elements are moved as raw bits of their size.
template <typename T>
void where_run(const uint8_t* c, int64_t sc, const T* x, int64_t sx, const T* y, int64_t sy, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = c[i * sc] ? x[i * sx] : y[i * sy];
}

class WhereKernel final : public Kernel {
 public:
  WhereKernel(const Graph& g, const Node& n, int)
      : es_(dtype_size(in_dtype(g, n, 1))),
        bc_({in_shape(g, n, 0), in_shape(g, n, 1), in_shape(g, n, 2)}, out_shape(g, n, 0)),
        count_(shape_numel(out_shape(g, n, 0))) {}

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
    const uint8_t* c = static_cast<const uint8_t*>(args.inputs[0]);
    const T* x = static_cast<const T*>(args.inputs[1]);
    const T* y = static_cast<const T*>(args.inputs[2]);
    T* out = static_cast<T*>(args.outputs[0]);
    if (count_ == 0) return;
    int64_t inner = bc_.inner;
    const int64_t* st = bc_.inner_step;
    if (bc_.outer_count == 1) {
      auto flat = [&](int64_t i0, int64_t i1) {
        where_run<T>(c + (st[0] ? i0 : 0), st[0], x + (st[1] ? i0 : 0), st[1], y + (st[2] ? i0 : 0), st[2], out + i0,
                     i1 - i0);
      };
      args.pool->parallel_for(inner, flat, kGrain);
      return;
    }
    auto body = [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        int64_t off[3];
        bc_.offsets(o, off);
        where_run<T>(c + off[0], st[0], x + off[1], st[1], y + off[2], st[2], out + o * inner, inner);
      }
    };
    args.pool->parallel_for(bc_.outer_count, body, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)));
  }

  size_t es_;
  Broadcast<3> bc_;
  int64_t count_;
};

template <typename K>
std::unique_ptr<Kernel> make(const Graph& g, const Node& n, int t) {
  return std::make_unique<K>(g, n, t);
}

}  // namespace

void add_logic_kernels(std::vector<KernelEntry>& out) {
  for (const char* op : {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"})
    out.push_back({op, make<CompareKernel>});
  out.push_back({"Not", make<NotKernel>});
  out.push_back({"IsNaN", make<ClassifyKernel>});
  out.push_back({"IsInf", make<ClassifyKernel>});
  out.push_back({"Where", make<WhereKernel>});
}

}  // namespace minirt::cpu
