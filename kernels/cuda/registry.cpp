#include "kernels/cuda/registry.h"

#include <minirt/error.h>

#include <string>
#include <unordered_map>

namespace minirt::cuda {

namespace {

class Registry {
 public:
  Registry() {
    for (auto family : {dnn_kernels(), blas_kernels(), simple_kernels()})
      for (const KernelEntry& e : family) table_.emplace(e.op, e.make);
    // The family files check their tables against support.h at compile
    // time; this catches a family that is missing here.
    size_t count = 0;
    const char* const* ops = cuda_ops(&count);
    for (size_t i = 0; i < count; ++i)
      if (!table_.count(ops[i])) missing_ += std::string(missing_.empty() ? "" : ", ") + ops[i];
  }
  std::unique_ptr<Kernel> make(const DeviceContext& ctx, const Graph& g, const Node& n) const {
    if (!missing_.empty()) node_fail(ErrorCode::kInternal, g, n, "the cuda module's kernel tables lack " + missing_);
    auto it = table_.find(n.op);
    if (it == table_.end())
      node_fail(ErrorCode::kInternal, g, n, "the cuda backend claims the op but has no kernel for it");
    return it->second(ctx, g, n);
  }

 private:
  std::unordered_map<std::string, KernelFactory> table_;
  std::string missing_;
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_kernel(const DeviceContext& ctx, const Graph& g, const Node& n) {
  static const Registry registry;
  return registry.make(ctx, g, n);
}

}  // namespace minirt::cuda
