// The quantization ops: values the ONNX spec's arithmetic gives by hand
// (ties to even, saturation, per-axis and blocked scales), the QOperator
// rewrite at load, and every kind of bad quantization parameter failing
// with a sentence naming the node (the op cases compare with onnxruntime).
#include <minirt/minirt.h>

#include "load_error.h"
#include "loaders/onnx/onnx_loader.h"
#include "model_builder.h"
#include "kernels/cpu/conv_int8.h"
#include "kernels/cpu/gemm_int8.h"
#include "runtime/passes/passes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace minirt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::load_error;
using ::testing::MatchesRegex;
using testing::ModelBuilder;
using ::testing::Not;

template <typename T>
Tensor tensor_of(DType dt, Shape shape, std::initializer_list<T> v) {
  Tensor t = Tensor::zeros(dt, std::move(shape));
  size_t i = 0;
  for (T x : v) t.data<T>()[i++] = x;
  return t;
}
Tensor floats(Shape shape, std::initializer_list<float> v) { return tensor_of<float>(DType::kFloat32, shape, v); }

std::vector<Tensor> run(const ModelBuilder& m, const std::string& name, std::vector<std::pair<std::string, Tensor>> in,
                        int threads = 1) {
  const std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), name);
  Session s(model, {.device = Device::kCpu, .threads = threads});
  return s.run(in);
}

// Each output of the fused run on the grid of `step`, within `tol` of the
// node-by-node float run, and at least `percent` of them equal.
void expect_on_grid_and_close(const Tensor& fused, const Tensor& apart, float step, float tol, int percent) {
  ASSERT_EQ(fused.shape(), apart.shape());
  int64_t same = 0;
  for (int64_t i = 0; i < fused.numel(); ++i) {
    const float u = fused.data<float>()[i], v = apart.data<float>()[i];
    const float k = u / step;
    ASSERT_NEAR(k, std::nearbyint(k), 1e-3) << i;
    ASSERT_NEAR(u, v, tol) << i;
    same += u == v;
  }
  EXPECT_GE(same * 100, fused.numel() * percent) << same << " of " << fused.numel() << " equal";
}

// A QuantizeLinear -> DequantizeLinear pair from value `in` to value `out`.
void qdq(ModelBuilder& m, const std::string& in, const std::string& scale, const std::string& zero,
         const std::string& out) {
  m.node("QuantizeLinear", {in, scale, zero}, {out + "_q"}, out + "_qn");
  m.node("DequantizeLinear", {out + "_q", scale, zero}, {out}, out + "_dqn");
}

// y = saturate(round_half_even(x / scale) + zero_point), worked by hand.
TEST(Quant, QuantizeRoundsHalfToEvenAndSaturates) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {10});
  m.initializer("s", floats({}, {0.5f}));
  m.initializer("z", tensor_of<int8_t>(DType::kInt8, {}, {-1}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"y"}, "q0");
  m.output("y", DType::kInt8);
  // x / 0.5: 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000, -1000, 63.25, 0
  Tensor x = floats({10}, {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, -1.25f, 500.0f, -500.0f, 31.625f, 0.0f});
  for (int threads : {1, 3}) {
    auto y = run(m, "q.onnx", {{"x", x}}, threads);
    ASSERT_EQ(y[0].dtype(), DType::kInt8);
    const int8_t want[10] = {-1, 1, 1, -1, -3, -3, 127, -128, 62, -1};
    for (int i = 0; i < 10; ++i) EXPECT_EQ(y[0].data<int8_t>()[i], want[i]) << "element " << i;
  }
}

// Per axis: channel c uses scale[c] and zero_point[c]; DequantizeLinear undoes it.
TEST(Quant, PerAxisScalesAndTheRoundTrip) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 3});
  m.initializer("s", floats({2}, {0.1f, 2.0f}));
  m.initializer("z", tensor_of<uint8_t>(DType::kUInt8, {2}, {10, 200}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"q"}, "q0").i("axis", 1);
  m.node("DequantizeLinear", {"q", "s", "z"}, {"y"}, "dq0").i("axis", -2);
  m.output("q", DType::kUInt8);
  m.output("y");
  Tensor x = floats({1, 2, 3}, {0.3f, -2.0f, 30.0f, 5.0f, -1.0f, 200.0f});
  auto out = run(m, "axis.onnx", {{"x", x}});
  // channel 0: 0.3/0.1 = 3 -> 13; -20 -> -10 -> 0; 300 -> 255. channel 1: 2.5 -> 2 -> 202; -0.5 -> 0 -> 200; 100 ->
  // 255.
  const uint8_t want_q[6] = {13, 0, 255, 202, 200, 255};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].data<uint8_t>()[i], want_q[i]) << "element " << i;
  const float want_y[6] = {(13 - 10) * 0.1f, (0 - 10) * 0.1f, (255 - 10) * 0.1f, 4.0f, 0.0f, 110.0f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[1].data<float>()[i], want_y[i]) << "element " << i;
}

// Blocked (opset 21): along axis 1 in blocks of 2, one scale per (row, block).
TEST(Quant, BlockedScales) {
  ModelBuilder m(21, 10);
  m.input("x", DType::kInt8, {2, 3});
  m.initializer("s", floats({2, 2}, {1.0f, 10.0f, 0.5f, 100.0f}));
  m.node("DequantizeLinear", {"x", "s"}, {"y"}, "dq0").i("axis", 1).i("block_size", 2);
  m.output("y");
  Tensor x = tensor_of<int8_t>(DType::kInt8, {2, 3}, {1, 2, 3, -4, 5, 6});
  auto y = run(m, "blocked.onnx", {{"x", x}});
  const float want[6] = {1, 2, 30, -2, 2.5f, 600};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[0].data<float>()[i], want[i]) << "element " << i;
}

