// Schemas of Gemm, MatMul, BatchNormalization, InstanceNormalization, GroupNormalization,
// LayerNormalization, Softmax, LogSoftmax and the Reduce ops.
#include "runtime/op_registry.h"
#include "runtime/ops/families.h"
#include "runtime/ops/linalg.h"

#include <algorithm>

namespace minirt {

namespace {

std::shared_ptr<const OpAttrs> parse_gemm(const ParseContext& ctx) {
  auto a = std::make_shared<GemmAttrs>();
  a->alpha = ctx.get_float("alpha", 1.0f);
  a->beta = ctx.get_float("beta", 1.0f);
  a->trans_a = ctx.get_int("transA", 0) != 0;
  a->trans_b = ctx.get_int("transB", 0) != 0;
  // Before opset 7, C broadcasts only with broadcast=1 (default 0).
  a->c_full_shape = ctx.opset() < 7 && ctx.get_int("broadcast", 0) == 0;
  return a;
}

void infer_gemm(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.expect_dtype(1, {DType::kFloat32});
  const auto& a = ctx.attrs<GemmAttrs>();
  const Shape& sa = ctx.shape(0);
  const Shape& sb = ctx.shape(1);
  if (sa.size() != 2 || sb.size() != 2) ctx.fail("A " + shape_str(sa) + " and B " + shape_str(sb) + " must be 2-D");
  int64_t m = a.trans_a ? sa[1] : sa[0];
  int64_t k = a.trans_a ? sa[0] : sa[1];
  int64_t kb = a.trans_b ? sb[1] : sb[0];
  int64_t n = a.trans_b ? sb[0] : sb[1];
  if (k != kb)
    ctx.fail("A " + shape_str(sa) + " and B " + shape_str(sb) +
             " do not agree on K (transA=" + std::to_string(a.trans_a) + ", transB=" + std::to_string(a.trans_b) + ")");
  if (ctx.has_input(2)) {
    ctx.expect_dtype(2, {DType::kFloat32});
    if (a.c_full_shape && ctx.shape(2) != Shape{m, n})
      ctx.fail("C " + shape_str(ctx.shape(2)) + " is not " + shape_str({m, n}) + ": Gemm version " +
               std::to_string(ctx.opset() < 6 ? 1 : 6) +
               " has broadcast=0 (the default before opset 7), which needs C of shape M x N; broadcast=1 lets "
               "it broadcast");
    Shape y = broadcast_shapes(ctx.shape(2), {m, n}, ctx);
    if (y != Shape{m, n}) ctx.fail("C " + shape_str(ctx.shape(2)) + " does not broadcast to " + shape_str({m, n}));
  }
  ctx.set_output(0, DType::kFloat32, {m, n});
}

void infer_matmul(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.expect_dtype(1, {DType::kFloat32});
  Shape a = ctx.shape(0), b = ctx.shape(1);
  if (a.empty() || b.empty()) ctx.fail("MatMul inputs must have rank 1 or more");
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    ctx.fail("A " + shape_str(ctx.shape(0)) + " and B " + shape_str(ctx.shape(1)) + " do not agree on K");
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape y = broadcast_shapes(ba, bb, ctx);
  if (!a1) y.push_back(a[a.size() - 2]);
  if (!b1) y.push_back(b.back());
  ctx.set_output(0, DType::kFloat32, y);
}

std::shared_ptr<const OpAttrs> parse_batchnorm(const ParseContext& ctx) {
  auto a = std::make_shared<BatchNormAttrs>();
  a->epsilon = ctx.get_float("epsilon", 1e-5f);
  if (ctx.opset() < 9 && ctx.get_int("spatial", 1) != 1)
    ctx.unsupported("spatial=0 (per-activation statistics, opset 1-8) is not supported");
  // Before opset 7, is_test chooses the mode: training mode normalizes with
  // the batch's own mean and variance, not the given ones. Without the
  // attribute (the schema's default is 0) the model is read as inference,
  // as onnx.version_converter reads it; an explicit is_test=0 is refused.
  if (ctx.opset() < 7 && ctx.has("is_test") && ctx.get_int("is_test", 0) == 0)
    ctx.unsupported(std::string("BatchNormalization version ") + (ctx.opset() < 6 ? "1" : "6") +
                    " with is_test=0 is training mode, which normalizes with the batch's own mean and variance; "
                    "minirt implements is_test=1 (inference with the given mean and var), also taken when "
                    "is_test is absent");
  if (ctx.get_int("training_mode", 0) != 0) ctx.unsupported("training_mode=1 is not supported");
  for (size_t i = 1; i < ctx.node().outputs.size(); ++i)
    if (ctx.node().outputs[i] >= 0) ctx.unsupported("the training outputs (running mean/var) are not supported");
  return a;
}

void infer_batchnorm(InferContext& ctx) {
  for (size_t i = 0; i < 5; ++i) ctx.expect_dtype(i, {DType::kFloat32});
  const Shape& x = ctx.shape(0);
  if (x.size() < 2) ctx.fail("input must have rank 2 or more");
  for (size_t i = 1; i < 5; ++i)
    if (ctx.shape(i) != Shape{x[1]})
      ctx.fail("parameter " + std::to_string(i) + " has shape " + shape_str(ctx.shape(i)) + ", expected " +
               std::to_string(x[1]) + " (the channel count)");
  ctx.set_output(0, DType::kFloat32, x);
}

std::shared_ptr<const OpAttrs> parse_instancenorm(const ParseContext& ctx) {
  auto a = std::make_shared<BatchNormAttrs>();
  a->epsilon = ctx.get_float("epsilon", 1e-5f);
  return a;
}

void infer_instancenorm(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) ctx.expect_dtype(i, {DType::kFloat32});
  const Shape& x = ctx.shape(0);
  if (x.size() < 2) ctx.fail("input must have rank 2 or more");
  for (size_t i = 1; i < 3; ++i)
    if (ctx.shape(i) != Shape{x[1]})
      ctx.fail(std::string(i == 1 ? "scale" : "B") + " has shape " + shape_str(ctx.shape(i)) + ", expected " +
               std::to_string(x[1]) + " (the channel count)");
  ctx.set_output(0, DType::kFloat32, x);
}

std::shared_ptr<const OpAttrs> parse_groupnorm(const ParseContext& ctx) {
  auto a = std::make_shared<GroupNormAttrs>();
  a->epsilon = ctx.get_float("epsilon", 1e-5f);
  if (!ctx.has("num_groups")) ctx.invalid("attribute 'num_groups' is required");
  a->num_groups = ctx.get_int("num_groups", 1);
  if (a->num_groups < 1) ctx.invalid("num_groups must be 1 or more, got " + std::to_string(a->num_groups));
  if (ctx.opset() < 21)
    ctx.unsupported(
        "version 18 (scale and bias per group, deprecated by ONNX) is not supported; version 21 "
        "takes them per channel: export at opset 21 or later");
  if (ctx.get_int("stash_type", 1) != 1) ctx.unsupported("stash_type other than 1 (float32) is not supported");
  return a;
}

// GroupNormalization: the channels in num_groups groups, each group of an
// image normalized over its channels and spatial positions together.
void infer_groupnorm(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) ctx.expect_dtype(i, {DType::kFloat32});
  const auto& a = ctx.attrs<GroupNormAttrs>();
  const Shape& x = ctx.shape(0);
  if (x.size() < 2) ctx.fail("input must have rank 2 or more");
  if (x[1] % a.num_groups != 0)
    ctx.fail(std::to_string(x[1]) + " channels do not split into " + std::to_string(a.num_groups) + " groups");
  for (size_t i = 1; i < 3; ++i)
    if (ctx.shape(i) != Shape{x[1]})
      ctx.fail(std::string(i == 1 ? "scale" : "bias") + " has shape " + shape_str(ctx.shape(i)) + ", expected " +
               std::to_string(x[1]) + " (the channel count)");
  ctx.set_output(0, DType::kFloat32, x);
}

