// Elementwise kernels: activations (the same formulas as runtime/ops/
// activation.h, in device float math), unary math, per-channel bias plus
// activation after a convolution, and broadcast arithmetic over up to four
// operands, Cast between the dtypes the support rule takes, and the float16
// conversions around convolutions and products under --math fp16. Each is a
// grid-stride loop over 64-bit indices. The unary and binary kernels switch
// on the runtime's own UnaryKind and BinaryKind (runtime/ops/elementwise_kinds.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/kernels.h"

namespace minirt::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65536) b = 65536;  // the loops stride over the rest
  return static_cast<unsigned>(b);
}

__device__ __forceinline__ float softplus(float x) { return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
// std::max / std::min as the CPU kernels use them (NaN handling included).
__device__ __forceinline__ float cmax(float a, float b) { return a < b ? b : a; }
__device__ __forceinline__ float cmin(float a, float b) { return b < a ? b : a; }

// Activation K of x: the formulas of Activation::apply (runtime/ops/activation.h)
// in device float math. The last branch names a kind without a form.
template <ActKind K>
__device__ __forceinline__ float act_form(float x, const ActParams& a) {
  if constexpr (K == ActKind::kNone) {
    return x;
  } else if constexpr (K == ActKind::kRelu) {
    return x > 0.0f ? x : 0.0f;
  } else if constexpr (K == ActKind::kLeakyRelu) {
    return x >= 0.0f ? x : a.alpha * x;
  } else if constexpr (K == ActKind::kClip) {
    return cmin(cmax(x, a.alpha), a.beta);
  } else if constexpr (K == ActKind::kSigmoid) {
    return 1.0f / (1.0f + expf(-x));
  } else if constexpr (K == ActKind::kHardSigmoid) {
    return cmin(cmax(fmaf(a.alpha, x, a.beta), 0.0f), 1.0f);  // one rounding, as the CPU
  } else if constexpr (K == ActKind::kHardSwish) {
    return x * cmin(cmax(x / 6.0f + 0.5f, 0.0f), 1.0f);
  } else if constexpr (K == ActKind::kTanh) {
    return tanhf(x);
  } else if constexpr (K == ActKind::kElu) {
    return x >= 0.0f ? x : a.alpha * expm1f(x);
  } else if constexpr (K == ActKind::kSelu) {
    return x > 0.0f ? a.beta * x : a.beta * a.alpha * expm1f(x);
  } else if constexpr (K == ActKind::kCelu) {
    return cmax(x, 0.0f) + cmin(a.alpha * expm1f(x / a.alpha), 0.0f);
  } else if constexpr (K == ActKind::kSoftplus) {
    return softplus(x);
  } else if constexpr (K == ActKind::kSoftsign) {
    return x / (1.0f + fabsf(x));
  } else if constexpr (K == ActKind::kThresholdedRelu) {
    return x > a.alpha ? x : 0.0f;
  } else if constexpr (K == ActKind::kMish) {
    return x * tanhf(softplus(x));
  } else if constexpr (K == ActKind::kGelu) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  } else if constexpr (K == ActKind::kGeluTanh) {
    float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  } else if constexpr (K == ActKind::kSilu) {
    return x / (1.0f + expf(-x));
  } else if constexpr (K == ActKind::kQuantGrid) {  // rintf: to nearest even, as the CPU
    return a.alpha * rintf(cmin(cmax(x / a.alpha, a.beta), a.gamma));
  } else {
    static_assert(K == ActKind::kNone, "an ActKind without a CUDA form");
    return x;
  }
}

__device__ float apply_act(const ActParams& a, float x) {
  // A case per row of the op table (runtime/ops/op_table.h).
  switch (a.kind) {
#define MINIRT_ACT_CASE(Kind, ...) \
  case ActKind::k##Kind:           \
    return act_form<ActKind::k##Kind>(x, a);
    MINIRT_ACTIVATIONS(MINIRT_ACT_CASE)
#undef MINIRT_ACT_CASE
    case ActKind::kCount:  // no kind
      break;
  }
  return x;
}