// QLinearConv becomes DequantizeLinear -> Conv (the node's name) -> QuantizeLinear at load.
TEST(Quant, QLinearConvIsRewrittenIntoTheQdqForm) {
  ModelBuilder m(13);
  m.input("x", DType::kUInt8, {1, 2, 4, 4});
  m.initializer("xs", floats({}, {0.1f}));
  m.initializer("xz", tensor_of<uint8_t>(DType::kUInt8, {}, {128}));
  Tensor w = Tensor::zeros(DType::kInt8, {3, 2, 1, 1});
  m.initializer("w", w);
  m.initializer("ws", floats({3}, {0.5f, 0.25f, 0.125f}));
  m.initializer("wz", Tensor::zeros(DType::kInt8, {3}));
  m.initializer("ys", floats({}, {0.2f}));
  m.initializer("yz", tensor_of<uint8_t>(DType::kUInt8, {}, {7}));
  m.initializer("b", tensor_of<int32_t>(DType::kInt32, {3}, {100, -100, 48}));
  m.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, "qconv");
  m.output("y", DType::kUInt8);
  const std::string bytes = m.bytes();
  Graph g = onnx::load_bytes(bytes.data(), bytes.size(), "qconv.onnx");
  EXPECT_EQ(lower_qoperator_ops(g), 1);
  std::map<std::string, int> ops;
  for (const Node& n : g.nodes)
    if (!n.dead) ++ops[n.op];
  EXPECT_EQ(ops["DequantizeLinear"], 3);  // x, w, bias
  EXPECT_EQ(ops["Conv"], 1);
  EXPECT_EQ(ops["QuantizeLinear"], 1);
  EXPECT_EQ(ops["QLinearConv"], 0);
  // With zero weights, y = saturate(round(bias * xs * ws / ys) + yz): 100*0.05/0.2 = 25 -> 32,
  // -100*0.025/0.2 = -12.5 -> -12 -> -5 -> 0, 48*0.0125/0.2 = 3 -> 10.
  auto y = run(m, "qconv.onnx", {{"x", Tensor::zeros(DType::kUInt8, {1, 2, 4, 4})}});
  ASSERT_EQ(y[0].shape(), (Shape{1, 3, 4, 4}));
  EXPECT_EQ(y[0].data<uint8_t>()[0], 32);
  EXPECT_EQ(y[0].data<uint8_t>()[16], 0);
  EXPECT_EQ(y[0].data<uint8_t>()[32], 10);
}

// A QuantizeLinear -> DequantizeLinear pair with one per-tensor scale is one
// step (ActKind::kQuantGrid), fused into the Conv before it: the values are
// those of the two ops, on the scale's grid within the 8-bit range.
TEST(Quant, QuantizePairsBecomeOneStepFusedIntoTheConv) {
  // With a Relu between (a QAT export's Conv -> Relu -> Q -> DQ) the pair's
  // low bound is raised to 0 and both fuse.
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "with Relu" : "without");
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 16, 6, 6});
    Tensor w = Tensor::zeros(DType::kFloat32, {16, 16, 3, 3});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.05f * std::cos(static_cast<float>(i) * 1.3f);
    m.initializer("w", w);
    m.initializer("s", floats({}, {0.005f}));
    m.initializer("z", tensor_of<uint8_t>(DType::kUInt8, {}, {100}));
    m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
    if (relu) m.node("Relu", {"c"}, {"r"}, "relu");
    m.node("QuantizeLinear", {relu ? "r" : "c", "s", "z"}, {"q"}, "q");
    m.node("DequantizeLinear", {"q", "s", "z"}, {"y"}, "dq");
    m.output("y");
    Tensor x = Tensor::zeros(DType::kFloat32, {1, 16, 6, 6});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data<float>()[i] = 4.0f * std::sin(static_cast<float>(i) * 0.7f);  // off the grid: few midpoints
    const std::string bytes = m.bytes();
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "pair.onnx");
    Session fused(model, {.device = Device::kCpu, .threads = 2});
    Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
    Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
    const std::string plan = fused.plan_report();
    EXPECT_THAT(plan, HasSubstr("1 quantize pairs made one step"));
    EXPECT_THAT(plan, HasSubstr(relu ? "Conv+Relu+QuantizeDequantize+QuantizeLinear"
                                     : "Conv+QuantizeDequantize+QuantizeLinear"));
    EXPECT_THAT(apart.plan_report(), AllOf(HasSubstr("QuantizeLinear"), HasSubstr("DequantizeLinear")));
    int64_t same = 0, clamped = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float u = a.data<float>()[i], v = b.data<float>()[i];
      const float k = u / 0.005f;  // on the grid, within uint8's range less the zero point
      ASSERT_NEAR(k, std::nearbyint(k), 1e-3) << i;
      ASSERT_GE(std::nearbyint(k), relu ? 0 : -100) << i;
      ASSERT_LE(std::nearbyint(k), 155) << i;
      // The two convolutions round differently; a value may sit one step off.
      ASSERT_NEAR(u, v, 0.005f * 1.001f) << i;
      same += u == v;
      clamped += std::nearbyint(k) == (relu ? 0 : -100) || std::nearbyint(k) == 155;
    }
    EXPECT_GT(same, a.numel() * 95 / 100);
    EXPECT_GT(clamped, 0) << "the case should reach the 8-bit range's ends";
  }
}

