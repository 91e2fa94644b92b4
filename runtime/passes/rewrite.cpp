// The rewriting passes: identity removal, BatchNormalization and bias
// folding into Conv, activation fusion, dead-node removal.
#include "runtime/ops/conv.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/linalg.h"
#include "runtime/passes/passes.h"

#include <algorithm>
#include <cmath>

namespace minirt {

namespace {

bool is_graph_output(const Graph& g, int v) { return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end(); }

// Replaces every read of value `from` with `to` (node inputs and graph outputs).
void replace_uses(Graph& g, int from, int to) {
  for (auto& n : g.nodes) {
    if (n.dead) continue;
    for (int& in : n.inputs)
      if (in == from) in = to;
  }
  for (int& o : g.outputs)
    if (o == from) o = to;
}

// The single live consumer of value v, or -1 if it has none or several, or
// is a graph output.
int sole_consumer(const Graph& g, int v) {
  if (is_graph_output(g, v)) return -1;
  int found = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead) continue;
    for (int in : n.inputs) {
      if (in != v) continue;
      if (found >= 0 && found != static_cast<int>(i)) return -1;
      if (found == static_cast<int>(i)) return -1;  // read twice by the same node
      found = static_cast<int>(i);
    }
  }
  return found;
}

bool is_const(const Graph& g, int v) { return v >= 0 && g.values[v].constant != nullptr; }

void absorb(Node& into, const Node& from) {
  into.fused.push_back(from.name);
  into.fused_ops.push_back(from.op);
  into.fused.insert(into.fused.end(), from.fused.begin(), from.fused.end());
  into.fused_ops.insert(into.fused_ops.end(), from.fused_ops.begin(), from.fused_ops.end());
}

}  // namespace

int remove_identities(Graph& g) {
  int removed = 0;
  std::vector<int> uses = g.use_counts();
  for (auto& n : g.nodes) {
    if (n.dead || (n.op != "Identity" && n.op != "Dropout")) continue;
    // A Dropout whose mask is read stays, to write the mask.
    if (n.outputs.size() > 1 && n.outputs[1] >= 0 && uses[n.outputs[1]] > 0) continue;
    int in = n.inputs[0], out = n.outputs[0];
    n.dead = true;
    replace_uses(g, out, in);
    ++removed;
  }
  if (removed) g.link_producers();
  return removed;
}

int fold_batchnorm(Graph& g) {
  int folded = 0;
  for (auto& conv : g.nodes) {
    if (conv.dead || conv.op != "Conv") continue;
    const auto& ca = conv.attrs_as<ConvAttrs>();
    if (!ca.act.none() || !is_const(g, conv.inputs[1]) || (conv.input(2) >= 0 && !is_const(g, conv.inputs[2]))) continue;
    int c = sole_consumer(g, conv.outputs[0]);
    if (c < 0) continue;
    Node& bn = g.nodes[c];
    if (bn.op != "BatchNormalization" || bn.inputs[0] != conv.outputs[0]) continue;
    bool params_const = true;
    for (int k = 1; k < 5; ++k) params_const = params_const && is_const(g, bn.inputs[k]);
    if (!params_const) continue;
    const Tensor& w = *g.values[conv.inputs[1]].constant;
    const float* scale = g.values[bn.inputs[1]].constant->data<float>();
    const float* shift = g.values[bn.inputs[2]].constant->data<float>();
    const float* mean = g.values[bn.inputs[3]].constant->data<float>();
    const float* var = g.values[bn.inputs[4]].constant->data<float>();
    float eps = bn.attrs_as<BatchNormAttrs>().epsilon;
    int64_t m = w.shape()[0];
    int64_t per = w.numel() / m;
    Tensor nw = w.clone();
    Tensor nb = Tensor::zeros(DType::kFloat32, {m});
    const float* ob = conv.input(2) >= 0 ? g.values[conv.inputs[2]].constant->data<float>() : nullptr;
    for (int64_t k = 0; k < m; ++k) {
      float s = scale[k] / std::sqrt(var[k] + eps);
      float* row = nw.data<float>() + k * per;
      for (int64_t j = 0; j < per; ++j) row[j] *= s;
      nb.data<float>()[k] = ((ob ? ob[k] : 0.0f) - mean[k]) * s + shift[k];
    }
    int wv = g.add_constant(g.values[conv.inputs[1]].name + "/bn_folded", std::move(nw));
    int bv = g.add_constant(conv.name + "/bn_bias", std::move(nb));
    conv.inputs.resize(3);
    conv.inputs[1] = wv;
    conv.inputs[2] = bv;
    int out = bn.outputs[0];
    bn.dead = true;
    absorb(conv, bn);
    replace_uses(g, out, conv.outputs[0]);
    ++folded;
  }
  if (folded) g.link_producers();
  return folded;
}

