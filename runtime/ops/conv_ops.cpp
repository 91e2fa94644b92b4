// Schemas of the windowed ops: Conv, ConvTranspose, MaxPool, AveragePool,
// LpPool, GlobalAveragePool, GlobalMaxPool and LRN.
#include "runtime/op_registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/families.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace minirt {

int64_t window_out_size(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb, int64_t pe, bool ceil) {
  int64_t span = dil * (k - 1) + 1;
  int64_t avail = in + pb + pe - span;
  if (avail < 0) return 0;
  int64_t out = ceil ? (avail + stride - 1) / stride + 1 : avail / stride + 1;
  // With ceil_mode the last window must start inside the input or its
  // leading padding (the rule PyTorch and onnxruntime apply).
  if (ceil && (out - 1) * stride >= in + pb) --out;
  return out;
}

namespace {

AutoPad parse_auto_pad(const ParseContext& ctx) {
  std::string s = ctx.get_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  ctx.invalid("auto_pad '" + s + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

void parse_window(const ParseContext& ctx, WindowAttrs& a) {
  a.kernel_shape = ctx.get_ints("kernel_shape");
  a.strides = ctx.get_ints("strides");
  a.dilations = ctx.get_ints("dilations");
  a.pads = ctx.get_ints("pads");
  a.auto_pad = parse_auto_pad(ctx);
  for (int64_t s : a.strides)
    if (s <= 0) ctx.invalid("strides must be positive");
  for (int64_t d : a.dilations)
    if (d <= 0) ctx.invalid("dilations must be positive");
  for (int64_t p : a.pads)
    if (p < 0) ctx.unsupported("negative pads are not supported");
  for (int64_t k : a.kernel_shape)
    if (k <= 0) ctx.invalid("kernel_shape must be positive");
}

// Fills strides, dilations and pads to the spatial rank `sp`, checking what
// the file gave, and resolves auto_pad for a forward window op.
void resolve_window(const InferContext& ctx, WindowAttrs& a, const Shape& x, int64_t sp) {
  if (static_cast<int64_t>(a.kernel_shape.size()) != sp)
    ctx.fail("kernel_shape has " + std::to_string(a.kernel_shape.size()) + " entries, expected " + std::to_string(sp) +
             " for input " + shape_str(x));
  if (a.strides.empty()) a.strides.assign(sp, 1);
  if (a.dilations.empty()) a.dilations.assign(sp, 1);
  if (a.pads.empty()) a.pads.assign(2 * sp, 0);
  if (static_cast<int64_t>(a.strides.size()) != sp) ctx.fail("strides must have one entry per spatial axis");
  if (static_cast<int64_t>(a.dilations.size()) != sp) ctx.fail("dilations must have one entry per spatial axis");
  if (static_cast<int64_t>(a.pads.size()) != 2 * sp) ctx.fail("pads must have two entries per spatial axis");
  if (a.auto_pad == AutoPad::kValid) {
    a.pads.assign(2 * sp, 0);
  } else if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
    for (int64_t i = 0; i < sp; ++i) {
      int64_t in = x[2 + i];
      int64_t out = (in + a.strides[i] - 1) / a.strides[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * a.strides[i] + a.dilations[i] * (a.kernel_shape[i] - 1) + 1 - in);
      int64_t small = total / 2;
      a.pads[i] = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
      a.pads[i + sp] = total - a.pads[i];
    }
  }
  a.auto_pad = AutoPad::kNotSet;
}

// A window wider than the padded input leaves no output position; ONNX
// gives such a node no valid output shape (onnxruntime refuses it too).
void check_window_fits(const InferContext& ctx, const WindowAttrs& a, const Shape& x, int64_t i) {
  int64_t sp = a.spatial();
  int64_t span = a.dilations[i] * (a.kernel_shape[i] - 1) + 1;
  int64_t padded = x[2 + i] + a.pads[i] + a.pads[i + sp];
  if (span > padded)
    ctx.fail("the window spans " + std::to_string(span) + " positions (kernel " + std::to_string(a.kernel_shape[i]) +
             ", dilation " + std::to_string(a.dilations[i]) + ") but spatial axis " + std::to_string(i) +
             " of the input " + shape_str(x) + " is only " + std::to_string(padded) + " long with its pads");
}

std::shared_ptr<const OpAttrs> parse_conv(const ParseContext& ctx) {
  auto a = std::make_shared<ConvAttrs>();
  parse_window(ctx, *a);
  a->group = ctx.get_int("group", 1);
  if (a->group <= 0) ctx.invalid("group must be positive");
  if (ctx.node().op == "ConvTranspose") {
    a->output_padding = ctx.get_ints("output_padding");
    a->output_shape = ctx.get_ints("output_shape");
  }
  return a;
}

void infer_conv(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.expect_dtype(1, {DType::kFloat32});
  ctx.set_output(0, DType::kFloat32, infer_conv_geometry(ctx, true));
}

void infer_conv_transpose(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.expect_dtype(1, {DType::kFloat32});
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  if (x.size() < 3 || w.size() != x.size())
    ctx.fail("input " + shape_str(x) + " and weights " + shape_str(w) + " must both have rank 3 or more");
  int64_t sp = static_cast<int64_t>(x.size()) - 2;
  if (sp > 3)
    ctx.unsupported("only 1-D, 2-D and 3-D convolutions are supported, this one has " + std::to_string(sp) +
                    " spatial axes");
  auto a = std::make_shared<ConvAttrs>(ctx.attrs<ConvAttrs>());
  Shape ks(w.begin() + 2, w.end());
  if (a->kernel_shape.empty()) a->kernel_shape = ks;
  if (a->kernel_shape != ks) ctx.fail("kernel_shape does not match the weights " + shape_str(w));
  if (x[1] != w[0])
    ctx.fail("input has " + std::to_string(x[1]) + " channels but weights " + shape_str(w) + " expect " +
             std::to_string(w[0]));
  if (a->strides.empty()) a->strides.assign(sp, 1);
  if (a->dilations.empty()) a->dilations.assign(sp, 1);
  if (a->pads.empty()) a->pads.assign(2 * sp, 0);
  if (a->output_padding.empty()) a->output_padding.assign(sp, 0);
  if (static_cast<int64_t>(a->strides.size()) != sp || static_cast<int64_t>(a->dilations.size()) != sp ||
      static_cast<int64_t>(a->pads.size()) != 2 * sp || static_cast<int64_t>(a->output_padding.size()) != sp)
    ctx.fail("strides, dilations, pads and output_padding must match the spatial rank");
  int64_t m = w[1] * a->group;
  if (ctx.has_input(2) && ctx.shape(2) != Shape{m}) ctx.fail("bias must have shape " + std::to_string(m));
  Shape y = {x[0], m};
  std::vector<int64_t> target = a->output_shape;
  if (target.size() == static_cast<size_t>(sp + 2)) target.erase(target.begin(), target.begin() + 2);
  if (!target.empty() && static_cast<int64_t>(target.size()) != sp)
    ctx.fail("output_shape must have one entry per spatial axis");
  bool same = a->auto_pad == AutoPad::kSameUpper || a->auto_pad == AutoPad::kSameLower;
  if (target.empty() && same)
    for (int64_t i = 0; i < sp; ++i) target.push_back(x[2 + i] * a->strides[i]);
  if (a->auto_pad == AutoPad::kValid) a->pads.assign(2 * sp, 0);
  for (int64_t i = 0; i < sp; ++i) {
    int64_t full =
        a->strides[i] * (x[2 + i] - 1) + a->output_padding[i] + (a->kernel_shape[i] - 1) * a->dilations[i] + 1;
    if (!target.empty()) {
      // ONNX's formula, whose halving rounds down: a target longer than
      // the full output (a negative total) makes negative pads, and the
      // positions they add (at the far end, or with SAME_UPPER the near end)
      // hold only the bias.
      int64_t total = full - target[i];
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
      bool upper = a->auto_pad == AutoPad::kSameUpper;
      a->pads[i] = upper ? half : total - half;
      a->pads[i + sp] = total - a->pads[i];
    }
    y.push_back(full - a->pads[i] - a->pads[i + sp]);
  }
  a->auto_pad = AutoPad::kNotSet;
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, y);
}

std::shared_ptr<const OpAttrs> parse_pool(const ParseContext& ctx) {
  auto a = std::make_shared<PoolAttrs>();
  parse_window(ctx, *a);
  if (a->kernel_shape.empty()) ctx.invalid("kernel_shape is required");
  a->kind = ctx.node().op == "MaxPool" ? PoolKind::kMax : PoolKind::kAverage;
  a->ceil_mode = ctx.get_int("ceil_mode", 0) != 0;
  a->count_include_pad = ctx.get_int("count_include_pad", 0) != 0;
  if (ctx.get_int("storage_order", 0) != 0) ctx.unsupported("storage_order=1 (column-major indices) is not supported");
  if (a->kind == PoolKind::kMax && ctx.node().outputs.size() > 1 && ctx.node().outputs[1] >= 0)
    ctx.unsupported("the Indices output of MaxPool is not supported");
  if (a->kind == PoolKind::kAverage && !a->dilations.empty()) {
    for (int64_t d : a->dilations)
      if (d != 1 && ctx.opset() < 19) ctx.invalid("AveragePool has no dilations before opset 19");
  }
  return a;
}

// Resolves a pool's window against its input `x` (N, C, spatial...) and
// returns the output shape.
Shape pool_output(const InferContext& ctx, WindowAttrs& a, const Shape& x, bool ceil_mode) {
  int64_t sp = static_cast<int64_t>(x.size()) - 2;
  resolve_window(ctx, a, x, sp);
  Shape y = {x[0], x[1]};
  for (int64_t i = 0; i < sp; ++i) {
    if (a.pads[i] >= a.kernel_shape[i] * a.dilations[i] || a.pads[i + sp] >= a.kernel_shape[i] * a.dilations[i])
      ctx.fail("pads must be smaller than the pooling window");
    y.push_back(window_out_size(x[2 + i], a.kernel_shape[i], a.strides[i], a.dilations[i], a.pads[i], a.pads[i + sp],
                                ceil_mode));
    check_window_fits(ctx, a, x, i);
  }
  return y;
}

void infer_pool(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  const Shape& x = ctx.shape(0);
  if (x.size() < 3) ctx.fail("input must have rank 3 or more, got " + shape_str(x));
  int64_t sp = static_cast<int64_t>(x.size()) - 2;
  if (sp > 3)
    ctx.unsupported("only 1-D, 2-D and 3-D pooling is supported, this one has " + std::to_string(sp) + " spatial axes");
  auto a = std::make_shared<PoolAttrs>(ctx.attrs<PoolAttrs>());
  Shape y = pool_output(ctx, *a, x, a->ceil_mode);
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, y);
}

