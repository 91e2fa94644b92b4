// Elementwise kernels: activations (the same formulas as runtime/ops/
// activation.h, in device float math), unary math, per-channel bias plus
// activation after a convolution, and broadcast arithmetic over up to four
// operands. Each is a grid-stride loop over 64-bit indices.
#include <cuda_runtime.h>

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

__device__ float apply_act(const ActParams& a, float x) {
  switch (a.kind) {
    case ActKind::kNone:
      return x;
    case ActKind::kRelu:
      return x > 0.0f ? x : 0.0f;
    case ActKind::kLeakyRelu:
      return x >= 0.0f ? x : a.alpha * x;
    case ActKind::kClip:
      return cmin(cmax(x, a.alpha), a.beta);
    case ActKind::kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case ActKind::kHardSigmoid:
      return cmin(cmax(fmaf(a.alpha, x, a.beta), 0.0f), 1.0f);  // one rounding, as the CPU
    case ActKind::kHardSwish:
      return x * cmin(cmax(x / 6.0f + 0.5f, 0.0f), 1.0f);
    case ActKind::kTanh:
      return tanhf(x);
    case ActKind::kElu:
      return x >= 0.0f ? x : a.alpha * expm1f(x);
    case ActKind::kSelu:
      return x > 0.0f ? a.beta * x : a.beta * a.alpha * expm1f(x);
    case ActKind::kCelu:
      return cmax(x, 0.0f) + cmin(a.alpha * expm1f(x / a.alpha), 0.0f);
    case ActKind::kSoftplus:
      return softplus(x);
    case ActKind::kSoftsign:
      return x / (1.0f + fabsf(x));
    case ActKind::kThresholdedRelu:
      return x > a.alpha ? x : 0.0f;
    case ActKind::kMish:
      return x * tanhf(softplus(x));
    case ActKind::kGelu:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case ActKind::kGeluTanh: {
      float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanhf(u));
    }
    case ActKind::kSilu:
      return x / (1.0f + expf(-x));
  }
  return x;
}

__global__ void activation_kernel(const float* x, float* y, int64_t n, ActParams act) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply_act(act, x[i]);
}

__device__ float apply_unary(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::kExp:
      return expf(x);
    case UnaryOp::kLog:
      return logf(x);
    case UnaryOp::kSqrt:
      return sqrtf(x);
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kAbs:
      return fabsf(x);
    case UnaryOp::kReciprocal:
      return 1.0f / x;
    case UnaryOp::kFloor:
      return floorf(x);
    case UnaryOp::kCeil:
      return ceilf(x);
    case UnaryOp::kErf:
      return erff(x);
    case UnaryOp::kSin:
      return sinf(x);
    case UnaryOp::kCos:
      return cosf(x);
    case UnaryOp::kSign:
      return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
  }
  return x;
}

__global__ void unary_kernel(UnaryOp op, const float* x, float* y, int64_t n) {
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

__device__ __forceinline__ float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return powf(a, b);
    case BinaryOp::kPRelu:
      return a < 0.0f ? a * b : a;
    case BinaryOp::kMax:
      return a > b ? a : b;
    case BinaryOp::kMin:
      return a < b ? a : b;
  }
  return a;
}

struct Operands {
  const float* p[kMaxInputs];
};

__global__ void broadcast_kernel(BinaryOp op, bool mean, Operands x, float* y, BroadcastArgs a) {
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

}  // namespace

void launch_activation(const float* x, float* y, int64_t n, ActParams act, cudaStream_t stream) {
  if (n <= 0) return;
  activation_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, act);
}

void launch_unary(UnaryOp op, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, x, y, n);
}

void launch_bias_act(float* y, const float* bias, int64_t outer, int64_t channels, int64_t inner, ActParams act,
                     cudaStream_t stream) {
  int64_t n = outer * channels * inner;
  if (n <= 0) return;
  bias_act_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, bias, channels, inner, n, act);
}

void launch_broadcast(BinaryOp op, bool mean, const float* const* x, float* y, const BroadcastArgs& args,
                      cudaStream_t stream) {
  if (args.count <= 0) return;
  Operands ops{};
  for (int k = 0; k < args.inputs && k < kMaxInputs; ++k) ops.p[k] = x[k];
  broadcast_kernel<<<blocks_for(args.count), kThreads, 0, stream>>>(op, mean, ops, y, args);
}

}  // namespace minirt::cuda
