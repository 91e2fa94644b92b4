// The layout pass: where the CPU's channel-blocked layout flows, and the
// reorders at its seams.
//
// Blocked activations start at convolutions: every Conv the backend can run
// blocked writes its output blocked. From there the layout follows the
// graph through every op that can run blocked (pools, activations,
// elementwise math with its channel broadcasts, Concat, Resize, ...) as
// long as one of its blocked-capable inputs already is; an op that cannot
// (Reshape, Transpose, Gemm, Softmax, ...) reads a plain copy. Each value
// is reordered at most once per direction, however many readers need it,
// and graph outputs always leave plain, so a model typically converts once
// at its start (or not at all: a stem convolution reads the plain image)
// and once at its end, never per layer.
#include "runtime/passes/passes.h"

#include <map>

namespace minirt {

namespace {

bool blockable(const Value& v) {
  return v.dtype == DType::kFloat32 && v.shape_known && v.shape.size() == 4 && !v.constant;
}

}  // namespace

int assign_layouts(Graph& g, const KernelProvider& cpu) {
  const int block = cpu.channel_block();
  if (block <= 0) return 0;
  std::vector<int> order = g.topo_order();
  std::vector<char> blocked(g.nodes.size(), 0);
  std::vector<std::vector<LayoutNeed>> needs(g.nodes.size());
  for (int idx : order) {
    const Node& n = g.nodes[idx];
    std::vector<LayoutNeed> nd;
    if (!cpu.blocked_inputs(g, n, &nd)) continue;
    nd.resize(n.inputs.size(), LayoutNeed::kPlain);
    // Convolutions start the blocked layout; other ops carry it on when an
    // input they would read blocked already is.
    bool run = n.op == "Conv";
    for (size_t k = 0; k < n.inputs.size() && !run; ++k) {
      int v = n.inputs[k];
      run = v >= 0 && nd[k] != LayoutNeed::kPlain && g.values[v].block > 0;
    }
    bool any_out = false;
    for (int o : n.outputs) any_out = any_out || (o >= 0 && blockable(g.values[o]));
    if (!run || !any_out) continue;
    blocked[idx] = 1;
    needs[idx] = std::move(nd);
    for (int o : n.outputs)
      if (o >= 0 && blockable(g.values[o])) g.values[o].block = block;
  }

  // Reorders: one per value and direction, made where first needed.
  int made = 0;
  std::map<std::pair<int, int>, int> copies;  // (value, block wanted) -> copy
  auto reorder = [&](int v, int want) -> int {
    auto key = std::make_pair(v, want);
    if (auto it = copies.find(key); it != copies.end()) return it->second;
    std::string name = g.values[v].name + (want ? "/nchw" + std::to_string(want) + "c" : "/nchw");
    int c = g.add_value(name);
    Value& cv = g.values[c];
    cv.dtype = g.values[v].dtype;
    cv.shape = g.values[v].shape;
    cv.shape_known = true;
    cv.block = want;
    int ni = g.add_node("reorder:" + g.values[v].name, want ? "ReorderToBlocked" : "ReorderToPlain", {v}, {c});
    g.nodes[ni].domain = "minirt";
    ++made;
    copies[key] = c;
    return c;
  };
  for (int idx : order) {
    for (size_t k = 0; k < g.nodes[idx].inputs.size(); ++k) {
      int v = g.nodes[idx].inputs[k];
      if (v < 0) continue;
      int have = g.values[v].block;
      int want = have;
      if (!blocked[idx]) {
        want = 0;
      } else {
        LayoutNeed need = needs[idx][k];
        if (need == LayoutNeed::kPlain)
          want = 0;
        else if (need == LayoutNeed::kBlocked)
          want = blockable(g.values[v]) ? block : 0;
      }
      if (want != have) {
        int c = reorder(v, want);
        g.nodes[idx].inputs[k] = c;
      }
    }
  }
  // Graph outputs leave plain, under their own names.
  for (int& o : g.outputs) {
    if (g.values[o].block == 0) continue;
    int c = reorder(o, 0);
    std::swap(g.values[o].name, g.values[c].name);
    o = c;
  }
  g.link_producers();
  return made;
}

}  // namespace minirt
