// The graph passes, each checked on a small graph: what the plan looks like
// afterwards, and that the numbers match a reference computed in the test.
#include <minirt/minirt.h>

#include "kernels/cpu/cpu_backend.h"
#include "loaders/onnx/onnx_loader.h"
#include "model_builder.h"
#include "runtime/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace minirt {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;

struct Planned {
  std::unique_ptr<KernelProvider> cpu;  // the plan's steps point at it
  std::unique_ptr<Plan> plan;
  std::vector<std::string> ops;  // op of each step, fused ones joined by '+'
};

Planned plan_of(const std::string& bytes, const std::vector<Tensor>& inputs, bool optimize = true) {
  Graph g = onnx::load_bytes(bytes.data(), bytes.size(), "t.onnx");
  ThreadPool pool(1);
  std::vector<const Tensor*> in;
  for (const auto& t : inputs) in.push_back(&t);
  Planned p;
  p.cpu = make_cpu_backend(1);
  p.plan = make_plan(g, in, *p.cpu, pool, {.optimize = optimize, .blocked_layout = false});
  for (const auto& s : p.plan->steps) p.ops.push_back(s.op);
  return p;
}

std::vector<float> run(const std::string& bytes, const NamedTensors& in, bool optimize = true) {
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "t.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1, .optimize = optimize});
  auto out = s.run(in);
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].numel());
}

// Direct convolution, stride 1, symmetric padding p, NCHW, for references.
std::vector<double> conv_ref(const Tensor& x, const Tensor& w, const float* bias, int p) {
  int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  int64_t m = w.shape()[0], kh = w.shape()[2], kw = w.shape()[3];
  int64_t oh = h + 2 * p - kh + 1, ow = wd + 2 * p - kw + 1;
  std::vector<double> y(n * m * oh * ow, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < m; ++k)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = bias ? bias[k] : 0.0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                int64_t ii = i + a - p, jj = j + e - p;
                if (ii < 0 || ii >= h || jj < 0 || jj >= wd) continue;
                acc += double(x.data<float>()[((b * c + ch) * h + ii) * wd + jj]) *
                       w.data<float>()[((k * c + ch) * kh + a) * kw + e];
              }
          y[((b * m + k) * oh + i) * ow + j] = acc;
        }
  return y;
}

