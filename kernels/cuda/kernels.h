// The module's own CUDA kernels (elementwise.cu, movement.cu), for the ops
// cuDNN and cuBLAS do not cover or cover awkwardly. Each launcher takes plain
// sizes and device pointers, enqueues on `stream` and returns at once; the
// parameter structs travel by value into the kernel.
//
//   ViewArgs v = make_view(...);                       // a strided view of x laid over y
//   launch_view_copy(x, y, v, sizeof(float), stream);  // Slice, Transpose, Expand
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include <minirt/tensor.h>

#include "runtime/ops/activation.h"
#include "runtime/ops/elementwise_kinds.h"

namespace minirt::cuda {

constexpr int kMaxRank = 8;    // tensor rank the movement kernels walk
constexpr int kMaxInputs = 4;  // operands of one broadcast kernel

// An activation as the kernels see it (activation.h's Activation, plain).
struct ActParams {
  ActKind kind = ActKind::kNone;
  float alpha = 0, beta = 0, gamma = 0;
};

// ---- elementwise.cu ----

// Whether launch_unary computes this kind: every kind whose op table row
// (runtime/ops/op_table.h) names an ONNX op. kActivation goes through
// launch_activation and kCopy is a device copy, so neither is one; the
// device code's switch in elementwise.cu has a case for each kind.
constexpr bool unary_on_device(UnaryKind k) { return k < UnaryKind::kCount && unary_info(k).op != nullptr; }

// y[i] = act(x[i]), n floats (y may be x).
void launch_activation(const float* x, float* y, int64_t n, ActParams act, cudaStream_t stream);
// y[i] = op(x[i]); `op` must be one unary_on_device() accepts.
void launch_unary(UnaryKind op, const float* x, float* y, int64_t n, cudaStream_t stream);
// y viewed as [outer, channels, inner]: y = act(y + bias[c]) in place; bias may be null.
void launch_bias_act(float* y, const float* bias, int64_t outer, int64_t channels, int64_t inner, ActParams act,
                     cudaStream_t stream);

// Whether launch_broadcast computes this kind (Mod, integers only, is not
// on cuda; FMod stays on the CPU with it). No default: -Wswitch asks a new kind
// to be decided here.
constexpr bool binary_on_device(BinaryKind k) {
  switch (k) {
    case BinaryKind::kAdd:
    case BinaryKind::kSub:
    case BinaryKind::kMul:
    case BinaryKind::kDiv:
    case BinaryKind::kPow:
    case BinaryKind::kPRelu:
    case BinaryKind::kMax:
    case BinaryKind::kMin:
      return true;
    case BinaryKind::kMod:
    case BinaryKind::kFMod:
    case BinaryKind::kCount:  // no kind
      return false;
  }
  return false;
}

// Operands broadcast over the output: element i of the output (row-major
// over `shape`) reads operand k at sum(index_d * stride[k][d]) (0 where it
// broadcasts). y = x0 op x1 op x2 ... left to right; `mean` divides by the
// operand count at the end (the variadic Mean).
struct BroadcastArgs {
  int rank = 0;
  int inputs = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxInputs][kMaxRank] = {};
  int64_t count = 0;
};
void launch_broadcast(BinaryKind op, bool mean, const float* const* x, float* y, const BroadcastArgs& args,
                      cudaStream_t stream);

// Cast between float32, int64, int32, int8, uint8 and bool, as the CPU
// kernel converts: a float out of an integer type's range gives the nearest
// end of the range and NaN gives 0; any non-zero value is true. Returns
// false (launching nothing) for another dtype.
bool launch_cast(const void* x, DType from, void* y, DType to, int64_t n, cudaStream_t stream);

// --math fp16 and bf16: n floats to IEEE float16 (bf16 false; round to
// nearest even, beyond float16's range infinity) or to bfloat16 (bf16 true;
// round to nearest even), and back. `h` holds 2 bytes per element.
void launch_to_16(bool bf16, const float* x, void* h, int64_t n, cudaStream_t stream);
void launch_from_16(bool bf16, const void* h, float* y, int64_t n, cudaStream_t stream);

// ---- movement.cu ----

// A strided view of x laid over the dense output y: output element with
// index (i0, ..., ik) reads x at base + sum(i_d * stride[d]) elements.
struct ViewArgs {
  int rank = 0;
  int64_t base = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t count = 0;
};
// elem_size: 1, 2, 4 or 8 bytes.
void launch_view_copy(const void* x, void* y, const ViewArgs& v, size_t elem_size, cudaStream_t stream);

enum class PadModeGpu : int { kConstant, kReflect, kEdge };
struct PadArgs {
  int rank = 0;
  PadModeGpu mode = PadModeGpu::kConstant;
  int64_t in_shape[kMaxRank] = {};
  int64_t out_shape[kMaxRank] = {};
  int64_t in_stride[kMaxRank] = {};
  int64_t begin[kMaxRank] = {};  // pads at the start of each axis (negative: cropped)
  uint64_t fill = 0;             // the constant, bit for bit, in the low elem_size bytes
  int64_t count = 0;             // output elements
};
void launch_pad(const void* x, void* y, const PadArgs& a, size_t elem_size, cudaStream_t stream);

// Gather along one axis: x as [outer, len, inner] elements, indices (int32
// or int64) as count; y as [outer, count, inner]. Negative indices count from
// the end; indices out of range give zeros.
struct GatherArgs {
  int64_t outer = 1, len = 1, inner = 1, count = 0;
  bool index64 = true;
};
void launch_gather(const void* x, const void* indices, void* y, const GatherArgs& a, size_t elem_size,
                   cudaStream_t stream);

// Resize: per axis, a table in device memory mapping each output index to
// its source offsets (already multiplied by the input stride) and, for
// linear, the two weights. Axes whose table is null map index i to i*stride.
struct ResizeArgs {
  int rank = 0;
  bool linear = false;
  int64_t out_shape[kMaxRank] = {};
  int64_t in_stride[kMaxRank] = {};
  const int64_t* off0[kMaxRank] = {};
  const int64_t* off1[kMaxRank] = {};
  const float* w0[kMaxRank] = {};
  const float* w1[kMaxRank] = {};
  int64_t count = 0;
};
void launch_resize(const float* x, float* y, const ResizeArgs& a, cudaStream_t stream);

// Max or average pooling over up to 3 spatial axes (1-D and 2-D lifted to 3-D
// with leading axes of length 1), windows and padding as the CPU kernel reads
// them: a window that is all padding gives the lowest float (max) or 0
// (average); the average divides by the taps inside the input, or with
// count_include_pad by the taps inside input + padding.
struct PoolArgs {
  bool max = true;
  bool count_include_pad = false;
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
};
void launch_pool(const float* x, float* y, const PoolArgs& a, cudaStream_t stream);
// Global max or average over each of `planes` runs of `size` floats.
void launch_global_pool(const float* x, float* y, int64_t planes, int64_t size, bool max, cudaStream_t stream);

}  // namespace minirt::cuda
