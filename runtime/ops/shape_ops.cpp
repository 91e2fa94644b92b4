// Schemas of the data-movement and shape ops: Flatten, Reshape, Squeeze,
// Unsqueeze, Concat, Split, Slice, Gather, Shape, Size, Cast, CastLike,
// Constant, ConstantOfShape, Range, Transpose, Pad, CenterCropPad, Expand,
// Tile, DepthToSpace, SpaceToDepth.
#include "runtime/op_registry.h"
#include "runtime/ops/families.h"
#include "runtime/ops/shape_ops.h"

#include <minirt/half.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace minirt {

namespace {

bool movable(DType d) {
  return d == DType::kFloat32 || d == DType::kInt64 || d == DType::kInt32 || d == DType::kBool || d == DType::kUInt8 ||
         d == DType::kInt8;
}

// Cast reads and writes float16 and bfloat16 too (through float32).
bool castable(DType d) { return movable(d) || is_half_dtype(d); }

void expect_castable(const InferContext& ctx, size_t i) {
  if (!castable(ctx.dtype(i)))
    ctx.unsupported(std::string("input ") + std::to_string(i) + " has dtype " + dtype_name(ctx.dtype(i)) +
                    ", which minirt does not support");
}

void expect_movable(const InferContext& ctx, size_t i) {
  if (!movable(ctx.dtype(i)))
    ctx.unsupported(std::string("input ") + std::to_string(i) + " has dtype " + dtype_name(ctx.dtype(i)) +
                    ", which minirt does not support");
}

// ---- Flatten ----
std::shared_ptr<const OpAttrs> parse_flatten(const ParseContext& ctx) {
  auto a = std::make_shared<AxisAttrs>();
  a->axis = ctx.get_int("axis", 1);
  return a;
}
void infer_flatten(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = ctx.attrs<AxisAttrs>().axis;
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) ctx.fail("axis is out of range for rank " + std::to_string(r));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : inner) *= x[i];
  ctx.set_output(0, ctx.dtype(0), {outer, inner});
}

// ---- Reshape ----
std::shared_ptr<const OpAttrs> parse_reshape(const ParseContext& ctx) {
  auto a = std::make_shared<ReshapeAttrs>();
  a->allowzero = ctx.get_int("allowzero", 0) != 0;
  if (ctx.opset() < 5) {
    // Reshape-1: the shape is an attribute (absent: a scalar), not an input.
    if (ctx.node().input(1) >= 0)
      ctx.invalid("Reshape version 1 (before opset 5) takes the shape as an attribute, not an input");
    a->shape_attr = ctx.get_ints("shape");
  } else if (ctx.node().input(1) < 0) {
    ctx.invalid("its shape input is required (from opset 5; before, it was the shape attribute)");
  }
  return a;
}
void infer_reshape(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  auto a = std::make_shared<ReshapeAttrs>(ctx.attrs<ReshapeAttrs>());
  std::vector<int64_t> spec = ctx.opset() < 5 ? a->shape_attr : ctx.const_ints(1, "shape");
  Shape y(spec.size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer_at >= 0) ctx.fail("shape " + shape_str(spec) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d == 0 && !a->allowzero) {
      if (i >= x.size())
        ctx.fail("shape " + shape_str(spec) + " copies dimension " + std::to_string(i) + " that the input " +
                 shape_str(x) + " lacks");
      d = x[i];
    }
    if (d < 0) ctx.fail("shape " + shape_str(spec) + " has a negative dimension");
    y[i] = d;
    known = checked_mul(known, d, ctx, ("shape " + shape_str(spec)).c_str());
  }
  int64_t n = shape_numel(x);
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0) ctx.fail("cannot reshape " + shape_str(x) + " to " + shape_str(spec));
    y[infer_at] = n / known;
  } else if (known != n) {
    ctx.fail("cannot reshape " + shape_str(x) + " (" + std::to_string(n) + " elements) to " + shape_str(y));
  }
  a->target = y;
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- Squeeze / Unsqueeze ----
std::shared_ptr<const OpAttrs> parse_axes(const ParseContext& ctx) {
  auto a = std::make_shared<AxesAttrs>();
  a->axes = ctx.get_ints("axes");
  return a;
}
std::vector<int64_t> axes_operand(InferContext& ctx) {
  if (ctx.opset() >= 13) return ctx.has_input(1) ? ctx.const_ints(1, "axes") : std::vector<int64_t>{};
  if (ctx.has_input(1)) ctx.fail("axes is an attribute, not an input, before opset 13");
  return ctx.attrs<AxesAttrs>().axes;
}
void infer_squeeze(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes = axes_operand(ctx);
  std::vector<bool> drop(r, false);
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i) drop[i] = x[i] == 1;
  } else {
    for (int64_t ax : axes) {
      int64_t a = normalize_axis(ax, r, ctx);
      if (x[a] != 1) ctx.fail("cannot squeeze axis " + std::to_string(ax) + " of size " + std::to_string(x[a]));
      drop[a] = true;
    }
  }
  Shape y;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[i]) y.push_back(x[i]);
  ctx.set_output(0, ctx.dtype(0), y);
}
void infer_unsqueeze(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  std::vector<int64_t> axes = axes_operand(ctx);
  if (axes.empty()) ctx.fail("axes is required");
  int64_t r = static_cast<int64_t>(x.size() + axes.size());
  std::vector<bool> ins(r, false);
  for (int64_t ax : axes) {
    int64_t a = normalize_axis(ax, r, ctx);
    if (ins[a]) ctx.fail("axes has a repeated entry");
    ins[a] = true;
  }
  Shape y;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i) y.push_back(ins[i] ? 1 : x[k++]);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- Concat ----
