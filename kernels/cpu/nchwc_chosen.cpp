// What nchwc_kernels.cpp's planning does once the algorithms are chosen
// (nchwc.h: nchwc_fuse_chosen, nchwc_int8_values, nchwc_bf16_values): steps
// folded into the kernel before them, and the values kept narrower (bf16,
// int8 codes) between the kernels that read and write them.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/conv_bf16.h"
#include "kernels/cpu/conv_int8.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_conv.h"
#include "kernels/cpu/nchwc_ops.h"
#include "kernels/cpu/nchwc_plan.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/shape_ops.h"

namespace minirt::cpu {

using namespace nchwc_plan;

namespace {

// The activation step (a pair, kQuantGrid, or any other) that is the one
// reader `r` of value v, in the block of v's reader chain; null otherwise.
Node* activation_step(const Graph& g, Node* r, int v, int block) {
  const UnaryAttrs* ua = r ? unary_of(*r) : nullptr;
  if (!ua || ua->kind != UnaryKind::kActivation || r->inputs[0] != v || (r->outputs.size() > 1 && r->outputs[1] >= 0) ||
      g.values[static_cast<size_t>(r->outputs[0])].block != block)
    return nullptr;
  return r;
}

// Node d folded into conv: dead, its name and op (and those it had taken) in conv's.
void absorb_step(Node& conv, Node& d) {
  d.dead = true;
  conv.fused.push_back(d.name);
  conv.fused_ops.push_back(d.op);
  for (size_t k = 0; k < d.fused.size(); ++k) {
    conv.fused.push_back(d.fused[k]);
    if (k < d.fused_ops.size()) conv.fused_ops.push_back(d.fused_ops[k]);
  }
}

// conv's quantized SiLU, when its output v is read by exactly a Sigmoid and
// a Mul, the Sigmoid's output only by a pair (kQuantGrid) whose output only
// the Mul reads (v times it), and the Mul's output by nothing or one
// activation step: all of it into conv (ConvAttrs::gate), those steps dead.
template <typename IsOutput, typename SoleReader>
bool fuse_quant_silu(Graph& g, Node& conv, const std::vector<std::vector<int>>& readers, IsOutput is_output,
                     SoleReader sole_reader) {
  const int v = conv.outputs[0];
  const auto& rv = readers[static_cast<size_t>(v)];
  if (rv.size() != 2 || is_output(v)) return false;
  Node* sig = nullptr;
  Node* mul = nullptr;
  for (int r : rv) {
    Node& m = g.nodes[static_cast<size_t>(r)];
    const UnaryAttrs* u = unary_of(m);
    const BinaryAttrs* b = binary_of(m);
    if (u && u->kind == UnaryKind::kActivation && u->act.kind == ActKind::kSigmoid && m.inputs[0] == v)
      sig = &m;
    else if (b && b->kind == BinaryKind::kMul && m.inputs.size() == 2)
      mul = &m;
  }
  if (!sig || !mul || sig->outputs.empty()) return false;
  Node* gate = sole_reader(sig->outputs[0]);
  const UnaryAttrs* gu = gate ? unary_of(*gate) : nullptr;
  if (!gu || gu->kind != UnaryKind::kActivation || gu->act.kind != ActKind::kQuantGrid || gate->outputs.empty())
    return false;
  const int s2 = gate->outputs[0];
  if (sole_reader(s2) != mul ||
      !((mul->inputs[0] == v && mul->inputs[1] == s2) || (mul->inputs[1] == v && mul->inputs[0] == s2)))
    return false;
  const Value& vv = g.values[static_cast<size_t>(v)];
  for (int o : {sig->outputs[0], s2, mul->outputs[0]})
    if (g.values[static_cast<size_t>(o)].shape != vv.shape || g.values[static_cast<size_t>(o)].block != vv.block)
      return false;
  Node* act = activation_step(g, sole_reader(mul->outputs[0]), mul->outputs[0], vv.block);
  const auto& ca = conv.attrs_as<ConvAttrs>();
  auto attrs = std::make_shared<ConvAttrs>(ca);
  attrs->pre_act = ca.act;
  attrs->gate = gu->act;
  attrs->act = act ? unary_of(*act)->act : Activation{};
  conv.parsed = attrs;
  conv.outputs[0] = act ? act->outputs[0] : mul->outputs[0];
  for (Node* d : {sig, gate, mul, act})
    if (d) absorb_step(conv, *d);
  return true;
}

}  // namespace

int nchwc_fuse_chosen(Graph& g, const std::map<int, std::string>& algorithm, const std::vector<int>& order, int threads,
                      Bf16Isa bf16) {
  std::vector<int> position(g.nodes.size(), -1), producer(g.values.size(), -1);
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t i = 0; i < order.size(); ++i) position[static_cast<size_t>(order[i])] = static_cast<int>(i);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead) continue;
    for (int o : n.outputs)
      if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<int>(i);
    for (int v : n.inputs)
      if (v >= 0) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
  }
  auto is_output = [&](int v) { return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end(); };
  // The one live reader of v, or null (none, several, or v a graph output).
  auto sole_reader = [&](int v) -> Node* {
    const auto& r = readers[static_cast<size_t>(v)];
    if (r.size() != 1 || is_output(v) || g.nodes[static_cast<size_t>(r[0])].dead) return nullptr;
    return &g.nodes[static_cast<size_t>(r[0])];
  };
  int fused = 0;
  for (int idx : order) {
    Node& conv = g.nodes[static_cast<size_t>(idx)];
    if (conv.dead) continue;
    // A blocked float binary op takes the activation step after it (a
    // quantized model's Add or Mul and its pair: one pass over the values
    // instead of two). Its maker's fusions come first in the order.
    if (const BinaryAttrs* ba = binary_of(conv)) {
      const int v = conv.outputs.empty() ? -1 : conv.outputs[0];
      if (v < 0 || !ba->act.none() || !blocked_binary_kind(ba->kind) ||
          g.values[static_cast<size_t>(v)].dtype != DType::kFloat32 || g.values[static_cast<size_t>(v)].block == 0)
        continue;
      Node* act = activation_step(g, sole_reader(v), v, g.values[static_cast<size_t>(v)].block);
      if (!act || g.values[static_cast<size_t>(act->outputs[0])].dtype != DType::kFloat32) continue;
      auto attrs = std::make_shared<BinaryAttrs>(*ba);
      attrs->act = unary_of(*act)->act;
      conv.parsed = attrs;
      conv.outputs[0] = act->outputs[0];
      absorb_step(conv, *act);
      ++fused;
      continue;
    }
    // A quantize pair after a MaxPool on the grid its input already has (the
    // pair a QDQ model puts after every MaxPool) changes no value: the max of
    // values on a grid is on it. It joins the MaxPool, which can then move
    // int8 values (nchwc_int8_values).
    if (conv.op == "MaxPool" && conv.outputs.size() == 1 && !conv.inputs.empty()) {
      const int v = conv.outputs[0];
      const Activation* in_grid = quant_grid_of(g, conv.inputs[0]);
      Node* pair = in_grid ? activation_step(g, sole_reader(v), v, g.values[static_cast<size_t>(v)].block) : nullptr;
      const Activation* a = pair ? &unary_of(*pair)->act : nullptr;
      if (a && a->kind == ActKind::kQuantGrid && a->alpha == in_grid->alpha && a->beta == in_grid->beta &&
          a->gamma == in_grid->gamma) {
        conv.outputs[0] = pair->outputs[0];
        absorb_step(conv, *pair);
        ++fused;
      }
      continue;
    }
    // The pair after a Concat whose every input an int8 convolution alone
    // reads and writes (SqueezeNet's fire modules, YOLO's C3): each writes its
    // slice on the pair's grid as well (ConvAttrs::post), and the pair dies.
    if (conv.op == "Concat" && conv.outputs.size() == 1 && conv.parsed && conv.attrs_as<AxisAttrs>().axis == 1) {
      const int v = conv.outputs[0];
      const Value& cv = g.values[static_cast<size_t>(v)];
      Node* pair =
          cv.block > 0 && cv.dtype == DType::kFloat32 ? activation_step(g, sole_reader(v), v, cv.block) : nullptr;
      if (!pair || unary_of(*pair)->act.kind != ActKind::kQuantGrid) continue;
      std::vector<int> makers;
      bool ok = !conv.inputs.empty();
      for (int in : conv.inputs) {
        // Its live maker now (maker_of: fusions above moved some values to the node that took their step).
        const Node* pm = in >= 0 ? maker_of(g, in) : nullptr;
        const int p = pm ? static_cast<int>(pm - g.nodes.data()) : -1;
        makers.push_back(p);
        if (p < 0 || sole_reader(in) != &conv) {
          ok = false;
          break;
        }
        const Node& pn = g.nodes[static_cast<size_t>(p)];
        ok = pn.op == "Conv" && pn.domain != "minirt" && pn.attrs_as<ConvAttrs>().act.kind == ActKind::kQuantGrid &&
             pn.attrs_as<ConvAttrs>().post.none() && chosen_algorithm(g, algorithm, p, threads, bf16) == kInt8;
        if (!ok) break;
      }
      if (!ok) continue;
      for (int p : makers) {
        Node& pn = g.nodes[static_cast<size_t>(p)];
        auto attrs = std::make_shared<ConvAttrs>(pn.attrs_as<ConvAttrs>());
        attrs->post = unary_of(*pair)->act;
        pn.parsed = attrs;
      }
      conv.outputs[0] = pair->outputs[0];
      absorb_step(conv, *pair);
      ++fused;
      continue;
    }
    if (conv.op != "Conv" || conv.domain == "minirt" || conv.input(3) >= 0) continue;
    const auto& ca = conv.attrs_as<ConvAttrs>();
    if (ca.act.none() || !ca.pre_act.none()) continue;
    const std::string algo = chosen_algorithm(g, algorithm, idx, threads, bf16);
    // A depthwise convolution on float values takes the quantized SiLU after
    // it (EfficientNet's in QDQ form: four steps over its widest values).
    if (algo == kDepthwise && ca.act.kind == ActKind::kQuantGrid && ca.act.gamma - ca.act.beta <= 255 &&
        ca.gate.none() && fuse_quant_silu(g, conv, readers, is_output, sole_reader))
      ++fused;
    if (algo != kInt8) continue;
    // The pair before it, when it alone reads the pair's output and the
    // pair's input is a float value of the same layout on no grid (a QDQ
    // model's image; a value on a grid may become an int8 value of that
    // grid, nchwc_int8_values): the packing quantizes onto the pair's grid
    // itself (ConvAttrs::in_grid), one pass over the image fewer.
    if (const int x = conv.inputs[0]; x >= 0 && ca.in_grid.none() && sole_reader(x) == &conv) {
      const int pi = producer[static_cast<size_t>(x)];
      Node* pair = pi >= 0 ? &g.nodes[static_cast<size_t>(pi)] : nullptr;
      const UnaryAttrs* ua = pair && !pair->dead ? unary_of(*pair) : nullptr;
      const int u = ua ? pair->inputs[0] : -1;
      if (ua && ua->kind == UnaryKind::kActivation && ua->act.kind == ActKind::kQuantGrid &&
          ua->act.gamma - ua->act.beta <= 255 && u >= 0 && (pair->outputs.size() == 1 || pair->outputs[1] < 0) &&
          !g.values[static_cast<size_t>(u)].constant && !quant_grid_of(g, u) &&
          g.values[static_cast<size_t>(u)].dtype == DType::kFloat32 &&
          g.values[static_cast<size_t>(u)].block == g.values[static_cast<size_t>(x)].block &&
          g.values[static_cast<size_t>(u)].shape == g.values[static_cast<size_t>(x)].shape) {
        auto attrs = std::make_shared<ConvAttrs>(ca);
        attrs->in_grid = ua->act;
        conv.parsed = attrs;
        conv.inputs[0] = u;
        absorb_step(conv, *pair);
        ++fused;
      }
    }
    if (fuse_quant_silu(g, conv, readers, is_output, sole_reader)) ++fused;
    // A residual Add after the convolution, or after its fused SiLU and the pair after it.
    const auto& now = conv.attrs_as<ConvAttrs>();
    const bool after_silu = !now.gate.none() && now.gate_out.none() && now.act.kind == ActKind::kQuantGrid;
    if (!after_silu && !now.gate.none()) continue;
    const int v = conv.outputs[0];
    if (v >= static_cast<int>(readers.size())) continue;
    Node* add = sole_reader(v);
    const BinaryAttrs* ba = add ? binary_of(*add) : nullptr;
    if (!ba || ba->kind != BinaryKind::kAdd || add->inputs.size() != 2 || add->outputs.empty()) continue;
    const int r = add->inputs[0] == v ? add->inputs[1] : add->inputs[0];
    const Value &vv = g.values[static_cast<size_t>(v)], &rv = g.values[static_cast<size_t>(r)],
                &sv = g.values[static_cast<size_t>(add->outputs[0])];
    if (r == v || rv.constant || rv.dtype != DType::kFloat32 || rv.shape != vv.shape || rv.block != vv.block ||
        sv.block != vv.block || sv.shape != vv.shape)
      continue;
    // r made before the convolution runs (a graph input has no producer).
    const int rp = producer[static_cast<size_t>(r)];
    if (rp >= 0 && position[static_cast<size_t>(rp)] > position[static_cast<size_t>(idx)]) continue;
    // The activation step after the Add, if it is the Add's one reader.
    Node* act = activation_step(g, sole_reader(add->outputs[0]), add->outputs[0], vv.block);
    auto attrs = std::make_shared<ConvAttrs>(now);
    if (after_silu)
      attrs->gate_out = now.act;
    else
      attrs->pre_act = now.act;
    attrs->act = act ? unary_of(*act)->act : Activation{};
    conv.parsed = attrs;
    while (conv.inputs.size() < 3) conv.inputs.push_back(-1);
    conv.inputs.push_back(r);
    conv.outputs[0] = act ? act->outputs[0] : add->outputs[0];
    absorb_step(conv, *add);
    if (act) absorb_step(conv, *act);
    ++fused;
  }
  if (fused) g.link_producers();
  return fused;
}