TEST(Passes, ShapeChainsFoldAwayWithSymbolicBatch) {
  // PyTorch's flatten: Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {-1, 2, 3}, {"batch"});
  m.initializer("zero", testing::ints64({0}));
  m.initializer("minus1", testing::ints64({-1}));
  Tensor idx = Tensor::zeros(DType::kInt64, {});
  m.initializer("idx0", idx);
  m.node("Shape", {"x"}, {"s"}, "shape");
  m.node("Gather", {"s", "idx0"}, {"n"}, "gather").i("axis", 0);
  m.node("Unsqueeze", {"n", "zero"}, {"n1"}, "unsq");
  m.node("Concat", {"n1", "minus1"}, {"target"}, "concat").i("axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.node("Relu", {"y"}, {"z"}, "relu");
  m.output("z");
  for (int64_t batch : {1, 3}) {
    Planned p = plan_of(m.bytes(), {testing::iota({batch, 2, 3}, -2.0f)});
    EXPECT_EQ(p.ops, (std::vector<std::string>{"Reshape", "Relu"})) << batch;
    EXPECT_EQ(p.plan->stats.folded, 4);
    EXPECT_EQ(p.plan->graph.values[p.plan->output_values[0]].shape, (Shape{batch, 6}));
  }
  auto y = run(m.bytes(), {{"x", testing::iota({2, 2, 3}, -2.0f)}});
  ASSERT_EQ(y.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y[i], std::max(0.0f, -2.0f + i));
}

TEST(Passes, ConvBatchNormFoldsIntoOneConv) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 2, 5, 5});
  Tensor w = testing::iota({3, 2, 3, 3}, -0.4f, 0.02f);
  float bias[3] = {0.1f, -0.2f, 0.3f};
  Tensor b = Tensor::zeros(DType::kFloat32, {3});
  std::copy(bias, bias + 3, b.data<float>());
  float scale[3] = {1.5f, 0.5f, -1.0f}, shift[3] = {0.0f, 1.0f, -0.5f}, mean[3] = {0.2f, -0.1f, 0.0f},
        var[3] = {0.5f, 2.0f, 1.0f};
  auto vec = [](const float* v) {
    Tensor t = Tensor::zeros(DType::kFloat32, {3});
    std::copy(v, v + 3, t.data<float>());
    return t;
  };
  m.initializer("w", w).initializer("b", b);
  m.initializer("scale", vec(scale)).initializer("shift", vec(shift));
  m.initializer("mean", vec(mean)).initializer("var", vec(var));
  m.node("Conv", {"x", "w", "b"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, "bn").f("epsilon", 1e-3f);
  m.output("y");
  Tensor x = testing::iota({1, 2, 5, 5}, -1.0f, 0.04f);
  Planned p = plan_of(m.bytes(), {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+BatchNormalization"}));
  EXPECT_EQ(p.plan->stats.batchnorms, 1);
  Planned raw = plan_of(m.bytes(), {x}, false);
  EXPECT_EQ(raw.ops, (std::vector<std::string>{"Conv", "BatchNormalization"}));

  std::vector<double> ref = conv_ref(x, w, bias, 1);
  for (size_t i = 0; i < ref.size(); ++i) {
    int k = static_cast<int>(i / 25);
    ref[i] = (ref[i] - mean[k]) / std::sqrt(double(var[k]) + 1e-3) * scale[k] + shift[k];
  }
  auto y = run(m.bytes(), {{"x", x}});
  ASSERT_EQ(y.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << i;
}

// ConvTranspose (a text detector's upsampling head): BatchNormalization
// folds into its filters and bias, and a 2-D one takes the activation; a 3-D
// one leaves the activation a step of its own. (The numbers of these chains
// are held to onnxruntime by the op cases: convtranspose*_bn_relu.)
TEST(Passes, BatchNormAndActivationFoldIntoConvTranspose) {
  for (int rank : {4, 5}) {
    ModelBuilder m;
    const Shape xs = rank == 4 ? Shape{1, 4, 5, 6} : Shape{1, 4, 3, 5, 6};
    const Shape ws = rank == 4 ? Shape{4, 3, 2, 2} : Shape{4, 3, 2, 2, 2};
    m.input("x", DType::kFloat32, xs);
    m.initializer("w", testing::iota(ws, -0.3f, 0.01f));
    m.initializer("scale", testing::iota({6}, 0.5f, 0.2f)).initializer("shift", testing::iota({6}, -0.2f, 0.1f));
    m.initializer("mean", testing::iota({6}, 0.1f, -0.05f)).initializer("var", testing::iota({6}, 0.5f, 0.3f));
    testing::NodeRef n = m.node("ConvTranspose", {"x", "w"}, {"t"}, "up");
    n.i("group", 2);
    if (rank == 4)
      n.ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
    else
      n.ints("kernel_shape", {2, 2, 2}).ints("strides", {2, 2, 2});
    m.node("BatchNormalization", {"t", "scale", "shift", "mean", "var"}, {"n"}, "bn");
    m.node("Relu", {"n"}, {"y"}, "relu");
    m.output("y");
    Planned p = plan_of(m.bytes(), {testing::iota(xs, -1.0f, 0.01f)});
    EXPECT_EQ(p.plan->stats.batchnorms, 1) << "rank " << rank;
    if (rank == 4)
      EXPECT_EQ(p.ops, (std::vector<std::string>{"ConvTranspose+BatchNormalization+Relu"}));
    else
      EXPECT_EQ(p.ops, (std::vector<std::string>{"ConvTranspose+BatchNormalization", "Relu"}));
  }
}

TEST(Passes, PerChannelAddFoldsIntoConvBias) {
  // CNTK and some PyTorch exports add the bias as a separate Add.
  ModelBuilder m(8, 3);
  m.input("x", DType::kFloat32, {1, 1, 4, 4});
  Tensor w = testing::iota({2, 1, 3, 3}, 0.1f, 0.1f);
  m.initializer("w", w);
  m.initializer("bias", testing::iota({2, 1, 1}, 5.0f, 10.0f));  // 5, 15
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Add", {"c", "bias"}, {"y"}, "plus");
  m.output("y");
  Tensor x = testing::iota({1, 1, 4, 4});
  Planned p = plan_of(m.bytes(), {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+Add"}));
  float bias[2] = {5.0f, 15.0f};
  std::vector<double> ref = conv_ref(x, w, bias, 1);
  auto y = run(m.bytes(), {{"x", x}});
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(y[i], ref[i], 1e-4 * (1 + std::fabs(ref[i])));
}

TEST(Passes, NonChannelAddIsNotFolded) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 1, 4, 4});
  m.initializer("w", testing::iota({2, 1, 3, 3}, 0.1f, 0.1f));
  m.initializer("plane", testing::iota({1, 1, 4, 4}));  // varies over space: not a bias
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Add", {"c", "plane"}, {"y"}, "plus");
  m.output("y");
  Planned p = plan_of(m.bytes(), {testing::iota({1, 1, 4, 4})});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv", "Add"}));
}

TEST(Passes, ActivationsFuseIntoConvAndGemm) {
  for (const char* act : {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh"}) {
    ModelBuilder m;
    m.input("x", DType::kFloat32, {1, 1, 3, 3});
    m.initializer("w", testing::iota({1, 1, 1, 1}, 1.0f));
    m.initializer("fc", testing::iota({9, 2}, -0.3f, 0.05f));
    m.node("Conv", {"x", "w"}, {"c"}, "conv");
    m.node(act, {"c"}, {"a"}, "act1");
    m.node("Flatten", {"a"}, {"f"}, "flat");
    m.node("Gemm", {"f", "fc"}, {"g"}, "fc");
    m.node(act, {"g"}, {"y"}, "act2");
    m.output("y");
    Tensor x = testing::iota({1, 1, 3, 3}, -4.0f);
    Planned p = plan_of(m.bytes(), {x});
    std::string conv_op = std::string("Conv+") + act, gemm_op = std::string("Gemm+") + act;
    EXPECT_EQ(p.ops, (std::vector<std::string>{conv_op, "Flatten", gemm_op})) << act;
    // Same numbers as the unfused graph, whose activation runs as its own kernel.
    EXPECT_EQ(run(m.bytes(), {{"x", x}}), run(m.bytes(), {{"x", x}}, false)) << act;
  }
}

TEST(Passes, Relu6ClipFusesWithItsBounds) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 2, 4});
  m.initializer("w", testing::iota({1, 1, 1, 1}, 3.0f));
  Tensor lo = Tensor::zeros(DType::kFloat32, {}), hi = Tensor::zeros(DType::kFloat32, {});
  *hi.data<float>() = 6.0f;
  m.initializer("lo", lo).initializer("hi", hi);
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.node("Clip", {"c", "lo", "hi"}, {"y"}, "relu6");
  m.output("y");
  Tensor x = testing::iota({1, 1, 2, 4}, -1.0f);  // -1..6, times 3
  Planned p = plan_of(m.bytes(), {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+Clip"}));
  auto y = run(m.bytes(), {{"x", x}});
  std::vector<float> want;
  for (int i = 0; i < 8; ++i) want.push_back(std::min(6.0f, std::max(0.0f, 3.0f * (i - 1))));
  EXPECT_EQ(y, want);
}

TEST(Passes, ActivationWithTwoReadersIsNotFused) {
  // Conv output read by Relu and by the graph output: fusing would change it.
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 1, 2, 2});
  m.initializer("w", testing::iota({1, 1, 1, 1}, 1.0f));
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.node("Relu", {"c"}, {"y"}, "relu");
  m.output("y");
  m.output("c");
  Planned p = plan_of(m.bytes(), {testing::iota({1, 1, 2, 2}, -2.0f)});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv", "Relu"}));
}