std::shared_ptr<const OpAttrs> parse_lppool(const ParseContext& ctx) {
  auto a = std::make_shared<LpPoolAttrs>();
  parse_window(ctx, *a);
  if (a->kernel_shape.empty()) ctx.invalid("kernel_shape is required");
  // Version 1 has a float p; from version 2 it is an int.
  if (ctx.opset() < 2) {
    a->p = ctx.get_float("p", 2.0f);
    if (!(a->p > 0.0f) || !std::isfinite(a->p)) ctx.invalid("p must be a positive number");
  } else {
    int64_t p = ctx.get_int("p", 2);
    if (p <= 0) ctx.invalid("p must be positive, got " + std::to_string(p));
    a->p = static_cast<float>(p);
  }
  a->ceil_mode = ctx.get_int("ceil_mode", 0) != 0;
  if (ctx.opset() < 18) {
    if (a->ceil_mode) ctx.invalid("LpPool has no ceil_mode before opset 18");
    for (int64_t d : a->dilations)
      if (d != 1) ctx.invalid("LpPool has no dilations before opset 18");
  }
  return a;
}

void infer_lppool(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  const Shape& x = ctx.shape(0);
  if (x.size() < 3 || x.size() > 5)
    ctx.unsupported("only 1-D, 2-D and 3-D LpPool is supported (an input of rank 3 to 5), the input is " +
                    shape_str(x));
  auto a = std::make_shared<LpPoolAttrs>(ctx.attrs<LpPoolAttrs>());
  Shape y = pool_output(ctx, *a, x, a->ceil_mode);
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, y);
}

