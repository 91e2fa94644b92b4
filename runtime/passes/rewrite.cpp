// The rewriting passes: identity removal, BatchNormalization and bias
// folding into Conv, activation fusion, dead-node removal.
#include "runtime/ops/conv.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/linalg.h"
#include "runtime/ops/shape_ops.h"
#include "runtime/passes/passes.h"

#include <algorithm>
#include <cmath>

namespace minirt {

namespace {

bool is_graph_output(const Graph& g, int v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

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
    // A Cast to the type its input already has (float16 models lowered to
    // float32 have many: Cast(to=float16) before a float32 op, back after)
    // is an identity too, unless it rounds (CastAttrs::round).
    const bool same_type_cast = n.op == "Cast" && !n.dead && n.input(0) >= 0 &&
                                n.attrs_as<CastAttrs>().round == DType::kUndefined &&
                                n.attrs_as<CastAttrs>().to == g.values[n.inputs[0]].dtype;
    if (n.dead || (n.op != "Identity" && n.op != "Dropout" && !same_type_cast)) continue;
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

namespace {

// A convolution's filters with a BatchNormalization folded in, made when a
// kernel is made from them (LazyConstant): filter k times s[k], from the
// model's weights (held in memory while they are read: they may have been
// given back to the store) or from another lazy constant.
struct BnFoldedFilters final : LazyConstant {
  std::shared_ptr<const Tensor> w;           // the filters (its data, unless `from`)
  std::shared_ptr<const LazyConstant> from;  // or what makes them
  std::shared_ptr<WeightStore> store;
  std::vector<float> s;  // per output channel
  Tensor make() const override {
    WeightHold hold(store);
    Tensor nw;
    if (from) {
      nw = from->make();
    } else {
      hold.add(*w);
      nw = w->clone();
    }
    const int64_t m = static_cast<int64_t>(s.size()), per = nw.numel() / m;
    for (int64_t k = 0; k < m; ++k) {
      float* row = nw.data<float>() + k * per;
      for (int64_t j = 0; j < per; ++j) row[j] *= s[static_cast<size_t>(k)];
    }
    return nw;
  }
};

// Folds channels [c0, c0 + filters) of BatchNormalization `bn`'s constant
// parameters into `conv`'s filters and bias (new constants; the old ones
// may be shared). The bias is computed now; the filters when a kernel is
// made from them (BnFoldedFilters).
void fold_bn_slice(Graph& g, Node& conv, const Node& bn, int64_t c0) {
  const Value& wval = g.values[conv.inputs[1]];
  const float* scale = g.values[bn.inputs[1]].constant->data<float>() + c0;
  const float* shift = g.values[bn.inputs[2]].constant->data<float>() + c0;
  const float* mean = g.values[bn.inputs[3]].constant->data<float>() + c0;
  const float* var = g.values[bn.inputs[4]].constant->data<float>() + c0;
  float eps = bn.attrs_as<BatchNormAttrs>().epsilon;
  int64_t m = wval.constant->shape()[0];
  auto lazy = std::make_shared<BnFoldedFilters>();
  lazy->w = wval.constant;
  lazy->from = wval.lazy;
  lazy->store = g.weights;
  lazy->s.resize(static_cast<size_t>(m));
  Tensor nb = Tensor::zeros(DType::kFloat32, {m});
  const float* ob = conv.input(2) >= 0 ? g.values[conv.inputs[2]].constant->data<float>() : nullptr;
  for (int64_t k = 0; k < m; ++k) {
    float s = scale[k] / std::sqrt(var[k] + eps);
    lazy->s[static_cast<size_t>(k)] = s;
    nb.data<float>()[k] = ((ob ? ob[k] : 0.0f) - mean[k]) * s + shift[k];
  }
  const DType dtype = wval.constant->dtype();
  const Shape shape = wval.constant->shape();
  int wv = g.add_constant(wval.name + "/bn_folded", Tensor::wrap(dtype, shape, nullptr));
  g.values[wv].lazy = std::move(lazy);
  int bv = g.add_constant(conv.name + "/bn_bias", std::move(nb));
  conv.inputs.resize(std::max<size_t>(conv.inputs.size(), 3));
  conv.inputs[1] = wv;
  conv.inputs[2] = bv;
}

// The same for a ConvTranspose, whose filters are [C_in][C_out / group][k...]:
// output channel gi * (C_out / group) + c of group gi scales w[ci][c] for the
// group's input channels ci.
void fold_bn_transpose(Graph& g, Node& ct, const Node& bn) {
  const Tensor& w = *g.values[ct.inputs[1]].constant;
  WeightHold hold(g.weights);  // in memory while read (make_plan holds no Conv's filters)
  hold.add(w);
  const float* scale = g.values[bn.inputs[1]].constant->data<float>();
  const float* shift = g.values[bn.inputs[2]].constant->data<float>();
  const float* mean = g.values[bn.inputs[3]].constant->data<float>();
  const float* var = g.values[bn.inputs[4]].constant->data<float>();
  const float eps = bn.attrs_as<BatchNormAttrs>().epsilon;
  const int64_t groups = std::max<int64_t>(1, ct.attrs_as<ConvAttrs>().group);
  const int64_t cin = w.shape()[0], cg = w.shape()[1], per = w.numel() / (cin * cg), m = cg * groups;
  const int64_t cin_g = cin / groups;
  std::vector<float> s(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) s[static_cast<size_t>(k)] = scale[k] / std::sqrt(var[k] + eps);
  Tensor nw = w.clone();
  for (int64_t ci = 0; ci < cin; ++ci)
    for (int64_t c = 0; c < cg; ++c) {
      const float f = s[static_cast<size_t>((ci / cin_g) * cg + c)];
      float* row = nw.data<float>() + (ci * cg + c) * per;
      for (int64_t j = 0; j < per; ++j) row[j] *= f;
    }
  Tensor nb = Tensor::zeros(DType::kFloat32, {m});
  const float* ob = ct.input(2) >= 0 ? g.values[ct.inputs[2]].constant->data<float>() : nullptr;
  for (int64_t k = 0; k < m; ++k)
    nb.data<float>()[k] = ((ob ? ob[k] : 0.0f) - mean[k]) * s[static_cast<size_t>(k)] + shift[k];
  int wv = g.add_constant(g.values[ct.inputs[1]].name + "/bn_folded", std::move(nw));
  int bv = g.add_constant(ct.name + "/bn_bias", std::move(nb));
  ct.inputs.resize(std::max<size_t>(ct.inputs.size(), 3));
  ct.inputs[1] = wv;
  ct.inputs[2] = bv;
}

bool bn_params_const(const Graph& g, const Node& bn) {
  if (bn.inputs.size() < 5) return false;
  for (int k = 1; k < 5; ++k)
    if (!is_const(g, bn.inputs[k]) || g.values[bn.inputs[k]].constant->dtype() != DType::kFloat32) return false;
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (bn.outputs[k] >= 0) return false;  // training statistics are read
  return true;
}

// A Conv whose output (value v) can take a fold or a fused activation: its
// weights and bias constant, no activation yet, and `reader` its only reader.
bool foldable_conv(const Graph& g, int v, int reader) {
  int p = g.values[v].producer;
  if (p < 0) return false;
  const Node& conv = g.nodes[p];
  if (conv.dead || conv.op != "Conv" || conv.outputs[0] != v || conv.inputs.size() > 3) return false;
  if (!conv.attrs_as<ConvAttrs>().act.none() || !is_const(g, conv.inputs[1])) return false;
  if (conv.input(2) >= 0 && !is_const(g, conv.inputs[2])) return false;
  return sole_consumer(g, v) == reader;
}

// The Concat on channels that makes v, whose inputs are all Convs that only
// it reads (foldable_conv); -1 otherwise.
int concat_of_convs(const Graph& g, int v) {
  int ci = g.values[v].producer;
  if (ci < 0) return -1;
  const Node& cat = g.nodes[ci];
  if (cat.dead || cat.op != "Concat" || !cat.parsed || g.values[v].shape.size() < 2) return -1;
  int64_t axis = cat.attrs_as<AxisAttrs>().axis;
  if (axis != 1) return -1;
  for (int in : cat.inputs)
    if (in < 0 || !foldable_conv(g, in, ci)) return -1;
  return ci;
}

}  // namespace

int fold_batchnorm(Graph& g) {
  int folded = 0;
  for (auto& conv : g.nodes) {
    if (conv.dead || (conv.op != "Conv" && conv.op != "ConvTranspose")) continue;
    // A ConvTranspose (a text detector's upsampling head) with float32 constant filters and bias.
    if (conv.op == "ConvTranspose") {
      auto f32_const = [&](int v) {
        return is_const(g, v) && g.values[v].constant->dtype() == DType::kFloat32 &&
               g.values[v].constant->shape().size() >= 1;
      };
      if (conv.inputs.size() < 2 || !f32_const(conv.inputs[1]) || !g.values[conv.inputs[1]].constant->raw() ||
          g.values[conv.inputs[1]].constant->shape().size() < 3 || (conv.input(2) >= 0 && !f32_const(conv.inputs[2])))
        continue;
    }
    const auto& ca = conv.attrs_as<ConvAttrs>();
    if (!ca.act.none() || !is_const(g, conv.inputs[1]) || (conv.input(2) >= 0 && !is_const(g, conv.inputs[2])))
      continue;
    int c = sole_consumer(g, conv.outputs[0]);
    if (c < 0) continue;
    Node& bn = g.nodes[c];
    if (bn.op != "BatchNormalization" || bn.inputs[0] != conv.outputs[0] || !bn_params_const(g, bn)) continue;
    if (conv.op == "ConvTranspose")
      fold_bn_transpose(g, conv, bn);
    else
      fold_bn_slice(g, conv, bn, 0);
    int out = bn.outputs[0];
    bn.dead = true;
    absorb(conv, bn);
    replace_uses(g, out, conv.outputs[0]);
    ++folded;
  }
  // BatchNormalization after a Concat of Convs (CSP blocks): each Conv
  // takes its slice of the parameters.
  for (auto& bn : g.nodes) {
    if (bn.dead || bn.op != "BatchNormalization" || !bn_params_const(g, bn)) continue;
    int x = bn.inputs[0];
    int ci = concat_of_convs(g, x);
    if (ci < 0 || sole_consumer(g, x) != static_cast<int>(&bn - g.nodes.data())) continue;
    int64_t c0 = 0;
    for (int in : g.nodes[ci].inputs) {
      Node& conv = g.nodes[g.values[in].producer];
      fold_bn_slice(g, conv, bn, c0);
      absorb(conv, bn);
      c0 += g.values[in].shape[1];
    }
    int out = bn.outputs[0];
    bn.dead = true;
    replace_uses(g, out, x);
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
  // One fusion into `host`; a Relu fused first may take a quantize pair after it.
  auto fuse_one = [&](Node& host) -> bool {
    // A 2-D ConvTranspose applies its activation after the columns are added
    // (kernels/cpu/conv.cpp); the 3-D one does not take one.
    const bool transpose2d = host.op == "ConvTranspose" && !host.inputs.empty() && host.inputs[0] >= 0 &&
                             g.values[host.inputs[0]].shape.size() == 4;
    if (host.dead || (host.op != "Conv" && host.op != "Gemm" && !transpose2d)) return false;
    Activation current = host.op == "Gemm" ? host.attrs_as<GemmAttrs>().act : host.attrs_as<ConvAttrs>().act;
    // Relu then a quantize pair (a QAT export's Conv -> Relu -> Q -> DQ) is
    // the pair with its low bound raised to 0 (0 / scale is 0: exact; only
    // a NaN, which Relu makes 0, then stays NaN).
    const bool relu_first = current.kind == ActKind::kRelu;
    if (!current.none() && !relu_first) return false;
    int c = sole_consumer(g, host.outputs[0]);
    if (c < 0) return false;
    Node& act = g.nodes[c];
    if (act.inputs[0] != host.outputs[0] || !act.parsed) return false;
    Activation fused_act;
    const auto* ua = dynamic_cast<const UnaryAttrs*>(act.parsed.get());
    if (relu_first) {
      if (!ua || ua->kind != UnaryKind::kActivation || ua->act.kind != ActKind::kQuantGrid || ua->act.gamma < 0)
        return false;
      fused_act = ua->act;
      fused_act.beta = std::max(fused_act.beta, 0.0f);
    } else if (ua && ua->kind == UnaryKind::kActivation) {
      fused_act = ua->act;
    } else if (const auto* ba = dynamic_cast<const BinaryAttrs*>(act.parsed.get());
               ba && ba->kind == BinaryKind::kPRelu && act.inputs.size() == 2 && is_const(g, act.inputs[1]) &&
               g.values[act.inputs[1]].constant->numel() == 1 &&
               g.values[act.inputs[1]].constant->dtype() == DType::kFloat32 &&
               g.values[act.outputs[0]].shape == g.values[host.outputs[0]].shape) {
      // PRelu with one slope is LeakyRelu: x < 0 ? s x : x.
      fused_act.kind = ActKind::kLeakyRelu;
      fused_act.alpha = g.values[act.inputs[1]].constant->data<float>()[0];
    } else {
      return false;
    }
    if (host.op != "Gemm") {
      auto a = std::make_shared<ConvAttrs>(host.attrs_as<ConvAttrs>());
      a->act = fused_act;
      host.parsed = a;
    } else {
      auto a = std::make_shared<GemmAttrs>(host.attrs_as<GemmAttrs>());
      a->act = fused_act;
      host.parsed = a;
    }
    int out = act.outputs[0];
    act.dead = true;
    absorb(host, act);
    replace_uses(g, out, host.outputs[0]);
    return true;
  };
  for (auto& host : g.nodes)
    while (fuse_one(host)) ++fused;
  // An activation after a Concat of Convs: each Conv applies it to its
  // slice (elementwise, so the same numbers).
  for (auto& act : g.nodes) {
    if (act.dead || !act.parsed || act.inputs.empty()) continue;
    const auto* ua = dynamic_cast<const UnaryAttrs*>(act.parsed.get());
    if (!ua || ua->kind != UnaryKind::kActivation) continue;
    int x = act.inputs[0];
    int ci = x >= 0 ? concat_of_convs(g, x) : -1;
    if (ci < 0 || sole_consumer(g, x) != static_cast<int>(&act - g.nodes.data())) continue;
    for (int in : g.nodes[ci].inputs) {
      Node& conv = g.nodes[g.values[in].producer];
      auto a = std::make_shared<ConvAttrs>(conv.attrs_as<ConvAttrs>());
      a->act = ua->act;
      conv.parsed = a;
      absorb(conv, act);
    }
    int out = act.outputs[0];
    act.dead = true;
    replace_uses(g, out, x);
    ++fused;
  }
  if (fused) g.link_producers();
  return fused;
}

namespace {

// The activation a unary node computes, or null when it is not one.
const Activation* node_activation(const Node& n) {
  if (n.dead || !n.parsed) return nullptr;
  const auto* ua = dynamic_cast<const UnaryAttrs*>(n.parsed.get());
  return ua && ua->kind == UnaryKind::kActivation ? &ua->act : nullptr;
}

bool is_binary(const Node& n, BinaryKind kind) {
  if (n.dead || !n.parsed || n.inputs.size() != 2) return false;
  const auto* ba = dynamic_cast<const BinaryAttrs*>(n.parsed.get());
  return ba && ba->kind == kind;
}

bool same_float_shape(const Graph& g, int a, int b) {
  const Value& x = g.values[a];
  const Value& y = g.values[b];
  return x.dtype == DType::kFloat32 && y.dtype == DType::kFloat32 && x.shape_known && y.shape_known &&
         x.shape == y.shape;
}

}  // namespace

int fuse_gated_activations(Graph& g) {
  int fused = fuse_relu6_hardswish(g) + fuse_decomposed_gelu(g);
  for (auto& mul : g.nodes) {
    if (!is_binary(mul, BinaryKind::kMul)) continue;
    for (int side = 0; side < 2; ++side) {
      int gate = mul.inputs[side], x = mul.inputs[1 - side];
      if (gate < 0 || x < 0 || gate == x || g.values[gate].producer < 0) continue;
      Node& gn = g.nodes[g.values[gate].producer];
      const Activation* act = node_activation(gn);
      if (!act || sole_consumer(g, gate) != static_cast<int>(&mul - g.nodes.data())) continue;
      // The gate reads x itself (Sigmoid, HardSigmoid), or through Softplus (Mish).
      bool direct = gn.inputs[0] == x;
      if (!direct && act->kind != ActKind::kTanh) continue;
      if (!same_float_shape(g, x, mul.outputs[0]) || !same_float_shape(g, x, gate)) continue;
      Activation gated;
      int inner = -1;  // Mish: the Softplus node between x and the Tanh
      if (!direct) {
        if (gn.inputs[0] < 0 || g.values[gn.inputs[0]].producer < 0) continue;
        inner = g.values[gn.inputs[0]].producer;
        const Activation* sp = node_activation(g.nodes[inner]);
        if (!sp || sp->kind != ActKind::kSoftplus || g.nodes[inner].inputs[0] != x ||
            sole_consumer(g, gn.inputs[0]) != g.values[gate].producer)
          continue;
        gated.kind = ActKind::kMish;  // x * tanh(softplus(x))
      } else if (act->kind == ActKind::kSigmoid) {
        gated.kind = ActKind::kSilu;  // x * sigmoid(x)
      } else if (act->kind == ActKind::kHardSigmoid && std::fabs(act->alpha - 1.0f / 6.0f) < 1e-6f &&
                 act->beta == 0.5f) {
        // x * max(0, min(1, x/6 + 1/2)) is HardSwish exactly.
        gated.kind = ActKind::kHardSwish;
      } else {
        continue;
      }
      auto a = std::make_shared<UnaryAttrs>(gn.attrs_as<UnaryAttrs>());
      a->act = gated;
      gn.parsed = a;
      if (inner >= 0) {
        // The Tanh node now reads x and computes Mish; the Softplus is dead.
        Node& sp = g.nodes[inner];
        sp.dead = true;
        gn.inputs[0] = x;
        gn.fused.insert(gn.fused.begin(), sp.name);
        gn.fused_ops.insert(gn.fused_ops.begin(), sp.op);
      }
      int out = mul.outputs[0];
      mul.dead = true;
      absorb(gn, mul);
      replace_uses(g, out, gn.outputs[0]);
      ++fused;
      break;
    }
  }
  if (fused) g.link_producers();
  return fused;
}

namespace {

// The value of a one-element float constant, or NaN.
float scalar_const(const Graph& g, int v) {
  if (v < 0 || !g.values[v].constant) return std::nanf("");
  const Tensor& t = *g.values[v].constant;
  return t.dtype() == DType::kFloat32 && t.numel() == 1 ? t.data<float>()[0] : std::nanf("");
}

// The node making v when it is `op` and v's only reader is `reader`; null otherwise.
Node* sole_producer(Graph& g, int v, const char* op, int reader) {
  if (v < 0 || g.values[v].producer < 0) return nullptr;
  Node& p = g.nodes[g.values[v].producer];
  if (p.dead || p.op != op || sole_consumer(g, v) != reader) return nullptr;
  return &p;
}

}  // namespace

int fuse_relu6_hardswish(Graph& g) {
  // x * Clip(x + 3, 0, 6) / 6 (or * 1/6): HardSwish as older exporters
  // (Paddle, torch before opset 14) write it.
  int fused = 0;
  for (size_t di = 0; di < g.nodes.size(); ++di) {
    Node& d = g.nodes[di];
    bool div = is_binary(d, BinaryKind::kDiv), mul = is_binary(d, BinaryKind::kMul);
    if (!div && !mul) continue;
    int m_side = -1;
    for (int side = 0; side < 2 && m_side < 0; ++side) {
      float k = scalar_const(g, d.inputs[1 - side]);
      if (div && side == 0 && k == 6.0f) m_side = 0;
      if (mul && std::fabs(k - 1.0f / 6.0f) < 1e-7f) m_side = side;
    }
    if (m_side < 0) continue;
    Node* m = sole_producer(g, d.inputs[m_side], "Mul", static_cast<int>(di));
    if (!m || !is_binary(*m, BinaryKind::kMul)) continue;
    int mi = g.values[d.inputs[m_side]].producer;
    for (int side = 0; side < 2; ++side) {
      int x = m->inputs[1 - side];
      Node* clip = sole_producer(g, m->inputs[side], "Clip", mi);
      if (!clip || x < 0) continue;
      const Activation* ca = node_activation(*clip);
      if (!ca || ca->kind != ActKind::kClip || ca->alpha != 0.0f || ca->beta != 6.0f) continue;
      int ci = g.values[m->inputs[side]].producer;
      Node* add = sole_producer(g, clip->inputs[0], "Add", ci);
      if (!add || !is_binary(*add, BinaryKind::kAdd)) continue;
      int a_side = add->inputs[0] == x ? 0 : add->inputs[1] == x ? 1 : -1;
      if (a_side < 0 || scalar_const(g, add->inputs[1 - a_side]) != 3.0f) continue;
      if (!same_float_shape(g, x, d.outputs[0])) continue;
      auto a = std::make_shared<UnaryAttrs>(clip->attrs_as<UnaryAttrs>());
      a->act = Activation{};
      a->act.kind = ActKind::kHardSwish;
      clip->parsed = a;
      clip->inputs.resize(1);
      clip->inputs[0] = x;
      clip->fused.insert(clip->fused.begin(), add->name);
      clip->fused_ops.insert(clip->fused_ops.begin(), add->op);
      add->dead = true;
      m->dead = true;
      d.dead = true;
      absorb(*clip, *m);
      absorb(*clip, d);
      replace_uses(g, d.outputs[0], clip->outputs[0]);
      ++fused;
      break;
    }
  }
  if (fused) g.link_producers();
  return fused;
}

int fuse_decomposed_gelu(Graph& g) {
  // GELU as exporters before opset 20 write it (torch.nn.GELU, BERT-style
  // code): x * 0.5 * (1 + erf(x / sqrt 2)), with the division also written
  // as a product with 1/sqrt 2 and the half taken last, or first, of x:
  //   Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
  //   Mul(Mul(x, 0.5), Add(Erf(Div(x, sqrt 2)), 1))
  // The Erf node becomes the whole GELU (an activation the Conv and Gemm
  // epilogues and every backend compute); the others die.
  int fused = 0;
  constexpr float kSqrt2 = 1.41421356f;
  auto near = [](float v, float want) { return std::fabs(v - want) <= 1e-6f * want; };
  for (size_t ei = 0; ei < g.nodes.size(); ++ei) {
    Node& erf = g.nodes[ei];
    if (erf.dead || erf.op != "Erf" || erf.inputs.size() != 1) continue;
    // x / sqrt 2, or x * (1 / sqrt 2).
    int d_out = erf.inputs[0];
    if (d_out < 0 || g.values[d_out].producer < 0) continue;
    Node& d = g.nodes[g.values[d_out].producer];
    if (sole_consumer(g, d_out) != static_cast<int>(ei)) continue;
    int x = -1;
    if (is_binary(d, BinaryKind::kDiv) && near(scalar_const(g, d.inputs[1]), kSqrt2)) x = d.inputs[0];
    for (int side = 0; side < 2 && x < 0; ++side)
      if (is_binary(d, BinaryKind::kMul) && near(scalar_const(g, d.inputs[1 - side]), 1.0f / kSqrt2))
        x = d.inputs[side];
    if (x < 0 || !same_float_shape(g, x, erf.outputs[0])) continue;
    // 1 + erf(...).
    int ai = sole_consumer(g, erf.outputs[0]);
    if (ai < 0 || !is_binary(g.nodes[ai], BinaryKind::kAdd)) continue;
    Node& add = g.nodes[ai];
    int e_side = add.inputs[0] == erf.outputs[0] ? 0 : 1;
    if (scalar_const(g, add.inputs[1 - e_side]) != 1.0f) continue;
    // Times x and 0.5, in either order.
    int mi = sole_consumer(g, add.outputs[0]);
    if (mi < 0 || !is_binary(g.nodes[mi], BinaryKind::kMul)) continue;
    Node& m = g.nodes[mi];
    int other = m.inputs[0] == add.outputs[0] ? m.inputs[1] : m.inputs[0];
    Node* half = nullptr;  // the node multiplying by 0.5
    Node* last = nullptr;  // the node whose output is the GELU
    if (other == x) {
      int hi = sole_consumer(g, m.outputs[0]);
      if (hi < 0 || !is_binary(g.nodes[hi], BinaryKind::kMul)) continue;
      Node& h = g.nodes[hi];
      int m_side = h.inputs[0] == m.outputs[0] ? 0 : 1;
      if (scalar_const(g, h.inputs[1 - m_side]) != 0.5f) continue;
      half = &h;
      last = &h;
    } else if (other >= 0 && g.values[other].producer >= 0) {
      Node& h = g.nodes[g.values[other].producer];
      if (!is_binary(h, BinaryKind::kMul) || sole_consumer(g, other) != mi) continue;
      int x_side = h.inputs[0] == x ? 0 : h.inputs[1] == x ? 1 : -1;
      if (x_side < 0 || scalar_const(g, h.inputs[1 - x_side]) != 0.5f) continue;
      half = &h;
      last = &m;
    } else {
      continue;
    }
    if (!same_float_shape(g, x, last->outputs[0])) continue;
    auto a = std::make_shared<UnaryAttrs>(erf.attrs_as<UnaryAttrs>());
    a->kind = UnaryKind::kActivation;
    a->act = Activation{};
    a->act.kind = ActKind::kGelu;
    erf.parsed = a;
    erf.inputs[0] = x;
    erf.fused.insert(erf.fused.begin(), d.name);
    erf.fused_ops.insert(erf.fused_ops.begin(), d.op);
    d.dead = add.dead = m.dead = half->dead = true;
    absorb(erf, add);
    absorb(erf, m);
    absorb(erf, *half);
    replace_uses(g, last->outputs[0], erf.outputs[0]);
    ++fused;
  }
  if (fused) g.link_producers();
  return fused;
}

int fuse_residual_add(Graph& g) {
  int fused = 0;
  std::vector<int> order = g.topo_order();
  std::vector<int> pos(g.nodes.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = static_cast<int>(i);
  for (int ai : order) {
    Node& add = g.nodes[ai];
    if (!is_binary(add, BinaryKind::kAdd)) continue;
    int u = add.inputs[0], v = add.inputs[1];
    if (u < 0 || v < 0 || u == v || !same_float_shape(g, u, v) || !same_float_shape(g, u, add.outputs[0])) continue;
    // The side made by a Conv that can take the other as its residual; of
    // two such, the one that runs later, so the order of the rest stays.
    int best = -1, best_pos = -1;
    for (int side = 0; side < 2; ++side) {
      int c = add.inputs[side];
      int p = g.values[c].producer;
      if (p < 0 || g.values[c].constant) continue;
      const Node& conv = g.nodes[p];
      if (conv.dead || conv.op != "Conv" || conv.inputs.size() > 3 || conv.outputs[0] != c) continue;
      if (!conv.attrs_as<ConvAttrs>().act.none() || sole_consumer(g, c) != ai) continue;
      if (pos[p] > best_pos) {
        best = side;
        best_pos = pos[p];
      }
    }
    if (best < 0) continue;
    int c = add.inputs[best], r = add.inputs[1 - best];
    Node& conv = g.nodes[g.values[c].producer];
    conv.inputs.resize(4, -1);
    conv.inputs[3] = r;
    int out = add.outputs[0];
    add.dead = true;
    absorb(conv, add);
    replace_uses(g, out, c);
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
