// The op families whose schemas make up the registry; one file each
// (runtime/ops/*_ops.cpp), with the CPU kernels of each family in the
// kernels/cpu/ file of the same theme.
#pragma once

#include "runtime/op_registry.h"

#include <vector>

namespace minirt {

using SchemaFamily = void (*)(std::vector<OpSchema>&);

// conv_ops.cpp: Conv, ConvTranspose.
void add_conv_schemas(std::vector<OpSchema>& out);
// conv_ops.cpp: MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool, LRN.
void add_pool_schemas(std::vector<OpSchema>& out);
// elementwise_ops.cpp: activations (Relu ... Gelu), unary math (Exp ... Sign),
// Identity, Dropout; binary math (Add, Sub, Mul, Div, Pow, PRelu, Mod);
// variadic Max, Min, Sum, Mean.
void add_elementwise_schemas(std::vector<OpSchema>& out);
// linalg_ops.cpp: Gemm, MatMul.
void add_gemm_schemas(std::vector<OpSchema>& out);
// linalg_ops.cpp: BatchNormalization, InstanceNormalization, GroupNormalization,
// LayerNormalization, LpNormalization, Softmax, LogSoftmax, the Reduce ops.
void add_norm_schemas(std::vector<OpSchema>& out);
// shape_ops.cpp: Reshape, Flatten, Squeeze, Unsqueeze, Concat, Split, Slice,
// Gather, Shape, Size, Cast, CastLike, Constant, ConstantOfShape, Range,
// Transpose, Pad, Expand, Tile, DepthToSpace, SpaceToDepth.
void add_shape_schemas(std::vector<OpSchema>& out);
// resize_ops.cpp: Resize, Upsample, GridSample, RoiAlign.
void add_resize_schemas(std::vector<OpSchema>& out);
// logic_ops.cpp: Equal, Greater, Less, GreaterOrEqual, LessOrEqual, Not, And,
// Or, Xor, IsNaN, IsInf, Where.
void add_logic_schemas(std::vector<OpSchema>& out);
// index_ops.cpp: ArgMax, ArgMin, TopK, GatherElements, GatherND, ScatterElements,
// Scatter, ScatterND, OneHot, Trilu, Hardmax; the value-sized NonZero,
// Compress, Unique and NonMaxSuppression (kernels in kernels/cpu/value_sized.cpp).
void add_index_schemas(std::vector<OpSchema>& out);
// quant_ops.cpp: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, ConvInteger; QLinearConv and QLinearMatMul (rewritten at load).
void add_quant_schemas(std::vector<OpSchema>& out);

inline constexpr SchemaFamily kSchemaFamilies[] = {
    add_conv_schemas,  add_pool_schemas,   add_elementwise_schemas, add_gemm_schemas,  add_norm_schemas,
    add_shape_schemas, add_resize_schemas, add_logic_schemas,       add_index_schemas, add_quant_schemas,
};

}  // namespace minirt