void infer_global_pool(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  Shape y = ctx.shape(0);
  if (y.size() < 3) ctx.fail("input must have rank 3 or more, got " + shape_str(y));
  for (size_t i = 2; i < y.size(); ++i) y[i] = 1;
  ctx.set_output(0, DType::kFloat32, y);
}

std::shared_ptr<const OpAttrs> parse_lrn(const ParseContext& ctx) {
  auto a = std::make_shared<LrnAttrs>();
  a->alpha = ctx.get_float("alpha", 1e-4f);
  a->beta = ctx.get_float("beta", 0.75f);
  a->bias = ctx.get_float("bias", 1.0f);
  a->size = ctx.get_int("size", 0);
  if (a->size <= 0) ctx.invalid("size is required and must be positive");
  return a;
}

void infer_same_float(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  if (ctx.rank(0) < 2) ctx.fail("input must have rank 2 or more");
  ctx.set_output(0, DType::kFloat32, ctx.shape(0));
}

// ---- How the tuner names a convolution (OpSchema::tuning_problem, tuning_summary) ----

bool conv_well_formed(const Graph& g, const Node& n) {
  return n.parsed && n.inputs.size() >= 2 && n.inputs[0] >= 0 && n.inputs[1] >= 0 &&
         g.values[n.inputs[0]].shape.size() >= 3 &&
         g.values[n.inputs[1]].shape.size() == g.values[n.inputs[0]].shape.size();
}

