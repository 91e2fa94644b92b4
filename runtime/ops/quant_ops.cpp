// Schemas of the quantization ops. QuantizeLinear and DequantizeLinear
// (versions 10 to 28: per tensor, per axis and blocked; int8 and uint8, and
// int32 into DequantizeLinear), DynamicQuantizeLinear, and the QOperator
// ops QLinearConv and QLinearMatMul, which the load-time pass
// lower_qoperator_ops (runtime/passes/quant.cpp) rewrites into
// DequantizeLinear -> Conv/MatMul -> QuantizeLinear before anything else
// reads the graph. Scales known at plan time must be positive and finite;
// zero points must have the quantized tensor's type and the scale's shape.
#include "runtime/op_registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/families.h"
#include "runtime/ops/quant.h"

#include <cmath>
#include <sstream>

namespace minirt {

namespace {

std::shared_ptr<const OpAttrs> parse_quant(const ParseContext& ctx) {
  auto a = std::make_shared<QuantAttrs>();
  a->axis = ctx.get_int("axis", 1);
  a->block_size = ctx.get_int("block_size", 0);
  if (a->block_size < 0)
    ctx.invalid("block_size must be 0 (not blocked) or positive, it is " + std::to_string(a->block_size));
  a->output_dtype = static_cast<DType>(ctx.get_int("output_dtype", 0));
  // saturate (version 19+) applies to float8 outputs only; precision (23+)
  // names the type of the division: float32 is what minirt computes in.
  const int64_t precision = ctx.get_int("precision", 0);
  if (precision != 0 && precision != static_cast<int64_t>(DType::kFloat32))
    ctx.unsupported("precision " + std::to_string(precision) + " is not supported; minirt divides in float32");
  return a;
}

// A quantized element type minirt computes with; the others by name.
bool quantized_type(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
std::string refuse_quantized(DType t) {
  return std::string(dtype_name(t)) +
         " quantization is not supported: minirt runs int8 and uint8 (int16, uint16, int4, float8 are refused)";
}

// Checks the scale (input 1) and zero point (input 2) against x (input 0)
// and the attributes; returns the completed attributes.
std::shared_ptr<QuantAttrs> check_scale(InferContext& ctx, const char* scale_name, const char* zp_name) {
  auto a = std::make_shared<QuantAttrs>(ctx.attrs<QuantAttrs>());
  const Shape& x = ctx.shape(0);
  const Shape& s = ctx.shape(1);
  ctx.expect_dtype(1, {DType::kFloat32});
  const int64_t r = static_cast<int64_t>(x.size());
  if (a->block_size > 0) {
    a->granularity = QuantGranularity::kBlocked;
    if (r == 0)
      ctx.fail("blocked quantization (block_size " + std::to_string(a->block_size) +
               ") needs an input of rank 1 or more");
    if (a->axis < -r || a->axis >= r)
      ctx.fail("axis " + std::to_string(a->axis) + " is out of range for an input of rank " + std::to_string(r));
    a->axis = a->axis < 0 ? a->axis + r : a->axis;
    Shape want = x;
    want[a->axis] = (x[a->axis] + a->block_size - 1) / a->block_size;
    if (s != want)
      ctx.fail(std::string(scale_name) + " has shape " + shape_str(s) + "; blocked quantization of an input " +
               shape_str(x) + " along axis " + std::to_string(a->axis) + " in blocks of " +
               std::to_string(a->block_size) + " needs " + shape_str(want));
  } else if (shape_numel(s) == 1 && s.size() <= 1) {
    a->granularity = QuantGranularity::kTensor;
  } else {
    a->granularity = QuantGranularity::kAxis;
    if (s.size() != 1)
      ctx.fail(std::string(scale_name) + " has shape " + shape_str(s) +
               "; a scale is a scalar (per tensor), a 1-D tensor (per axis) or, with block_size, blocked");
    if (a->axis < -r || a->axis >= r)
      ctx.fail("axis " + std::to_string(a->axis) + " is out of range for an input of rank " + std::to_string(r));
    a->axis = a->axis < 0 ? a->axis + r : a->axis;
    if (s[0] != x[a->axis])
      ctx.fail(std::string(scale_name) + " has " + std::to_string(s[0]) + " values; per-axis quantization along axis " +
               std::to_string(a->axis) + " of " + shape_str(x) + " needs " + std::to_string(x[a->axis]));
  }
  if (const Tensor* t = ctx.constant(1)) {
    const float* v = t->data<float>();
    for (int64_t i = 0; i < t->numel(); ++i)
      if (!(std::isfinite(v[i]) && v[i] > 0)) {
        std::ostringstream os;
        os << scale_name << " '" << ctx.graph().values[ctx.node().inputs[1]].name << "' holds " << v[i];
        if (t->numel() > 1) os << " at index " << i;
        os << "; a quantization scale must be a positive finite number";
        ctx.fail(os.str());
      }
  }
  if (ctx.has_input(2)) {
    const Shape& z = ctx.shape(2);
    if (z != s && !(shape_numel(z) == 1 && shape_numel(s) == 1 && z.size() <= 1 && s.size() <= 1))
      ctx.fail(std::string(zp_name) + " has shape " + shape_str(z) + " but " + scale_name + " has " + shape_str(s) +
               "; the two must have one shape");
  }
  return a;
}

void infer_quantize(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  auto a = check_scale(ctx, "y_scale", "y_zero_point");
  DType out = DType::kUInt8;
  if (ctx.has_input(2)) {
    out = ctx.dtype(2);
    if (a->output_dtype != DType::kUndefined && a->output_dtype != out)
      ctx.fail(std::string("output_dtype is ") + dtype_name(a->output_dtype) + " but y_zero_point is " +
               dtype_name(out) + "; the two must agree");
  } else if (a->output_dtype != DType::kUndefined) {
    out = a->output_dtype;
  }
  if (!quantized_type(out)) ctx.unsupported(refuse_quantized(out));
  ctx.set_attrs(a);
  ctx.set_output(0, out, ctx.shape(0));
}

void infer_dequantize(InferContext& ctx) {
  const DType t = ctx.dtype(0);
  if (!quantized_type(t) && t != DType::kInt32) ctx.unsupported(refuse_quantized(t));
  auto a = check_scale(ctx, "x_scale", "x_zero_point");
  if (ctx.has_input(2) && ctx.dtype(2) != t)
    ctx.fail(std::string("x_zero_point is ") + dtype_name(ctx.dtype(2)) + " but x is " + dtype_name(t) +
             "; a zero point has the quantized tensor's type");
  if (a->output_dtype != DType::kUndefined && a->output_dtype != DType::kFloat32)
    ctx.unsupported(std::string("output_dtype ") + dtype_name(a->output_dtype) +
                    " is not supported; minirt dequantizes to float32");
  ctx.set_attrs(a);
  ctx.set_output(0, DType::kFloat32, ctx.shape(0));
}

void infer_dynamic_quantize(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kFloat32});
  ctx.set_output(0, DType::kUInt8, ctx.shape(0));
  ctx.set_output(1, DType::kFloat32, {});
  ctx.set_output(2, DType::kUInt8, {});
}

// A zero point of MatMulInteger/ConvInteger (input i, for operand j): the
// operand's type, and a scalar or a 1-D tensor of `per` values.
void check_integer_zero_point(InferContext& ctx, size_t i, size_t j, int64_t per, const char* what, const char* name) {
  if (!ctx.has_input(i)) return;
  if (ctx.dtype(i) != ctx.dtype(j))
    ctx.fail(std::string(name) + " is " + dtype_name(ctx.dtype(i)) + " but its operand is " + dtype_name(ctx.dtype(j)) +
             "; a zero point has its operand's type");
  const Shape& z = ctx.shape(i);
  if (shape_numel(z) == 1 && z.size() <= 1) return;
  if (z.size() == 1 && z[0] == per) return;
  ctx.unsupported(std::string(name) + " has shape " + shape_str(z) + "; minirt takes a scalar or one value per " +
                  what + " (" + std::to_string(per) + ")");
}

// MatMulInteger: int8/uint8 A and B, int32 products with MatMul's broadcasting.
void infer_matmul_integer(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kInt8, DType::kUInt8});
  ctx.expect_dtype(1, {DType::kInt8, DType::kUInt8});
  Shape a = ctx.shape(0), b = ctx.shape(1);
  if (a.empty() || b.empty()) ctx.fail("inputs must have rank 1 or more");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    ctx.fail("A " + shape_str(ctx.shape(0)) + " and B " + shape_str(ctx.shape(1)) + " do not agree on K");
  check_integer_zero_point(ctx, 2, 0, a[a.size() - 2], "row of A", "a_zero_point");
  check_integer_zero_point(ctx, 3, 1, b.back(), "column of B", "b_zero_point");
  Shape y = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), ctx);
  if (!a1) y.push_back(a[a.size() - 2]);
  if (!b1) y.push_back(b.back());
  ctx.set_output(0, DType::kInt32, y);
}