TEST(Passes, IdentityAndDropoutAreRemovedEvenAtTheOutput) {
  ModelBuilder m(12);
  m.input("x", DType::kFloat32, {4});
  m.node("Identity", {"x"}, {"a"}, "id1");
  m.node("Relu", {"a"}, {"b"}, "relu");
  m.node("Dropout", {"b"}, {"c"}, "drop");
  m.node("Identity", {"c"}, {"y"}, "id2");
  m.output("y");
  Planned p = plan_of(m.bytes(), {testing::iota({4}, -2.0f)});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(p.plan->stats.identities, 3);
  EXPECT_EQ(run(m.bytes(), {{"x", testing::iota({4}, -2.0f)}}), (std::vector<float>{0, 0, 0, 1}));
}

TEST(Passes, OutputThatIsAnInputIsCopied) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {3});
  m.node("Identity", {"x"}, {"y"}, "id");
  m.output("y");
  EXPECT_EQ(run(m.bytes(), {{"x", testing::iota({3}, 7.0f)}}), (std::vector<float>{7, 8, 9}));
}

TEST(Passes, FullyConstantGraphFolds) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  m.initializer("a", testing::iota({2}, 1.0f));
  m.initializer("b", testing::iota({2}, 10.0f));
  m.node("Add", {"a", "b"}, {"c"}, "const_add");
  m.node("Mul", {"x", "c"}, {"y"}, "mul");
  m.output("y");
  Planned p = plan_of(m.bytes(), {testing::iota({2}, 1.0f)});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Mul"}));
  EXPECT_EQ(run(m.bytes(), {{"x", testing::iota({2}, 1.0f)}}), (std::vector<float>{11, 26}));
}

