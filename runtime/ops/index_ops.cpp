// Schemas of ArgMax, ArgMin, TopK, GatherElements, GatherND, ScatterElements (and
// Scatter), ScatterND, OneHot, Trilu, Hardmax, and the value-sized NonZero,
// Compress, Unique and NonMaxSuppression.
#include "runtime/op_registry.h"
#include "runtime/ops/families.h"
#include "runtime/ops/index.h"

#include <algorithm>

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
  if (a->keepdims)
    y[a->axis] = 1;
  else
    y.erase(y.begin() + a->axis);
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
    ctx.fail("k = " + std::to_string(a->k) + " is outside [0, " + std::to_string(x[a->axis]) +
             "], the length of axis " + std::to_string(a->axis));
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

// GatherElements and ScatterElements: data (input 0) and indices (input 1)
// of one rank, indices no longer than data off the axis, and constant
// indices inside the axis (run-time ones are the kernels' to check).
// Returns the axis resolved to [0, rank).
int64_t check_element_indices(InferContext& ctx, int64_t axis) {
  const Shape& x = ctx.shape(0);
  const Shape& idx = ctx.shape(1);
  int64_t r = static_cast<int64_t>(x.size());
  if (r == 0) ctx.fail("data must have rank 1 or more");
  if (idx.size() != x.size())
    ctx.fail("indices " + shape_str(idx) + " and data " + shape_str(x) + " must have the same rank");
  axis = normalize_axis(axis, r, ctx);
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && idx[d] > x[d])
      ctx.fail("indices " + shape_str(idx) + " are longer than data " + shape_str(x) + " along axis " +
               std::to_string(d));
  int64_t len = x[axis];
  if (ctx.constant(1))
    for (int64_t i : ctx.const_ints(1, "indices"))
      if (i < -len || i >= len)
        ctx.fail("index " + std::to_string(i) + " is out of range for axis of length " + std::to_string(len));
  return axis;
}

void infer_gather_elements(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool});
  ctx.expect_dtype(1, {DType::kInt64, DType::kInt32});
  auto a = std::make_shared<GatherElementsAttrs>(ctx.attrs<GatherElementsAttrs>());
  a->axis = check_element_indices(ctx, a->axis);
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(1));
}

std::shared_ptr<const OpAttrs> parse_gather_nd(const ParseContext& ctx) {
  auto a = std::make_shared<GatherNDAttrs>();
  a->batch_dims = ctx.get_int("batch_dims", 0);
  if (a->batch_dims < 0) ctx.invalid("batch_dims must be 0 or more, got " + std::to_string(a->batch_dims));
  return a;
}

// GatherND: indices [..., k] pick slices of data past its first b + k axes;
// the output is indices' shape without its last axis, then those slices.
void infer_gather_nd(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool});
  ctx.expect_dtype(1, {DType::kInt64});
  const int64_t b = ctx.attrs<GatherNDAttrs>().batch_dims;
  const Shape& x = ctx.shape(0);
  const Shape& idx = ctx.shape(1);
  const int64_t r = static_cast<int64_t>(x.size()), q = static_cast<int64_t>(idx.size());
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank 1 or more");
  if (b >= std::min(r, q)) ctx.fail("batch_dims " + std::to_string(b) + " must be below the ranks of data and indices");
  for (int64_t d = 0; d < b; ++d)
    if (x[d] != idx[d])
      ctx.fail("data " + shape_str(x) + " and indices " + shape_str(idx) + " differ in batch axis " +
               std::to_string(d));
  const int64_t k = idx.back();
  if (k < 1 || k > r - b)
    ctx.fail("the last axis of indices " + shape_str(idx) + " must be 1 to " + std::to_string(r - b) +
             " (data's rank past batch_dims)");
  Shape y(idx.begin(), idx.end() - 1);
  y.insert(y.end(), x.begin() + b + k, x.end());
  ctx.set_output(0, ctx.dtype(0), y);
}

const std::initializer_list<DType> kDataTypes = {DType::kFloat32, DType::kInt64, DType::kInt32,
                                                 DType::kInt8,    DType::kUInt8, DType::kBool};