// A QDQ residual block: the convolution runs on its int8 codes where the CPU
// has AMX-INT8 (nchwc_int8), and takes the residual Add and the pair after
// it into its epilogue; the result is the node-by-node float one's, each
// value on the output's grid and at most one step off (the int8 sums are
// exact, the float ones round).
TEST(Quant, Int8ConvolutionTakesTheResidualAdd) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 32, 9, 9});
  Tensor codes = Tensor::zeros(DType::kInt8, {32, 32, 3, 3});
  for (int64_t i = 0; i < codes.numel(); ++i)
    codes.data<int8_t>()[i] = static_cast<int8_t>(std::lround(127 * std::cos(static_cast<double>(i) * 0.37)));
  Tensor ws = Tensor::zeros(DType::kFloat32, {32});
  for (int64_t i = 0; i < 32; ++i) ws.data<float>()[i] = 0.0004f * static_cast<float>(1 + i % 5);
  m.initializer("wq", codes);
  m.initializer("ws", ws);
  m.initializer("sx", floats({}, {0.02f}));
  m.initializer("zx", tensor_of<int8_t>(DType::kInt8, {}, {3}));
  m.initializer("s1", floats({}, {0.03f}));
  m.initializer("s2", floats({}, {0.05f}));
  m.initializer("z0", tensor_of<uint8_t>(DType::kUInt8, {}, {128}));
  m.node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}, "qx");
  m.node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}, "dqx");
  m.node("DequantizeLinear", {"wq", "ws"}, {"w"}, "dqw").i("axis", 0);
  m.node("Conv", {"xd", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("QuantizeLinear", {"c", "s1", "z0"}, {"cq"}, "qc");
  m.node("DequantizeLinear", {"cq", "s1", "z0"}, {"cd"}, "dqc");
  m.node("Add", {"cd", "xd"}, {"sum"}, "add");
  m.node("QuantizeLinear", {"sum", "s2", "z0"}, {"yq"}, "qy");
  m.node("DequantizeLinear", {"yq", "s2", "z0"}, {"y"}, "dqy");
  m.output("y");
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 32, 9, 9});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 2.5f * std::sin(static_cast<float>(i) * 0.7f);
  const std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "residual.onnx");
  // The rules' pick (nchwc_int8 wherever AMX-INT8 takes it), not a measurement's.
  Session fused(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});
  Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
  Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
  const std::string plan = fused.plan_report();
  if (cpu::int8_conv_isa() != cpu::Int8ConvIsa::kReference) {
    EXPECT_THAT(plan, HasSubstr("nchwc_int8"));
    EXPECT_THAT(plan, HasSubstr("1 residual Add, SiLU or activation steps fused into the step before"));
    EXPECT_THAT(plan, HasSubstr("Conv+QuantizeDequantize+QuantizeLinear+Add+QuantizeDequantize+QuantizeLinear"));
    // runmodel's precision line: the convolution in int8; the input's pair and the reorders in float.
    EXPECT_THAT(fused.int8_summary(),
                MatchesRegex("int8 \\(1 convolution, 0 products\\), [1-9] steps? in float between quantize pairs"));
  } else {
    EXPECT_EQ(fused.int8_summary(), "");
    EXPECT_THAT(plan, Not(HasSubstr("residual Add fused into int8"))) << "the Add fuses only into nchwc_int8";
  }
  expect_on_grid_and_close(a, b, 0.05f, 0.05f * 1.001f, 95);
}

// A QDQ SiLU (YOLO's and EfficientNet's activation: the convolution's pair,
// Sigmoid, its pair, Mul, the pair after) joins an int8 convolution's
// epilogue; the output is the node-by-node float one's within a step of
// its grid (the gate's and the first grid's roundings may each go the other
// way next to a midpoint), nearly always equal.
TEST(Quant, Int8ConvolutionTakesTheQuantizedSilu) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 32, 9, 9});
  Tensor codes = Tensor::zeros(DType::kInt8, {48, 32, 3, 3});
  for (int64_t i = 0; i < codes.numel(); ++i)
    codes.data<int8_t>()[i] = static_cast<int8_t>(std::lround(127 * std::sin(static_cast<double>(i) * 0.61)));
  m.initializer("wq", codes);
  m.initializer("ws", floats({}, {0.0007f}));
  m.initializer("sx", floats({}, {0.02f}));
  m.initializer("zx", tensor_of<int8_t>(DType::kInt8, {}, {0}));
  m.initializer("s1", floats({}, {0.04f}));
  m.initializer("s2", floats({}, {1.0f / 255.0f}));
  m.initializer("s3", floats({}, {0.03f}));
  m.initializer("z1", tensor_of<uint8_t>(DType::kUInt8, {}, {100}));
  m.initializer("z2", tensor_of<uint8_t>(DType::kUInt8, {}, {0}));
  m.node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}, "qx");
  m.node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}, "dqx");
  m.node("DequantizeLinear", {"wq", "ws"}, {"w"}, "dqw");
  m.node("Conv", {"xd", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("QuantizeLinear", {"c", "s1", "z1"}, {"cq"}, "qc");
  m.node("DequantizeLinear", {"cq", "s1", "z1"}, {"cd"}, "dqc");
  m.node("Sigmoid", {"cd"}, {"sg"}, "sigmoid");
  m.node("QuantizeLinear", {"sg", "s2", "z2"}, {"sq"}, "qs");
  m.node("DequantizeLinear", {"sq", "s2", "z2"}, {"sd"}, "dqs");
  m.node("Mul", {"cd", "sd"}, {"silu"}, "mul");
  m.node("QuantizeLinear", {"silu", "s3", "z1"}, {"yq"}, "qy");
  m.node("DequantizeLinear", {"yq", "s3", "z1"}, {"y"}, "dqy");
  m.output("y");
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 32, 9, 9});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 2.0f * std::cos(static_cast<float>(i) * 0.9f);
  const std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "silu.onnx");
  // The rules' pick (nchwc_int8 wherever AMX-INT8 takes it), not a measurement's.
  Session fused(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});
  Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
  Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
  const std::string plan = fused.plan_report();
  if (cpu::int8_conv_isa() != cpu::Int8ConvIsa::kReference) {
    EXPECT_THAT(plan, HasSubstr("nchwc_int8"));
    EXPECT_THAT(plan, HasSubstr("1 residual Add, SiLU or activation steps fused into the step before"));
    EXPECT_THAT(plan, HasSubstr("+Sigmoid+QuantizeDequantize+QuantizeLinear+Mul+QuantizeDequantize+QuantizeLinear"));
    EXPECT_THAT(plan, Not(HasSubstr(" Sigmoid ")));
  }
  expect_on_grid_and_close(a, b, 0.03f, 0.03f * 1.001f, 90);
}