std::shared_ptr<const OpAttrs> parse_concat(const ParseContext& ctx) {
  auto a = std::make_shared<AxisAttrs>();
  // Concat-1 (before opset 4): axis is optional, default 1.
  if (!ctx.has("axis") && ctx.opset() >= 4) ctx.invalid("axis is required");
  a->axis = ctx.get_int("axis", 1);
  return a;
}
void infer_concat(InferContext& ctx) {
  expect_movable(ctx, 0);
  Shape y = ctx.shape(0);
  int64_t r = static_cast<int64_t>(y.size());
  if (r == 0) ctx.fail("inputs must have rank 1 or more");
  auto a = std::make_shared<AxisAttrs>(ctx.attrs<AxisAttrs>());
  a->axis = normalize_axis(a->axis, r, ctx);
  y[a->axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.dtype(i) != ctx.dtype(0)) ctx.fail("inputs have different dtypes");
    const Shape& s = ctx.shape(i);
    if (static_cast<int64_t>(s.size()) != r)
      ctx.fail("inputs have different ranks: " + shape_str(ctx.shape(0)) + " and " + shape_str(s));
    for (int64_t d = 0; d < r; ++d)
      if (d != a->axis && s[d] != ctx.shape(0)[d])
        ctx.fail("inputs " + shape_str(ctx.shape(0)) + " and " + shape_str(s) + " differ outside axis " +
                 std::to_string(a->axis));
    y[a->axis] += s[a->axis];
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- Split ----
std::shared_ptr<const OpAttrs> parse_split(const ParseContext& ctx) {
  auto a = std::make_shared<AxisAttrs>();
  a->axis = ctx.get_int("axis", 0);
  a->split = ctx.get_ints("split");
  a->num_outputs = ctx.get_int("num_outputs", 0);
  // The split input: from opset 13; Split-1 (before opset 2) had it too, as
  // an alternative to the attribute; versions 2 to 11 take the attribute only.
  if (ctx.node().input(1) >= 0) {
    if (ctx.opset() >= 2 && ctx.opset() < 13)
      ctx.invalid("split is an attribute, not an input, in Split versions 2 and 11 (opset 2 to 12)");
    if (ctx.opset() < 2 && ctx.has("split")) ctx.invalid("split is given both as an attribute and as an input");
  }
  return a;
}
void infer_split(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  auto a = std::make_shared<AxisAttrs>(ctx.attrs<AxisAttrs>());
  a->axis = normalize_axis(a->axis, static_cast<int64_t>(x.size()), ctx);
  if ((ctx.opset() >= 13 || ctx.opset() < 2) && ctx.has_input(1)) a->split = ctx.const_ints(1, "split");
  int64_t n = static_cast<int64_t>(ctx.num_outputs());
  int64_t len = x[a->axis];
  if (a->split.empty()) {
    // Equal parts; from opset 18 the last part may be smaller.
    int64_t part = (len + n - 1) / n;
    if (ctx.opset() < 18 && len % n != 0)
      ctx.fail("axis of length " + std::to_string(len) + " does not split into " + std::to_string(n) + " equal parts");
    for (int64_t i = 0; i < n; ++i) a->split.push_back(std::max<int64_t>(0, std::min(part, len - i * part)));
  }
  if (static_cast<int64_t>(a->split.size()) != n)
    ctx.fail("split has " + std::to_string(a->split.size()) + " entries for " + std::to_string(n) + " outputs");
  int64_t sum = 0;
  for (int64_t s : a->split) sum += s;
  if (sum != len)
    ctx.fail("split sizes add up to " + std::to_string(sum) + ", not the axis length " + std::to_string(len));
  for (int64_t i = 0; i < n; ++i) {
    Shape y = x;
    y[a->axis] = a->split[i];
    ctx.set_output(i, ctx.dtype(0), y);
  }
  ctx.set_attrs(a);
}

// ---- Slice ----
std::shared_ptr<const OpAttrs> parse_slice(const ParseContext& ctx) {
  auto a = std::make_shared<SliceAttrs>();
  if (ctx.opset() < 10) {
    a->starts = ctx.get_ints("starts");
    a->ends = ctx.get_ints("ends");
    a->axes = ctx.get_ints("axes");
  }
  return a;
}
void infer_slice(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  auto a = std::make_shared<SliceAttrs>(ctx.attrs<SliceAttrs>());
  if (ctx.opset() >= 10) {
    a->starts = ctx.const_ints(1, "starts");
    a->ends = ctx.const_ints(2, "ends");
    a->axes = ctx.has_input(3) ? ctx.const_ints(3, "axes") : std::vector<int64_t>{};
    a->steps = ctx.has_input(4) ? ctx.const_ints(4, "steps") : std::vector<int64_t>{};
  }
  size_t k = a->starts.size();
  if (a->ends.size() != k) ctx.fail("starts and ends have different lengths");
  if (a->axes.empty())
    for (size_t i = 0; i < k; ++i) a->axes.push_back(static_cast<int64_t>(i));
  if (a->steps.empty()) a->steps.assign(k, 1);
  if (a->axes.size() != k || a->steps.size() != k) ctx.fail("axes and steps must match starts in length");
  a->start.assign(r, 0);
  a->step.assign(r, 1);
  a->count = x;
  std::vector<bool> seen(r, false);
  Shape y = x;
  for (size_t i = 0; i < k; ++i) {
    int64_t ax = normalize_axis(a->axes[i], r, ctx);
    if (seen[ax]) ctx.fail("axes has a repeated entry");
    seen[ax] = true;
    int64_t dim = x[ax], step = a->steps[i];
    if (step == 0) ctx.fail("steps must not be 0");
    int64_t s = a->starts[i], e = a->ends[i];
    if (s < 0) s += dim;
    if (e < 0 && e > std::numeric_limits<int64_t>::min() / 2) e += dim;
    int64_t cnt;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      cnt = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      cnt = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    a->start[ax] = s;
    a->step[ax] = step;
    a->count[ax] = cnt;
    y[ax] = cnt;
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- Gather ----
std::shared_ptr<const OpAttrs> parse_gather(const ParseContext& ctx) {
  auto a = std::make_shared<AxisAttrs>();
  a->axis = ctx.get_int("axis", 0);
  return a;
}
void infer_gather(InferContext& ctx) {
  expect_movable(ctx, 0);
  ctx.expect_dtype(1, {DType::kInt64, DType::kInt32});
  const Shape& x = ctx.shape(0);
  const Shape& idx = ctx.shape(1);
  auto a = std::make_shared<AxisAttrs>(ctx.attrs<AxisAttrs>());
  int64_t r = static_cast<int64_t>(x.size());
  if (r == 0) ctx.fail("data must have rank 1 or more");
  a->axis = normalize_axis(a->axis, r, ctx);
  if (const Tensor* t = ctx.constant(1)) {
    std::vector<int64_t> v = ctx.const_ints(1, "indices");
    for (int64_t i : v)
      if (i < -x[a->axis] || i >= x[a->axis])
        ctx.fail("index " + std::to_string(i) + " is out of range for axis of length " + std::to_string(x[a->axis]));
    (void)t;
  }
  Shape y(x.begin(), x.begin() + a->axis);
  y.insert(y.end(), idx.begin(), idx.end());
  y.insert(y.end(), x.begin() + a->axis + 1, x.end());
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- Shape ----
std::shared_ptr<const OpAttrs> parse_shape(const ParseContext& ctx) {
  auto a = std::make_shared<ShapeAttrs>();
  a->start = ctx.get_int("start", 0);
  a->has_end = ctx.has("end");
  a->end = ctx.get_int("end", INT64_MAX);
  return a;
}
void infer_shape(InferContext& ctx) {
  int64_t r = ctx.rank(0);
  const auto& a = ctx.attrs<ShapeAttrs>();
  int64_t s = a.start < 0 ? a.start + r : a.start;
  int64_t e = !a.has_end ? r : (a.end < 0 ? a.end + r : a.end);
  s = std::clamp<int64_t>(s, 0, r);
  e = std::clamp<int64_t>(e, 0, r);
  ctx.set_output(0, DType::kInt64, {std::max<int64_t>(0, e - s)});
}

// ---- Size ----
void infer_size(InferContext& ctx) {
  (void)ctx.shape(0);
  ctx.set_output(0, DType::kInt64, {});
}

// ---- Cast ----
std::shared_ptr<const OpAttrs> parse_cast(const ParseContext& ctx) {
  auto a = std::make_shared<CastAttrs>();
  if (!ctx.has("to")) ctx.invalid("attribute 'to' is required");
  if (ctx.opset() < 6) {
    // Cast-1: `to` names the type as a string, TensorProto's spelling.
    static const std::pair<const char*, DType> names[] = {
        {"FLOAT", DType::kFloat32},   {"UINT8", DType::kUInt8},      {"INT8", DType::kInt8},
        {"UINT16", DType::kUInt16},   {"INT16", DType::kInt16},      {"INT32", DType::kInt32},
        {"INT64", DType::kInt64},     {"STRING", DType::kString},    {"BOOL", DType::kBool},
        {"FLOAT16", DType::kFloat16}, {"DOUBLE", DType::kFloat64},   {"UINT32", DType::kUInt32},
        {"UINT64", DType::kUInt64},   {"BFLOAT16", DType::kBFloat16}};
    const std::string to = ctx.get_string("to", "");
    a->to = DType::kUndefined;
    for (const auto& [name, dt] : names)
      if (to == name) a->to = dt;
    if (a->to == DType::kUndefined)
      ctx.invalid("Cast version 1 (before opset 6) names the type as a string: 'to' is '" + to +
                  "', not one of FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, BOOL, FLOAT16, DOUBLE, ...");
  } else {
    a->to = static_cast<DType>(ctx.get_int("to", 0));
  }
  if (!castable(a->to)) ctx.unsupported(std::string("casting to ") + dtype_name(a->to) + " is not supported");
  return a;
}
void infer_cast(InferContext& ctx) {
  expect_castable(ctx, 0);
  ctx.set_output(0, ctx.attrs<CastAttrs>().to, ctx.shape(0));
}

// CastLike: Cast to the type of the second input (only its type is read).
void infer_cast_like(InferContext& ctx) {
  expect_castable(ctx, 0);
  expect_castable(ctx, 1);
  auto a = std::make_shared<CastAttrs>();
  a->to = ctx.dtype(1);
  ctx.set_attrs(a);
  ctx.set_output(0, a->to, ctx.shape(0));
}

// ---- Range ----
// start, limit and delta are scalars known at plan time; the output has
// max(ceil((limit - start) / delta), 0) elements start + i * delta.
void infer_range(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32, DType::kInt64, DType::kInt32});
  for (size_t i = 1; i < 3; ++i)
    if (ctx.dtype(i) != ctx.dtype(0))
      ctx.fail(std::string("start, limit and delta must have one type; they are ") + dtype_name(ctx.dtype(0)) + ", " +
               dtype_name(ctx.dtype(1)) + " and " + dtype_name(ctx.dtype(2)));
  const char* names[] = {"start", "limit", "delta"};
  for (size_t i = 0; i < 3; ++i)
    if (shape_numel(ctx.shape(i)) != 1)
      ctx.fail(std::string(names[i]) + " must be a scalar, it has shape " + shape_str(ctx.shape(i)));
  int64_t n = 0;
  if (ctx.dtype(0) == DType::kFloat32) {
    double v[3];
    for (size_t i = 0; i < 3; ++i) v[i] = ctx.const_floats(i, names[i])[0];
    if (v[2] == 0) ctx.fail("delta must not be 0");
    double len = std::ceil((v[1] - v[0]) / v[2]);
    if (!(len < 1e15))
      ctx.fail("the range from " + std::to_string(v[0]) + " to " + std::to_string(v[1]) + " is too long");
    n = len > 0 ? static_cast<int64_t>(len) : 0;
  } else {
    int64_t v[3];
    for (size_t i = 0; i < 3; ++i) v[i] = ctx.const_ints(i, names[i])[0];
    if (v[2] == 0) ctx.fail("delta must not be 0");
    // Ceiling division in 128 bits: limit - start may not fit in 64.
    __int128 span = static_cast<__int128>(v[1]) - v[0], d = v[2];
    __int128 q = span / d;
    if (span % d != 0 && ((span < 0) == (d < 0))) ++q;
    n = q > 0 ? static_cast<int64_t>(q) : 0;
  }
  ctx.set_output(0, ctx.dtype(0), {n});
}

// ---- Constant / ConstantOfShape ----
std::shared_ptr<const OpAttrs> parse_constant(const ParseContext& ctx) {
  auto a = std::make_shared<ConstantAttrs>();
  int given = 0;
  if (const Tensor* t = ctx.get_tensor("value")) {
    a->value = *t;
    ++given;
  }
  if (ctx.has("value_float")) {
    a->value = Tensor::zeros(DType::kFloat32, {});
    *a->value.data<float>() = ctx.get_float("value_float", 0);
    ++given;
  }
  if (ctx.has("value_int")) {
    a->value = Tensor::zeros(DType::kInt64, {});
    *a->value.data<int64_t>() = ctx.get_int("value_int", 0);
    ++given;
  }
  if (ctx.has("value_floats")) {
    auto v = ctx.get_floats("value_floats");
    a->value = Tensor::zeros(DType::kFloat32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), a->value.data<float>());
    ++given;
  }
  if (ctx.has("value_ints")) {
    auto v = ctx.get_ints("value_ints");
    a->value = Tensor::zeros(DType::kInt64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), a->value.data<int64_t>());
    ++given;
  }
  if (ctx.has("sparse_value") || ctx.has("value_string") || ctx.has("value_strings"))
    ctx.unsupported("sparse and string constants are not supported");
  if (given != 1) ctx.invalid("exactly one value attribute is required");
  if (!castable(a->value.dtype()))
    ctx.unsupported(std::string("constants of dtype ") + dtype_name(a->value.dtype()) + " are not supported");
  return a;
}
void infer_constant(InferContext& ctx) {
  const Tensor& v = ctx.attrs<ConstantAttrs>().value;
  ctx.set_output(0, v.dtype(), v.shape());
}

