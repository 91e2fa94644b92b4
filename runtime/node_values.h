// Shorthands for kernels reading their node's values at plan time, shared by
// the CPU backend (kernels/cpu/registry.h) and the CUDA module
// (kernels/cuda/common.h): concrete shapes, dtypes, constants, and
// row-major strides.
//
//   const Shape& x = in_shape(g, n, 0);
//   if (const Tensor* w = in_const(g, n, 1)) pack(w->data<float>());
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/graph.h"

namespace minirt {

inline const Shape& in_shape(const Graph& g, const Node& n, size_t i) { return g.values[n.inputs[i]].shape; }
inline const Shape& out_shape(const Graph& g, const Node& n, size_t i) { return g.values[n.outputs[i]].shape; }
inline DType in_dtype(const Graph& g, const Node& n, size_t i) { return g.values[n.inputs[i]].dtype; }
// The input's constant, or null (an absent input, or a value computed at run time).
inline const Tensor* in_const(const Graph& g, const Node& n, size_t i) {
  return n.input(i) >= 0 ? g.values[n.inputs[i]].constant.get() : nullptr;
}

// Row-major strides of a shape, in elements.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

}  // namespace minirt
