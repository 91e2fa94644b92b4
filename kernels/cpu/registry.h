// How CPU kernels are registered: each op family file appends one line per
// op (op name and factory) in its add_*_kernels function. The shorthands for
// a node's shapes are runtime/node_values.h's, shared with the CUDA module.
#pragma once

#include "runtime/backend.h"
#include "runtime/node_values.h"  // in_shape, out_shape, in_dtype, in_const, strides_of

#include <memory>
#include <vector>

namespace minirt::cpu {

// `threads` is the size of the pool the kernel will run on; kernels that
// give each task its own scratch size their workspace by it.
using KernelFactory = std::unique_ptr<Kernel> (*)(const Graph& g, const Node& n, int threads);

struct KernelEntry {
  const char* op;
  KernelFactory make;
};

void add_conv_kernels(std::vector<KernelEntry>& out);
void add_pool_kernels(std::vector<KernelEntry>& out);
void add_elementwise_kernels(std::vector<KernelEntry>& out);
void add_gemm_kernels(std::vector<KernelEntry>& out);
void add_norm_kernels(std::vector<KernelEntry>& out);
void add_shape_kernels(std::vector<KernelEntry>& out);
void add_cast_pad_kernels(std::vector<KernelEntry>& out);  // cast_pad.cpp
void add_resize_kernels(std::vector<KernelEntry>& out);
void add_grid_sample_kernels(std::vector<KernelEntry>& out);  // grid_sample.cpp
void add_roi_align_kernels(std::vector<KernelEntry>& out);    // roi_align.cpp
void add_logic_kernels(std::vector<KernelEntry>& out);        // logic.cpp
void add_index_kernels(std::vector<KernelEntry>& out);        // index.cpp
void add_quant_kernels(std::vector<KernelEntry>& out);        // quant.cpp
void add_value_sized_kernels(
    std::vector<KernelEntry>& out);  // value_sized.cpp: NonZero, Compress, Unique, NonMaxSuppression

}  // namespace minirt::cpu
