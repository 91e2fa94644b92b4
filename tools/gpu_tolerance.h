// How close the GPU's outputs must be to the CPU kernels', per op family:
// the one table that tests/gpu/test_gpu_ops.cpp and `minirt-conformance
// --device cuda --reference cpu` both use. A GPU value g passes against the
// CPU's c when |g - c| <= atol + rtol * |c| (NaN matching NaN).
//
//   const GpuTolerance& t = gpu_tolerance("Resize", "linear");  // kGpuReduce
//
// Header only: the GPU tests include it without linking the tools.
#pragma once

#include <initializer_list>
#include <string_view>

#include "runtime/ops/op_table.h"

namespace minirt::tools {

struct GpuTolerance {
  const char* family;  // a short name, printed with the result
  double atol, rtol;
  const char* why;
};

// Data movement, max pooling, nearest resize, Clip and PRelu: the same
// float operations in the same order as the CPU.
inline constexpr GpuTolerance kGpuExact{"exact", 0, 0, "data movement, max pooling, nearest resize, Clip, PRelu"};
// The module's elementwise math: device expf/tanhf/erff against the host's, a few ulps.
inline constexpr GpuTolerance kGpuUlps{"elementwise", 1e-6, 1e-5, "the module's elementwise math (a few ulps)"};
// Sums in another order: average pooling, softmax, batch norm, linear resize.
inline constexpr GpuTolerance kGpuReduce{"reduction", 1e-5, 1e-5,
                                         "average pooling, softmax, batch norm, linear resize (sums in another order)"};
// cuDNN's activations and LRN may use the GPU's fast exp, tanh and pow.
inline constexpr GpuTolerance kGpuLibrary{"cudnn-activation", 2e-4, 1e-3, "cuDNN's Sigmoid, Tanh, Elu and LRN"};
// K products accumulated in another order, maybe by Winograd or FFT.
inline constexpr GpuTolerance kGpuProducts{
    "products", 2e-4, 2e-3, "convolutions and matrix products (inputs in [-1, 1]: |y| is about K at most)"};
// Ops the GPU does not run: both sessions run them on the CPU, the
// reference maybe in the channel-blocked layout, the GPU session plain.
inline constexpr GpuTolerance kGpuOnCpu{"cpu-kernels", 1e-5, 1e-5, "ops the GPU declines (the CPU's kernels in both)"};

inline constexpr const GpuTolerance* kGpuTolerances[] = {&kGpuExact,   &kGpuUlps,     &kGpuReduce,
                                                         &kGpuLibrary, &kGpuProducts, &kGpuOnCpu};

// The family of one node: its op and, for Resize and Upsample, its `mode`
// attribute ("nearest" when absent).
inline const GpuTolerance& gpu_tolerance(std::string_view op, std::string_view mode = {}) {
  auto in = [&](std::initializer_list<std::string_view> ops) {
    for (std::string_view o : ops)
      if (o == op) return true;
    return false;
  };
  if (in({"Resize", "Upsample"})) return mode.empty() || mode == "nearest" ? kGpuExact : kGpuReduce;
  if (in({"Concat", "Split", "Transpose", "Slice", "Expand", "Pad", "Gather", "Reshape", "Flatten", "Squeeze",
          "Unsqueeze", "Identity", "Dropout", "MaxPool", "GlobalMaxPool", "PRelu"}))
    return kGpuExact;
  // The activations and unary math: their rows of the op table (runtime/ops/op_table.h).
  for (const ActInfo& e : kActInfo)
    if (e.op && e.op == op) {
      switch (e.tol) {
        case GpuTolFamily::kExact:
          return kGpuExact;
        case GpuTolFamily::kUlps:
          return kGpuUlps;
        case GpuTolFamily::kLibrary:
          return kGpuLibrary;
      }
    }
  for (const UnaryInfo& e : kUnaryInfo)
    if (e.op && e.op == op) return kGpuUlps;
  if (in({"Add", "Sub", "Mul", "Div", "Pow", "Sum", "Mean", "Max", "Min"})) return kGpuUlps;
  if (in({"AveragePool", "GlobalAveragePool", "Softmax", "LogSoftmax", "BatchNormalization"})) return kGpuReduce;
  if (in({"LRN"})) return kGpuLibrary;
  if (in({"Conv", "ConvTranspose", "Gemm", "MatMul"})) return kGpuProducts;
  return kGpuOnCpu;
}

}  // namespace minirt::tools
