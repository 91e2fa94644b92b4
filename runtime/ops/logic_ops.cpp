// Schemas of the comparisons (Equal, Greater, Less, GreaterOrEqual,
// LessOrEqual: numbers in, bool out), the boolean ops (Not, And, Or, Xor),
// the classifications IsNaN and IsInf, and Where. All but Not broadcast their inputs together, NumPy style.
#include "runtime/op_registry.h"
#include "runtime/ops/families.h"
#include "runtime/ops/logic.h"

namespace minirt {

namespace {

std::function<std::shared_ptr<const OpAttrs>(const ParseContext&)> logic(LogicKind kind) {
  return [kind](const ParseContext& ctx) {
    auto a = std::make_shared<LogicAttrs>();
    a->kind = kind;
    // Before opset 7, broadcast and axis (GreaterOrEqual and LessOrEqual came at 12, Where at 9).
    if (kind != LogicKind::kNot && kind != LogicKind::kWhere && kind != LogicKind::kIsNaN && kind != LogicKind::kIsInf)
      a->legacy = parse_legacy_broadcast(ctx);
    if (kind == LogicKind::kIsInf) {
      a->detect_positive = ctx.get_int("detect_positive", 1) != 0;
      a->detect_negative = ctx.get_int("detect_negative", 1) != 0;
    }
    return a;
  };
}

void same_dtype(const InferContext& ctx, size_t i, size_t j) {
  if (ctx.dtype(i) != ctx.dtype(j))
    ctx.fail("inputs " + std::to_string(i) + " and " + std::to_string(j) +
             " have different types: " + dtype_name(ctx.dtype(i)) + " and " + dtype_name(ctx.dtype(j)));
}

void infer_compare(InferContext& ctx) {
  if (ctx.attrs<LogicAttrs>().kind == LogicKind::kEqual)
    ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool});
  else
    ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8});
  same_dtype(ctx, 0, 1);
  ctx.set_output(0, DType::kBool, broadcast_shapes(ctx.shape(0), ctx.shape(1), ctx));
}

void infer_bool_binary(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kBool});
  ctx.expect_dtype(1, {DType::kBool});
  ctx.set_output(0, DType::kBool, broadcast_shapes(ctx.shape(0), ctx.shape(1), ctx));
}

void infer_not(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kBool});
  ctx.set_output(0, DType::kBool, ctx.shape(0));
}

void infer_classify(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.set_output(0, DType::kBool, ctx.shape(0));
}

void infer_where(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kBool});
  ctx.expect_dtype(1, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool});
  same_dtype(ctx, 1, 2);
  Shape y = broadcast_shapes(broadcast_shapes(ctx.shape(0), ctx.shape(1), ctx), ctx.shape(2), ctx);
  ctx.set_output(0, ctx.dtype(1), y);
}

}  // namespace

void add_logic_schemas(std::vector<OpSchema>& out) {
  const std::pair<const char*, LogicKind> compares[] = {
      {"Equal", LogicKind::kEqual},
      {"Greater", LogicKind::kGreater},
      {"Less", LogicKind::kLess},
      {"GreaterOrEqual", LogicKind::kGreaterOrEqual},
      {"LessOrEqual", LogicKind::kLessOrEqual},
  };
  for (const auto& [op, kind] : compares) {
    const bool since12 = kind == LogicKind::kGreaterOrEqual || kind == LogicKind::kLessOrEqual;
    out.push_back({.op = op,
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .parse = logic(kind),
                   .infer = infer_compare,
                   .prepare = prepare_legacy_broadcast<LogicAttrs>,
                   .semantics = since12 ? "multidirectional broadcasting (opset 7 and later)"
                                        : "multidirectional broadcasting (opset 7 and later); before 7 broadcast and "
                                          "axis"});
  }
  const std::pair<const char*, LogicKind> bools[] = {
      {"And", LogicKind::kAnd}, {"Or", LogicKind::kOr}, {"Xor", LogicKind::kXor}};
  for (const auto& [op, kind] : bools)
    out.push_back({.op = op,
                   .min_inputs = 2,
                   .max_inputs = 2,
                   .parse = logic(kind),
                   .infer = infer_bool_binary,
                   .prepare = prepare_legacy_broadcast<LogicAttrs>,
                   .semantics = "multidirectional broadcasting (opset 7 and later); before 7 broadcast and axis"});
  out.push_back({.op = "Not", .parse = logic(LogicKind::kNot), .infer = infer_not});
  out.push_back({.op = "IsNaN",
                 .parse = logic(LogicKind::kIsNaN),
                 .infer = infer_classify,
                 .semantics = "float32 (float16 and bfloat16 models through float32); later versions add only types"});
  out.push_back(
      {.op = "IsInf",
       .parse = logic(LogicKind::kIsInf),
       .infer = infer_classify,
       .semantics = "float32 (float16 and bfloat16 models through float32); detect_positive, detect_negative"});
  out.push_back(
      {.op = "Where", .min_inputs = 3, .max_inputs = 3, .parse = logic(LogicKind::kWhere), .infer = infer_where});
}

}  // namespace minirt