std::string join_ints(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

bool all_one(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
}

// "2" when every axis has the same value, else "2x1".
std::string compact(const std::vector<int64_t>& v) {
  bool same = std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; });
  return same && !v.empty() ? std::to_string(v[0]) : join_ints(v, "x");
}

// Everything the kernels' speed depends on: the algorithm cache's key.
std::string conv_tuning_problem(const Graph& g, const Node& n) {
  if (!conv_well_formed(g, n)) return {};
  const Shape& x = g.values[n.inputs[0]].shape;
  const Shape& w = g.values[n.inputs[1]].shape;
  const auto& a = n.attrs_as<ConvAttrs>();
  static const char* kAxes3[] = {"D", "H", "W"};
  size_t sp = x.size() - 2;
  std::ostringstream os;
  os << "Conv N=" << x[0] << " C=" << x[1];
  for (size_t i = 0; i < sp; ++i)
    os << " " << (sp <= 3 ? kAxes3[3 - sp + i] : ("S" + std::to_string(i)).c_str()) << "=" << x[2 + i];
  os << " K=" << w[0] << " kernel=" << join_ints(std::vector<int64_t>(w.begin() + 2, w.end()), "x")
     << " pads=" << join_ints(a.pads, ",") << " strides=" << join_ints(a.strides, ",")
     << " dilations=" << join_ints(a.dilations, ",") << " groups=" << a.group;
  if (!a.act.none()) {
    os << " act=" << a.act.name();
    if (a.act.kind != ActKind::kRelu) os << "(" << a.act.alpha << "," << a.act.beta << ")";
  }
  if (n.input(3) >= 0) os << " residual";
  // Dequantized 8-bit weights: the int8 convolution is a candidate.
  if (g.values[n.inputs[1]].quant_scales) os << " w=int8";
  // Blocked activations run other kernels than plain ones.
  if (int b = g.values[n.outputs[0]].block) os << " layout=nchw" << b << "c";
  if (int b = g.values[n.inputs[0]].block; b != g.values[n.outputs[0]].block)
    os << " in=" << (b ? "nchw" + std::to_string(b) + "c" : std::string("nchw"));
  return os.str();
}

// "Conv 64->128 3x3 s2": for the tuning report.
std::string conv_tuning_summary(const Graph& g, const Node& n) {
  if (!conv_well_formed(g, n)) return {};
  const Shape& x = g.values[n.inputs[0]].shape;
  const Shape& w = g.values[n.inputs[1]].shape;
  const auto& a = n.attrs_as<ConvAttrs>();
  std::string s = n.op + " " + std::to_string(x[1]) + "->" + std::to_string(w[0]) + " " +
                  join_ints(std::vector<int64_t>(w.begin() + 2, w.end()), "x");
  if (!all_one(a.strides)) s += " s" + compact(a.strides);
  if (!all_one(a.dilations)) s += " d" + compact(a.dilations);
  if (a.group > 1) s += " g" + std::to_string(a.group);
  return s;
}

}  // namespace