int fold_bias_add(Graph& g) {
  int folded = 0;
  for (auto& conv : g.nodes) {
    if (conv.dead || conv.op != "Conv") continue;
    const auto& ca = conv.attrs_as<ConvAttrs>();
    if (!ca.act.none() || (conv.input(2) >= 0 && !is_const(g, conv.inputs[2]))) continue;
    int c = sole_consumer(g, conv.outputs[0]);
    if (c < 0) continue;
    Node& add = g.nodes[c];
    if (add.op != "Add") continue;
    int other = add.inputs[0] == conv.outputs[0] ? add.inputs[1] : add.inputs[0];
    if (!is_const(g, other)) continue;
    const Shape& ys = g.values[conv.outputs[0]].shape;
    const Tensor& b = *g.values[other].constant;
    int64_t m = ys[1];
    // Accept constants that vary along channels only: Mx1x1 or 1xMx1x1 (a 1-D [M]
    // would broadcast along the last axis, not the channels).
    const Shape& bs = b.shape();
    if (b.dtype() != DType::kFloat32 || b.numel() != m || bs.size() > ys.size() || bs.size() < ys.size() - 1) continue;
    size_t lead = ys.size() - bs.size();  // 0 or 1
    bool per_channel = true;
    for (size_t i = 0; i < bs.size(); ++i) {
      size_t axis = i + lead;
      per_channel = per_channel && (axis == 1 ? bs[i] == m : bs[i] == 1);
    }
    if (!per_channel || g.values[add.outputs[0]].shape != ys) continue;
    Tensor nb = Tensor::zeros(DType::kFloat32, {m});
    const float* ob = conv.input(2) >= 0 ? g.values[conv.inputs[2]].constant->data<float>() : nullptr;
    for (int64_t k = 0; k < m; ++k) nb.data<float>()[k] = (ob ? ob[k] : 0.0f) + b.data<float>()[k];
    int bv = g.add_constant(conv.name + "/bias_folded", std::move(nb));
    conv.inputs.resize(3);
    conv.inputs[2] = bv;
    int out = add.outputs[0];
    add.dead = true;
    absorb(conv, add);
    replace_uses(g, out, conv.outputs[0]);
    ++folded;
  }
  if (folded) g.link_producers();
  return folded;
}

int fuse_activations(Graph& g) {
  int fused = 0;
  for (auto& host : g.nodes) {
    if (host.dead || (host.op != "Conv" && host.op != "Gemm")) continue;
    Activation current = host.op == "Conv" ? host.attrs_as<ConvAttrs>().act : host.attrs_as<GemmAttrs>().act;
    if (!current.none()) continue;
    int c = sole_consumer(g, host.outputs[0]);
    if (c < 0) continue;
    Node& act = g.nodes[c];
    if (act.inputs[0] != host.outputs[0] || !act.parsed) continue;
    const auto* ua = dynamic_cast<const UnaryAttrs*>(act.parsed.get());
    if (!ua || ua->kind != UnaryKind::kActivation) continue;
    if (host.op == "Conv") {
      auto a = std::make_shared<ConvAttrs>(host.attrs_as<ConvAttrs>());
      a->act = ua->act;
      host.parsed = a;
    } else {
      auto a = std::make_shared<GemmAttrs>(host.attrs_as<GemmAttrs>());
      a->act = ua->act;
      host.parsed = a;
    }
    int out = act.outputs[0];
    act.dead = true;
    absorb(host, act);
    replace_uses(g, out, host.outputs[0]);
    ++fused;
  }
  if (fused) g.link_producers();
  return fused;
}

int remove_dead_nodes(Graph& g) {
  int removed = 0;
  for (;;) {
    std::vector<int> uses = g.use_counts();
    int round = 0;
    for (auto& n : g.nodes) {
      if (n.dead) continue;
      bool used = false;
      for (int o : n.outputs) used = used || (o >= 0 && uses[o] > 0);
      if (!used) {
        n.dead = true;
        ++round;
      }
    }
    removed += round;
    if (!round) break;
  }
  if (removed) g.link_producers();
  return removed;
}

}  // namespace minirt