std::shared_ptr<const OpAttrs> parse_constant_of_shape(const ParseContext& ctx) {
  auto a = std::make_shared<ConstantAttrs>();
  if (const Tensor* t = ctx.get_tensor("value")) {
    if (t->numel() != 1) ctx.invalid("value must hold one element");
    if (!castable(t->dtype()))
      ctx.unsupported(std::string("value of dtype ") + dtype_name(t->dtype()) + " is not supported");
    a->value = t->reshaped({});
  } else {
    a->value = Tensor::zeros(DType::kFloat32, {});
  }
  return a;
}
void infer_constant_of_shape(InferContext& ctx) {
  std::vector<int64_t> dims = ctx.const_ints(0, "shape");
  for (int64_t d : dims)
    if (d < 0) ctx.fail("shape " + shape_str(dims) + " has a negative dimension");
  ctx.set_output(0, ctx.attrs<ConstantAttrs>().value.dtype(), dims);
}

// ---- Transpose ----
std::shared_ptr<const OpAttrs> parse_transpose(const ParseContext& ctx) {
  auto a = std::make_shared<TransposeAttrs>();
  a->perm = ctx.get_ints("perm");
  return a;
}
void infer_transpose(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  auto a = std::make_shared<TransposeAttrs>(ctx.attrs<TransposeAttrs>());
  if (a->perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) a->perm.push_back(i);
  if (static_cast<int64_t>(a->perm.size()) != r)
    ctx.fail("perm " + shape_str(a->perm) + " does not match rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  Shape y(r);
  for (int64_t i = 0; i < r; ++i) {
    int64_t p = a->perm[i];
    if (p < 0) p += r;
    if (p < 0 || p >= r || seen[p]) ctx.fail("perm " + shape_str(a->perm) + " is not a permutation");
    seen[p] = true;
    a->perm[i] = p;
    y[i] = x[p];
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- Pad ----
std::shared_ptr<const OpAttrs> parse_pad(const ParseContext& ctx) {
  auto a = std::make_shared<PadAttrs>();
  std::string mode = ctx.get_string("mode", "constant");
  if (mode == "constant")
    a->mode = PadMode::kConstant;
  else if (mode == "reflect")
    a->mode = PadMode::kReflect;
  else if (mode == "edge")
    a->mode = PadMode::kEdge;
  else if (mode == "wrap" && ctx.opset() >= 19)
    a->mode = PadMode::kWrap;
  else if (mode == "wrap")
    ctx.invalid("pad mode 'wrap' came with Pad version 19; this model imports opset " + std::to_string(ctx.opset()));
  else
    ctx.unsupported("pad mode '" + mode + "' is not supported (constant, reflect, edge, wrap are)");
  if (ctx.opset() < 11) {
    // Before opset 11, pads and value are attributes.
    // Pad-1 (before opset 2) calls them paddings, counts of elements to
    // add (removing, with negative pads, came with version 2).
    const bool v1 = ctx.opset() < 2;
    if (!ctx.has(v1 ? "paddings" : "pads"))
      ctx.invalid(std::string("attribute '") + (v1 ? "paddings" : "pads") + "' is required in Pad version " +
                  (v1 ? "1" : "2"));
    a->pads = ctx.get_ints(v1 ? "paddings" : "pads");
    if (v1)
      for (int64_t p : a->pads)
        if (p < 0) ctx.invalid("paddings " + shape_str(a->pads) + " has a negative entry; Pad version 1 only adds");
    a->value = ctx.get_float("value", 0.0f);
  }
  return a;
}
void infer_pad(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  auto a = std::make_shared<PadAttrs>(ctx.attrs<PadAttrs>());
  if (ctx.opset() >= 11) {
    std::vector<int64_t> p = ctx.const_ints(1, "pads");
    if (ctx.has_input(2)) {
      const Tensor* v = ctx.constant(2);
      if (!v) ctx.unsupported("its constant_value input is computed at run time");
      if (v->numel() > 1) ctx.fail("constant_value must hold one value, it has " + std::to_string(v->numel()));
      if (v->numel() == 1 && v->dtype() != ctx.dtype(0))
        ctx.fail(std::string("constant_value is ") + dtype_name(v->dtype()) + " but the data is " +
                 dtype_name(ctx.dtype(0)));
      // The kernel reads the value itself, in its own type (an int64 does
      // not survive a float); this copy is for reports.
      if (v->numel() == 1) {
        switch (v->dtype()) {
          case DType::kFloat32:
            a->value = *v->data<float>();
            break;
          case DType::kInt64:
            a->value = static_cast<float>(*v->data<int64_t>());
            break;
          case DType::kInt32:
            a->value = static_cast<float>(*v->data<int32_t>());
            break;
          case DType::kInt8:
            a->value = static_cast<float>(*v->data<int8_t>());
            break;
          case DType::kUInt8:
          case DType::kBool:
            a->value = static_cast<float>(*v->data<uint8_t>());
            break;
          default:
            break;
        }
      }
    }
    if (ctx.has_input(3)) {
      std::vector<int64_t> axes = ctx.const_ints(3, "axes");
      if (p.size() != 2 * axes.size()) ctx.fail("pads must have two entries per axis in axes");
      std::vector<int64_t> full(2 * r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t ax = normalize_axis(axes[i], r, ctx);
        full[ax] = p[i];
        full[ax + r] = p[i + axes.size()];
      }
      p = full;
    }
    a->pads = p;
  }
  if (static_cast<int64_t>(a->pads.size()) != 2 * r)
    ctx.fail("pads has " + std::to_string(a->pads.size()) + " entries; input rank " + std::to_string(r) + " needs " +
             std::to_string(2 * r));
  Shape y(r);
  for (int64_t i = 0; i < r; ++i) {
    y[i] = x[i] + a->pads[i] + a->pads[i + r];
    if (y[i] < 0) ctx.fail("pads remove more than the whole axis " + std::to_string(i));
    if (a->mode == PadMode::kReflect && (a->pads[i] >= x[i] || a->pads[i + r] >= x[i]) &&
        (a->pads[i] > 0 || a->pads[i + r] > 0))
      ctx.unsupported("reflect padding wider than the axis is not supported");
    if (a->mode == PadMode::kEdge && x[i] == 0 && y[i] > 0) ctx.fail("edge padding of an empty axis");
    if (a->mode == PadMode::kWrap && x[i] == 0 && y[i] > 0) ctx.fail("wrap padding of an empty axis");
    // Wrapping is defined for added elements only (ONNX's reference pads
    // with numpy, which takes no negative widths); a crop and a wrap on one
    // axis would need a rule for which elements repeat.
    if (a->mode == PadMode::kWrap && (a->pads[i] < 0 || a->pads[i + r] < 0))
      ctx.unsupported("wrap padding with negative pads (a crop) on axis " + std::to_string(i));
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- CenterCropPad ----
std::shared_ptr<const OpAttrs> parse_center_crop_pad(const ParseContext& ctx) {
  auto a = std::make_shared<CenterCropPadAttrs>();
  a->has_axes = ctx.has("axes");
  a->axes = ctx.get_ints("axes");
  return a;
}
void infer_center_crop_pad(InferContext& ctx) {
  expect_movable(ctx, 0);
  ctx.expect_dtype(1, {DType::kInt64, DType::kInt32});
  const Shape& x = ctx.shape(0);
  int64_t r = static_cast<int64_t>(x.size());
  auto a = std::make_shared<CenterCropPadAttrs>(ctx.attrs<CenterCropPadAttrs>());
  std::vector<int64_t> target = ctx.const_ints(1, "shape");
  std::vector<int64_t> axes = a->axes;
  if (!a->has_axes)
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (target.size() != axes.size())
    ctx.fail("shape has " + std::to_string(target.size()) + " entries but there are " + std::to_string(axes.size()) +
             " axes to crop or pad (input " + shape_str(x) + ")");
  a->mode = PadMode::kConstant;
  a->value = 0.0f;
  a->pads.assign(2 * r, 0);
  std::vector<bool> seen(r, false);
  Shape y = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t ax = normalize_axis(axes[i], r, ctx);
    if (seen[ax]) ctx.fail("axes names axis " + std::to_string(ax) + " twice");
    seen[ax] = true;
    if (target[i] < 0) ctx.fail("shape " + shape_str(target) + " has a negative entry");
    // The odd element, cropped or padded, goes at the end (the begin pad
    // is half the difference rounded toward zero).
    int64_t diff = target[i] - x[ax];
    a->pads[ax] = diff / 2;
    a->pads[ax + r] = diff - diff / 2;
    y[ax] = target[i];
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- Expand ----
void infer_expand(InferContext& ctx) {
  expect_movable(ctx, 0);
  std::vector<int64_t> target = ctx.const_ints(1, "shape");
  auto a = std::make_shared<ExpandAttrs>();
  a->target = broadcast_shapes(ctx.shape(0), target, ctx);
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), a->target);
}

// ---- Tile ----
void infer_tile(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  auto a = std::make_shared<TileAttrs>();
  if (ctx.opset() < 6) {
    // Tile-1: copies of the whole input along one axis (two scalar inputs).
    if (!ctx.has_input(2)) ctx.fail("Tile version 1 (before opset 6) takes tiles and axis inputs; axis is missing");
    std::vector<int64_t> tiles = ctx.const_ints(1, "tiles"), axis = ctx.const_ints(2, "axis");
    if (tiles.size() != 1 || axis.size() != 1) ctx.fail("tiles and axis must be one value each (Tile version 1)");
    a->repeats.assign(x.size(), 1);
    a->repeats[normalize_axis(axis[0], static_cast<int64_t>(x.size()), ctx)] = tiles[0];
  } else {
    if (ctx.has_input(2)) ctx.fail("Tile takes two inputs from opset 6 (the third, axis, was Tile version 1's)");
    a->repeats = ctx.const_ints(1, "repeats");
  }
  if (a->repeats.size() != x.size())
    ctx.fail("repeats has " + std::to_string(a->repeats.size()) + " entries for an input of rank " +
             std::to_string(x.size()));
  Shape y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (a->repeats[i] < 0) ctx.fail("repeats " + shape_str(a->repeats) + " has a negative entry");
    y[i] = checked_mul(x[i], a->repeats[i], ctx, "repeats");
  }
  ctx.set_attrs(a);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---- DepthToSpace, SpaceToDepth ----
std::shared_ptr<const OpAttrs> parse_block(const ParseContext& ctx) {
  auto a = std::make_shared<BlockAttrs>();
  if (!ctx.has("blocksize")) ctx.invalid("attribute 'blocksize' is required");
  a->blocksize = ctx.get_int("blocksize", 1);
  if (a->blocksize < 1 || a->blocksize > (1 << 16))
    ctx.invalid("blocksize must be between 1 and 65536, not " + std::to_string(a->blocksize));
  if (ctx.node().op == "DepthToSpace") {
    std::string mode = ctx.get_string("mode", "DCR");
    if (mode == "CRD")
      a->crd = true;
    else if (mode != "DCR")
      ctx.invalid("mode must be DCR or CRD, not '" + mode + "'");
  } else if (ctx.opset() >= 28 && ctx.has("mode")) {
    // SpaceToDepth has a mode from version 28; DCR is what every earlier version did.
    std::string mode = ctx.get_string("mode", "DCR");
    if (mode == "CRD")
      ctx.unsupported("SpaceToDepth version 28's mode CRD (column-row-depth order) is not implemented; DCR is");
    if (mode != "DCR") ctx.invalid("mode must be DCR or CRD, not '" + mode + "'");
  }
  return a;
}
void infer_depth_to_space(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  int64_t b = ctx.attrs<BlockAttrs>().blocksize;
  if (x.size() != 4) ctx.fail("input must be 4-D (N, C, H, W), not " + shape_str(x));
  if (x[1] % (b * b) != 0)
    ctx.fail(std::to_string(x[1]) + " channels do not divide into blocks of " + std::to_string(b) + "x" +
             std::to_string(b));
  ctx.set_output(0, ctx.dtype(0), {x[0], x[1] / (b * b), x[2] * b, x[3] * b});
}
void infer_space_to_depth(InferContext& ctx) {
  expect_movable(ctx, 0);
  const Shape& x = ctx.shape(0);
  int64_t b = ctx.attrs<BlockAttrs>().blocksize;
  if (x.size() != 4) ctx.fail("input must be 4-D (N, C, H, W), not " + shape_str(x));
  if (x[2] % b != 0 || x[3] % b != 0)
    ctx.fail("height and width " + std::to_string(x[2]) + "x" + std::to_string(x[3]) +
             " are not multiples of the blocksize " + std::to_string(b));
  ctx.set_output(0, ctx.dtype(0), {x[0], x[1] * b * b, x[2] / b, x[3] / b});
}

}  // namespace

void add_shape_schemas(std::vector<OpSchema>& out) {
  out.push_back({.op = "Flatten", .parse = parse_flatten, .infer = infer_flatten, .view = true});
  out.push_back({.op = "Reshape",
                 .min_inputs = 1,
                 .max_inputs = 2,
                 .parse = parse_reshape,
                 .infer = infer_reshape,
                 .shape_inputs = {1},
                 .semantics = "opset 14 (allowzero) and earlier; shape attribute before 5",
                 .view = true});
  out.push_back({.op = "Squeeze",
                 .max_inputs = 2,
                 .parse = parse_axes,
                 .infer = infer_squeeze,
                 .shape_inputs = {1},
                 .semantics = "axes attribute before opset 13, input from 13",
                 .view = true});
  out.push_back({.op = "Unsqueeze",
                 .max_inputs = 2,
                 .parse = parse_axes,
                 .infer = infer_unsqueeze,
                 .shape_inputs = {1},
                 .semantics = "axes attribute before opset 13, input from 13",
                 .view = true});
  out.push_back({.op = "Concat",
                 .min_inputs = 1,
                 .max_inputs = 1 << 20,
                 .parse = parse_concat,
                 .infer = infer_concat,
                 .semantics = "axis required from opset 4, default 1 before",
                 .joins_inputs = true});
  out.push_back({.op = "Split",
                 .max_inputs = 2,
                 .max_outputs = 1 << 20,
                 .parse = parse_split,
                 .infer = infer_split,
                 .shape_inputs = {1},
                 .semantics = "split attribute before opset 13 (or input before 2), input from 13; num_outputs "
                              "from 18"});
  out.push_back({.op = "Slice",
                 .max_inputs = 5,
                 .parse = parse_slice,
                 .infer = infer_slice,
                 .shape_inputs = {1, 2, 3, 4},
                 .semantics = "attributes before opset 10, inputs from 10"});
  out.push_back({.op = "Gather", .min_inputs = 2, .max_inputs = 2, .parse = parse_gather, .infer = infer_gather});
  out.push_back({.op = "Shape",
                 .parse = parse_shape,
                 .infer = infer_shape,
                 .semantics = "start/end from opset 15",
                 .reads_shape_only = true});
  out.push_back({.op = "Size", .infer = infer_size, .reads_shape_only = true});
  out.push_back({.op = "Cast",
                 .parse = parse_cast,
                 .infer = infer_cast,
                 .semantics = "float16 and bfloat16 to and from through float32, rounding to nearest even; 'to' a "
                              "type name string before opset 6"});
  out.push_back({.op = "CastLike",
                 .min_inputs = 2,
                 .max_inputs = 2,
                 .infer = infer_cast_like,
                 .semantics = "float16 and bfloat16 as for Cast"});
  out.push_back({.op = "Range", .min_inputs = 3, .max_inputs = 3, .infer = infer_range, .shape_inputs = {0, 1, 2}});
  out.push_back({.op = "Constant",
                 .min_inputs = 0,
                 .max_inputs = 0,
                 .parse = parse_constant,
                 .infer = infer_constant,
                 .model_data = true});
  out.push_back({.op = "ConstantOfShape",
                 .parse = parse_constant_of_shape,
                 .infer = infer_constant_of_shape,
                 .shape_inputs = {0}});
  out.push_back({.op = "Transpose", .parse = parse_transpose, .infer = infer_transpose});
  out.push_back({.op = "Pad",
                 .max_inputs = 4,
                 .parse = parse_pad,
                 .infer = infer_pad,
                 .shape_inputs = {1, 2, 3},
                 .semantics = "pads/value attributes before opset 11 (paddings before 2), inputs from 11; axes "
                              "from 18; modes constant, reflect, edge, and wrap from 19"});
  out.push_back({.op = "CenterCropPad",
                 .min_inputs = 2,
                 .max_inputs = 2,
                 .parse = parse_center_crop_pad,
                 .infer = infer_center_crop_pad,
                 .shape_inputs = {1},
                 .semantics = "opset 18; crops or zero-pads each axis, the odd element at the end"});
  out.push_back({.op = "Expand", .min_inputs = 2, .max_inputs = 2, .infer = infer_expand, .shape_inputs = {1}});
  out.push_back({.op = "Tile",
                 .min_inputs = 2,
                 .max_inputs = 3,
                 .infer = infer_tile,
                 .shape_inputs = {1, 2},
                 .semantics = "repeats input (opset 6 and later); tiles and axis inputs before 6"});
  out.push_back({.op = "DepthToSpace",
                 .parse = parse_block,
                 .infer = infer_depth_to_space,
                 .semantics = "mode DCR, or CRD from opset 11"});
  out.push_back({.op = "SpaceToDepth",
                 .parse = parse_block,
                 .infer = infer_space_to_depth,
                 .semantics = "DCR order (the only one before opset 28; CRD from 28 not implemented)"});
}

}  // namespace minirt