int nchwc_int8_values(Graph& g, const std::map<int, std::string>& algorithm, int threads, Bf16Isa bf16) {
  // Each node's convolution algorithm, as make_nchwc_kernel will pick it, before any value changes.
  // A depthwise convolution (nchwc_depthwise, float math) between them reads
  // (dw_in) and writes (dw_out) int8 values too, through its padded frame:
  // MobileNet's and EfficientNet's expand -> depthwise -> project chains.
  std::vector<char> int8(g.nodes.size(), 0), dw_in(g.nodes.size(), 0), dw_out(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead || n.op != "Conv" || n.domain == "minirt" || block_of(g, n.outputs[0]) != 16) continue;
    const std::string algo = chosen_algorithm(g, algorithm, static_cast<int>(i), threads, bf16);
    int8[i] = algo == kInt8;
    if (algo != kDepthwise) continue;
    NchwcConvSpec sp = conv_spec(g, n);
    if (sp.x_bf16 || sp.y_bf16) continue;
    if (const Activation* grid = quant_grid_of(g, n.inputs[0])) {
      sp.x_u8 = true;
      sp.x_grid = *grid;
      dw_in[i] = nchwc_depthwise_declined(sp).empty();
      sp.x_u8 = false;
    }
    sp.y_u8 = true;
    dw_out[i] = nchwc_depthwise_declined(sp).empty();
  }
  std::vector<std::vector<std::pair<int, size_t>>> readers(g.values.size());  // (node, input slot)
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!g.nodes[i].dead)
      for (size_t k = 0; k < g.nodes[i].inputs.size(); ++k)
        if (g.nodes[i].inputs[k] >= 0)
          readers[static_cast<size_t>(g.nodes[i].inputs[k])].emplace_back(static_cast<int>(i), k);
  // A depthwise convolution takes int8 values only where it both reads and
  // writes them, its output read by int8 convolutions alone (MobileNetV2's
  // blocks): reading alone measured slower (EfficientNet-B0 QDQ, 4.15 ->
  // 4.4 ms at 2 threads), its padded frame reading each 64-channel line of
  // the value once per 16-channel block.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!dw_in[i] || !dw_out[i]) {
      dw_in[i] = dw_out[i] = 0;
      continue;
    }
    const Node& n = g.nodes[i];
    const int v = n.outputs[0];
    bool ok = n.attrs_as<ConvAttrs>().act.kind == ActKind::kQuantGrid &&
              std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end() &&
              !readers[static_cast<size_t>(v)].empty();
    for (const auto& [j, slot] : readers[static_cast<size_t>(v)])
      ok = ok && int8[static_cast<size_t>(j)] && (slot == 0 || slot == 3);
    if (!ok) dw_in[i] = dw_out[i] = 0;
  }
  // A MaxPool between them (ResNet's stem -> max pool -> first block) moves
  // int8 values exactly, where int8 convolutions (or depthwise ones that take
  // them) alone read its output.
  std::vector<char> mp(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!nchwc_u8_maxpool_supports(g, n) || block_of(g, n.outputs[0]) != 16 || !quant_grid_of(g, n.outputs[0]))
      continue;
    const int v = n.outputs[0];
    bool ok =
        std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end() && !readers[static_cast<size_t>(v)].empty();
    for (const auto& [j, slot] : readers[static_cast<size_t>(v)])
      ok = ok &&
           ((int8[static_cast<size_t>(j)] && (slot == 0 || slot == 3)) || (dw_in[static_cast<size_t>(j)] && slot == 0));
    mp[i] = ok;
  }
  int marked = 0;
  auto mark = [&](int v) {
    g.values[static_cast<size_t>(v)].dtype = DType::kUInt8;
    g.values[static_cast<size_t>(v)].block = 64;
    ++marked;
  };
  // A Concat whose pair the int8 convolutions that make it took
  // (ConvAttrs::post: each writes its slice on the Concat's grid) moves
  // their codes, its inputs and output int8 values, where int8 kernels alone
  // read the output and every input but the last is whole 64-channel groups
  // (the Concat then stays in place: memory_plan.cpp).
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead || n.op != "Concat" || n.outputs.size() != 1 || !n.parsed || n.attrs_as<AxisAttrs>().axis != 1) continue;
    const int v = n.outputs[0];
    const Value& ov = g.values[static_cast<size_t>(v)];
    if (ov.block != 16 || ov.dtype != DType::kFloat32 || !quant_grid_of(g, v) ||
        std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end() || readers[static_cast<size_t>(v)].empty())
      continue;
    bool ok = true;
    for (const auto& [j, slot] : readers[static_cast<size_t>(v)])
      ok = ok && ((int8[static_cast<size_t>(j)] && (slot == 0 || slot == 3)) ||
                  ((dw_in[static_cast<size_t>(j)] || mp[static_cast<size_t>(j)]) && slot == 0));
    for (size_t k = 0; k < n.inputs.size() && ok; ++k) {
      const int in = n.inputs[k];
      const Node* p = in >= 0 ? maker_of(g, in) : nullptr;
      ok = p && p->op == "Conv" && int8[static_cast<size_t>(p - g.nodes.data())] &&
           !p->attrs_as<ConvAttrs>().post.none() && readers[static_cast<size_t>(in)].size() == 1 &&
           g.values[static_cast<size_t>(in)].dtype == DType::kFloat32 &&
           g.values[static_cast<size_t>(in)].block == 16 &&
           (k + 1 == n.inputs.size() || g.values[static_cast<size_t>(in)].shape[1] % 64 == 0);
    }
    if (!ok) continue;
    for (int in : n.inputs) mark(in);
    mark(v);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!int8[i] && !dw_out[i]) continue;
    const Node& n = g.nodes[i];
    const int v = n.outputs[0];
    Value& val = g.values[static_cast<size_t>(v)];
    if (n.attrs_as<ConvAttrs>().act.kind != ActKind::kQuantGrid || val.dtype != DType::kFloat32 ||
        std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end())
      continue;
    const auto& rd = readers[static_cast<size_t>(v)];
    bool ok = !rd.empty();
    for (const auto& [j, slot] : rd)
      ok = ok && ((int8[static_cast<size_t>(j)] && (slot == 0 || slot == 3)) ||
                  ((dw_in[static_cast<size_t>(j)] || mp[static_cast<size_t>(j)]) && slot == 0));
    if (!ok) continue;
    val.dtype = DType::kUInt8;
    val.block = 64;
    ++marked;
  }
  // A max pool whose input became an int8 value writes one.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!mp[i] || !is_u8_value(g, g.nodes[i].inputs[0])) continue;
    Value& val = g.values[static_cast<size_t>(g.nodes[i].outputs[0])];
    val.dtype = DType::kUInt8;
    val.block = 64;
    ++marked;
  }
  return marked;
}

