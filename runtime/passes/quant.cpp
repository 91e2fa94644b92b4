// The QOperator ops as the QDQ form (runs once, at load, before the half
// lowering and any plan): QLinearConv, QLinearMatMul and onnxruntime's
// com.microsoft QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
// QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
// QLinearConcat and QGemm each become DequantizeLinear of its quantized
// inputs, the float op (under the node's name), and QuantizeLinear of the
// result with the output's scale and zero point. The 8-bit values such a
// model passes straight into MaxPool, GlobalMaxPool, Resize or Upsample
// (float32-only here) are dequantized and quantized again with the scale
// they carry, which is exact. From there the two forms are one graph: the
// planner and the kernels see DequantizeLinear, QuantizeLinear and float ops.
#include "runtime/op_registry.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/quant.h"
#include "runtime/passes/passes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace minirt {

namespace {

class Lowering {
 public:
  explicit Lowering(Graph& g) : g_(g) {
    for (const Value& v : g.values) taken_.insert(v.name);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

  int value(const std::string& base) { return g_.add_value(fresh(base)); }

  // DequantizeLinear(x, scale, zero point) along `axis`; returns its output.
  int dequantize(const std::string& base, int x, int scale, int zp, int64_t axis) {
    int y = value(base);
    std::vector<int> in = {x, scale};
    if (zp >= 0) in.push_back(zp);
    quant_node(base, "DequantizeLinear", std::move(in), {y}, axis);
    return y;
  }

  void quant_node(const std::string& name, const char* op, std::vector<int> in, std::vector<int> out, int64_t axis) {
    int k = g_.add_node(name, op, std::move(in), std::move(out));
    auto a = std::make_shared<QuantAttrs>();
    a->axis = axis;
    g_.nodes[k].parsed = a;
    Attribute at;
    at.kind = Attribute::Kind::kInt;
    at.i = axis;
    g_.nodes[k].attrs["axis"] = at;
  }

  // The float op that replaces `old`, under its name, with its attributes
  // less those only the contrib op has; parsed by the float op's schema
  // (QLinearSoftmax: with the Softmax version its `opset` attribute names).
  void float_op(const Node& old, const char* op, std::vector<int> in, int out) {
    int f = g_.add_node(old.name, op, std::move(in), {out});
    Node& n = g_.nodes[f];
    n.attrs = old.attrs;
    n.attrs.erase("channels_last");
    int64_t opset = g_.opset;
    if (auto it = n.attrs.find("opset"); it != n.attrs.end()) {
      opset = it->second.i;
      n.attrs.erase(it);
    }
    const OpSchema* s = find_schema(op);
    if (s && s->parse) n.parsed = s->parse(ParseContext(g_, n, opset));
  }

  // Parses a new node's attributes with its op's schema (none for ops without).
  void parse(int k) {
    const OpSchema* s = find_schema(g_.nodes[k].op);
    if (s && s->parse) g_.nodes[k].parsed = s->parse(ParseContext(g_, g_.nodes[k], g_.opset));
  }

  Graph& g_;

 private:
  std::set<std::string> taken_;
};

}  // namespace

namespace {

// Where a QOperator node's quantized operands sit: input `x` with its scale
// and zero point (-1: absent), dequantized along `axis`.
struct Operand {
  int x, scale, zp;
  int64_t axis;
};

// What each op becomes: its float op, the operands to dequantize, the
// output's scale and zero point inputs, and attributes only the contrib op has.
struct Rewrite {
  const char* float_op;
  std::vector<Operand> operands;
  int y_scale = -1, y_zp = -1;
};

Rewrite rewrite_of(const Node& n) {
  const std::string& op = n.op;
  auto unary = [](const char* f) { return Rewrite{f, {{0, 1, 2, 1}}, 3, 4}; };
  if (op == "QLinearConv") return {"Conv", {{0, 1, 2, 1}, {3, 4, 5, 0}}, 6, 7};
  if (op == "QLinearMatMul") return {"MatMul", {{0, 1, 2, -2}, {3, 4, 5, -1}}, 6, 7};
  if (op == "QLinearAdd") return {"Add", {{0, 1, 2, 1}, {3, 4, 5, 1}}, 6, 7};
  if (op == "QLinearMul") return {"Mul", {{0, 1, 2, 1}, {3, 4, 5, 1}}, 6, 7};
  if (op == "QLinearGlobalAveragePool") return unary("GlobalAveragePool");
  if (op == "QLinearAveragePool") return unary("AveragePool");
  if (op == "QLinearSigmoid") return unary("Sigmoid");
  if (op == "QLinearLeakyRelu") return unary("LeakyRelu");
  if (op == "QLinearSoftmax") return unary("Softmax");
  if (op == "QLinearConcat") {
    Rewrite r{"Concat", {}, 0, 1};
    for (int i = 2; i < static_cast<int>(n.inputs.size()); i += 3) r.operands.push_back({i, i + 1, i + 2, 1});
    return r;
  }
  if (op == "QGemm") {
    // B per column: its axis 1, or 0 when transposed.
    const auto it = n.attrs.find("transB");
    const int64_t tb = it == n.attrs.end() ? 0 : it->second.i;
    return {"Gemm", {{0, 1, 2, 1}, {3, 4, 5, tb ? 0 : 1}}, 7, 8};
  }
  return {nullptr, {}};
}

// Ops that minirt runs on float32 only but that QOperator models feed 8-bit
// values straight (onnxruntime runs them on uint8): exact on the dequantized
// values with the same scale (max and nearest picks commute with it).
bool float_only_movement(const std::string& op) {
  return op == "MaxPool" || op == "GlobalMaxPool" || op == "Resize" || op == "Upsample";
}
// Ops whose output holds the input's 8-bit values (so its scale) rearranged.
bool keeps_values(const std::string& op) {
  return op == "Flatten" || op == "Reshape" || op == "Transpose" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity" || op == "Slice" || op == "Split" || op == "DepthToSpace" || op == "SpaceToDepth" ||
         float_only_movement(op);
}

}  // namespace

int lower_qoperator_ops(Graph& g) {
  Lowering L(g);
  int lowered = 0;
  // Values made by a lowered QuantizeLinear (or rearranged from one): their scale and zero point.
  std::map<int, std::pair<int, int>> quantized;
  for (int k : g.topo_order()) {
    if (g.nodes[k].dead) continue;
    const Node node = g.nodes[k];  // a copy: adding nodes moves the vector
    const Rewrite r = rewrite_of(node);
    auto arg = [&](int i) { return i >= 0 && i < static_cast<int>(node.inputs.size()) ? node.inputs[i] : -1; };
    if (!r.float_op) {
      // Default-domain ops fed by a lowered op's 8-bit output.
      if (!node.domain.empty() || node.inputs.empty() || !keeps_values(node.op)) continue;
      auto q = quantized.find(node.inputs[0]);
      if (q == quantized.end()) continue;
      const auto [scale, zp] = q->second;
      if (float_only_movement(node.op)) {
        const int xf = L.dequantize(node.name + ":x", node.inputs[0], scale, zp, 1);
        const int yf = L.value(node.name + ":float");
        g.nodes[k].inputs[0] = xf;
        const int y = node.outputs[0];
        g.nodes[k].outputs[0] = yf;
        std::vector<int> q_in = {yf, scale};
        if (zp >= 0) q_in.push_back(zp);
        L.quant_node(L.fresh(node.name + ":y"), "QuantizeLinear", std::move(q_in), {y}, 1);
      }
      const size_t outs = float_only_movement(node.op) ? 1 : node.outputs.size();
      for (size_t i = 0; i < outs; ++i)
        if (node.outputs[i] >= 0) quantized[node.outputs[i]] = q->second;
      continue;
    }
    g.nodes[k].dead = true;
    std::vector<int> float_in;
    for (size_t i = 0; i < r.operands.size(); ++i) {
      const Operand& o = r.operands[i];
      float_in.push_back(L.dequantize(node.name + ":" + std::to_string(i), arg(o.x), arg(o.scale), arg(o.zp), o.axis));
    }
    const std::string& op = node.op;
    if ((op == "QLinearConv" && arg(8) >= 0) || (op == "QGemm" && arg(6) >= 0)) {
      // The int32 bias: scale x_scale * w_scale (QGemm: alpha * a_scale * b_scale), zero point 0.
      const int bias = op == "QLinearConv" ? arg(8) : arg(6);
      int bs = L.value(node.name + ":bias_scale");
      L.parse(g.add_node(L.fresh(node.name + ":bias_scale"), "Mul", {arg(1), arg(4)}, {bs}));
      const auto alpha = node.attrs.find("alpha");
      if (op == "QGemm" && alpha != node.attrs.end() && alpha->second.f != 1.0f) {
        Tensor a = Tensor::zeros(DType::kFloat32, {});
        a.data<float>()[0] = alpha->second.f;
        const int av = g.add_constant(L.fresh(node.name + ":alpha"), std::move(a));
        const int scaled = L.value(node.name + ":bias_scale_alpha");
        L.parse(g.add_node(L.fresh(node.name + ":bias_scale_alpha"), "Mul", {bs, av}, {scaled}));
        bs = scaled;
      }
      // Per output channel: Conv's bias is 1-D; Gemm's C broadcasts along its last axis.
      float_in.push_back(L.dequantize(node.name + ":bias", bias, bs, -1, op == "QLinearConv" ? 0 : -1));
    }
    const int y = node.outputs[0];
    const bool float_out = op == "QGemm" && arg(r.y_scale) < 0;  // QGemm without y_scale: float output
    const int yf = float_out ? y : L.value(node.name + ":float");
    L.float_op(node, r.float_op, std::move(float_in), yf);
    if (!float_out) {
      std::vector<int> q_in = {yf, arg(r.y_scale)};
      if (arg(r.y_zp) >= 0) q_in.push_back(arg(r.y_zp));
      L.quant_node(L.fresh(node.name + ":y"), "QuantizeLinear", std::move(q_in), {y}, 1);
      quantized[y] = {arg(r.y_scale), arg(r.y_zp)};
    }
    ++lowered;
  }
  if (lowered) g.link_producers();
  return lowered;
}

namespace {

// A per-tensor scale (and zero point, or none) known at plan time.
struct TensorQuant {
  float scale = 0;
  int32_t zp = 0;
  DType type = DType::kUndefined;
};
bool tensor_quant(const Graph& g, const Node& n, TensorQuant* q) {
  const int s = n.input(1), z = n.input(2);
  if (s < 0 || !g.values[s].constant || g.values[s].constant->numel() != 1) return false;
  const Tensor& st = *g.values[s].constant;
  if (st.dtype() != DType::kFloat32) return false;
  q->scale = st.data<float>()[0];
  if (z >= 0) {
    if (!g.values[z].constant || g.values[z].constant->numel() != 1) return false;
    const Tensor& zt = *g.values[z].constant;
    q->type = zt.dtype();
    if (q->type == DType::kInt8)
      q->zp = zt.data<int8_t>()[0];
    else if (q->type == DType::kUInt8)
      q->zp = zt.data<uint8_t>()[0];
    else
      return false;
  }
  return std::isfinite(q->scale) && q->scale > 0;
}

bool is_graph_output(const Graph& g, int v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

}  // namespace

int mark_dequantized_constants(Graph& g) {
  int marked = 0;
  for (const Node& n : g.nodes) {
    if (n.dead || n.op != "DequantizeLinear" || !n.domain.empty() || n.outputs.empty() || n.outputs[0] < 0) continue;
    const int x = n.input(0), s = n.input(1), z = n.input(2);
    if (x < 0 || s < 0 || !g.values[x].constant || !g.values[s].constant) continue;
    if (z >= 0 && !g.values[z].constant) continue;
    const Tensor& xt = *g.values[x].constant;
    const Tensor& st = *g.values[s].constant;
    if ((xt.dtype() != DType::kInt8 && xt.dtype() != DType::kUInt8) || st.dtype() != DType::kFloat32) continue;
    const auto& a = n.attrs_as<QuantAttrs>();
    if (a.block_size != 0) continue;
    int axis = -1;
    if (st.numel() != 1) {
      const int64_t rank = static_cast<int64_t>(xt.shape().size());
      const int64_t ax = a.axis < 0 ? a.axis + rank : a.axis;
      if (st.shape().size() != 1 || ax < 0 || ax >= rank || xt.shape()[static_cast<size_t>(ax)] != st.numel()) continue;
      axis = static_cast<int>(ax);
    }
    // Marked only where every q - zero_point is an int8 code (int8 weights,
    // or uint8 ones with their zero point near 128), so the floats folding
    // makes are exactly float(code) * scale.
    const int64_t dim = axis < 0 ? 1 : xt.shape()[static_cast<size_t>(axis)];
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; axis >= 0 && d < xt.shape().size(); ++d) inner *= xt.shape()[d];
    // (numel() out of the loops: ResNet-50's 25M weights made it a third of a first run.)
    const Tensor* zt = z >= 0 ? g.values[z].constant.get() : nullptr;
    const int64_t zcount = zt ? zt->numel() : 0, count = xt.numel();
    if (zt && zcount != 1 && zcount != dim) continue;
    auto zero_point = [&](int64_t k) -> int32_t {
      if (!zt) return 0;
      const int64_t at = zcount == 1 ? 0 : k;
      return zt->dtype() == DType::kInt8 ? zt->data<int8_t>()[at] : zt->data<uint8_t>()[at];
    };
    bool zero = true;  // every zero point 0: int8 weights are codes as they are
    for (int64_t k = 0; k < zcount && zero; ++k) zero = zero_point(k) == 0;
    bool codes = true;
    if (xt.dtype() != DType::kInt8 || !zero) {
      for (int64_t i = 0; i < count && codes; ++i) {
        const int32_t q = xt.dtype() == DType::kInt8 ? xt.data<int8_t>()[i] : xt.data<uint8_t>()[i];
        const int32_t c = q - zero_point(axis < 0 ? 0 : (i / inner) % dim);
        codes = c >= -128 && c <= 127;
      }
    }
    if (!codes) continue;
    Value& y = g.values[n.outputs[0]];
    y.quant_scales = std::make_shared<const std::vector<float>>(st.data<float>(), st.data<float>() + st.numel());
    y.quant_axis = axis;
    ++marked;
  }
  return marked;
}

// QuantizeLinear -> (Flatten | Reshape | Squeeze | Unsqueeze) ->
// DequantizeLinear, per tensor (a QOperator model's QLinearGlobalAveragePool
// -> Flatten -> QGemm, lowered): the DequantizeLinear moves before the
// reshaping op, which then reshapes floats, so that the pair meets. Exact:
// the op moves values without changing them. The two nodes trade places in
// the node list, which stays in topological order. Returns the number moved.
int hoist_dequantize_over_reshapes(Graph& g) {
  std::vector<int> readers(g.values.size(), 0);
  for (const Node& n : g.nodes)
    if (!n.dead)
      for (int v : n.inputs)
        if (v >= 0) ++readers[static_cast<size_t>(v)];
  std::vector<int> maker(g.values.size(), -1);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!g.nodes[k].dead)
      for (int v : g.nodes[k].outputs)
        if (v >= 0) maker[static_cast<size_t>(v)] = static_cast<int>(k);
  int moved = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& d = g.nodes[k];
    if (d.dead || d.op != "DequantizeLinear" || !d.domain.empty() || d.outputs.size() != 1) continue;
    const int m = d.input(0);
    const int s = d.input(1);
    if (m < 0 || s < 0 || !g.values[s].constant || g.values[s].constant->numel() != 1) continue;
    const int mi = maker[static_cast<size_t>(m)];
    if (mi < 0 || mi > static_cast<int>(k) || readers[static_cast<size_t>(m)] != 1 || is_graph_output(g, m)) continue;
    const Node& mv = g.nodes[static_cast<size_t>(mi)];
    if (!mv.domain.empty() || mv.outputs.size() != 1 ||
        (mv.op != "Flatten" && mv.op != "Reshape" && mv.op != "Squeeze" && mv.op != "Unsqueeze"))
      continue;
    const int q = mv.input(0);
    const int qi = q >= 0 ? maker[static_cast<size_t>(q)] : -1;
    if (qi < 0 || g.nodes[static_cast<size_t>(qi)].op != "QuantizeLinear" ||
        !g.nodes[static_cast<size_t>(qi)].domain.empty() || !g.values[static_cast<size_t>(q)].shape_known)
      continue;
    const int out = d.outputs[0];
    Node dq = d, mov = mv;
    // DequantizeLinear: q -> m (floats of q's shape); the reshape: m -> out.
    dq.inputs[0] = q;
    dq.outputs[0] = m;
    mov.inputs[0] = m;
    mov.outputs[0] = out;
    Value& mval = g.values[static_cast<size_t>(m)];
    mval.dtype = g.values[static_cast<size_t>(out)].dtype;
    mval.shape = g.values[static_cast<size_t>(q)].shape;
    mval.shape_known = true;
    g.nodes[static_cast<size_t>(mi)] = std::move(dq);
    g.nodes[k] = std::move(mov);
    maker[static_cast<size_t>(m)] = mi;
    maker[static_cast<size_t>(out)] = static_cast<int>(k);
    ++moved;
  }
  if (moved) g.link_producers();
  return moved;
}