TEST(Passes, DeadNodesAreRemoved) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  m.node("Relu", {"x"}, {"unused"}, "dead_relu");
  m.node("Neg", {"x"}, {"y"}, "neg");
  m.output("y");
  Planned p = plan_of(m.bytes(), {testing::iota({2})});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Neg"}));
  EXPECT_EQ(p.plan->stats.dead, 1);
}

using testing::noise;

std::vector<float> run_fixed(const std::string& bytes, const NamedTensors& in, const std::string& algo) {
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "t.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kFixed, .tuning_algorithm = algo});
  auto out = s.run(in);
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].numel());
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << what << " at " << i;
}

TEST(Passes, SiluPatternFusesIntoTheConv) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 3, 5, 5});
  Tensor w = noise({4, 3, 3, 3}, 1), b = noise({4}, 2);
  m.initializer("w", w).initializer("b", b);
  m.node("Conv", {"x", "w", "b"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Sigmoid", {"c"}, {"s"}, "sig");
  m.node("Mul", {"s", "c"}, {"y"}, "mul");  // gate first, as some exporters write it
  m.output("y");
  Tensor x = noise({1, 3, 5, 5}, 3);
  Planned p = plan_of(m.bytes(), {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+Sigmoid+Mul"}));
  std::vector<double> want = conv_ref(x, w, b.data<float>(), 1);
  for (double& v : want) v = v / (1.0 + std::exp(-v));
  expect_near_all(run(m.bytes(), {{"x", x}}), want, 1e-5, "fused");
  expect_near_all(run(m.bytes(), {{"x", x}}, false), want, 1e-5, "unfused");
}

TEST(Passes, HardSigmoidTimesInputBecomesHardSwishOnlyWithItsConstants) {
  for (float alpha : {1.0f / 6.0f, 0.2f}) {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 2, 4, 4});
    m.initializer("w", noise({2, 2, 1, 1}, 4));
    m.node("Conv", {"x", "w"}, {"c"}, "conv");
    m.node("HardSigmoid", {"c"}, {"h"}, "hsig").f("alpha", alpha).f("beta", 0.5f);
    m.node("Mul", {"c", "h"}, {"y"}, "mul");
    m.output("y");
    Tensor x = testing::iota({1, 2, 4, 4}, -8.0f, 0.5f);
    Planned p = plan_of(m.bytes(), {x});
    if (alpha == 0.2f)
      EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv", "HardSigmoid", "Mul"}));
    else
      EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+HardSigmoid+Mul"}));
    auto fused = run(m.bytes(), {{"x", x}}), plain = run(m.bytes(), {{"x", x}}, false);
    ASSERT_EQ(fused.size(), plain.size());
    for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], plain[i], 1e-6f * (1 + std::fabs(plain[i])));
  }
}