// EfficientNet's depthwise stage in QDQ form: a depthwise convolution (float
// math, nchwc_depthwise) whose pair, Sigmoid, pair, Mul and pair after join
// its epilogue, and a squeeze-and-excitation Mul by a per-channel value whose
// pair joins the Mul. Against the node-by-node float run: every output on
// the last grid, nearly all equal, the rest within a midpoint's rounding.
TEST(Quant, DepthwiseAndItsScaleTakeTheirPairs) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 40, 12, 12});
  m.input("se", DType::kFloat32, {1, 40, 1, 1});
  Tensor codes = Tensor::zeros(DType::kInt8, {40, 1, 3, 3});
  for (int64_t i = 0; i < codes.numel(); ++i)
    codes.data<int8_t>()[i] = static_cast<int8_t>(std::lround(127 * std::sin(static_cast<double>(i) * 0.83)));
  m.initializer("wq", codes);
  m.initializer("ws", floats({}, {0.004f}));
  m.initializer("sx", floats({}, {0.02f}));
  m.initializer("zx", tensor_of<uint8_t>(DType::kUInt8, {}, {128}));
  m.initializer("s1", floats({}, {0.015f}));
  m.initializer("s2", floats({}, {1.0f / 255.0f}));
  m.initializer("s3", floats({}, {0.012f}));
  m.initializer("s4", floats({}, {0.01f}));
  m.initializer("z1", tensor_of<uint8_t>(DType::kUInt8, {}, {110}));
  m.initializer("z2", tensor_of<uint8_t>(DType::kUInt8, {}, {0}));
  qdq(m, "x", "sx", "zx", "xd");
  m.node("DequantizeLinear", {"wq", "ws"}, {"w"}, "dqw");
  m.node("Conv", {"xd", "w"}, {"c"}, "dw").ints("pads", {1, 1, 1, 1}).i("group", 40);
  qdq(m, "c", "s1", "z1", "cd");
  m.node("Sigmoid", {"cd"}, {"sg"}, "sigmoid");
  qdq(m, "sg", "s2", "z2", "sd");
  m.node("Mul", {"cd", "sd"}, {"silu"}, "mul");
  qdq(m, "silu", "s3", "z1", "ud");
  m.node("Mul", {"ud", "se"}, {"scaled"}, "scale");
  qdq(m, "scaled", "s4", "z1", "y");
  m.output("y");
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 40, 12, 12});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 2.0f * std::cos(static_cast<float>(i) * 0.9f);
  Tensor se = Tensor::zeros(DType::kFloat32, {1, 40, 1, 1});
  for (int64_t i = 0; i < se.numel(); ++i) se.data<float>()[i] = 0.2f + 0.02f * static_cast<float>(i);
  const std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "dw_silu.onnx");
  Session fused(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});
  Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
  Tensor a = fused.run({{"x", x}, {"se", se}})[0], b = apart.run({{"x", x}, {"se", se}})[0];
  const std::string plan = fused.plan_report();
  if (cpu::sgemm_isa_supported(cpu::SgemmIsa::kAvx2)) {  // the blocked layout
    EXPECT_THAT(plan, HasSubstr("2 residual Add, SiLU or activation steps fused into the step before"));
    EXPECT_THAT(plan, HasSubstr("+Sigmoid+QuantizeDequantize+QuantizeLinear+Mul+QuantizeDequantize+QuantizeLinear"));
    EXPECT_THAT(plan, HasSubstr("nchwc_depthwise"));
    EXPECT_THAT(plan, HasSubstr(" Mul+QuantizeDequantize+QuantizeLinear "));
    EXPECT_THAT(plan, Not(HasSubstr(" Sigmoid ")));
  }
  // A midpoint of the first grid rounded the other way moves the SiLU by up to 1.1 of its step, times the scale.
  expect_on_grid_and_close(a, b, 0.01f, 0.01f + 1.1f * 0.015f * 1.0f + 0.012f + 1e-5f, 95);
}

// ResNet's stem -> max pool -> first block in QDQ form: the max pool
// between two int8 convolutions moves their uint8 codes (the largest code is
// the code of the largest value), so the stem writes codes and the block
// reads them. Several windows (padding, stride, ceil mode, dilation), with
// and without the pair a QDQ model puts after the pool: on the pool's input
// grid it changes nothing and joins the pool; on another grid it stays a
// step and the pool moves floats. Each against the node-by-node float run:
// on the last grid, nearly all equal.
TEST(Quant, MaxPoolBetweenInt8ConvolutionsMovesTheirCodes) {
  struct Pool {
    int64_t k, s, p, d;
    bool ceil;
    int pair;  // after the pool: 0 none, 1 on its input's grid, 2 on another
  };
  for (const Pool& pw : {Pool{3, 2, 1, 1, false, 0}, Pool{2, 2, 0, 1, false, 1}, Pool{3, 2, 0, 1, true, 0},
                         Pool{3, 1, 2, 2, false, 1}, Pool{3, 2, 1, 1, false, 2}}) {
    SCOPED_TRACE("window " + std::to_string(pw.k) + " stride " + std::to_string(pw.s) + " pad " + std::to_string(pw.p) +
                 " dilation " + std::to_string(pw.d) + (pw.ceil ? " ceil" : "") + " pair " + std::to_string(pw.pair));
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 3, 29, 31});
    Tensor c1 = Tensor::zeros(DType::kInt8, {40, 3, 3, 3}), c2 = Tensor::zeros(DType::kInt8, {24, 40, 1, 1});
    for (int64_t i = 0; i < c1.numel(); ++i)
      c1.data<int8_t>()[i] = static_cast<int8_t>(std::lround(127 * std::sin(static_cast<double>(i) * 0.71)));
    for (int64_t i = 0; i < c2.numel(); ++i)
      c2.data<int8_t>()[i] = static_cast<int8_t>(std::lround(127 * std::cos(static_cast<double>(i) * 0.53)));
    m.initializer("w1q", c1);
    m.initializer("w2q", c2);
    m.initializer("ws", floats({}, {0.003f}));
    m.initializer("sx", floats({}, {1.0f / 255.0f}));
    m.initializer("s1", floats({}, {0.02f}));
    m.initializer("s2", floats({}, {0.03f}));
    m.initializer("z0", tensor_of<uint8_t>(DType::kUInt8, {}, {0}));
    m.initializer("z1", tensor_of<uint8_t>(DType::kUInt8, {}, {120}));
    qdq(m, "x", "sx", "z0", "xd");
    m.node("DequantizeLinear", {"w1q", "ws"}, {"w1"}, "dqw1");
    m.node("DequantizeLinear", {"w2q", "ws"}, {"w2"}, "dqw2");
    m.node("Conv", {"xd", "w1"}, {"c"}, "stem").ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
    qdq(m, "c", "s1", "z1", "cd");
    auto pool = m.node("MaxPool", {"cd"}, {"p"}, "pool");
    pool.ints("kernel_shape", {pw.k, pw.k}).ints("strides", {pw.s, pw.s}).ints("pads", {pw.p, pw.p, pw.p, pw.p});
    pool.ints("dilations", {pw.d, pw.d}).i("ceil_mode", pw.ceil ? 1 : 0);
    m.initializer("s3", floats({}, {0.025f}));
    if (pw.pair) {
      const std::string sc = pw.pair == 1 ? "s1" : "s3";
      qdq(m, "p", sc, "z1", "pd");
    }
    m.node("Conv", {pw.pair ? "pd" : "p", "w2"}, {"e"}, "block");
    qdq(m, "e", "s2", "z1", "y");
    m.output("y");
    Tensor x = Tensor::zeros(DType::kFloat32, {1, 3, 29, 31});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.5f + 0.5f * std::sin(static_cast<float>(i) * 0.37f);
    const std::string bytes = m.bytes();
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "stem_pool.onnx");
    Session fused(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});
    Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
    Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
    if (cpu::int8_conv_isa() != cpu::Int8ConvIsa::kReference) {
      const std::string plan = fused.plan_report();
      const size_t at = plan.find("cpu  MaxPool");
      ASSERT_NE(at, std::string::npos) << plan;
      const std::string line = plan.substr(at, plan.find('\n', at) - at);
      if (pw.pair == 2) {
        EXPECT_THAT(line, Not(HasSubstr("u8"))) << line;
      } else {
        EXPECT_THAT(line, HasSubstr("/64c u8 -> ")) << line;
        EXPECT_THAT(line, HasSubstr("/64c u8  [")) << line;
        EXPECT_THAT(line, HasSubstr("nchwc int8 (64c u8)")) << line;
      }
      if (pw.pair == 1) {
        EXPECT_THAT(plan, HasSubstr(" MaxPool+QuantizeDequantize+QuantizeLinear "));
      }
    }
    ASSERT_EQ(a.shape(), b.shape());
    // The stem's codes may round the other way next to a midpoint: a step of its grid times the weights' sum.
    expect_on_grid_and_close(a, b, 0.03f, 0.03f + 0.02f * 40 * 127 * 0.003f * 0.1f + 1e-5f, 95);
  }
}