int fold_quantize_pairs(Graph& g) {
  hoist_dequantize_over_reshapes(g);
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!g.nodes[k].dead)
      for (int v : g.nodes[k].inputs)
        if (v >= 0) readers[v].push_back(static_cast<int>(k));
  int folded = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& q = g.nodes[k];
    if (q.dead || q.op != "QuantizeLinear" || !q.domain.empty()) continue;
    TensorQuant tq;
    if (!tensor_quant(g, q, &tq)) continue;
    const int y = q.outputs[0];
    const DType type = g.values[y].dtype;
    if (type != DType::kInt8 && type != DType::kUInt8) continue;
    if (is_graph_output(g, y) || readers[y].empty()) continue;
    bool all = true;
    for (int r : readers[y]) {
      const Node& d = g.nodes[r];
      TensorQuant td;
      all = all && d.op == "DequantizeLinear" && d.domain.empty() && d.input(0) == y && tensor_quant(g, d, &td) &&
            td.scale == tq.scale && td.zp == tq.zp;
    }
    if (!all) continue;
    const QuantRange range = quant_range(type);
    auto attrs = std::make_shared<UnaryAttrs>();
    attrs->kind = UnaryKind::kActivation;
    attrs->act.kind = ActKind::kQuantGrid;
    attrs->act.alpha = tq.scale;
    attrs->act.beta = static_cast<float>(range.lo - tq.zp);
    attrs->act.gamma = static_cast<float>(range.hi - tq.zp);
    // The first reader becomes the step; the others (a value that feeds a
    // convolution and a residual Add, each through its own DequantizeLinear)
    // read its output, unless theirs is a graph output.
    int kept = -1;
    for (int r : readers[y]) {
      Node& d = g.nodes[r];
      if (kept >= 0 && !is_graph_output(g, d.outputs[0])) {
        const int from = d.outputs[0], to = g.nodes[kept].outputs[0];
        d.dead = true;
        for (Node& n : g.nodes)
          if (!n.dead)
            for (int& in : n.inputs)
              if (in == from) in = to;
        g.nodes[kept].fused.push_back(d.name);
        g.nodes[kept].fused_ops.push_back(d.op);
        continue;
      }
      d.fused.push_back(q.name);  // the node keeps the DequantizeLinear's name
      d.fused_ops.push_back(q.op);
      d.op = "QuantizeDequantize";
      d.domain = "minirt";
      d.inputs = {q.inputs[0]};
      d.attrs.clear();
      d.parsed = attrs;
      if (kept < 0) kept = r;
    }
    q.dead = true;
    ++folded;
  }
  if (folded) g.link_producers();
  return folded;
}

}  // namespace minirt
