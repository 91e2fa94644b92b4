#include "runtime/op_registry.h"

#include "runtime/ops/families.h"
#include "runtime/ops/op_versions.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace minirt {

namespace {

struct Registry {
  std::vector<OpSchema> schemas;
  std::unordered_map<std::string, size_t> index;
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    for (auto add : kSchemaFamilies) add(reg.schemas);
    for (size_t i = 0; i < reg.schemas.size(); ++i) reg.index[reg.schemas[i].op] = i;
    return reg;
  }();
  return r;
}

const char* kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kFloat:
      return "float";
    case Attribute::Kind::kInt:
      return "int";
    case Attribute::Kind::kString:
      return "string";
    case Attribute::Kind::kTensor:
      return "tensor";
    case Attribute::Kind::kFloats:
      return "floats";
    case Attribute::Kind::kInts:
      return "ints";
    case Attribute::Kind::kStrings:
      return "strings";
    case Attribute::Kind::kGraph:
      return "graph";
    default:
      return "other";
  }
}

}  // namespace

const OpSchema* find_schema(const std::string& op) {
  const auto& r = registry();
  auto it = r.index.find(op);
  return it == r.index.end() ? nullptr : &r.schemas[it->second];
}

std::vector<const OpSchema*> all_schemas() {
  std::vector<const OpSchema*> out;
  for (const auto& s : registry().schemas) out.push_back(&s);
  return out;
}

// ---- ParseContext ----

const Attribute* ParseContext::find(const std::string& name, Attribute::Kind kind) const {
  auto it = n_.attrs.find(name);
  if (it == n_.attrs.end()) return nullptr;
  const Attribute& a = it->second;
  if (a.kind == kind) return &a;
  // Some exporters write an int where a float is expected and vice versa.
  if (kind == Attribute::Kind::kFloat && a.kind == Attribute::Kind::kInt) return &a;
  if (kind == Attribute::Kind::kInts && a.kind == Attribute::Kind::kFloats && a.floats.empty()) return &a;
  invalid("attribute '" + name + "' is a " + kind_name(a.kind) + ", expected " + kind_name(kind));
}

int64_t ParseContext::get_int(const std::string& name, int64_t def) const {
  const Attribute* a = find(name, Attribute::Kind::kInt);
  return a ? a->i : def;
}

float ParseContext::get_float(const std::string& name, float def) const {
  const Attribute* a = find(name, Attribute::Kind::kFloat);
  if (!a) return def;
  return a->kind == Attribute::Kind::kInt ? static_cast<float>(a->i) : a->f;
}

std::string ParseContext::get_string(const std::string& name, const std::string& def) const {
  const Attribute* a = find(name, Attribute::Kind::kString);
  return a ? a->s : def;
}

std::vector<int64_t> ParseContext::get_ints(const std::string& name, std::vector<int64_t> def) const {
  const Attribute* a = find(name, Attribute::Kind::kInts);
  return a ? a->ints : def;
}

std::vector<float> ParseContext::get_floats(const std::string& name, std::vector<float> def) const {
  const Attribute* a = find(name, Attribute::Kind::kFloats);
  return a ? a->floats : def;
}

const Tensor* ParseContext::get_tensor(const std::string& name) const {
  const Attribute* a = find(name, Attribute::Kind::kTensor);
  return a ? &a->t : nullptr;
}

void ParseContext::unsupported(const std::string& what) const { node_fail(ErrorCode::kUnsupported, g_, n_, what); }

void ParseContext::invalid(const std::string& what) const { node_fail(ErrorCode::kInvalidModel, g_, n_, what); }

// ---- InferContext ----

DType InferContext::dtype(size_t i) const {
  int v = n_.input(i);
  return v < 0 ? DType::kUndefined : g_.values[v].dtype;
}

const Shape& InferContext::shape(size_t i) const {
  int v = n_.input(i);
  if (v < 0) fail("input " + std::to_string(i) + " is required but was left out");
  const Value& val = g_.values[v];
  if (!val.shape_known) fail("the shape of input '" + val.name + "' is not known when planning");
  return val.shape;
}

const Tensor* InferContext::constant(size_t i) const {
  int v = n_.input(i);
  return v < 0 ? nullptr : g_.values[v].constant.get();
}

std::vector<int64_t> InferContext::const_ints(size_t i, const char* what) const {
  if (!has_input(i))
    fail(std::string("its ") + what + " input (input " + std::to_string(i) + ") is required but was left out");
  const Tensor* t = constant(i);
  if (!t) {
    unsupported(std::string("its ") + what + " input '" + g_.values[n_.input(i)].name +
                "' is computed from run-time data; minirt needs it to be known when the plan is made");
  }
  std::vector<int64_t> out(static_cast<size_t>(t->numel()));
  if (t->dtype() == DType::kInt64) {
    std::copy(t->data<int64_t>(), t->data<int64_t>() + out.size(), out.begin());
  } else if (t->dtype() == DType::kInt32) {
    std::copy(t->data<int32_t>(), t->data<int32_t>() + out.size(), out.begin());
  } else {
    fail(std::string("its ") + what + " input must be int64 or int32, not " + dtype_name(t->dtype()));
  }
  return out;
}

std::vector<float> InferContext::const_floats(size_t i, const char* what) const {
  if (!has_input(i))
    fail(std::string("its ") + what + " input (input " + std::to_string(i) + ") is required but was left out");
  const Tensor* t = constant(i);
  if (!t) {
    unsupported(std::string("its ") + what + " input '" + g_.values[n_.input(i)].name +
                "' is computed from run-time data; minirt needs it to be known when the plan is made");
  }
  if (t->dtype() != DType::kFloat32) fail(std::string("its ") + what + " input must be float32");
  return std::vector<float>(t->data<float>(), t->data<float>() + t->numel());
}

