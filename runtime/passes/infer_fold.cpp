// Shape inference over the whole graph, with constant folding as it goes.
#include "runtime/op_registry.h"
#include "runtime/passes/passes.h"

namespace minirt {

std::vector<Tensor> evaluate_node(const Graph& g, const Node& n, const KernelProvider& backend, ThreadPool& pool) {
  std::unique_ptr<Kernel> k = backend.make_kernel(g, n);
  std::vector<const void*> ins;
  for (int v : n.inputs) ins.push_back(v >= 0 && g.values[v].constant ? g.values[v].constant->raw() : nullptr);
  std::vector<Tensor> outs;
  std::vector<void*> out_ptrs;
  for (int v : n.outputs) {
    if (v < 0) {
      outs.emplace_back();
      out_ptrs.push_back(nullptr);
      continue;
    }
    outs.push_back(Tensor::zeros(g.values[v].dtype, g.values[v].shape));
    out_ptrs.push_back(outs.back().raw());
  }
  Tensor ws;
  if (size_t b = k->workspace_bytes()) ws = Tensor::zeros(DType::kUInt8, {static_cast<int64_t>(b)});
  KernelArgs args{ins.data(), out_ptrs.data(), ws.raw(), &pool};
  k->run(args);
  return outs;
}

int infer_and_fold(Graph& g, const KernelProvider& folder, ThreadPool& pool, bool fold) {
  int folded = 0;
  auto visit = [&](int idx) {
    Node& n = g.nodes[idx];
    const OpSchema* s = find_schema(n.op);
    InferContext ctx(g, n);
    s->infer(ctx);
    for (int o : n.outputs)
      if (o >= 0 && !g.values[o].shape_known)
        node_fail(ErrorCode::kInternal, g, n, "shape inference left an output unknown");
    if (!fold || !s->foldable) return;
    bool all_const = true;
    for (int in : n.inputs) all_const = all_const && (in < 0 || g.values[in].constant);
    if (s->reads_shape_only) all_const = true;  // only the input's shape is read
    if (!all_const) return;
    // Large results are better computed at run time than held as constants.
    int64_t out_elems = 0;
    for (int o : n.outputs)
      if (o >= 0) out_elems += shape_numel(g.values[o].shape);
    if (out_elems > (1 << 22) && !s->model_data) return;
    std::string why;
    // Its constant inputs in memory while they are read (make_plan does not
    // hold a Conv's filters).
    WeightHold hold(g.weights);
    for (int in : n.inputs)
      if (in >= 0 && g.values[in].constant) hold.add(*g.values[in].constant);
    if (!folder.supports(g, n, &why)) return;
    // Shape's and Size's kernels read only the input's shape, never its data.
    std::vector<Tensor> outs = evaluate_node(g, n, folder, pool);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] >= 0) g.values[n.outputs[i]].constant = std::make_shared<Tensor>(std::move(outs[i]));
    n.dead = true;
    ++folded;
  };
  for (int idx : g.topo_order()) {
    // The nodes a schema's prepare step adds in front of this one (which
    // may grow g.nodes) are inferred first.
    if (const OpSchema* s = find_schema(g.nodes[idx].op); s->prepare)
      for (int added : s->prepare(g, idx)) visit(added);
    visit(idx);
  }
  g.link_producers();
  return folded;
}

}  // namespace minirt