std::shared_ptr<const OpAttrs> parse_scatter(const ParseContext& ctx) {
  auto a = std::make_shared<ScatterAttrs>();
  a->axis = ctx.get_int("axis", 0);
  std::string r = ctx.get_string("reduction", "none");
  if (r == "none")
    a->reduction = ScatterReduction::kNone;
  else if (r == "add")
    a->reduction = ScatterReduction::kAdd;
  else if (r == "mul")
    a->reduction = ScatterReduction::kMul;
  else if (r == "max")
    a->reduction = ScatterReduction::kMax;
  else if (r == "min")
    a->reduction = ScatterReduction::kMin;
  else
    ctx.invalid("reduction '" + r + "' is not one of none, add, mul, max, min");
  int64_t since = a->reduction == ScatterReduction::kNone                                            ? 0
                  : a->reduction == ScatterReduction::kAdd || a->reduction == ScatterReduction::kMul ? 16
                                                                                                     : 18;
  if (ctx.opset() < since)
    ctx.invalid("reduction '" + r + "' exists from opset " + std::to_string(since) + "; this model imports opset " +
                std::to_string(ctx.opset()));
  return a;
}

// Checks the dtypes shared by the scatters: updates of data's type, integer
// indices, and a reduction that has a meaning for the type.
void expect_scatter_types(InferContext& ctx, const ScatterAttrs& a) {
  ctx.expect_dtype(0, kDataTypes);
  ctx.expect_dtype(1, {DType::kInt64, DType::kInt32});
  if (ctx.dtype(2) != ctx.dtype(0))
    ctx.fail(std::string("updates are ") + dtype_name(ctx.dtype(2)) + " but data is " + dtype_name(ctx.dtype(0)));
  if (a.reduction != ScatterReduction::kNone && ctx.dtype(0) == DType::kBool)
    ctx.unsupported(std::string("reduction '") + scatter_reduction_name(a.reduction) + "' on bool data");
}

void infer_scatter_elements(InferContext& ctx) {
  auto a = std::make_shared<ScatterAttrs>(ctx.attrs<ScatterAttrs>());
  expect_scatter_types(ctx, *a);
  const Shape& idx = ctx.shape(1);
  if (ctx.shape(2) != idx)
    ctx.fail("updates " + shape_str(ctx.shape(2)) + " must have the shape of indices " + shape_str(idx));
  a->axis = check_element_indices(ctx, a->axis);
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void infer_scatter_nd(InferContext& ctx) {
  const auto& a = ctx.attrs<ScatterAttrs>();
  expect_scatter_types(ctx, a);
  const Shape& x = ctx.shape(0);
  const Shape& idx = ctx.shape(1);
  const Shape& upd = ctx.shape(2);
  if (x.empty()) ctx.fail("data must have rank 1 or more");
  if (idx.empty()) ctx.fail("indices must have rank 1 or more");
  int64_t k = idx.back();
  if (k < 1 || k > static_cast<int64_t>(x.size()))
    ctx.fail("the last dimension of indices " + shape_str(idx) + " must be in [1, " + std::to_string(x.size()) +
             "], the rank of data " + shape_str(x));
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), x.begin() + k, x.end());
  if (upd != want)
    ctx.fail("updates " + shape_str(upd) + " must have the shape " + shape_str(want) + " (indices " + shape_str(idx) +
             " without the last axis, then data " + shape_str(x) + " after the first " + std::to_string(k) + " axes)");
  if (ctx.constant(1)) {
    std::vector<int64_t> v = ctx.const_ints(1, "indices");
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t len = x[i % static_cast<size_t>(k)];
      if (v[i] < -len || v[i] >= len)
        ctx.fail("index " + std::to_string(v[i]) + " is out of range for axis " + std::to_string(i % k) + " of data " +
                 shape_str(x));
    }
  }
  ctx.set_output(0, ctx.dtype(0), x);
}

std::shared_ptr<const OpAttrs> parse_onehot(const ParseContext& ctx) {
  auto a = std::make_shared<OneHotAttrs>();
  a->axis = ctx.get_int("axis", -1);
  a->negative = ctx.opset() >= 11;
  return a;
}