// SqueezeNet's fire module and YOLO's C3 in QDQ form: a Concat of int8
// convolutions (one with its own grid, one with a QDQ SiLU, one with a
// residual Add) and the pair after the Concat. Each convolution writes its
// slice on the pair's grid too (ConvAttrs::post: its own grid, then the
// pair's), and the pair dies. Against the node-by-node float run: every
// output on the last grid, nearly all equal.
TEST(Quant, ConcatPairJoinsTheInt8ConvolutionsThatMakeIt) {
  // 32 channels a branch: float slices; 64: whole 64-channel groups, so the
  // Concat's inputs and output are int8 values and it stays in place.
  for (int64_t ch : {32, 64}) {
    SCOPED_TRACE(std::to_string(ch) + " channels a branch");
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 32, 10, 11});
    auto codes = [](int64_t mo, int64_t c, int64_t k, double f) {
      Tensor t = Tensor::zeros(DType::kInt8, {mo, c, k, k});
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<int8_t>()[i] = static_cast<int8_t>(std::lround(127 * std::sin(static_cast<double>(i) * f)));
      return t;
    };
    m.initializer("wa", codes(ch, 32, 1, 0.61));
    m.initializer("wb", codes(ch, 32, 3, 0.43));
    m.initializer("wr", codes(32, 32, 3, 0.29));
    m.initializer("wc", codes(24, 2 * ch + 32, 1, 0.37));
    m.initializer("ws", floats({}, {0.002f}));
    m.initializer("sx", floats({}, {0.02f}));
    m.initializer("sa", floats({}, {0.03f}));
    m.initializer("sb", floats({}, {0.045f}));
    m.initializer("sg", floats({}, {1.0f / 255.0f}));
    m.initializer("sm", floats({}, {0.04f}));
    m.initializer("sr", floats({}, {0.05f}));
    m.initializer("scat", floats({}, {0.06f}));
    m.initializer("sy", floats({}, {0.07f}));
    m.initializer("z0", tensor_of<uint8_t>(DType::kUInt8, {}, {0}));
    m.initializer("z1", tensor_of<uint8_t>(DType::kUInt8, {}, {100}));
    qdq(m, "x", "sx", "z1", "xd");
    for (const char* w : {"wa", "wb", "wr", "wc"})
      m.node("DequantizeLinear", {w, "ws"}, {std::string(w) + "d"}, std::string("dq") + w);
    // a: its own grid; b: a QDQ SiLU; r: a residual Add of x after its grid.
    m.node("Conv", {"xd", "wad"}, {"a"}, "conv_a");
    qdq(m, "a", "sa", "z1", "ad");
    m.node("Conv", {"xd", "wbd"}, {"b"}, "conv_b").ints("pads", {1, 1, 1, 1});
    qdq(m, "b", "sb", "z1", "bd");
    m.node("Sigmoid", {"bd"}, {"bs"}, "sigmoid");
    qdq(m, "bs", "sg", "z0", "bsd");
    m.node("Mul", {"bd", "bsd"}, {"bm"}, "mul");
    qdq(m, "bm", "sm", "z1", "bmd");
    m.node("Conv", {"xd", "wrd"}, {"r"}, "conv_r").ints("pads", {1, 1, 1, 1});
    qdq(m, "r", "sa", "z1", "rd");
    m.node("Add", {"rd", "xd"}, {"rs"}, "add");
    qdq(m, "rs", "sr", "z1", "rsd");
    m.node("Concat", {"ad", "bmd", "rsd"}, {"cat"}, "cat").i("axis", 1);
    qdq(m, "cat", "scat", "z1", "catd");
    m.node("Conv", {"catd", "wcd"}, {"c"}, "conv_c");
    qdq(m, "c", "sy", "z1", "y");
    m.output("y");
    Tensor x = Tensor::zeros(DType::kFloat32, {1, 32, 10, 11});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.5f * std::sin(static_cast<float>(i) * 0.77f);
    const std::string bytes = m.bytes();
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "concat_pair.onnx");
    Session fused(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});
    Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
    Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
    if (cpu::int8_conv_isa() != cpu::Int8ConvIsa::kReference) {
      const std::string plan = fused.plan_report();
      EXPECT_THAT(plan, HasSubstr(" Concat+QuantizeDequantize+QuantizeLinear "));
      EXPECT_THAT(plan, Not(HasSubstr("cpu  QuantizeDequantize+QuantizeLinear catd")));
      const size_t at = plan.find("cpu  Concat");
      ASSERT_NE(at, std::string::npos);
      const std::string line = plan.substr(at, plan.find('\n', at) - at);
      if (ch == 64) {
        EXPECT_THAT(line, HasSubstr("/64c u8 -> ")) << line;
        EXPECT_THAT(line, HasSubstr("in place")) << line;
      } else {
        EXPECT_THAT(line, Not(HasSubstr("u8"))) << line;
      }
    }
    // A midpoint of the Concat's grid rounded the other way moves a product by a step of it times the weights.
    expect_on_grid_and_close(a, b, 0.07f, 0.07f + 0.06f * 127 * 0.002f * 4 + 1e-5f, 90);
  }
}