// ConvInteger: Conv's geometry on int8/uint8 data, int32 sums, no bias.
void infer_conv_integer(InferContext& ctx) {
  ctx.expect_dtype(0, {DType::kInt8, DType::kUInt8});
  ctx.expect_dtype(1, {DType::kInt8, DType::kUInt8});
  Shape y = infer_conv_geometry(ctx, false);
  check_integer_zero_point(ctx, 2, 0, 1, "tensor", "x_zero_point");
  check_integer_zero_point(ctx, 3, 1, ctx.shape(1)[0], "output channel", "w_zero_point");
  ctx.set_output(0, DType::kInt32, y);
}

// A contrib op's attributes, checked by the float op it becomes (so a bad
// one fails at load naming this node); channels_last layouts are refused.
std::function<std::shared_ptr<const OpAttrs>(const ParseContext&)> parse_as(const char* float_op) {
  return [float_op](const ParseContext& ctx) -> std::shared_ptr<const OpAttrs> {
    if (ctx.get_int("channels_last", 0) != 0)
      ctx.unsupported("channels_last=1 (NHWC data) is not supported; minirt's quantized ops take NCHW");
    if (std::string(float_op) == "Softmax" && !ctx.has("opset"))
      ctx.invalid("attribute 'opset' (the Softmax version whose semantics apply) is required");
    const OpSchema* s = find_schema(float_op);
    return s->parse ? s->parse(ctx) : nullptr;
  };
}

