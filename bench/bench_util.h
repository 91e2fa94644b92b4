// What the kernel benchmarks (kernels_bench.cpp, kernels_bench_data.cpp)
// share: random inputs and one node planned as a Session would plan it.
#pragma once

#include "kernels/cpu/cpu_backend.h"
#include "runtime/op_registry.h"

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace minirt {

inline Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t = Tensor::zeros(DType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// One node with its inputs (the first a run-time input, the rest constants),
// shapes inferred, a kernel made, buffers allocated.
struct OneNode {
  Graph g;
  std::unique_ptr<KernelProvider> backend;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Kernel> kernel;
  std::vector<Tensor> inputs, outputs;
  Tensor workspace;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;

  // algo: the backend's named algorithm (make_kernel_with), or empty for its rules.
  OneNode(const std::string& op, std::shared_ptr<OpAttrs> attrs, std::vector<Tensor> ins, int threads,
          const std::string& algo = "") {
    g.opset = 17;
    std::vector<int> in_ids;
    for (size_t i = 0; i < ins.size(); ++i) {
      int v = g.add_value("in" + std::to_string(i));
      g.values[v].dtype = ins[i].dtype();
      g.values[v].shape = ins[i].shape();
      g.values[v].shape_known = true;
      if (i > 0) g.values[v].constant = std::make_shared<Tensor>(ins[i]);
      in_ids.push_back(v);
    }
    int out = g.add_value("out");
    int n = g.add_node("node", op, in_ids, {out});
    g.nodes[n].parsed = attrs ? std::shared_ptr<const OpAttrs>(attrs) : std::make_shared<OpAttrs>();
    InferContext ctx(g, g.nodes[n]);
    find_schema(op)->infer(ctx);
    backend = make_cpu_backend(threads);
    pool = std::make_unique<ThreadPool>(threads);
    kernel = algo.empty() ? backend->make_kernel(g, g.nodes[n]) : backend->make_kernel_with(g, g.nodes[n], algo);
    inputs = std::move(ins);
    outputs.push_back(Tensor::zeros(DType::kFloat32, g.values[out].shape));
    if (size_t ws = kernel->workspace_bytes()) workspace = Tensor::zeros(DType::kUInt8, {static_cast<int64_t>(ws)});
    for (auto& t : inputs) in_ptrs.push_back(t.raw());
    out_ptrs.push_back(outputs[0].raw());
  }
  void run() {
    KernelArgs args{in_ptrs.data(), out_ptrs.data(), workspace.raw(), pool.get()};
    kernel->run(args);
  }
};

}  // namespace minirt