// uint8 weights: with zero point 128 every q - 128 is an int8 code and the
// int8 convolution takes them; with zero point 10 codes reach 245, past
// int8, and the convolution stays float32 (mark_dequantized_constants marks
// only int8 codes). Both give the node-by-node result within a step.
TEST(Quant, Uint8WeightsRunInt8OnlyWhereTheyAreInt8Codes) {
  for (int zp : {128, 10}) {
    SCOPED_TRACE("weight zero point " + std::to_string(zp));
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 16, 7, 7});
    Tensor codes = Tensor::zeros(DType::kUInt8, {16, 16, 1, 1});
    for (int64_t i = 0; i < codes.numel(); ++i) codes.data<uint8_t>()[i] = static_cast<uint8_t>((i * 37) % 256);
    m.initializer("wq", codes);
    m.initializer("ws", floats({}, {0.002f}));
    m.initializer("wz", tensor_of<uint8_t>(DType::kUInt8, {}, {static_cast<uint8_t>(zp)}));
    m.initializer("sx", floats({}, {0.02f}));
    m.initializer("s1", floats({}, {0.05f}));
    m.initializer("z", tensor_of<uint8_t>(DType::kUInt8, {}, {128}));
    m.node("QuantizeLinear", {"x", "sx", "z"}, {"xq"}, "qx");
    m.node("DequantizeLinear", {"xq", "sx", "z"}, {"xd"}, "dqx");
    m.node("DequantizeLinear", {"wq", "ws", "wz"}, {"w"}, "dqw");
    m.node("Conv", {"xd", "w"}, {"c"}, "conv");
    m.node("QuantizeLinear", {"c", "s1", "z"}, {"cq"}, "qc");
    m.node("DequantizeLinear", {"cq", "s1", "z"}, {"y"}, "dqc");
    m.output("y");
    Tensor x = Tensor::zeros(DType::kFloat32, {1, 16, 7, 7});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 2.0f * std::sin(static_cast<float>(i) * 0.3f);
    const std::string bytes = m.bytes();
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "u8w.onnx");
    Session fused(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
    Session apart(model, {.device = Device::kCpu, .threads = 1, .optimize = false});
    Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
    if (cpu::int8_conv_isa() != cpu::Int8ConvIsa::kReference) {
      if (zp == 128)
        EXPECT_THAT(fused.plan_report(), HasSubstr("nchwc_int8"));
      else
        EXPECT_THAT(fused.plan_report(), Not(HasSubstr("nchwc_int8")));
    }
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 0.05f * 1.001f) << i;
  }
}

// A quantized value read through two DequantizeLinears (a QOperator
// model's shortcut: the next convolution and the residual Add) is one step.
TEST(Quant, SeveralReadersOfAPairShareOneStep) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 8});
  m.initializer("s", floats({}, {0.25f}));
  m.initializer("z", tensor_of<int8_t>(DType::kInt8, {}, {1}));
  m.node("QuantizeLinear", {"x", "s", "z"}, {"q"}, "q");
  m.node("DequantizeLinear", {"q", "s", "z"}, {"a"}, "dq_a");
  m.node("DequantizeLinear", {"q", "s", "z"}, {"b"}, "dq_b");
  m.node("Neg", {"a"}, {"y1"}, "neg");
  m.node("Abs", {"b"}, {"y2"}, "abs");
  m.output("y1");
  m.output("y2");
  Tensor x = floats({2, 8}, {0.1f, 0.2f, 0.3f, 0.4f, -0.1f, -0.2f, -0.3f, -0.4f, 40.0f, -40.0f, 0.125f, 0.375f, -0.125f,
                             -0.375f, 1.0f, -1.0f});
  const std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "two_readers.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1});
  auto y = s.run({{"x", x}});
  const std::string plan = s.plan_report();
  size_t steps = 0;
  for (size_t at = plan.find("QuantizeDequantize"); at != std::string::npos;
       at = plan.find("QuantizeDequantize", at + 1))
    ++steps;
  EXPECT_EQ(steps, 1u) << plan;
  for (int i = 0; i < 16; ++i) {
    // x / 0.25 rounded to even, clamped to [-128 - 1, 127 - 1], times 0.25.
    const float k = std::min(126.0f, std::max(-129.0f, std::nearbyint(x.data<float>()[i] / 0.25f)));
    EXPECT_EQ(y[0].data<float>()[i], -k * 0.25f) << i;
    EXPECT_EQ(y[1].data<float>()[i], std::fabs(k * 0.25f)) << i;
  }
}

// The image's pair before an int8 stem joins it (ConvAttrs::in_grid): the
// stem's packing quantizes the image itself, rounding as QuantizeLinear's
// division does, midpoints included. An identity 1x1 convolution onto the
// same grid makes the output the image's own codes, so the fused run must
// equal the node-by-node one exactly.
TEST(Quant, TheImagesPairJoinsTheInt8Stem) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 3, 5, 7});
  Tensor codes = Tensor::zeros(DType::kInt8, {3, 3, 1, 1});
  for (int64_t c = 0; c < 3; ++c) codes.data<int8_t>()[c * 3 + c] = 1;
  m.initializer("wq", codes);
  m.initializer("ws", floats({}, {1.0f}));
  m.initializer("sx", floats({}, {0.02f}));
  m.initializer("zx", tensor_of<uint8_t>(DType::kUInt8, {}, {7}));
  qdq(m, "x", "sx", "zx", "xd");
  m.node("DequantizeLinear", {"wq", "ws"}, {"w"}, "dqw");
  m.node("Conv", {"xd", "w"}, {"c"}, "stem");
  qdq(m, "c", "sx", "zx", "y");
  m.output("y");
  // Midpoints of the grid as floats (k + 0.5) 0.02, their neighbours, both
  // ends of the range and past them.
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 3, 5, 7});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float k = static_cast<float>(i * 5 % 262) - 7.0f;
    const float mid = (k + 0.5f) * 0.02f;
    x.data<float>()[i] = i % 3 == 0 ? mid : i % 3 == 1 ? std::nextafter(mid, 1e9f) : std::nextafter(mid, -1e9f);
  }
  const std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "stem_pair.onnx");
  Session fused(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});
  Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
  Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
  if (cpu::int8_conv_isa() != cpu::Int8ConvIsa::kReference) {
    const std::string plan = fused.plan_report();
    EXPECT_THAT(plan, HasSubstr("nchwc_int8"));
    EXPECT_THAT(plan, Not(HasSubstr("cpu  QuantizeDequantize"))) << plan;
  }
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i << ": x " << x.data<float>()[i];
}