std::shared_ptr<const OpAttrs> parse_layernorm(const ParseContext& ctx) {
  auto a = std::make_shared<LayerNormAttrs>();
  a->axis = ctx.get_int("axis", -1);
  a->epsilon = ctx.get_float("epsilon", 1e-5f);
  // The statistics are computed in double whatever stash_type says; it only
  // sets the type of the Mean and InvStdDev outputs, float32 (1) here.
  int64_t stash = ctx.get_int("stash_type", 1);
  const auto& outs = ctx.node().outputs;
  bool stats = (outs.size() > 1 && outs[1] >= 0) || (outs.size() > 2 && outs[2] >= 0);
  if (stash != 1 && stats)
    ctx.unsupported("Mean and InvStdDev outputs with stash_type " + std::to_string(stash) +
                    " are not supported (float32, 1, is)");
  return a;
}

void infer_layernorm(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.expect_dtype(1, {DType::kFloat32});
  auto a = std::make_shared<LayerNormAttrs>(ctx.attrs<LayerNormAttrs>());
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  if (r == 0) ctx.fail("input must have rank 1 or more");
  a->axis = normalize_axis(a->axis, r, ctx);
  // Scale and B broadcast to the normalized axes [axis, rank) and do not vary
  // along the others.
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    ctx.expect_dtype(i, {DType::kFloat32});
    const Shape& p = ctx.shape(i);
    bool ok = p.size() <= x.size() && broadcast_shapes(x, p, ctx) == x;
    for (size_t d = 0; ok && d < p.size(); ++d) {
      int64_t xd = r - static_cast<int64_t>(p.size()) + static_cast<int64_t>(d);
      if (xd < a->axis && p[d] != 1) ok = false;
    }
    if (!ok)
      ctx.fail(std::string(i == 1 ? "Scale " : "B ") + shape_str(p) + " does not broadcast to the normalized shape " +
               shape_str(Shape(x.begin() + a->axis, x.end())));
  }
  Shape stats(x.begin(), x.begin() + a->axis);
  stats.resize(x.size(), 1);
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, x);
  ctx.set_output(1, DType::kFloat32, stats);
  ctx.set_output(2, DType::kFloat32, stats);
}