TEST(Passes, MishPatternFusesIntoTheConv) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 4, 4});
  m.initializer("w", noise({3, 2, 3, 3}, 30));
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Softplus", {"c"}, {"sp"}, "sp");
  m.node("Tanh", {"sp"}, {"t"}, "tanh");
  m.node("Mul", {"c", "t"}, {"y"}, "mul");
  m.output("y");
  Tensor x = noise({1, 2, 4, 4}, 31);
  Planned p = plan_of(m.bytes(), {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+Tanh+Softplus+Mul"}));
  auto fused = run(m.bytes(), {{"x", x}}), plain = run(m.bytes(), {{"x", x}}, false);
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], plain[i], 1e-5f * (1 + std::fabs(plain[i]))) << i;
}

TEST(Passes, DecomposedHardSwishFusesIntoTheConv) {
  // x * Clip(x + 3, 0, 6) / 6, as Paddle and older torch exports write it;
  // once with the division, once as a product with 1/6.
  for (bool as_mul : {false, true}) {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 2, 4, 4});
    m.initializer("w", noise({3, 2, 3, 3}, 32));
    auto scalar = [](float v) {
      Tensor t = Tensor::zeros(DType::kFloat32, {});
      *t.data<float>() = v;
      return t;
    };
    m.initializer("three", scalar(3.0f)).initializer("zero", scalar(0.0f)).initializer("six", scalar(6.0f));
    m.initializer("sixth", scalar(1.0f / 6.0f));
    m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
    m.node("Add", {"c", "three"}, {"a"}, "add3");
    m.node("Clip", {"a", "zero", "six"}, {"r6"}, "relu6");
    m.node("Mul", {"c", "r6"}, {"p"}, "mul");
    if (as_mul)
      m.node("Mul", {"p", "sixth"}, {"y"}, "scale");
    else
      m.node("Div", {"p", "six"}, {"y"}, "div6");
    m.output("y");
    Tensor x = testing::iota({1, 2, 4, 4}, -4.0f, 0.3f);
    Planned p = plan_of(m.bytes(), {x});
    ASSERT_EQ(p.ops.size(), 1u) << as_mul;
    EXPECT_EQ(p.ops[0].rfind("Conv+Clip", 0), 0u) << p.ops[0];
    auto fused = run(m.bytes(), {{"x", x}}), plain = run(m.bytes(), {{"x", x}}, false);
    ASSERT_EQ(fused.size(), plain.size());
    for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], plain[i], 1e-5f * (1 + std::fabs(plain[i]))) << i;
  }
}

TEST(Passes, DecomposedGeluFusesIntoTheConvOnlyWithItsConstants) {
  // x * 0.5 * (1 + erf(x / sqrt 2)) as torch.nn.GELU exports before opset
  // 20: the half taken last or first, the division also as a product with
  // 1 / sqrt 2; and once with a wrong constant, which must stay unfused.
  auto scalar = [](float v) {
    Tensor t = Tensor::zeros(DType::kFloat32, {});
    *t.data<float>() = v;
    return t;
  };
  for (int variant = 0; variant < 4; ++variant) {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 2, 5, 5});
    Tensor w = noise({3, 2, 3, 3}, 40);
    m.initializer("w", w);
    m.initializer("sqrt2", scalar(variant == 3 ? 1.5f : 1.41421356f)).initializer("rsqrt2", scalar(0.70710678f));
    m.initializer("one", scalar(1.0f)).initializer("half", scalar(0.5f));
    m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
    if (variant == 1)
      m.node("Mul", {"rsqrt2", "c"}, {"d"}, "scale");
    else
      m.node("Div", {"c", "sqrt2"}, {"d"}, "div");
    m.node("Erf", {"d"}, {"e"}, "erf");
    m.node("Add", {"one", "e"}, {"a"}, "add1");
    if (variant == 2) {
      m.node("Mul", {"c", "half"}, {"h"}, "half");
      m.node("Mul", {"h", "a"}, {"y"}, "mul");
    } else {
      m.node("Mul", {"a", "c"}, {"p"}, "mul");
      m.node("Mul", {"p", "half"}, {"y"}, "half");
    }
    m.output("y");
    Tensor x = noise({1, 2, 5, 5}, 41);
    Planned p = plan_of(m.bytes(), {x});
    if (variant == 3) {
      EXPECT_EQ(p.ops.size(), 6u) << "a divisor other than sqrt 2 is not GELU";
    } else {
      ASSERT_EQ(p.ops.size(), 1u) << variant;
      EXPECT_EQ(p.ops[0].rfind("Conv+Erf", 0), 0u) << p.ops[0];
    }
    // Against GELU computed here, in double, on a reference convolution.
    std::vector<double> want = conv_ref(x, w, nullptr, 1);
    double k = variant == 3 ? 1.5 : std::sqrt(2.0);
    for (double& v : want) v = v * 0.5 * (1.0 + std::erf(v / k));
    expect_near_all(run(m.bytes(), {{"x", x}}), want, 1e-5, "fused");
    expect_near_all(run(m.bytes(), {{"x", x}}, false), want, 1e-5, "unfused");
  }
}