void infer_onehot(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kInt64, DType::kInt32, DType::kFloat32, DType::kInt8, DType::kUInt8});
  ctx.expect_dtype(1, {DType::kInt64, DType::kInt32, DType::kFloat32});
  ctx.expect_dtype(2, {DType::kFloat32, DType::kInt64, DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool});
  auto a = std::make_shared<OneHotAttrs>(ctx.attrs<OneHotAttrs>());
  if (shape_numel(ctx.shape(1)) != 1 || ctx.rank(1) > 1)
    ctx.fail("depth must be a scalar or a one-element vector, got " + shape_str(ctx.shape(1)));
  if (ctx.shape(2) != Shape{2}) ctx.fail("values must be [off, on], of shape [2], got " + shape_str(ctx.shape(2)));
  double depth = ctx.dtype(1) == DType::kFloat32 ? static_cast<double>(ctx.const_floats(1, "depth")[0])
                                                 : static_cast<double>(ctx.const_ints(1, "depth")[0]);
  if (!(depth >= 1) || depth > static_cast<double>(INT32_MAX))
    ctx.fail("depth " + std::to_string(depth) + " must be at least 1 (and below 2^31)");
  a->depth = static_cast<int64_t>(depth);
  const Shape& idx = ctx.shape(0);
  a->axis = normalize_axis(a->axis, ctx.rank(0) + 1, ctx);
  Shape y = idx;
  y.insert(y.begin() + a->axis, a->depth);
  checked_mul(shape_numel(idx), a->depth, ctx, "output elements");
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(2), y);
}

std::shared_ptr<const OpAttrs> parse_trilu(const ParseContext& ctx) {
  auto a = std::make_shared<TriluAttrs>();
  a->upper = ctx.get_int("upper", 1) != 0;
  return a;
}

