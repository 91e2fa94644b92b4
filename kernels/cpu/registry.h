// How CPU kernels are registered: each op family file appends one line per
// op (op name and factory) in its add_*_kernels function.
#pragma once

#include "runtime/backend.h"

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
void add_resize_kernels(std::vector<KernelEntry>& out);
void add_logic_kernels(std::vector<KernelEntry>& out);  // logic.cpp
void add_index_kernels(std::vector<KernelEntry>& out);  // index.cpp

// Shorthands for kernels reading their node's (concrete) shapes.
inline const Shape& in_shape(const Graph& g, const Node& n, size_t i) { return g.values[n.inputs[i]].shape; }
inline const Shape& out_shape(const Graph& g, const Node& n, size_t i) { return g.values[n.outputs[i]].shape; }
inline DType in_dtype(const Graph& g, const Node& n, size_t i) { return g.values[n.inputs[i]].dtype; }
inline const Tensor* in_const(const Graph& g, const Node& n, size_t i) {
  return n.input(i) >= 0 ? g.values[n.inputs[i]].constant.get() : nullptr;
}

// Row-major strides of a shape, in elements.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

}  // namespace minirt::cpu
