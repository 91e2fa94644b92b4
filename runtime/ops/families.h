// The op families whose schemas make up the registry; one file each.
#pragma once

#include "runtime/op_registry.h"

#include <vector>

namespace minirt {

using SchemaFamily = void (*)(std::vector<OpSchema>&);

void add_conv_schemas(std::vector<OpSchema>& out);         // Conv, ConvTranspose
void add_pool_schemas(std::vector<OpSchema>& out);         // MaxPool, AveragePool, global pools, LRN
void add_elementwise_schemas(std::vector<OpSchema>& out);  // unary and binary math, activations
void add_gemm_schemas(std::vector<OpSchema>& out);         // Gemm, MatMul
void add_norm_schemas(std::vector<OpSchema>& out);         // BatchNormalization, Softmax, ReduceMean
void add_shape_schemas(std::vector<OpSchema>& out);        // Reshape, Concat, Slice, Gather, Cast, ...
void add_resize_schemas(std::vector<OpSchema>& out);       // Resize, Upsample

inline constexpr SchemaFamily kSchemaFamilies[] = {
    add_conv_schemas, add_pool_schemas,  add_elementwise_schemas, add_gemm_schemas,
    add_norm_schemas, add_shape_schemas, add_resize_schemas,
};

}  // namespace minirt