// A quantized classifier's product on its codes (int8_product.cpp): a Gemm
// (transB, per-channel weights, a bias) whose input went through a Flatten
// between its QuantizeLinear and DequantizeLinear (a QOperator model's
// QLinearGlobalAveragePool -> Flatten -> QGemm: the DequantizeLinear moves
// before the Flatten and the pair meets), and a MatMul (per-tensor weights).
// Each output on its grid and within a step of the node-by-node float run
// (the int8 sums are exact, the float ones round), nearly always equal.
TEST(Quant, Int8ProductRunsGemmAndMatMulOnTheirCodes) {
  for (bool matmul : {false, true}) {
    SCOPED_TRACE(matmul ? "MatMul" : "Gemm");
    const int64_t rows = 3, k = 70, n = 37;
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, matmul ? Shape{rows, k} : Shape{rows, k, 1, 1});
    Tensor codes = Tensor::zeros(DType::kInt8, matmul ? Shape{k, n} : Shape{n, k});
    for (int64_t i = 0; i < codes.numel(); ++i)
      codes.data<int8_t>()[i] = static_cast<int8_t>(std::lround(127 * std::cos(static_cast<double>(i) * 0.61)));
    m.initializer("wq", codes);
    Tensor ws = Tensor::zeros(DType::kFloat32, matmul ? Shape{} : Shape{n});
    for (int64_t i = 0; i < ws.numel(); ++i) ws.data<float>()[i] = 0.002f * static_cast<float>(1 + i % 7);
    m.initializer("ws", ws);
    m.initializer("sx", floats({}, {0.02f}));
    m.initializer("zx", tensor_of<uint8_t>(DType::kUInt8, {}, {120}));
    m.initializer("sy", floats({}, {0.04f}));
    m.initializer("zy", tensor_of<int8_t>(DType::kInt8, {}, {-5}));
    m.node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"}, "qx");
    if (!matmul) m.node("Flatten", {"xq"}, {"xf"}, "flatten");
    m.node("DequantizeLinear", {matmul ? "xq" : "xf", "sx", "zx"}, {"xd"}, "dqx");
    m.node("DequantizeLinear", {"wq", "ws"}, {"w"}, "dqw").i("axis", 0);
    if (matmul) {
      m.node("MatMul", {"xd", "w"}, {"p"}, "matmul");
    } else {
      Tensor bias = Tensor::zeros(DType::kFloat32, {n});
      for (int64_t i = 0; i < n; ++i) bias.data<float>()[i] = 0.3f * std::sin(static_cast<float>(i));
      m.initializer("bias", bias);
      m.node("Gemm", {"xd", "w", "bias"}, {"p"}, "gemm").i("transB", 1);
    }
    m.node("QuantizeLinear", {"p", "sy", "zy"}, {"pq"}, "qp");
    m.node("DequantizeLinear", {"pq", "sy", "zy"}, {"y"}, "dqp");
    m.output("y");
    Tensor x = Tensor::zeros(DType::kFloat32, matmul ? Shape{rows, k} : Shape{rows, k, 1, 1});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.2f * std::sin(static_cast<float>(i) * 0.9f) + 0.4f;
    const std::string bytes = m.bytes();
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "product.onnx");
    Session fused(model, {.device = Device::kCpu, .threads = 2});
    Session apart(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
    Tensor a = fused.run({{"x", x}})[0], b = apart.run({{"x", x}})[0];
    if (cpu::int8_isa() == cpu::Int8Isa::kAvx512Vnni) {
      EXPECT_THAT(fused.plan_report(), HasSubstr("int8_gemm isa=avx512_vnni"));
      EXPECT_THAT(fused.int8_summary(), HasSubstr("int8 (0 convolutions, 1 product)"));
    } else {
      EXPECT_EQ(fused.int8_summary(), "");
    }
    EXPECT_THAT(fused.plan_report(), HasSubstr("quantize pairs made one step"));
    expect_on_grid_and_close(a, b, 0.04f, 0.04f * 1.001f, 90);
  }
}

// A QuantizeLinear whose scale is `s` (per tensor), loaded with fixed shapes
// so that the check runs at load.
std::string quantize_model(Tensor s, Tensor z, int64_t axis = 1) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 3, 2, 2});
  m.initializer("scale", s);
  m.initializer("zp", z);
  m.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"}, "quant_in").i("axis", axis);
  m.output("y", z.dtype());
  return m.bytes();
}

TEST(Quant, BadScalesAreRefusedNamingTheNode) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {0.0f, -0.5f, std::numeric_limits<float>::quiet_NaN(), inf}) {
    Error e = load_error(quantize_model(floats({}, {bad}), tensor_of<uint8_t>(DType::kUInt8, {}, {0})), "scale.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << bad;
    EXPECT_THAT(e.what(), AllOf(HasSubstr("scale.onnx"), HasSubstr("'quant_in' (QuantizeLinear)"),
                                HasSubstr("y_scale 'scale' holds"), HasSubstr("positive finite")))
        << bad;
  }
  // Per axis: the index of the bad value.
  Error e = load_error(quantize_model(floats({3}, {0.1f, 0.0f, 0.2f}), Tensor::zeros(DType::kInt8, {3})));
  EXPECT_THAT(e.what(), HasSubstr("at index 1"));
}

