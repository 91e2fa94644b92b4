// Typed attributes of the quantization ops: QuantizeLinear,
// DequantizeLinear and DynamicQuantizeLinear (runtime/ops/quant_ops.cpp).
// The QOperator ops (QLinearConv, QLinearMatMul) are rewritten at load into
// DequantizeLinear -> float op -> QuantizeLinear (runtime/passes/quant.cpp).
#pragma once

#include "runtime/graph.h"

#include <cstdint>

namespace minirt {

// How a scale (and its zero point) maps onto the quantized tensor, decided
// by the scale's shape (ONNX's three granularities).
enum class QuantGranularity {
  kTensor,   // one scale: a scalar, or a 1-D tensor of one element
  kAxis,     // a 1-D scale as long as the input's `axis`
  kBlocked,  // the input's shape, with ceil(D / block_size) along `axis`
};

struct QuantAttrs : OpAttrs {
  int64_t axis = 1;                        // as written; infer() stores it normalized
  int64_t block_size = 0;                  // version 21 and later; 0: not blocked
  DType output_dtype = DType::kUndefined;  // QuantizeLinear 21+, DequantizeLinear 23+; 0: not set
  // Completed by infer() from the shapes.
  QuantGranularity granularity = QuantGranularity::kTensor;
};

// The range of a quantized element type (int8 or uint8).
struct QuantRange {
  int32_t lo, hi;
};
inline QuantRange quant_range(DType t) { return t == DType::kInt8 ? QuantRange{-128, 127} : QuantRange{0, 255}; }

}  // namespace minirt