int64_t checked_mul(int64_t a, int64_t b, const InferContext& ctx, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ctx.fail(std::string(what) + " overflows 64-bit arithmetic");
  return r;
}

void InferContext::set_output(size_t i, DType dtype, Shape shape) {
  if (i >= n_.outputs.size() || n_.outputs[i] < 0) return;
  // No tensor a model can describe may be so large that counting its
  // elements overflows; far below that, allocation fails with its own error.
  unsigned __int128 count = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("computed a negative output dimension (" + shape_str(shape) + ")");
    count *= static_cast<unsigned __int128>(d);
    if (count > (static_cast<unsigned __int128>(1) << 48))
      fail("computed output shape " + shape_str(shape) + " is impossibly large");
  }
  Value& v = g_.values[n_.outputs[i]];
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.shape_known = true;
}

void InferContext::fail(const std::string& what) const { node_fail(ErrorCode::kInvalidModel, g_, n_, what); }

void InferContext::unsupported(const std::string& what) const { node_fail(ErrorCode::kUnsupported, g_, n_, what); }

void InferContext::expect_dtype(size_t i, std::initializer_list<DType> allowed) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but was left out");
  DType d = dtype(i);
  for (DType a : allowed)
    if (a == d) return;
  std::string names;
  for (DType a : allowed) names += std::string(names.empty() ? "" : " or ") + dtype_name(a);
  unsupported("input " + std::to_string(i) + " ('" + g_.values[n_.input(i)].name + "') is " + dtype_name(d) +
              "; this op supports " + names);
}

int64_t normalize_axis(int64_t axis, int64_t rank, const InferContext& ctx) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const InferContext& ctx) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

LegacyBroadcast parse_legacy_broadcast(const ParseContext& ctx) {
  LegacyBroadcast lb;
  if (ctx.opset() >= 7) return lb;
  lb.active = true;
  lb.broadcast = ctx.get_int("broadcast", 0) != 0;
  lb.has_axis = ctx.has("axis");
  lb.axis = ctx.get_int("axis", 0);  // read only with broadcast=1
  return lb;
}

std::vector<int> align_legacy_broadcast(Graph& g, int node, const LegacyBroadcast& lb) {
  if (!lb.active) return {};
  const Node& n = g.nodes[node];
  const int a_id = n.input(0), b_id = n.input(1);
  // Unknown shapes are infer()'s to report.
  if (a_id < 0 || b_id < 0 || !g.values[a_id].shape_known || !g.values[b_id].shape_known) return {};
  const Shape a = g.values[a_id].shape, b = g.values[b_id].shape;
  const std::string version =
      n.op + " version " + std::to_string(op_version_at(n.op, g.opset)) + " (opset " + std::to_string(g.opset) + ")";
  if (!lb.broadcast) {
    if (a != b)
      node_fail(ErrorCode::kInvalidModel, g, n,
                "inputs of shapes " + shape_str(a) + " and " + shape_str(b) + ": " + version +
                    " has broadcast=0 (the default before opset 7), which needs both of one shape; broadcast=1 "
                    "lets B broadcast to A");
    return {};
  }
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (rb > ra)
    node_fail(ErrorCode::kInvalidModel, g, n,
              "B " + shape_str(b) + " has a higher rank than A " + shape_str(a) + ": " + version +
                  " broadcasts B to A's shape only");
  // One element: the same under NumPy's rules, whatever the axis.
  if (shape_numel(b) == 1) return {};
  int64_t axis = ra - rb;
  if (lb.has_axis) {
    axis = lb.axis < 0 ? lb.axis + ra : lb.axis;
    if (axis < 0 || axis + rb > ra)
      node_fail(ErrorCode::kInvalidModel, g, n,
                "axis " + std::to_string(lb.axis) + " does not place B " + shape_str(b) + " inside A " + shape_str(a));
  }
  // A 1 in B expands too (as onnx.version_converter writes it: a bias of
  // C x 1 x 1 with broadcast=1 and no axis for an N x C x H x W input).
  for (int64_t i = 0; i < rb; ++i)
    if (b[i] != a[axis + i] && b[i] != 1)
      node_fail(ErrorCode::kInvalidModel, g, n,
                "B " + shape_str(b) + " does not match A " + shape_str(a) + " from axis " + std::to_string(axis) +
                    ": " + version + " broadcasts B only where its dimensions are A's (or 1) from axis" +
                    (lb.has_axis ? "" : " (no axis given: A's trailing dimensions)"));
  const int64_t trailing = ra - axis - rb;
  if (trailing == 0) return {};
  // B sits before A's trailing dimensions: append them to B as 1s.
  Attribute axes;
  axes.kind = Attribute::Kind::kInts;
  for (int64_t i = 0; i < trailing; ++i) axes.ints.push_back(rb + i);
  const std::string name = n.name + "/broadcast_" + g.values[b_id].name;
  const int out = g.add_value(name);
  const int u = g.add_node(name, "Unsqueeze", {b_id}, {out});
  g.nodes[u].attrs["axes"] = axes;
  ParseContext pc(g, g.nodes[u], g.opset);
  g.nodes[u].parsed = find_schema("Unsqueeze")->parse(pc);
  g.nodes[node].inputs[1] = out;
  return {u};
}

}  // namespace minirt
