// minirt/half.h: IEEE 754 half precision (float16) and bfloat16 conversions,
// for feeding float16 models and reading their outputs.
//
//   std::vector<uint16_t> h(n);
//   minirt::float_to_half(x.data(), h.data(), n);   // round to nearest even
//   auto t = minirt::Tensor::wrap(minirt::DType::kFloat16, {1, 3, 224, 224}, h.data());
//   minirt::Tensor f = minirt::to_float32(outputs[0]);  // a float16 output as float32
//
// Float to half rounds to the nearest representable value, ties to even;
// values beyond the largest finite one (65504 for float16) become infinity
// of their sign; subnormals are kept; NaN stays NaN (its sign and top
// payload bits kept). Half to float is exact.
#pragma once

#include <minirt/export.h>
#include <minirt/tensor.h>

#include <cstddef>
#include <cstdint>

namespace minirt {

MINIRT_API float half_to_float(uint16_t h);
MINIRT_API uint16_t float_to_half(float f);
MINIRT_API float bfloat16_to_float(uint16_t b);
MINIRT_API uint16_t float_to_bfloat16(float f);

// The same over n elements.
MINIRT_API void half_to_float(const uint16_t* h, float* f, size_t n);
MINIRT_API void float_to_half(const float* f, uint16_t* h, size_t n);
MINIRT_API void bfloat16_to_float(const uint16_t* b, float* f, size_t n);
MINIRT_API void float_to_bfloat16(const float* f, uint16_t* b, size_t n);

// Each value rounded to the nearest float16 (or bfloat16) and back, in place:
// what storing float32 values in that type does to them.
MINIRT_API void round_to_half(float* f, size_t n);
MINIRT_API void round_to_bfloat16(float* f, size_t n);

// True for kFloat16 and kBFloat16.
MINIRT_API bool is_half_dtype(DType t);
// A float16 or bfloat16 tensor as a new float32 tensor; any other tensor is
// returned as it is (sharing its memory).
MINIRT_API Tensor to_float32(const Tensor& t);
// A float32 tensor as a new tensor of `half` (kFloat16 or kBFloat16).
MINIRT_API Tensor from_float32(const Tensor& t, DType half);

}  // namespace minirt