__global__ void activation_kernel(const float* x, float* y, int64_t n, ActParams act) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_act(act, x[i]);
}

__device__ float apply_unary(UnaryKind op, float x) {
  switch (op) {
    case UnaryKind::kExp:
      return expf(x);
    case UnaryKind::kLog:
      return logf(x);
    case UnaryKind::kSqrt:
      return sqrtf(x);
    case UnaryKind::kNeg:
      return -x;
    case UnaryKind::kAbs:
      return fabsf(x);
    case UnaryKind::kReciprocal:
      return 1.0f / x;
    case UnaryKind::kFloor:
      return floorf(x);
    case UnaryKind::kCeil:
      return ceilf(x);
    case UnaryKind::kErf:
      return erff(x);
    case UnaryKind::kSin:
      return sinf(x);
    case UnaryKind::kCos:
      return cosf(x);
    case UnaryKind::kSign:
      return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
    case UnaryKind::kActivation:  // launch_activation's, never launched here (unary_on_device)
    case UnaryKind::kCopy:        // a device copy, never launched here
    case UnaryKind::kCount:       // no kind
      return x;
  }
  return x;
}

__global__ void unary_kernel(UnaryKind op, const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_unary(op, x[i]);
}

__global__ void bias_act_kernel(float* y, const float* bias, int64_t channels, int64_t inner, int64_t n,
                                ActParams act) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = y[i];
    if (bias) v += bias[(i / inner) % channels];
    y[i] = apply_act(act, v);
  }
}

__device__ __forceinline__ float apply_binary(BinaryKind op, float a, float b) {
  switch (op) {
    case BinaryKind::kAdd:
      return a + b;
    case BinaryKind::kSub:
      return a - b;
    case BinaryKind::kMul:
      return a * b;
    case BinaryKind::kDiv:
      return a / b;
    case BinaryKind::kPow:
      return powf(a, b);
    case BinaryKind::kPRelu:
      return a < 0.0f ? a * b : a;
    case BinaryKind::kMax:
      return a > b ? a : b;
    case BinaryKind::kMin:
      return a < b ? a : b;
    case BinaryKind::kMod:  // not on cuda (binary_on_device), never launched
    case BinaryKind::kFMod:
    case BinaryKind::kCount:  // no kind
      return a;
  }
  return a;
}

struct Operands {
  const float* p[kMaxInputs];
};

__global__ void broadcast_kernel(BinaryKind op, bool mean, Operands x, float* y, BroadcastArgs a) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[kMaxInputs] = {0, 0, 0, 0};
    int64_t rest = i;
    for (int d = a.rank - 1; d >= 0; --d) {
      int64_t c = rest % a.shape[d];
      rest /= a.shape[d];
      for (int k = 0; k < a.inputs; ++k) off[k] += c * a.stride[k][d];
    }
    float v = x.p[0][off[0]];
    for (int k = 1; k < a.inputs; ++k) v = apply_binary(op, v, x.p[k][off[k]]);
    if (mean) v /= static_cast<float>(a.inputs);
    y[i] = v;
  }
}

// ---- Cast ----

template <typename T>
struct Limits;
template <>
struct Limits<int64_t> {
  static constexpr int64_t lo = INT64_MIN, hi = INT64_MAX;
};
template <>
struct Limits<int32_t> {
  static constexpr int32_t lo = INT32_MIN, hi = INT32_MAX;
};
template <>
struct Limits<int8_t> {
  static constexpr int8_t lo = INT8_MIN, hi = INT8_MAX;
};
template <>
struct Limits<uint8_t> {
  static constexpr uint8_t lo = 0, hi = UINT8_MAX;
};

// The CPU's saturate_from_float (kernels/cpu/shape.cpp): the bounds as
// floats, NaN to 0.
template <typename To>
__device__ __forceinline__ To from_float(float v) {
  if (!(v == v)) return To(0);
  const float lo = static_cast<float>(Limits<To>::lo);
  const float hi = static_cast<float>(Limits<To>::hi);
  if (v <= lo) return Limits<To>::lo;
  if (v >= hi) return Limits<To>::hi;
  return static_cast<To>(v);
}