TEST(Quant, BadZeroPointsAndShapesAreRefused) {
  // Scale and zero point of different shapes.
  Error e = load_error(quantize_model(floats({3}, {0.1f, 0.1f, 0.2f}), Tensor::zeros(DType::kInt8, {})));
  EXPECT_THAT(e.what(), AllOf(HasSubstr("'quant_in'"), HasSubstr("y_zero_point has shape"), HasSubstr("one shape")));
  // A per-axis scale of the wrong length, and an axis out of range.
  e = load_error(quantize_model(floats({2}, {0.1f, 0.1f}), Tensor::zeros(DType::kInt8, {2})));
  EXPECT_THAT(e.what(), AllOf(HasSubstr("y_scale has 2 values"), HasSubstr("needs 3")));
  e = load_error(quantize_model(floats({3}, {0.1f, 0.1f, 0.1f}), Tensor::zeros(DType::kInt8, {3}), 4));
  EXPECT_THAT(e.what(), AllOf(HasSubstr("'quant_in'"), HasSubstr("axis 4 is out of range")));
  // A DequantizeLinear zero point of another type than its input.
  {
    ModelBuilder m(13);
    m.input("x", DType::kUInt8, {4});
    m.initializer("s", floats({}, {0.1f}));
    m.initializer("z", Tensor::zeros(DType::kInt8, {}));
    m.node("DequantizeLinear", {"x", "s", "z"}, {"y"}, "deq");
    m.output("y");
    e = load_error(m.bytes());
    EXPECT_THAT(e.what(),
                AllOf(HasSubstr("'deq' (DequantizeLinear)"), HasSubstr("x_zero_point is int8 but x is uint8")));
  }
  // output_dtype disagreeing with the zero point; int16 refused by name.
  {
    ModelBuilder m(21, 10);
    m.input("x", DType::kFloat32, {4});
    m.initializer("s", floats({}, {0.1f}));
    m.initializer("z", Tensor::zeros(DType::kUInt8, {}));
    m.node("QuantizeLinear", {"x", "s", "z"}, {"y"}, "q").i("output_dtype", static_cast<int64_t>(DType::kInt8));
    m.output("y", DType::kUInt8);
    e = load_error(m.bytes());
    EXPECT_THAT(e.what(), HasSubstr("output_dtype is int8 but y_zero_point is uint8"));
  }
  {
    ModelBuilder m(21, 10);
    m.input("x", DType::kFloat32, {4});
    m.initializer("s", floats({}, {0.1f}));
    m.node("QuantizeLinear", {"x", "s"}, {"y"}, "q16").i("output_dtype", static_cast<int64_t>(DType::kInt16));
    m.output("y", DType::kInt16);
    e = load_error(m.bytes());
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'q16'"), HasSubstr("int16 quantization is not supported")));
  }
  // A blocked scale of the wrong shape.
  {
    ModelBuilder m(21, 10);
    m.input("x", DType::kInt8, {2, 5});
    m.initializer("s", Tensor::zeros(DType::kFloat32, {2, 2}));
    m.node("DequantizeLinear", {"x", "s"}, {"y"}, "blk").i("axis", 1).i("block_size", 2);
    m.output("y");
    e = load_error(m.bytes());
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'blk'"), HasSubstr("needs 2x3")));
  }
}

// The loader takes com.microsoft for exactly its quantized ops: another
// contrib op, or a contrib op's name in the default domain, is refused by name.
TEST(Quant, ContribDomainOnlyForItsQuantizedOps) {
  auto model = [](const std::string& op, const std::string& domain) {
    ModelBuilder m(13);
    auto* os = m.proto().add_opset_import();
    os->set_domain("com.microsoft");
    os->set_version(1);
    m.input("x", DType::kUInt8, {1, 4, 3, 3});
    m.initializer("s", floats({}, {0.1f}));
    m.initializer("z", Tensor::zeros(DType::kUInt8, {}));
    m.proto().mutable_graph()->add_node();
    auto* n = m.proto().mutable_graph()->mutable_node(0);
    n->set_op_type(op);
    n->set_name("n0");
    n->set_domain(domain);
    for (const char* in : {"x", "s", "z", "s", "z"}) n->add_input(in);
    n->add_output("y");
    m.output("y", DType::kUInt8);
    return m.bytes();
  };
  {
    const std::string bytes = model("QLinearGlobalAveragePool", "com.microsoft");
    auto loaded = Model::load_from_memory(bytes.data(), bytes.size(), "contrib.onnx");
    Session s(loaded, {.device = Device::kCpu, .threads = 1});
    Tensor x = Tensor::zeros(DType::kUInt8, {1, 4, 3, 3});
    for (int i = 0; i < 36; ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(i);
    auto y = s.run({{"x", x}});
    ASSERT_EQ(y[0].shape(), (Shape{1, 4, 1, 1}));
    EXPECT_EQ(y[0].data<uint8_t>()[0], 4);   // mean of 0..8
    EXPECT_EQ(y[0].data<uint8_t>()[3], 31);  // mean of 27..35
  }
  Error e = load_error(model("FusedConv", "com.microsoft"));
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), HasSubstr("unsupported op: com.microsoft::FusedConv (1 node: n0)"));
  e = load_error(model("QLinearGlobalAveragePool", ""));
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), HasSubstr("unsupported op: QLinearGlobalAveragePool"));
  // channels_last (NHWC) is refused with the reason.
  {
    ModelBuilder m(13);
    auto* os = m.proto().add_opset_import();
    os->set_domain("com.microsoft");
    os->set_version(1);
    m.input("x", DType::kUInt8, {1, 3, 3, 4});
    m.initializer("s", floats({}, {0.1f}));
    m.initializer("z", Tensor::zeros(DType::kUInt8, {}));
    m.node("QLinearGlobalAveragePool", {"x", "s", "z", "s", "z"}, {"y"}, "nhwc").i("channels_last", 1);
    m.proto().mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
    m.output("y", DType::kUInt8);
    e = load_error(m.bytes());
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'nhwc'"), HasSubstr("channels_last=1")));
  }
}

// A scale known only at run time is not checked at load; a zero one then
// saturates (x / 0 is +-inf) instead of failing the run, and the session goes on.
TEST(Quant, RunTimeScaleOfZeroSaturates) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {3});
  m.input("s", DType::kFloat32, {});
  m.node("QuantizeLinear", {"x", "s"}, {"y"}, "q");
  m.output("y", DType::kUInt8);
  const std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "runtime_scale.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1});
  auto y = s.run({{"x", floats({3}, {1.0f, -1.0f, 2.0f})}, {"s", floats({}, {0.0f})}});
  EXPECT_EQ(y[0].data<uint8_t>()[0], 255);
  EXPECT_EQ(y[0].data<uint8_t>()[1], 0);
  y = s.run({{"x", floats({3}, {1.0f, -1.0f, 2.0f})}, {"s", floats({}, {0.5f})}});
  EXPECT_EQ(y[0].data<uint8_t>()[2], 4);
}

}  // namespace
}  // namespace minirt
