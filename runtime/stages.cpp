#include "runtime/stages.h"

#include "runtime/backend.h"
#include "runtime/op_registry.h"

#include <algorithm>

namespace minirt {

void ValueSizedKernel::run(const KernelArgs&) {
  fail(ErrorCode::kInternal,
       "a value-sized kernel was run as a plan step; the session runs it between plan stages (runtime/stages.h)");
}

std::vector<Stage> split_stages(const Graph& model) {
  const std::vector<int> order = model.topo_order();
  const size_t nv = model.values.size(), nn = model.nodes.size();
  std::vector<char> cut(nn, 0);
  bool any = false;
  for (int idx : order) {
    const OpSchema* s = find_schema(model.nodes[idx].op);
    cut[idx] = s && s->value_sized;
    any = any || cut[idx];
  }
  if (!any) return {};

  // A value's level: how many cuts lie on its longest path from the inputs.
  // A node of level L runs in stage L, or, cut, right after it. A node that
  // reads only constants (and such nodes' outputs) is "static": each stage
  // that reads it gets a live copy, so that its planner folds it as before.
  std::vector<int> level(nv, 0), node_level(nn, 0);
  std::vector<char> static_node(nn, 0), static_value(nv, 0);
  for (size_t v = 0; v < nv; ++v) static_value[v] = model.values[v].constant && model.values[v].producer < 0;
  for (int v : model.inputs) static_value[static_cast<size_t>(v)] = 0;
  int top = 0;
  for (int idx : order) {
    const Node& n = model.nodes[idx];
    int l = 0;
    bool st = !cut[idx];
    for (int v : n.inputs) {
      if (v < 0) continue;
      l = std::max(l, level[v]);
      st = st && static_value[v];
    }
    node_level[idx] = l;
    static_node[idx] = st;
    for (int o : n.outputs) {
      if (o < 0) continue;
      level[o] = l + (cut[idx] ? 1 : 0);
      static_value[o] = st;
    }
    top = std::max(top, l);
  }
  std::vector<int> producer(nv, -1);
  for (int idx : order)
    for (int o : model.nodes[idx].outputs)
      if (o >= 0) producer[o] = idx;
  std::vector<char> is_output(nv, 0);
  for (int v : model.outputs) is_output[v] = 1;

  std::vector<Stage> parts;
  for (int L = 0; L <= top; ++L) {
    // The stage's own nodes, and the static nodes they read (transitively).
    std::vector<char> own(nn, 0), live(nn, 0);
    bool has_nodes = false;
    for (int idx : order)
      if (!cut[idx] && node_level[idx] == L) own[idx] = live[idx] = 1, has_nodes = true;
    if (has_nodes) {
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        if (!live[*it]) continue;
        for (int v : model.nodes[*it].inputs)
          if (v >= 0 && producer[v] >= 0 && static_node[producer[v]]) live[producer[v]] = 1;
      }
      Stage st;
      Graph& g = st.graph;
      g = model;
      g.inputs.clear();
      g.outputs.clear();
      g.declared_outputs.clear();
      std::vector<char> seen(nv, 0);
      for (int idx : order) {
        if (!live[idx]) continue;
        for (int v : model.nodes[idx].inputs) {
          if (v < 0 || seen[v] || static_value[v]) continue;
          if (producer[v] >= 0 && live[producer[v]]) continue;
          seen[v] = 1;
          g.inputs.push_back(v);
          // Its shape is the run's to tell (a cut node's output, a value of
          // an earlier stage): any shape binds.
          Value& in = g.values[v];
          if (std::find(model.inputs.begin(), model.inputs.end(), v) == model.inputs.end()) {
            in.shape.clear();
            in.dim_params.clear();
            in.shape_known = false;
          }
        }
      }
      // Outputs: what the caller or another part reads of what this stage makes.
      std::vector<char> wanted(nv, 0);
      for (int idx : order) {
        bool elsewhere = cut[idx] || node_level[idx] != L;
        if (!elsewhere) continue;
        for (int v : model.nodes[idx].inputs)
          if (v >= 0 && (cut[idx] || !static_value[v])) wanted[v] = 1;
      }
      for (int idx : order) {
        if (!own[idx]) continue;
        for (int o : model.nodes[idx].outputs)
          if (o >= 0 && (wanted[o] || is_output[o]) &&
              std::find(g.outputs.begin(), g.outputs.end(), o) == g.outputs.end())
            g.outputs.push_back(o);
      }
      for (size_t i = 0; i < nn; ++i) g.nodes[i].dead = !live[i];
      g.link_producers();
      // A stage nothing reads from (static nodes alone) need not run.
      if (!g.outputs.empty()) parts.push_back(std::move(st));
    }
    for (int idx : order)
      if (cut[idx] && node_level[idx] == L) parts.push_back(Stage{.cut = idx, .graph = {}});
  }
  return parts;
}

}  // namespace minirt
