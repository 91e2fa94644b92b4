// Schemas of ArgMax, ArgMin, TopK and GatherElements.
#include "runtime/op_registry.h"
#include "runtime/ops/families.h"
#include "runtime/ops/index.h"

namespace minirt {

namespace {

std::shared_ptr<const OpAttrs> parse_arg(const ParseContext& ctx) {
  auto a = std::make_shared<ArgAttrs>();
  a->max = ctx.node().op == "ArgMax";
  a->axis = ctx.get_int("axis", 0);
  a->keepdims = ctx.get_int("keepdims", 1) != 0;
  a->select_last_index = ctx.get_int("select_last_index", 0) != 0;
  return a;
}

void infer_arg(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8});
  auto a = std::make_shared<ArgAttrs>(ctx.attrs<ArgAttrs>());
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  if (r == 0) ctx.fail("input must have rank 1 or more");
  a->axis = normalize_axis(a->axis, r, ctx);
  Shape y = x;
  if (a->keepdims) y[a->axis] = 1;
  else y.erase(y.begin() + a->axis);
  if (x[a->axis] == 0 && shape_numel(y) > 0)
    ctx.fail("axis " + std::to_string(a->axis) + " of " + shape_str(x) + " is empty; it has no " +
             (a->max ? "maximum" : "minimum"));
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kInt64, y);
}

std::shared_ptr<const OpAttrs> parse_topk(const ParseContext& ctx) {
  auto a = std::make_shared<TopKAttrs>();
  a->axis = ctx.get_int("axis", -1);
  // Before opset 10, k is an attribute; from 10 it is the K input.
  if (ctx.opset() < 10) {
    if (!ctx.has("k")) ctx.invalid("attribute 'k' is required before opset 10");
    a->k = ctx.get_int("k", 0);
  }
  a->largest = ctx.get_int("largest", 1) != 0;
  a->sorted = ctx.get_int("sorted", 1) != 0;
  return a;
}

void infer_topk(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8});
  auto a = std::make_shared<TopKAttrs>(ctx.attrs<TopKAttrs>());
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  if (r == 0) ctx.fail("input must have rank 1 or more");
  if (ctx.opset() >= 10) {
    std::vector<int64_t> k = ctx.const_ints(1, "K");
    if (k.size() != 1) ctx.fail("K must hold one value, it has " + std::to_string(k.size()));
    a->k = k[0];
  } else if (ctx.has_input(1)) {
    ctx.fail("k is an attribute, not an input, before opset 10");
  }
  a->axis = normalize_axis(a->axis, r, ctx);
  if (a->k < 0 || a->k > x[a->axis])
    ctx.fail("k = " + std::to_string(a->k) + " is outside [0, " + std::to_string(x[a->axis]) + "], the length of axis " +
             std::to_string(a->axis));
  Shape y = x;
  y[a->axis] = a->k;
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
  ctx.set_output(1, DType::kInt64, y);
}

std::shared_ptr<const OpAttrs> parse_gather_elements(const ParseContext& ctx) {
  auto a = std::make_shared<GatherElementsAttrs>();
  a->axis = ctx.get_int("axis", 0);
  return a;
}

void infer_gather_elements(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool});
  ctx.expect_dtype(1, {DType::kInt64, DType::kInt32});
  auto a = std::make_shared<GatherElementsAttrs>(ctx.attrs<GatherElementsAttrs>());
  const Shape& x = ctx.shape(0);
  const Shape& idx = ctx.shape(1);
  int64_t r = static_cast<int64_t>(x.size());
  if (r == 0) ctx.fail("data must have rank 1 or more");
  if (idx.size() != x.size())
    ctx.fail("indices " + shape_str(idx) + " and data " + shape_str(x) + " must have the same rank");
  a->axis = normalize_axis(a->axis, r, ctx);
  for (int64_t d = 0; d < r; ++d)
    if (d != a->axis && idx[d] > x[d])
      ctx.fail("indices " + shape_str(idx) + " are longer than data " + shape_str(x) + " along axis " +
               std::to_string(d));
  int64_t len = x[a->axis];
  if (ctx.constant(1)) {
    for (int64_t i : ctx.const_ints(1, "indices"))
      if (i < -len || i >= len)
        ctx.fail("index " + std::to_string(i) + " is out of range for axis of length " + std::to_string(len));
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), idx);
}

}  // namespace

void add_index_schemas(std::vector<OpSchema>& out) {
  for (const char* op : {"ArgMax", "ArgMin"})
    out.push_back({.op = op, .parse = parse_arg, .infer = infer_arg,
                   .semantics = "select_last_index from opset 12 (ties go to the first index before)"});
  out.push_back({.op = "TopK", .max_inputs = 2, .max_outputs = 2, .parse = parse_topk,
                 .infer = infer_topk, .shape_inputs = {1},
                 .semantics = "k attribute before opset 10, K input from 10; largest/sorted from 11; "
                              "always sorted, ties by lower index"});
  out.push_back({.op = "GatherElements", .min_inputs = 2, .max_inputs = 2, .parse = parse_gather_elements,
                 .infer = infer_gather_elements});
}

}  // namespace minirt
