// The half lowering: float16 and bfloat16 models run in float32. See
// lower_half_precision in passes.h.
#include "runtime/ops/shape_ops.h"
#include "runtime/passes/passes.h"

#include <minirt/half.h>

#include <algorithm>
#include <map>
#include <set>

namespace minirt {

std::string HalfLowering::summary() const {
  if (!any()) return {};
  std::string s = float16 && bfloat16 ? "float16/bfloat16 model: " : float16 ? "float16 model: " : "bfloat16 model: ";
  std::vector<std::string> parts;
  if (initializers)
    parts.push_back(std::to_string(initializers) + " initializer" + (initializers == 1 ? "" : "s") +
                    " converted to float32 at load");
  if (constants)
    parts.push_back(std::to_string(constants) + " Constant value" + (constants == 1 ? "" : "s") +
                    " converted to float32 at load");
  if (casts)
    parts.push_back(std::to_string(casts) + " cast" + (casts == 1 ? "" : "s") +
                    " to a half type computed in float32 with rounding to its precision");
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  if (!inputs.empty()) {
    s += std::string(parts.empty() ? "" : "; ") + "inputs";
    for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : " ") + inputs[i];
  }
  if (!outputs.empty()) {
    s += std::string(parts.empty() && inputs.empty() ? "" : "; ") + "outputs";
    for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : " ") + outputs[i];
  }
  s += "; computed in float32";
  return s;
}

namespace {

// A new name for a value, unlike every other value's.
std::string fresh_name(const Graph& g, const std::string& base) {
  std::set<std::string> taken;
  for (const Value& v : g.values) taken.insert(v.name);
  std::string name = base;
  for (int k = 2; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

Attribute int_attr(int64_t i) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = i;
  return a;
}

std::shared_ptr<const OpAttrs> cast_attrs(DType to, DType round = DType::kUndefined) {
  auto a = std::make_shared<CastAttrs>();
  a->to = to;
  a->round = round;
  return a;
}

}  // namespace

bool lower_half_precision(Graph& g) {
  HalfLowering& st = g.half;
  auto seen = [&](DType t) {
    if (t == DType::kFloat16) st.float16 = true;
    if (t == DType::kBFloat16) st.bfloat16 = true;
  };
  // Values whose half type is known before any shape inference: graph
  // inputs, initializers, Constant outputs and Cast outputs (for CastLike).
  std::map<int, DType> half_of;
  for (int v : g.inputs)
    if (is_half_dtype(g.values[v].dtype)) half_of[v] = g.values[v].dtype;

  // Initializers.
  for (size_t v = 0; v < g.values.size(); ++v) {
    Value& val = g.values[v];
    if (!val.constant || !is_half_dtype(val.constant->dtype())) continue;
    half_of[static_cast<int>(v)] = val.constant->dtype();
    seen(val.constant->dtype());
    val.constant = std::make_shared<Tensor>(to_float32(*val.constant));
    val.dtype = DType::kFloat32;
    ++st.initializers;
  }

  // Constants and casts, in file order (a CastLike reads the type of a
  // value made earlier).
  std::vector<int> order = g.topo_order();
  for (int idx : order) {
    Node& n = g.nodes[idx];
    if (n.op == "Constant" || n.op == "ConstantOfShape") {
      const Tensor& value = n.attrs_as<ConstantAttrs>().value;
      if (!is_half_dtype(value.dtype())) continue;
      if (n.op == "Constant" && n.outputs[0] >= 0) half_of[n.outputs[0]] = value.dtype();
      seen(value.dtype());
      auto a = std::make_shared<ConstantAttrs>();
      a->value = to_float32(value);
      n.parsed = a;
      ++st.constants;
    } else if (n.op == "Cast") {
      const DType to = n.attrs_as<CastAttrs>().to;
      if (!is_half_dtype(to)) continue;
      half_of[n.outputs[0]] = to;
      seen(to);
      n.parsed = cast_attrs(DType::kFloat32, to);
      n.attrs["to"] = int_attr(static_cast<int64_t>(DType::kFloat32));
      ++st.casts;
    } else if (n.op == "CastLike") {
      auto it = half_of.find(n.input(1));
      if (it != half_of.end()) {
        // Now a Cast that rounds; the like-input was only read for its type.
        half_of[n.outputs[0]] = it->second;
        seen(it->second);
        n.op = "Cast";
        n.inputs.resize(1);
        n.parsed = cast_attrs(DType::kFloat32, it->second);
        n.attrs["to"] = int_attr(static_cast<int64_t>(DType::kFloat32));
        ++st.casts;
      }
      // A CastLike whose like-input is made inside the graph casts to that
      // value's computed type: float32 for a half value, so unrounded.
    }
  }

  // Graph inputs of half type: a Cast to float32 is their only reader.
  for (int v : std::vector<int>(g.inputs)) {
    const DType t = g.values[v].dtype;
    if (!is_half_dtype(t)) continue;
    bool read = false;
    for (const Node& n : g.nodes)
      for (int in : n.inputs) read = read || (!n.dead && in == v);
    if (!read) continue;
    seen(t);
    const std::string name = g.values[v].name;
    int f = g.add_value(fresh_name(g, name + ":float32"));
    for (Node& n : g.nodes)
      if (!n.dead)
        for (int& in : n.inputs)
          if (in == v) in = f;
    int c = g.add_node(fresh_name(g, name + ":to_float32"), "Cast", {v}, {f});
    g.nodes[c].parsed = cast_attrs(DType::kFloat32);
    g.nodes[c].attrs["to"] = int_attr(static_cast<int64_t>(DType::kFloat32));
    st.inputs.push_back(name + " " + dtype_name(t) + "->float32");
  }

  // Graph outputs of half type (as the file declares them): the value is
  // computed in float32 under a new name, and a Cast makes the output.
  std::map<int, int> made;  // internal value -> its half output value
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const int v = g.outputs[i];
    DType t = i < g.declared_outputs.size() ? g.declared_outputs[i].dtype : DType::kUndefined;
    if (!is_half_dtype(t)) t = half_of.count(v) ? half_of[v] : g.values[v].dtype;
    if (!is_half_dtype(t)) continue;
    // A graph input passed straight through keeps its type.
    if (std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end()) continue;
    if (auto it = made.find(v); it != made.end()) {
      g.outputs[i] = it->second;
      continue;
    }
    seen(t);
    const std::string name = g.values[v].name;
    g.values[v].name = fresh_name(g, name + ":float32");
    g.values[v].dtype = DType::kFloat32;
    int h = g.add_value(name);
    g.values[h].dtype = t;
    int c = g.add_node(fresh_name(g, name + ":to_" + dtype_name(t)), "Cast", {v}, {h});
    g.nodes[c].parsed = cast_attrs(t);
    g.nodes[c].attrs["to"] = int_attr(static_cast<int64_t>(t));
    g.outputs[i] = h;
    made[v] = h;
    st.outputs.push_back(name + " float32->" + dtype_name(t));
  }

  // Every other value the file typed as half (graph outputs' declarations
  // on node outputs) is float32 now; inference types the rest.
  std::set<int> keep(g.inputs.begin(), g.inputs.end());
  for (const auto& [v, h] : made) keep.insert(h);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (is_half_dtype(g.values[v].dtype) && !keep.count(static_cast<int>(v)) && !g.values[v].constant)
      g.values[v].dtype = DType::kFloat32;
  g.link_producers();
  return st.any();
}

}  // namespace minirt
