// What --math fp16 and --math bf16 compute, emulated on the CPU from the
// roundings the CUDA backend makes (kernels/cuda/dnn_ops.cpp, blas_ops.cpp),
// so that the GPU tests' tolerances can be checked on a machine without a
// GPU (test_fp16_emulation.cpp) and a GPU's output compared with what it
// must give:
//   - a convolution rounds its input and weights to the 16-bit type, sums
//     the products in float32, and cuDNN writes the sum in the 16-bit type
//     (pseudo-half: float16 tensors, a float32 descriptor), so the sum is
//     rounded to float16 too (beyond +-65504 by half a step: +-inf); the
//     bias and the activation come after, in float32;
//   - a Gemm or MatMul rounds its operands and writes float32 (cuBLAS,
//     CUBLAS_COMPUTE_32F): only the products' inputs are rounded.
// Sums are taken in double here: the order a GPU kernel sums in is its own,
// and what is emulated is the roundings, not the order.
//
//   std::vector<float> y = emu::conv2d(x, {2, 16, 10, 10}, w, {32, 16, 3, 3}, b, {1, 1, 1, 1}, emu::Math::kFp16);
//
// Header only, no GPU and no CUDA: minirt's own conversions (minirt/half.h).
#pragma once

#include <minirt/half.h>
#include <minirt/tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace minirt::gputest::emu {

// kFloat32: no rounding (the CPU's float32, summed in double).
enum class Math { kFloat32, kFp16, kBf16 };

inline std::vector<float> rounded(std::vector<float> v, Math m) {
  if (m == Math::kFp16) round_to_half(v.data(), v.size());
  if (m == Math::kBf16) round_to_bfloat16(v.data(), v.size());
  return v;
}

// A 2-D convolution of x (N, C, H, W) with w (M, C, KH, KW), group 1,
// stride 1, zero padding as ONNX's pads (top, left, bottom, right), then the
// bias (M values, or none when empty) and a ReLU when `relu`.
inline std::vector<float> conv2d(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w,
                                 const Shape& ws, const std::vector<float>& bias, const std::array<int64_t, 4>& pads,
                                 Math m, bool relu = false) {
  const std::vector<float> xr = rounded(x, m), wr = rounded(w, m);
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], oc = ws[0], kh = ws[2], kw = ws[3];
  const int64_t oh = h + pads[0] + pads[2] - kh + 1, ow = wd + pads[1] + pads[3] - kw + 1;
  std::vector<float> y(static_cast<size_t>(n * oc * oh * ow));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double s = 0;
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                int64_t yy = i + u - pads[0], xx = j + v - pads[1];
                if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
                s += static_cast<double>(xr[static_cast<size_t>(((b * c + ci) * h + yy) * wd + xx)]) *
                     wr[static_cast<size_t>(((o * c + ci) * kh + u) * kw + v)];
              }
          y[static_cast<size_t>(((b * oc + o) * oh + i) * ow + j)] = static_cast<float>(s);
        }
  // cuDNN writes y in the 16-bit type: the sum rounded, before the bias.
  y = rounded(std::move(y), m);
  const int64_t plane = oh * ow;
  for (size_t k = 0; k < y.size(); ++k) {
    if (!bias.empty()) y[k] += bias[static_cast<size_t>((static_cast<int64_t>(k) / plane) % oc)];
    if (relu && y[k] < 0) y[k] = 0;
  }
  return y;
}

// y (rows x cols) = a (rows x k) * b (k x cols, or cols x k when trans_b)
// + bias (cols values, or none): operands rounded, the output float32.
inline std::vector<float> gemm(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& bias,
                               int64_t rows, int64_t cols, int64_t k, bool trans_b, Math m) {
  const std::vector<float> ar = rounded(a, m), br = rounded(b, m);
  std::vector<float> y(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(ar[static_cast<size_t>(i * k + p)]) *
             br[static_cast<size_t>(trans_b ? j * k + p : p * cols + j)];
      float v = static_cast<float>(s);
      if (!bias.empty()) v += bias[static_cast<size_t>(j)];
      y[static_cast<size_t>(i * cols + j)] = v;
    }
  return y;
}

}  // namespace minirt::gputest::emu
