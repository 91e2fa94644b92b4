// Schemas of the elementwise ops: activations, unary math, binary math with
// NumPy broadcasting, and the variadic Max, Min, Sum and Mean.
#include "runtime/op_registry.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/families.h"

#include <limits>
#include <sstream>

namespace minirt {

const char* binary_name(BinaryKind k) {
  switch (k) {
    case BinaryKind::kAdd:
      return "Add";
    case BinaryKind::kSub:
      return "Sub";
    case BinaryKind::kMul:
      return "Mul";
    case BinaryKind::kDiv:
      return "Div";
    case BinaryKind::kPow:
      return "Pow";
    case BinaryKind::kPRelu:
      return "PRelu";
    case BinaryKind::kMax:
      return "Max";
    case BinaryKind::kMin:
      return "Min";
    case BinaryKind::kMod:
    case BinaryKind::kFMod:
      return "Mod";
    case BinaryKind::kCount:  // no kind
      break;
  }
  return "?";
}

namespace {

std::function<std::shared_ptr<const OpAttrs>(const ParseContext&)> unary(UnaryKind kind) {
  return [kind](const ParseContext&) {
    auto a = std::make_shared<UnaryAttrs>();
    a->kind = kind;
    return a;
  };
}

// The activation ops are the rows of MINIRT_ACTIVATIONS (runtime/ops/op_table.h) that name
// one; add_elementwise_schemas registers exactly these with parse_activation, so an op cannot
// be registered without a kind (it would have parsed as kNone and run as the identity).
const ActInfo& activation_of(const std::string& op) {
  for (const ActInfo& e : kActInfo)
    if (e.op && op == e.op) return e;
  return act_info(ActKind::kNone);  // not reached: only the table's ops are registered
}

std::shared_ptr<const OpAttrs> parse_activation(const ParseContext& ctx) {
  auto a = std::make_shared<UnaryAttrs>();
  a->kind = UnaryKind::kActivation;
  const std::string& op = ctx.node().op;
  const ActInfo& info = activation_of(op);
  a->act.kind = info.kind;
  // The attributes and defaults the table gives the kind.
  if (info.alpha.attr) a->act.alpha = ctx.get_float(info.alpha.attr, info.alpha.value);
  if (info.beta.attr) a->act.beta = ctx.get_float(info.beta.attr, info.beta.value);
  // The rules beyond one attribute and its default.
  if (op == "Selu" && ctx.opset() < 6) {
    // Version 1 (before opset 6) defaults to the rounded 1.6732 and 1.0507.
    a->act.alpha = ctx.get_float("alpha", 1.6732f);
    a->act.beta = ctx.get_float("gamma", 1.0507f);
  } else if (op == "Celu") {
    if (a->act.alpha == 0.0f) ctx.invalid("alpha must not be 0");
  } else if (op == "Gelu") {
    std::string approx = ctx.get_string("approximate", "none");
    if (approx == "tanh")
      a->act.kind = ActKind::kGeluTanh;
    else if (approx != "none")
      ctx.invalid("approximate must be 'none' or 'tanh', not '" + approx + "'");
  } else if (op == "Clip") {
    // Before opset 11, min and max are attributes; from 11 they are inputs.
    a->act.alpha = ctx.opset() < 11 ? ctx.get_float("min", -std::numeric_limits<float>::infinity())
                                    : -std::numeric_limits<float>::infinity();
    a->act.beta = ctx.opset() < 11 ? ctx.get_float("max", std::numeric_limits<float>::infinity())
                                   : std::numeric_limits<float>::infinity();
  }
  return a;
}

void infer_float_unary(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.set_output(0, DType::kFloat32, ctx.shape(0));
}

void infer_clip(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  if (ctx.opset() >= 11 && (ctx.has_input(1) || ctx.has_input(2))) {
    auto a = std::make_shared<UnaryAttrs>(ctx.attrs<UnaryAttrs>());
    if (ctx.has_input(1)) {
      auto v = ctx.const_floats(1, "min");
      if (v.size() != 1) ctx.fail("min must be a scalar");
      a->act.alpha = v[0];
    }
    if (ctx.has_input(2)) {
      auto v = ctx.const_floats(2, "max");
      if (v.size() != 1) ctx.fail("max must be a scalar");
      a->act.beta = v[0];
    }
    ctx.set_attrs(a);
  }
  ctx.set_output(0, DType::kFloat32, ctx.shape(0));
}

void infer_copy(InferContext& ctx) {
  if (!dtype_supported(ctx.dtype(0)))
    ctx.unsupported(std::string("dtype ") + dtype_name(ctx.dtype(0)) + " is not supported");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void infer_dropout(InferContext& ctx) {
  infer_copy(ctx);
  // From opset 12, ratio and training_mode are inputs. Training mode drops
  // at random, which minirt does not do, unless the ratio is 0: then it is
  // the identity too.
  if (ctx.has_input(2)) {
    const Tensor* t = ctx.constant(2);
    if (!t) ctx.unsupported("its training_mode input is computed at run time; minirt needs it known when planning");
    if (t->dtype() != DType::kBool || t->numel() != 1) ctx.fail("training_mode must be one bool");
    if (*t->data<uint8_t>() != 0) {
      float ratio = 0.5f;
      if (ctx.has_input(1)) {
        const Tensor* r = ctx.constant(1);
        if (!r || r->dtype() != DType::kFloat32 || r->numel() != 1)
          ctx.unsupported("Dropout in training mode is supported only with a constant float32 ratio of 0");
        ratio = *r->data<float>();
      }
      if (ratio != 0.0f) {
        std::ostringstream r;
        r << ratio;
        ctx.unsupported("Dropout in training mode (ratio " + r.str() +
                        ") is not supported; only ratio 0, where it is the identity");
      }
    }
  }
  // The mask: every element kept. It is bool from opset 10, of the input's
  // type (ones) before.
  ctx.set_output(1, ctx.opset() >= 10 ? DType::kBool : ctx.dtype(0), ctx.shape(0));
}

std::shared_ptr<const OpAttrs> parse_dropout(const ParseContext& ctx) {
  // Before opset 7, is_test chooses between test mode (the identity) and
  // training mode (random dropping), which minirt does not do unless the
  // ratio is 0. The schema's default is 0, but a model given to an
  // inference runtime without the attribute is read as inference, as
  // onnx.version_converter reads it; an explicit is_test=0 is refused.
  if (ctx.opset() < 7 && ctx.has("is_test") && ctx.get_int("is_test", 0) == 0) {
    float ratio = ctx.get_float("ratio", 0.5f);
    if (ratio != 0.0f) {
      std::ostringstream r;
      r << ratio;
      ctx.unsupported("Dropout version " + std::to_string(ctx.opset() < 6 ? 1 : 6) +
                      " with is_test=0 drops at random (training mode, ratio " + r.str() +
                      "), which minirt does not do; is_test=1 (inference, the identity) is supported");
    }
  }
  auto a = std::make_shared<UnaryAttrs>();
  a->kind = UnaryKind::kCopy;
  return a;
}

// Neg, Abs, Sign.
void infer_neg_abs(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32});
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

std::function<std::shared_ptr<const OpAttrs>(const ParseContext&)> binary(BinaryKind kind) {
  return [kind](const ParseContext& ctx) {
    auto a = std::make_shared<BinaryAttrs>();
    a->kind = kind;
    // PRelu never had broadcast and axis; its slope's older rule is in prepare_prelu.
    if (kind != BinaryKind::kPRelu) a->legacy = parse_legacy_broadcast(ctx);
    return a;
  };
}

// PRelu before opset 7: a slope of one value per channel (rank 1, length
// X[1]) applies along axis 1, as Caffe2 defined it, not along the last
// axis as NumPy broadcasting from version 7 would have it.
std::vector<int> prepare_prelu(Graph& g, int node) {
  if (g.opset >= 7) return {};
  const Node& n = g.nodes[node];
  if (!g.values[n.input(0)].shape_known || !g.values[n.input(1)].shape_known) return {};
  const Shape& x = g.values[n.input(0)].shape;
  const Shape& slope = g.values[n.input(1)].shape;
  if (x.size() <= 2 || slope.size() != 1 || slope[0] != x[1] || slope[0] == 1) return {};
  LegacyBroadcast lb;
  lb.active = lb.broadcast = lb.has_axis = true;
  lb.axis = 1;
  return align_legacy_broadcast(g, node, lb);
}

std::shared_ptr<const OpAttrs> parse_mod(const ParseContext& ctx) {
  auto a = std::make_shared<BinaryAttrs>();
  a->kind = ctx.get_int("fmod", 0) != 0 ? BinaryKind::kFMod : BinaryKind::kMod;
  return a;
}

void infer_binary(InferContext& ctx) {
  const auto& a = ctx.attrs<BinaryAttrs>();
  if (a.kind == BinaryKind::kPow) {
    ctx.expect_dtype(0, {DType::kFloat32});
    ctx.expect_dtype(1, {DType::kFloat32, DType::kInt64, DType::kInt32});
  } else if (a.kind == BinaryKind::kPRelu) {
    ctx.expect_dtype(0, {DType::kFloat32});
    ctx.expect_dtype(1, {DType::kFloat32});
  } else {
    ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8});
    if (a.kind == BinaryKind::kMod && ctx.dtype(0) == DType::kFloat32) {
      if (ctx.opset() < 28) ctx.fail("Mod of float inputs needs fmod=1 (before opset 28, fmod=0 is for integers only)");
      ctx.unsupported(
          "Mod version 28 with fmod=0 on float inputs (A - floor(A / B) * B, the sign of B) is not "
          "implemented; fmod=1 (the sign of A) is");
    }
    if (ctx.dtype(1) != ctx.dtype(0))
      ctx.fail(std::string("inputs have different types: ") + dtype_name(ctx.dtype(0)) + " and " +
               dtype_name(ctx.dtype(1)));
  }
  Shape y = broadcast_shapes(ctx.shape(0), ctx.shape(1), ctx);
  if (a.kind == BinaryKind::kPRelu && y != ctx.shape(0))
    ctx.fail("slope " + shape_str(ctx.shape(1)) + " must broadcast to the input " + shape_str(ctx.shape(0)));
  ctx.set_output(0, ctx.dtype(0), y);
}

