// How the module's kernels are registered: each kernel file (dnn_ops.cpp,
// blas_ops.cpp, simple_ops.cpp) has one constexpr table of {op, make}
// entries next to its kernels, checked at compile time against its family's
// support table in support.h:
//
//   constexpr KernelEntry kBlasKernels[] = {{"Gemm", make<GemmKernel>}, {"MatMul", make<MatMulKernel>}};
//   static_assert(same_ops(kBlasKernels, kBlasSupport), "...");
//   std::span<const KernelEntry> blas_kernels() { return kBlasKernels; }
//
// make_cuda_kernel (registry.cpp) looks the node's op up in all of them.
#pragma once

#include <memory>
#include <span>
#include <type_traits>

#include "kernels/cuda/common.h"
#include "kernels/cuda/support.h"

namespace minirt::cuda {

using KernelFactory = std::unique_ptr<Kernel> (*)(const DeviceContext& ctx, const Graph& g, const Node& n);

struct KernelEntry {
  const char* op;
  KernelFactory make;
};

// The factory of a kernel class constructed from (ctx, g, n) or from (g, n).
template <typename K>
std::unique_ptr<Kernel> make(const DeviceContext& ctx, const Graph& g, const Node& n) {
  if constexpr (std::is_constructible_v<K, const DeviceContext&, const Graph&, const Node&>)
    return std::make_unique<K>(ctx, g, n);
  else
    return std::make_unique<K>(g, n);
}

std::span<const KernelEntry> dnn_kernels();     // dnn_ops.cpp
std::span<const KernelEntry> blas_kernels();    // blas_ops.cpp
std::span<const KernelEntry> simple_kernels();  // simple_ops.cpp

// The module's kernel for a node cuda_supports() accepted; throws kInternal
// when no table has the op (the static_asserts make that a build error for
// the ops of the support tables).
std::unique_ptr<Kernel> make_cuda_kernel(const DeviceContext& ctx, const Graph& g, const Node& n);

// The module's elementwise kernel (simple_ops.cpp), for the activations
// cuDNN lacks a mode for (dnn_ops.cpp's activation factory).
std::unique_ptr<Kernel> make_unary_kernel(const DeviceContext& ctx, const Graph& g, const Node& n);

}  // namespace minirt::cuda