// The QOperator ops never reach inference: the load-time lowering replaced them.
void infer_lowered(InferContext& ctx) {
  ctx.fail("internal: " + ctx.node().op + " should have been rewritten at load (runtime/passes/quant.cpp)");
}

}  // namespace

void add_quant_schemas(std::vector<OpSchema>& out) {
  out.push_back({.op = "QuantizeLinear",
                 .min_inputs = 2,
                 .max_inputs = 3,
                 .parse = parse_quant,
                 .infer = infer_quantize,
                 .semantics = "float32 to int8/uint8, per tensor, per axis or blocked; round half to even, saturate"});
  out.push_back({.op = "DequantizeLinear",
                 .min_inputs = 2,
                 .max_inputs = 3,
                 .parse = parse_quant,
                 .infer = infer_dequantize,
                 .semantics = "int8/uint8/int32 to float32, per tensor, per axis or blocked"});
  out.push_back({.op = "DynamicQuantizeLinear",
                 .min_inputs = 1,
                 .max_inputs = 1,
                 .min_outputs = 3,
                 .max_outputs = 3,
                 .infer = infer_dynamic_quantize,
                 .semantics = "float32 to uint8 with the scale and zero point of the input's range (including 0)"});
  out.push_back({.op = "MatMulInteger",
                 .min_inputs = 2,
                 .max_inputs = 4,
                 .infer = infer_matmul_integer,
                 .semantics = "int8/uint8 to int32; zero points per tensor, per row of A, per column of B"});
  out.push_back({.op = "ConvInteger",
                 .min_inputs = 2,
                 .max_inputs = 4,
                 .parse = [](const ParseContext& ctx) { return find_schema("Conv")->parse(ctx); },
                 .infer = infer_conv_integer,
                 .semantics = "int8/uint8 to int32; w_zero_point per tensor or per output channel"});
  out.push_back({.op = "QLinearConv",
                 .min_inputs = 8,
                 .max_inputs = 9,
                 .parse = [](const ParseContext& ctx) { return find_schema("Conv")->parse(ctx); },
                 .infer = infer_lowered,
                 .semantics = "int8/uint8; runs as DequantizeLinear -> Conv -> QuantizeLinear",
                 .lowered_at_load = true});
  out.push_back({.op = "QLinearMatMul",
                 .min_inputs = 8,
                 .max_inputs = 8,
                 .infer = infer_lowered,
                 .semantics = "int8/uint8, per-row a and per-column b scales; runs as DequantizeLinear -> MatMul -> "
                              "QuantizeLinear",
                 .lowered_at_load = true});

  // onnxruntime's com.microsoft quantized ops (its contrib-op semantics),
  // rewritten at load like QLinearConv: DequantizeLinear of each quantized
  // input, the float op, QuantizeLinear with the output's scale and zero point.
  struct Contrib {
    const char* op;
    const char* float_op;
    int min_inputs, max_inputs;
    const char* semantics;
  };
  const Contrib contrib[] = {
      {"QLinearAdd", "Add", 7, 8, "A + B (broadcasting)"},
      {"QLinearMul", "Mul", 7, 8, "A * B (broadcasting)"},
      {"QLinearGlobalAveragePool", "GlobalAveragePool", 4, 5, "NCHW (channels_last=0)"},
      {"QLinearAveragePool", "AveragePool", 4, 5, "AveragePool's attributes, NCHW (channels_last=0)"},
      {"QLinearSigmoid", "Sigmoid", 4, 5, ""},
      {"QLinearLeakyRelu", "LeakyRelu", 4, 5, "alpha"},
      {"QLinearSoftmax", "Softmax", 4, 5, "axis, with the Softmax semantics of attribute opset"},
      {"QLinearConcat", "Concat", 5, 3 * 64 + 2,
       "axis; inputs y_scale, y_zero_point, then (x, scale, zero point) each"},
      {"QGemm", "Gemm", 6, 9,
       "alpha, transA, transB; int32 C with scale alpha * a_scale * b_scale; float output "
       "without y_scale"},
  };
  for (const Contrib& c : contrib)
    out.push_back({.op = c.op,
                   .min_inputs = c.min_inputs,
                   .max_inputs = c.max_inputs,
                   .parse = parse_as(c.float_op),
                   .infer = infer_lowered,
                   .semantics = std::string("com.microsoft domain; int8/uint8; runs as DequantizeLinear -> ") +
                                c.float_op + " -> QuantizeLinear" + (*c.semantics ? "; " : "") + c.semantics,
                   .lowered_at_load = true,
                   .domain = "com.microsoft"});
}

}  // namespace minirt