std::function<std::shared_ptr<const OpAttrs>(const ParseContext&)> variadic(VariadicKind kind) {
  return [kind](const ParseContext&) {
    auto a = std::make_shared<VariadicAttrs>();
    a->kind = kind;
    return a;
  };
}

void infer_variadic(InferContext& ctx) {
  VariadicKind kind = ctx.attrs<VariadicAttrs>().kind;
  if (kind == VariadicKind::kSum || kind == VariadicKind::kMean)
    ctx.expect_dtype(0, {DType::kFloat32});
  else
    ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8});
  Shape y = ctx.shape(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.dtype(i) != ctx.dtype(0))
      ctx.fail("inputs have different types: " + std::string(dtype_name(ctx.dtype(0))) + " and " +
               dtype_name(ctx.dtype(i)));
    if (ctx.opset() < 8 && ctx.shape(i) != ctx.shape(0))
      ctx.fail("inputs of shapes " + shape_str(ctx.shape(0)) + " and " + shape_str(ctx.shape(i)) + ": " +
               ctx.node().op + " before opset 8 takes inputs of one shape (no broadcasting)");
    y = broadcast_shapes(y, ctx.shape(i), ctx);
  }
  ctx.set_output(0, ctx.dtype(0), y);
}

}  // namespace

void add_elementwise_schemas(std::vector<OpSchema>& out) {
  for (const ActInfo& e : kActInfo) {
    if (!e.op) continue;  // a kind only the passes make
    const std::string op = e.op;
    if (op == "Gelu")
      out.push_back({.op = op,
                     .parse = parse_activation,
                     .infer = infer_float_unary,
                     .semantics = "opset 20: approximate none (erf) or tanh"});
    else if (op == "Clip")
      out.push_back({.op = op,
                     .max_inputs = 3,
                     .parse = parse_activation,
                     .infer = infer_clip,
                     .shape_inputs = {1, 2},
                     .semantics = "min/max attributes before opset 11, inputs from 11"});
    else
      out.push_back({.op = op, .parse = parse_activation, .infer = infer_float_unary});
  }
  for (const UnaryInfo& e : kUnaryInfo) {
    if (!e.op) continue;  // the activations' kind and the copy
    out.push_back({.op = e.op,
                   .parse = unary(e.kind),
                   .infer = e.types == UnaryTypes::kSigned ? infer_neg_abs : infer_float_unary});
  }
  out.push_back({.op = "Identity", .parse = unary(UnaryKind::kCopy), .infer = infer_copy});
  out.push_back(
      {.op = "Dropout",
       .max_inputs = 3,
       .max_outputs = 2,
       .parse = parse_dropout,
       .infer = infer_dropout,
       .shape_inputs = {1, 2},
       .semantics =
           "inference: output = input, mask all true; training mode (an explicit is_test=0 before opset 7) only "
           "with ratio 0"});
  const std::pair<const char*, BinaryKind> bins[] = {
      {"Add", BinaryKind::kAdd}, {"Sub", BinaryKind::kSub}, {"Mul", BinaryKind::kMul},
      {"Div", BinaryKind::kDiv}, {"Pow", BinaryKind::kPow}, {"PRelu", BinaryKind::kPRelu},
  };
  for (const auto& [op, kind] : bins) {
    const bool prelu = kind == BinaryKind::kPRelu;
    out.push_back({.op = op,
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .parse = binary(kind),
                   .infer = infer_binary,
                   .prepare = prelu ? prepare_prelu : prepare_legacy_broadcast<BinaryAttrs>,
                   .semantics = prelu ? "unidirectional broadcasting of the slope (opset 7 and later); before 7 "
                                        "a rank-1 slope of X[1] values is per channel"
                                      : "multidirectional broadcasting (opset 7 and later); before 7 broadcast "
                                        "and axis (B aligned at axis of A)"});
  }
  out.push_back({.op = "Mod",
                 .min_inputs = 2,
                 .max_inputs = 2,
                 .parse = parse_mod,
                 .infer = infer_binary,
                 .semantics = "fmod=0: sign of the divisor (integers; floats from opset 28 not implemented); "
                              "fmod=1: sign of the dividend"});
  const std::pair<const char*, VariadicKind> vars[] = {{"Max", VariadicKind::kMax},
                                                       {"Min", VariadicKind::kMin},
                                                       {"Sum", VariadicKind::kSum},
                                                       {"Mean", VariadicKind::kMean}};
  for (const auto& [op, kind] : vars)
    out.push_back({.op = op,
                   .min_inputs = 1,
                   .max_inputs = 1 << 20,
                   .parse = variadic(kind),
                   .infer = infer_variadic,
                   .semantics = "multidirectional broadcasting (opset 8 and later); inputs of one shape before 8"});
}

}  // namespace minirt
