#include "kernels/cpu/cpu_backend.h"

#include "kernels/cpu/registry.h"

#include <unordered_map>

namespace minirt {

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {
    std::vector<cpu::KernelEntry> entries;
    cpu::add_conv_kernels(entries);
    cpu::add_pool_kernels(entries);
    cpu::add_elementwise_kernels(entries);
    cpu::add_gemm_kernels(entries);
    cpu::add_norm_kernels(entries);
    cpu::add_shape_kernels(entries);
    cpu::add_resize_kernels(entries);
    cpu::add_logic_kernels(entries);
    cpu::add_index_kernels(entries);
    for (const auto& e : entries) table_[e.op] = e.make;
  }
  const char* name() const override { return "cpu"; }
  bool supports(const Graph&, const Node& n, std::string* why) const override {
    if (table_.count(n.op)) return true;
    if (why) *why = "the CPU backend has no kernel for " + n.op;
    return false;
  }
  std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) const override {
    auto it = table_.find(n.op);
    if (it == table_.end()) node_fail(ErrorCode::kUnsupported, g, n, "the CPU backend has no kernel for " + n.op);
    return it->second(g, n, threads_);
  }

 private:
  int threads_;
  std::unordered_map<std::string, cpu::KernelFactory> table_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads < 1 ? 1 : threads); }

}  // namespace minirt