TEST(Passes, PReluWithOneSlopeFusesAsLeakyRelu) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 3, 3});
  m.initializer("w", noise({2, 2, 1, 1}, 33));
  Tensor slope = Tensor::zeros(DType::kFloat32, {1});
  slope.data<float>()[0] = 0.25f;
  m.initializer("slope", slope);
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.node("PRelu", {"c", "slope"}, {"y"}, "prelu");
  m.output("y");
  Tensor x = testing::iota({1, 2, 3, 3}, -5.0f, 0.6f);
  Planned p = plan_of(m.bytes(), {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+PRelu"}));
  EXPECT_EQ(run(m.bytes(), {{"x", x}}), run(m.bytes(), {{"x", x}}, false));
}

TEST(Passes, GateOfAnotherValueIsNotFused) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 2, 2});
  m.input("z", DType::kFloat32, {1, 1, 2, 2});
  m.node("Sigmoid", {"z"}, {"s"}, "sig");
  m.node("Mul", {"x", "s"}, {"y"}, "mul");
  m.output("y");
  Planned p = plan_of(m.bytes(), {testing::iota({1, 1, 2, 2}), testing::iota({1, 1, 2, 2}, 1.0f)});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Sigmoid", "Mul"}));
}

// Two convolutions of x, added, then Relu: the later Conv (k x k, `group`
// groups) takes the other (1x1 depthwise) as its residual and the Relu after
// the Add.
std::string residual_model(int k, int group, bool act_before_add) {
  ModelBuilder m(13);
  int c = 4;
  m.input("x", DType::kFloat32, {1, c, 6, 6});
  m.initializer("w1", noise({c, 1, 1, 1}, 7));
  m.initializer("w2", noise({c, c / group, k, k}, 5)).initializer("b2", noise({c}, 6));
  int64_t p = k / 2;
  m.node("Conv", {"x", "w1"}, {"c1"}, "conv1").i("group", c);
  m.node("Conv", {"x", "w2", "b2"}, {"c2"}, "conv2").ints("pads", {p, p, p, p}).i("group", group);
  std::string a = "c2";
  if (act_before_add) {
    m.node("Relu", {"c2"}, {"r2"}, "relu2");
    a = "r2";
  }
  m.node("Add", {"c1", a}, {"s"}, "add");
  m.node("Relu", {"s"}, {"y"}, "relu");
  m.output("y");
  return m.bytes();
}

TEST(Passes, ResidualAddAndItsActivationFuseIntoTheLaterConv) {
  std::string bytes = residual_model(3, 1, false);
  Tensor x = noise({1, 4, 6, 6}, 8);
  Planned p = plan_of(bytes, {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv", "Conv+Add+Relu"}));
  EXPECT_EQ(p.plan->stats.residuals, 1);
  EXPECT_THAT(p.plan->report(), HasSubstr("1 residual Add fused"));
  auto want = run(bytes, {{"x", x}}, false);
  // Every lowering that can run the fused Conv gives the unfused numbers.
  for (const char* algo : {"im2col_gemm", "implicit_gemm", "winograd_f2x2", "winograd_f4x4"}) {
    auto got = run_fixed(bytes, {{"x", x}}, algo);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << algo << " " << i;
  }
  // Depthwise and 1x1 lowerings take a residual too.
  std::string dw = residual_model(3, 4, false), pw = residual_model(1, 1, false);
  for (const auto& [model, algo] : {std::pair{dw, "depthwise_direct"}, std::pair{pw, "gemm_1x1"}}) {
    auto ref = run(model, {{"x", x}}, false);
    auto got = run_fixed(model, {{"x", x}}, algo);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], 1e-4f * (1 + std::fabs(ref[i]))) << algo << " " << i;
  }
}