int nchwc_bf16_values(Graph& g, const std::map<int, std::string>& algorithm, int threads, Bf16Isa bf16) {
  if (bf16 == Bf16Isa::kNone) return 0;
  // Each node's convolution algorithm, as make_nchwc_kernel will pick it.
  auto runs_bf16 = [&](int idx) {
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    if (n.dead || n.op != "Conv" || n.domain == "minirt") return false;
    if (block_of(g, n.outputs[0]) == 0) return false;
    return chosen_algorithm(g, algorithm, idx, threads, bf16) == kBf16;
  };
  std::vector<int> producer(g.values.size(), -1);
  std::vector<std::vector<std::pair<int, size_t>>> readers(g.values.size());  // (node, input slot)
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.dead) continue;
    for (int o : n.outputs)
      if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<int>(i);
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] >= 0) readers[static_cast<size_t>(n.inputs[k])].emplace_back(static_cast<int>(i), k);
  }
  std::vector<char> is_output(g.values.size(), 0);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = 1;
  // A depthwise convolution (nchwc_depthwise) reads and writes bf16 values
  // with its math in float32: MobileNet's and EfficientNet's expand ->
  // depthwise -> project chains keep their wide values bf16.
  auto dw_bf16 = [&](int idx) {
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    if (n.dead || n.op != "Conv" || n.domain == "minirt" || block_of(g, n.outputs[0]) != 16) return false;
    if (chosen_algorithm(g, algorithm, idx, threads, bf16) != kDepthwise) return false;
    NchwcConvSpec sp = conv_spec(g, n);
    sp.x_bf16 = sp.y_bf16 = true;
    return nchwc_depthwise_declined(sp).empty();
  };
  // MaxPool and Concat between bf16 convolutions move bf16 values exactly
  // (nchwc_bf16_data_supports): ResNet's stem -> max pool -> first block,
  // SqueezeNet's fire modules, YOLO's SPPF.
  auto moves_bf16 = [&](int idx) {
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    return block_of(g, n.outputs.empty() ? -1 : n.outputs[0]) == 16 && nchwc_bf16_data_supports(g, n);
  };
  // Each node's answers, asked once (the rules' picks read the graph).
  std::vector<char> conv_b(g.nodes.size()), dw_b(g.nodes.size()), move_b(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    conv_b[i] = runs_bf16(static_cast<int>(i));
    dw_b[i] = !conv_b[i] && dw_bf16(static_cast<int>(i));
    move_b[i] = moves_bf16(static_cast<int>(i));
  }
  auto conv_at = [&](int idx) { return conv_b[static_cast<size_t>(idx)] != 0; };
  auto dw_at = [&](int idx) { return dw_b[static_cast<size_t>(idx)] != 0; };
  auto move_at = [&](int idx) { return move_b[static_cast<size_t>(idx)] != 0; };
  std::vector<char> narrow(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (val.block != 16 || val.dtype != DType::kFloat32 || val.constant || is_output[v] || readers[v].empty()) continue;
    const int p = producer[v];
    if (p < 0 || g.nodes[static_cast<size_t>(p)].outputs[0] != static_cast<int>(v) ||
        !(conv_at(p) || move_at(p) || dw_at(p)))
      continue;
    bool ok = true;
    // Read as the data input or the fused residual (slot 3) of a bf16
    // convolution, the data input of a depthwise one, or by a MaxPool or
    // Concat that moves bf16 values.
    for (const auto& [node, slot] : readers[v])
      ok = ok && (((slot == 0 || slot == 3) && conv_at(node)) || (slot == 0 && dw_at(node)) || move_at(node));
    narrow[v] = ok;
  }
  // A MaxPool or Concat runs on bf16 values only where all its inputs and its
  // output are, and so does a depthwise convolution (its data input and
  // output: with a float32 input, its padded frame's copy cost more than a
  // bf16 output saved -- MobileNetV2's 112x112 layer took 190 us, not 97):
  // drop the rest until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      const bool dw = dw_b[i] != 0;
      if (n.dead || !(dw || move_b[i])) continue;
      const std::vector<int> ins = dw ? std::vector<int>{n.inputs[0]} : n.inputs;
      bool all = narrow[static_cast<size_t>(n.outputs[0])];
      for (int in : ins) all = all && in >= 0 && narrow[static_cast<size_t>(in)];
      if (all) continue;
      for (int v : ins)
        if (v >= 0 && narrow[static_cast<size_t>(v)]) narrow[static_cast<size_t>(v)] = 0, changed = true;
      if (narrow[static_cast<size_t>(n.outputs[0])]) narrow[static_cast<size_t>(n.outputs[0])] = 0, changed = true;
    }
  }
  // Marked after every decision: a node's pick reads its values' layouts.
  int count = 0;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!narrow[v]) continue;
    ++count;
    g.values[v].dtype = DType::kBFloat16;
    g.values[v].block = 32;
  }
  return count;
}

}  // namespace minirt::cpu