std::shared_ptr<const OpAttrs> parse_softmax(const ParseContext& ctx) {
  auto a = std::make_shared<SoftmaxAttrs>();
  // Opset 13 changed the default axis from 1 to -1 and dropped the 2-D coercion.
  a->coerce_2d = ctx.opset() < 13;
  a->axis = ctx.get_int("axis", a->coerce_2d ? 1 : -1);
  a->log = ctx.node().op == "LogSoftmax";
  return a;
}

void infer_softmax(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  auto a = std::make_shared<SoftmaxAttrs>(ctx.attrs<SoftmaxAttrs>());
  int64_t r = ctx.rank(0);
  if (r == 0) ctx.fail("input must have rank 1 or more");
  a->axis = normalize_axis(a->axis, r, ctx);
  // Coercion over [axis, rank) equals a plain softmax when axis is the last one.
  if (a->axis == r - 1) a->coerce_2d = false;
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, ctx.shape(0));
}

std::shared_ptr<const OpAttrs> parse_lpnorm(const ParseContext& ctx) {
  auto a = std::make_shared<LpNormAttrs>();
  a->axis = ctx.get_int("axis", -1);
  int64_t p = ctx.get_int("p", 2);
  if (p != 1 && p != 2) ctx.invalid("p = " + std::to_string(p) + "; LpNormalization takes p = 1 or 2");
  a->p = static_cast<int>(p);
  return a;
}

void infer_lpnorm(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  auto a = std::make_shared<LpNormAttrs>(ctx.attrs<LpNormAttrs>());
  if (ctx.rank(0) == 0) ctx.fail("input must have rank 1 or more");
  a->axis = normalize_axis(a->axis, ctx.rank(0), ctx);
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, ctx.shape(0));
}

const std::pair<const char*, ReduceKind> kReduceOps[] = {
    {"ReduceMean", ReduceKind::kMean},     {"ReduceSum", ReduceKind::kSum},
    {"ReduceMax", ReduceKind::kMax},       {"ReduceMin", ReduceKind::kMin},
    {"ReduceL1", ReduceKind::kL1},         {"ReduceL2", ReduceKind::kL2},
    {"ReduceLogSum", ReduceKind::kLogSum}, {"ReduceLogSumExp", ReduceKind::kLogSumExp},
    {"ReduceProd", ReduceKind::kProd},     {"ReduceSumSquare", ReduceKind::kSumSquare},
};

ReduceKind reduce_kind(const std::string& op) {
  for (const auto& [name, kind] : kReduceOps)
    if (op == name) return kind;
  return ReduceKind::kMean;
}

std::shared_ptr<const OpAttrs> parse_reduce(const ParseContext& ctx) {
  auto a = std::make_shared<ReduceAttrs>();
  const std::string& op = ctx.node().op;
  a->kind = reduce_kind(op);
  a->keepdims = ctx.get_int("keepdims", 1) != 0;
  a->noop_with_empty_axes = ctx.get_int("noop_with_empty_axes", 0) != 0;
  a->axes = ctx.get_ints("axes");
  return a;
}

bool reduce_axes_are_input(const InferContext& ctx) {
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  int64_t since = ctx.node().op == "ReduceSum" ? 13 : 18;
  return ctx.opset() >= since;
}

void infer_reduce(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  auto a = std::make_shared<ReduceAttrs>(ctx.attrs<ReduceAttrs>());
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  if (reduce_axes_are_input(ctx)) {
    if (ctx.has_input(1)) a->axes = ctx.const_ints(1, "axes");
  } else if (ctx.has_input(1)) {
    ctx.fail("axes is an attribute, not an input, at this opset");
  }
  if (a->axes.empty()) {
    a->all_axes = !a->noop_with_empty_axes;
  }
  for (auto& ax : a->axes) ax = normalize_axis(ax, r, ctx);
  std::sort(a->axes.begin(), a->axes.end());
  a->axes.erase(std::unique(a->axes.begin(), a->axes.end()), a->axes.end());
  if (a->all_axes) {
    a->axes.clear();
    for (int64_t i = 0; i < r; ++i) a->axes.push_back(i);
  }
  Shape y;
  for (int64_t i = 0; i < r; ++i) {
    bool red = std::binary_search(a->axes.begin(), a->axes.end(), i);
    if (!red)
      y.push_back(x[i]);
    else if (a->keepdims)
      y.push_back(1);
  }
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, y);
}

}  // namespace