TEST(Passes, ResidualIsNotFusedPastAnActivationOrABroadcast) {
  // Conv -> Relu -> Add: the activation comes before the sum; the Relu fuses,
  // the Add stays (the other Conv, conv2, may still take it).
  Planned p = plan_of(residual_model(3, 1, true), {noise({1, 4, 6, 6}, 9)});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+Relu", "Conv+Add+Relu"}));
  // A broadcast Add (per-channel tensor from another branch) is not a residual.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 3, 3});
  m.input("r", DType::kFloat32, {1, 2, 1, 1});
  m.initializer("w", noise({2, 2, 1, 1}, 10));
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.node("Add", {"c", "r"}, {"y"}, "add");
  m.output("y");
  Planned q = plan_of(m.bytes(), {noise({1, 2, 3, 3}, 11), noise({1, 2, 1, 1}, 12)});
  EXPECT_EQ(q.ops, (std::vector<std::string>{"Conv", "Add"}));
}

TEST(Passes, BatchNormAndActivationAfterAConcatOfConvsGoIntoEachConv) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 4, 5, 5});
  m.initializer("w1", noise({3, 4, 3, 3}, 20))
      .initializer("w2", noise({5, 4, 1, 1}, 21))
      .initializer("b2", noise({5}, 22));
  m.initializer("s", noise({8}, 23)).initializer("t", noise({8}, 24)).initializer("mu", noise({8}, 25));
  Tensor var = noise({8}, 26);
  for (int64_t i = 0; i < 8; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.1f;
  m.initializer("var", var);
  m.node("Conv", {"x", "w1"}, {"c1"}, "cv1").ints("pads", {1, 1, 1, 1});
  m.node("Conv", {"x", "w2", "b2"}, {"c2"}, "cv2");
  m.node("Concat", {"c1", "c2"}, {"cat"}, "cat").i("axis", 1);
  m.node("BatchNormalization", {"cat", "s", "t", "mu", "var"}, {"bn"}, "bn");
  m.node("LeakyRelu", {"bn"}, {"a"}, "act").f("alpha", 0.1f);
  m.initializer("w3", noise({2, 8, 1, 1}, 28));
  m.node("Conv", {"a", "w3"}, {"y"}, "cv3");
  m.output("y");
  Tensor x = noise({1, 4, 5, 5}, 27);
  Planned p = plan_of(m.bytes(), {x});
  EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv+BatchNormalization+LeakyRelu", "Conv+BatchNormalization+LeakyRelu",
                                             "Concat", "Conv"}));
  EXPECT_EQ(p.plan->stats.concats_elided, 1);
  auto fused = run(m.bytes(), {{"x", x}}), plain = run(m.bytes(), {{"x", x}}, false);
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], plain[i], 1e-5f * (1 + std::fabs(plain[i]))) << i;
  // A Concat with another reader keeps its BatchNormalization.
  m.output("cat");
  Planned q = plan_of(m.bytes(), {x});
  EXPECT_EQ(q.ops, (std::vector<std::string>{"Conv", "Conv", "Concat", "BatchNormalization", "LeakyRelu", "Conv"}));
}

TEST(Passes, ReportNamesFusedNodes) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 1, 2, 2});
  m.initializer("w", testing::iota({1, 1, 1, 1}, 1.0f));
  m.node("Conv", {"x", "w"}, {"c"}, "conv7");
  m.node("Relu", {"c"}, {"y"}, "relu7");
  m.output("y");
  Planned p = plan_of(m.bytes(), {testing::iota({1, 1, 2, 2})});
  EXPECT_THAT(p.plan->report(), HasSubstr("conv7+relu7"));
  EXPECT_EQ(p.plan->steps.size(), 1u);
}

}  // namespace
}  // namespace minirt