Shape infer_conv_geometry(InferContext& ctx, bool bias_input) {
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  if (x.size() < 3) ctx.fail("input must have rank 3 or more (N, C, spatial...), got " + shape_str(x));
  if (w.size() != x.size())
    ctx.fail("weights " + shape_str(w) + " and input " + shape_str(x) + " must have the same rank");
  int64_t sp = static_cast<int64_t>(x.size()) - 2;
  if (sp > 3)
    ctx.unsupported("only 1-D, 2-D and 3-D convolutions are supported, this one has " + std::to_string(sp) +
                    " spatial axes");
  auto a = std::make_shared<ConvAttrs>(ctx.attrs<ConvAttrs>());
  Shape ks(w.begin() + 2, w.end());
  if (a->kernel_shape.empty()) a->kernel_shape = ks;
  if (a->kernel_shape != ks)
    ctx.fail("kernel_shape " + shape_str(a->kernel_shape) + " does not match the weights " + shape_str(w));
  if (x[1] != w[1] * a->group)
    ctx.fail("input has " + std::to_string(x[1]) + " channels but weights " + shape_str(w) + " with group " +
             std::to_string(a->group) + " expect " + std::to_string(w[1] * a->group));
  if (w[0] % a->group != 0) ctx.fail("output channels must be divisible by group");
  if (bias_input && ctx.has_input(2) && ctx.shape(2) != Shape{w[0]})
    ctx.fail("bias " + shape_str(ctx.shape(2)) + " must have shape " + std::to_string(w[0]));
  resolve_window(ctx, *a, x, sp);
  Shape y = {x[0], w[0]};
  for (int64_t i = 0; i < sp; ++i) {
    y.push_back(window_out_size(x[2 + i], a->kernel_shape[i], a->strides[i], a->dilations[i], a->pads[i],
                                a->pads[i + sp], false));
    check_window_fits(ctx, *a, x, i);
  }
  ctx.set_attrs(a);
  return y;
}

void add_conv_schemas(std::vector<OpSchema>& out) {
  out.push_back({.op = "Conv",
                 .min_inputs = 2,
                 .max_inputs = 3,
                 .parse = parse_conv,
                 .infer = infer_conv,
                 .semantics = "opset 11 (same since opset 1); 1-D to 3-D",
                 .tuning_problem = conv_tuning_problem,
                 .tuning_summary = conv_tuning_summary});
  out.push_back({.op = "ConvTranspose",
                 .min_inputs = 2,
                 .max_inputs = 3,
                 .parse = parse_conv,
                 .infer = infer_conv_transpose,
                 .semantics = "opset 11 (same since opset 1); 1-D to 3-D"});
}

void add_pool_schemas(std::vector<OpSchema>& out) {
  out.push_back({.op = "MaxPool",
                 .min_outputs = 1,
                 .max_outputs = 2,
                 .parse = parse_pool,
                 .infer = infer_pool,
                 .semantics = "opset 12 (dilations and ceil_mode from opset 10); 1-D to 3-D"});
  out.push_back({.op = "AveragePool",
                 .parse = parse_pool,
                 .infer = infer_pool,
                 .semantics = "opset 19 (dilations from 19, ceil_mode from 10); 1-D to 3-D"});
  out.push_back({.op = "LpPool",
                 .parse = parse_lppool,
                 .infer = infer_lppool,
                 .semantics = "opset 18 (dilations and ceil_mode from 18, p a float in version 1); 1-D to 3-D"});
  out.push_back({.op = "GlobalAveragePool", .infer = infer_global_pool});
  out.push_back({.op = "GlobalMaxPool", .infer = infer_global_pool});
  out.push_back({.op = "LRN", .parse = parse_lrn, .infer = infer_same_float});
}

}  // namespace minirt