void add_gemm_schemas(std::vector<OpSchema>& out) {
  out.push_back({.op = "Gemm",
                 .min_inputs = 2,
                 .max_inputs = 3,
                 .parse = parse_gemm,
                 .infer = infer_gemm,
                 .semantics = "opset 11 (C optional) and later; before 7 C broadcasts only with broadcast=1"});
  out.push_back({.op = "MatMul", .min_inputs = 2, .max_inputs = 2, .infer = infer_matmul});
}

void add_norm_schemas(std::vector<OpSchema>& out) {
  out.push_back({.op = "BatchNormalization",
                 .min_inputs = 5,
                 .max_inputs = 5,
                 .max_outputs = 5,
                 .parse = parse_batchnorm,
                 .infer = infer_batchnorm,
                 .semantics = "inference; spatial=1 (before opset 9); is_test=1 or absent (before opset 7)"});
  out.push_back({.op = "InstanceNormalization",
                 .min_inputs = 3,
                 .max_inputs = 3,
                 .parse = parse_instancenorm,
                 .infer = infer_instancenorm});
  out.push_back({.op = "GroupNormalization",
                 .min_inputs = 3,
                 .max_inputs = 3,
                 .parse = parse_groupnorm,
                 .infer = infer_groupnorm,
                 .semantics = "opset 21 (scale and bias per channel); version 18's per-group form is refused; "
                              "statistics in float32"});
  out.push_back({.op = "LpNormalization",
                 .parse = parse_lpnorm,
                 .infer = infer_lpnorm,
                 .semantics = "p = 1 or 2; a zero norm gives zeros (as onnxruntime), not NaN"});
  out.push_back({.op = "LayerNormalization",
                 .min_inputs = 2,
                 .max_inputs = 3,
                 .max_outputs = 3,
                 .parse = parse_layernorm,
                 .infer = infer_layernorm,
                 .semantics = "opset 17; Mean and InvStdDev outputs in float32 (stash_type 1)"});
  for (const char* op : {"Softmax", "LogSoftmax"})
    out.push_back({.op = op,
                   .parse = parse_softmax,
                   .infer = infer_softmax,
                   .semantics = "opset 13: one axis, default -1; before 13: flattened [axis, rank), default 1"});
  for (const auto& [op, kind] : kReduceOps)
    out.push_back({.op = op,
                   .max_inputs = 2,
                   .parse = parse_reduce,
                   .infer = infer_reduce,
                   .shape_inputs = {1},
                   .semantics = "axes attribute before opset 18 (ReduceSum: 13), input after"});
}

MatMulGeometry matmul_geometry(Shape a, Shape b) {
  MatMulGeometry geo;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  geo.m = a[a.size() - 2];
  geo.k = a.back();
  geo.n = b.back();
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  size_t r = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), r - ba.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  geo.batch.resize(r);
  for (size_t i = 0; i < r; ++i) geo.batch[i] = ba[i] == 1 ? bb[i] : ba[i];
  geo.stride_a.assign(r, 0);
  geo.stride_b.assign(r, 0);
  int64_t sa = 1, sb = 1;
  for (size_t i = r; i-- > 0;) {
    if (ba[i] != 1) geo.stride_a[i] = sa;
    if (bb[i] != 1) geo.stride_b[i] = sb;
    sa *= ba[i];
    sb *= bb[i];
  }
  geo.a_mats = sa;
  geo.b_mats = sb;
  return geo;
}

int64_t MatMulGeometry::count() const { return shape_numel(batch); }

std::pair<int64_t, int64_t> MatMulGeometry::operands(int64_t e) const {
  int64_t ia = 0, ib = 0;
  for (size_t d = batch.size(); d-- > 0;) {
    int64_t i = e % batch[d];
    e /= batch[d];
    ia += i * stride_a[d];
    ib += i * stride_b[d];
  }
  return {ia, ib};
}

bool MatMulGeometry::fold_shared_b() {
  int64_t total = count();
  if (b_mats != 1 || total <= 1) return false;
  // A's matrices in batch order: the stride of each batch axis longer than 1
  // is the product of the extents after it.
  int64_t expect = 1;
  for (size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    if (stride_a[d] != expect) return false;
    expect *= batch[d];
  }
  m *= total;
  batch.clear();
  stride_a.clear();
  stride_b.clear();
  a_mats = 1;
  return true;
}

}  // namespace minirt
