// The QOperator ops as the QDQ form (runs once, at load, before the half
// lowering and any plan): each QLinearConv / QLinearMatMul becomes
// DequantizeLinear of its quantized inputs, the float op, and
// QuantizeLinear of the result with the output's scale and zero point.
// From there the two forms are one graph: the planner and the kernels see
// only DequantizeLinear, QuantizeLinear and float ops. The float op keeps
// the node's name; the others are named after it.
#include "runtime/op_registry.h"
#include "runtime/ops/quant.h"
#include "runtime/passes/passes.h"

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

  // The float op that replaces node `k`, under its name and attributes.
  void float_op(int k, const char* op, std::vector<int> in, int out) {
    const Node old = g_.nodes[k];
    int f = g_.add_node(old.name, op, std::move(in), {out});
    g_.nodes[f].attrs = old.attrs;
    g_.nodes[f].parsed = old.parsed;
    g_.nodes[f].domain.clear();
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

int lower_qoperator_ops(Graph& g) {
  Lowering L(g);
  int lowered = 0;
  const size_t count = g.nodes.size();
  for (size_t k = 0; k < count; ++k) {
    if (g.nodes[k].dead) continue;
    const std::string op = g.nodes[k].op;
    if (op != "QLinearConv" && op != "QLinearMatMul") continue;
    const std::vector<int> in = g.nodes[k].inputs;
    const int y = g.nodes[k].outputs[0];
    const std::string name = g.nodes[k].name;
    g.nodes[k].dead = true;
    auto arg = [&](size_t i) { return i < in.size() ? in[i] : -1; };
    const int yf = L.value(name + ":float");
    if (op == "QLinearConv") {
      // x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B
      const int xf = L.dequantize(name + ":x", arg(0), arg(1), arg(2), 1);
      const int wf = L.dequantize(name + ":w", arg(3), arg(4), arg(5), 0);
      std::vector<int> conv_in = {xf, wf};
      if (arg(8) >= 0) {
        // The int32 bias has the scale x_scale * w_scale and zero point 0.
        const int bs = L.value(name + ":bias_scale");
        L.parse(g.add_node(L.fresh(name + ":bias_scale"), "Mul", {arg(1), arg(4)}, {bs}));
        conv_in.push_back(L.dequantize(name + ":bias", arg(8), bs, -1, 0));
      }
      L.float_op(static_cast<int>(k), "Conv", std::move(conv_in), yf);
    } else {
      // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point:
      // a per row (its second-to-last axis), b per column (its last).
      const int af = L.dequantize(name + ":a", arg(0), arg(1), arg(2), -2);
      const int bf = L.dequantize(name + ":b", arg(3), arg(4), arg(5), -1);
      L.float_op(static_cast<int>(k), "MatMul", {af, bf}, yf);
      g.nodes.back().attrs.clear();
      L.parse(static_cast<int>(g.nodes.size()) - 1);
    }
    std::vector<int> q_in = {yf, arg(6)};
    if (arg(7) >= 0) q_in.push_back(arg(7));
    L.quant_node(L.fresh(name + ":y"), "QuantizeLinear", std::move(q_in), {y}, 1);
    ++lowered;
  }
  if (lowered) g.link_producers();
  return lowered;
}

}  // namespace minirt
