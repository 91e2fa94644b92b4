// The CPU Conv lowerings by name, for the backend's algorithm choice
// (KernelProvider::algorithms, heuristic_algorithm, make_kernel_with).
//
//   for (const std::string& a : conv_algorithm_names())
//     if (conv_algorithm_declined(g, n, a).empty())
//       kernels.push_back(make_conv_kernel(g, n, threads, a));
#pragma once

#include "runtime/backend.h"

#include <memory>
#include <string>
#include <vector>

namespace minirt::cpu {

// im2col_gemm, implicit_gemm, gemm_1x1, depthwise_direct, winograd_f2x2,
// winograd_f4x4, always in this order.
const std::vector<std::string>& conv_algorithm_names();
// Why the named lowering cannot run this Conv node, as a short sentence
// ("needs one group"); empty when it can. An unknown name is declined too.
std::string conv_algorithm_declined(const Graph& g, const Node& n, const std::string& algo);
// What the fixed rules pick; make_kernel uses the same. (The rules read the shape and
// the SGEMM variant, not `threads`: the winners measured the same at 1 and 2.)
std::string conv_heuristic_algorithm(const Graph& g, const Node& n, int threads);
// The kernel for the named lowering; an unknown or declined name throws
// minirt::Error naming the node, its op and the algorithm.
std::unique_ptr<Kernel> make_conv_kernel(const Graph& g, const Node& n, int threads, const std::string& algo);
// That kernel's workspace_bytes(), planned without reading or packing the
// weights; throws as make_conv_kernel does.
size_t conv_workspace_bytes(const Graph& g, const Node& n, int threads, const std::string& algo);

}  // namespace minirt::cpu
