// Which nodes the GPU backend runs, as a pure function of the node, its
// attributes and its concrete types and shapes: no CUDA call, so the table is
// tested on every machine (tests/gpu/test_cuda_support.cpp) and the placement
// line ("placed 61 nodes on cuda, 2 on cpu (Resize: ...)") says exactly why a
// node stayed on the CPU.
//
//   std::string why;
//   if (!cuda_supports(g, node, &why)) std::cout << node.op << ": " << why << "\n";
#pragma once

#include <string>

#include "runtime/graph.h"

namespace minirt::cuda {

// True when the CUDA backend has a kernel for this node as it is; otherwise
// false and `why` (when given) holds a few words: "float32 only on cuda (got
// int64)", "LRN size 20 (cuDNN takes sizes from 1 to 16)".
bool cuda_supports(const Graph& g, const Node& n, std::string* why);

// The op types the backend has kernels for (some only for some attributes).
const char* const* cuda_ops(size_t* count);

}  // namespace minirt::cuda