void infer_trilu(InferContext& ctx) {
  ctx.expect_dtype(0, kDataTypes);
  auto a = std::make_shared<TriluAttrs>(ctx.attrs<TriluAttrs>());
  if (ctx.rank(0) < 2) ctx.fail("input must have rank 2 or more, got " + shape_str(ctx.shape(0)));
  if (ctx.has_input(1)) {
    ctx.expect_dtype(1, {DType::kInt64});
    if (shape_numel(ctx.shape(1)) != 1 || ctx.rank(1) > 1)
      ctx.fail("k must be a scalar, got " + shape_str(ctx.shape(1)));
    a->k = ctx.const_ints(1, "k")[0];
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

std::shared_ptr<const OpAttrs> parse_hardmax(const ParseContext& ctx) {
  auto a = std::make_shared<HardmaxAttrs>();
  a->coerce_2d = ctx.opset() < 13;
  a->axis = ctx.get_int("axis", a->coerce_2d ? 1 : -1);
  return a;
}

void infer_hardmax(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  auto a = std::make_shared<HardmaxAttrs>(ctx.attrs<HardmaxAttrs>());
  int64_t r = ctx.rank(0);
  if (r == 0) ctx.fail("input must have rank 1 or more");
  a->axis = normalize_axis(a->axis, r, ctx);
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

}  // namespace

const char* scatter_reduction_name(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::kNone:
      return "none";
    case ScatterReduction::kAdd:
      return "add";
    case ScatterReduction::kMul:
      return "mul";
    case ScatterReduction::kMax:
      return "max";
    case ScatterReduction::kMin:
      return "min";
  }
  return "?";
}

namespace {

std::shared_ptr<const OpAttrs> parse_nms(const ParseContext& ctx) {
  auto a = std::make_shared<NmsAttrs>();
  int64_t c = ctx.get_int("center_point_box", 0);
  if (c != 0 && c != 1) ctx.invalid("center_point_box must be 0 or 1, got " + std::to_string(c));
  a->center_point_box = c == 1;
  return a;
}

std::shared_ptr<const OpAttrs> parse_compress(const ParseContext& ctx) {
  auto a = std::make_shared<CompressAttrs>();
  a->has_axis = ctx.has("axis");
  a->axis = ctx.get_int("axis", 0);
  if (a->axis < 0 && ctx.opset() < 11) ctx.invalid("a negative axis needs opset 11 or later");
  return a;
}

std::shared_ptr<const OpAttrs> parse_unique(const ParseContext& ctx) {
  auto a = std::make_shared<UniqueAttrs>();
  a->has_axis = ctx.has("axis");
  a->axis = ctx.get_int("axis", 0);
  a->sorted = ctx.get_int("sorted", 1) != 0;
  return a;
}

// The value-sized ops never reach shape inference inside a plan: the session
// cuts the model at them (runtime/stages.h). What can be checked from types is.
void infer_value_sized(InferContext& ctx) {
  if (ctx.node().op == "NonMaxSuppression") {
    ctx.expect_dtype(0, {DType::kFloat32});
    ctx.expect_dtype(1, {DType::kFloat32});
    if (ctx.has_input(2)) ctx.expect_dtype(2, {DType::kInt64});
  }
  ctx.fail("its output's shape follows from its input values, so it runs between plan stages, not inside a plan");
}

}  // namespace

void add_index_schemas(std::vector<OpSchema>& out) {
  out.push_back({.op = "NonZero",
                 .parse = nullptr,
                 .infer = infer_value_sized,
                 .foldable = false,
                 .semantics = "runs on the host between plan stages (output size from values)",
                 .value_sized = true});
  out.push_back({.op = "Compress",
                 .min_inputs = 2,
                 .max_inputs = 2,
                 .parse = parse_compress,
                 .infer = infer_value_sized,
                 .foldable = false,
                 .semantics = "runs on the host between plan stages (output size from values); negative axis "
                              "from opset 11",
                 .value_sized = true});
  out.push_back({.op = "Unique",
                 .max_outputs = 4,
                 .parse = parse_unique,
                 .infer = infer_value_sized,
                 .foldable = false,
                 .semantics = "runs on the host between plan stages (output size from values); "
                              "slices compared in row-major order; version 28 adds only bfloat16",
                 .value_sized = true});
  out.push_back({.op = "NonMaxSuppression",
                 .min_inputs = 2,
                 .max_inputs = 5,
                 .parse = parse_nms,
                 .infer = infer_value_sized,
                 .foldable = false,
                 .semantics = "runs on the host between plan stages (output size from values); ties by lower box index",
                 .value_sized = true});
  for (const char* op : {"ArgMax", "ArgMin"})
    out.push_back({.op = op,
                   .parse = parse_arg,
                   .infer = infer_arg,
                   .semantics = "select_last_index from opset 12 (ties go to the first index before)"});
  out.push_back({.op = "TopK",
                 .max_inputs = 2,
                 .max_outputs = 2,
                 .parse = parse_topk,
                 .infer = infer_topk,
                 .shape_inputs = {1},
                 .semantics = "k attribute before opset 10, K input from 10; largest/sorted from 11; "
                              "always sorted, ties by lower index"});
  out.push_back({.op = "GatherElements",
                 .min_inputs = 2,
                 .max_inputs = 2,
                 .parse = parse_gather_elements,
                 .infer = infer_gather_elements});
  out.push_back({.op = "GatherND",
                 .min_inputs = 2,
                 .max_inputs = 2,
                 .parse = parse_gather_nd,
                 .infer = infer_gather_nd,
                 .semantics = "batch_dims from opset 12; negative indices count from the end"});
  out.push_back({.op = "ScatterElements",
                 .min_inputs = 3,
                 .max_inputs = 3,
                 .parse = parse_scatter,
                 .infer = infer_scatter_elements,
                 .semantics = "reduction add/mul from opset 16, max/min from 18; duplicate indices applied in order"});
  out.push_back({.op = "Scatter",
                 .min_inputs = 3,
                 .max_inputs = 3,
                 .parse = parse_scatter,
                 .infer = infer_scatter_elements,
                 .semantics = "opset 9 to 10 (ScatterElements from 11)"});
  out.push_back({.op = "ScatterND",
                 .min_inputs = 3,
                 .max_inputs = 3,
                 .parse = parse_scatter,
                 .infer = infer_scatter_nd,
                 .semantics = "reduction add/mul from opset 16, max/min from 18; duplicate indices applied in order"});
  out.push_back({.op = "OneHot",
                 .min_inputs = 3,
                 .max_inputs = 3,
                 .parse = parse_onehot,
                 .infer = infer_onehot,
                 .shape_inputs = {1},
                 .semantics = "negative indices count from the end from opset 11"});
  out.push_back({.op = "Trilu", .max_inputs = 2, .parse = parse_trilu, .infer = infer_trilu, .shape_inputs = {1}});
  out.push_back({.op = "Hardmax",
                 .parse = parse_hardmax,
                 .infer = infer_hardmax,
                 .semantics = "2-D coercion at axis before opset 13, along axis from 13"});
}

}  // namespace minirt