// One element, From to To; `to_bool` writes x != 0 as 0 or 1.
template <typename From, typename To>
__device__ __forceinline__ To convert(From x, bool to_bool) {
  if (to_bool) return static_cast<To>(x != From(0) ? 1 : 0);
  if constexpr (std::is_same_v<From, float> && !std::is_same_v<To, float>)
    return from_float<To>(x);
  else
    return static_cast<To>(x);
}

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, int64_t n, bool to_bool) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = convert<From, To>(x[i], to_bool);
}

template <typename From>
bool cast_from(const From* x, void* y, DType to, int64_t n, cudaStream_t stream) {
  switch (to) {
    case DType::kFloat32:
      cast_kernel<From, float><<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<float*>(y), n, false);
      return true;
    case DType::kInt64:
      cast_kernel<From, int64_t><<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<int64_t*>(y), n, false);
      return true;
    case DType::kInt32:
      cast_kernel<From, int32_t><<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<int32_t*>(y), n, false);
      return true;
    case DType::kInt8:
      cast_kernel<From, int8_t><<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<int8_t*>(y), n, false);
      return true;
    case DType::kUInt8:
    case DType::kBool:
      cast_kernel<From, uint8_t>
          <<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<uint8_t*>(y), n, to == DType::kBool);
      return true;
    default:
      return false;
  }
}

__global__ void to_half_kernel(const float* x, __half* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = __float2half_rn(x[i]);
}

__global__ void from_half_kernel(const __half* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = __half2float(x[i]);
}

__global__ void to_bf16_kernel(const float* x, __nv_bfloat16* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

__global__ void from_bf16_kernel(const __nv_bfloat16* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = __bfloat162float(x[i]);
}

}  // namespace

void launch_to_16(bool bf16, const float* x, void* h, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (bf16)
    to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<__nv_bfloat16*>(h), n);
  else
    to_half_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, static_cast<__half*>(h), n);
}

void launch_from_16(bool bf16, const void* h, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (bf16)
    from_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(h), y, n);
  else
    from_half_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(h), y, n);
}

void launch_activation(const float* x, float* y, int64_t n, ActParams act, cudaStream_t stream) {
  if (n <= 0) return;
  activation_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, act);
}

void launch_unary(UnaryKind op, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, x, y, n);
}

void launch_bias_act(float* y, const float* bias, int64_t outer, int64_t channels, int64_t inner, ActParams act,
                     cudaStream_t stream) {
  int64_t n = outer * channels * inner;
  if (n <= 0) return;
  bias_act_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, bias, channels, inner, n, act);
}

void launch_broadcast(BinaryKind op, bool mean, const float* const* x, float* y, const BroadcastArgs& args,
                      cudaStream_t stream) {
  if (args.count <= 0) return;
  Operands ops{};
  for (int k = 0; k < args.inputs && k < kMaxInputs; ++k) ops.p[k] = x[k];
  broadcast_kernel<<<blocks_for(args.count), kThreads, 0, stream>>>(op, mean, ops, y, args);
}

bool launch_cast(const void* x, DType from, void* y, DType to, int64_t n, cudaStream_t stream) {
  if (n <= 0) return true;
  switch (from) {
    case DType::kFloat32:
      return cast_from(static_cast<const float*>(x), y, to, n, stream);
    case DType::kInt64:
      return cast_from(static_cast<const int64_t*>(x), y, to, n, stream);
    case DType::kInt32:
      return cast_from(static_cast<const int32_t*>(x), y, to, n, stream);
    case DType::kInt8:
      return cast_from(static_cast<const int8_t*>(x), y, to, n, stream);
    case DType::kUInt8:
    case DType::kBool:
      return cast_from(static_cast<const uint8_t*>(x), y, to, n, stream);
    default:
      return false;
  }
}

}  // namespace minirt::cuda
