// Models at opsets 1 to 6: the versions of the ops before opset 7, with
// their expected outputs worked out here from the ONNX operator changelog
// (never from minirt's own output), and the refusals naming node, op,
// version and what differs.
#include <minirt/minirt.h>

#include "runtime/op_registry.h"
#include "load_error.h"
#include "model_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

namespace minirt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::load_error;
using testing::ModelBuilder;

std::vector<Tensor> run(const std::string& bytes, const std::vector<std::pair<std::string, Tensor>>& feeds) {
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "legacy.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1});
  std::vector<std::pair<std::string, Tensor>> in(feeds.begin(), feeds.end());
  auto first = s.run(in);
  // A second run (and so a second plan's worth of the rewrite) gives the same.
  auto second = s.run(in);
  EXPECT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size() && i < second.size(); ++i) {
    EXPECT_EQ(first[i].shape(), second[i].shape());
    EXPECT_EQ(0, std::memcmp(first[i].raw(), second[i].raw(), first[i].nbytes()));
  }
  return first;
}

TEST(LegacyOpsets, EveryOpsetFromOneLoads) {
  EXPECT_EQ(kMinOpset, 1);
  for (int64_t opset = 1; opset <= 6; ++opset) {
    ModelBuilder m(opset, 3);
    m.input("x", DType::kFloat32, {2, 3});
    m.node("Relu", {"x"}, {"y"}, "relu").ints("consumed_inputs", {0});  // version 1's legacy attribute, ignored
    m.output("y");
    Tensor x = testing::iota({2, 3}, -3.0f);
    auto y = run(m.bytes(), {{"x", x}});
    for (int i = 0; i < 6; ++i) EXPECT_EQ(y[0].data<float>()[i], std::max(0.0f, x.data<float>()[i])) << opset;
  }
  ModelBuilder m(0, 3);
  m.input("x", DType::kFloat32, {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  Error e = load_error(m.bytes(), "legacy.onnx");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("opset 0 is not an ONNX opset"));
}

// Add-6 with broadcast=1 and axis=1: B (3, 4) lines up with A's dimensions 1
// and 2 (NumPy's rules would line it up with 2 and 3), from a constant and
// from a graph input.
TEST(LegacyOpsets, BinaryBroadcastFromAnAxis) {
  for (bool b_const : {true, false}) {
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      ModelBuilder m(6, 3);
      m.input("a", DType::kFloat32, {2, 3, 4, 5});
      Tensor b = testing::iota({3, 4}, 1.0f, 0.5f);
      if (b_const)
        m.initializer("b", b);
      else
        m.input("b", DType::kFloat32, {3, 4});
      m.node(op, {"a", "b"}, {"y"}, "bin").i("broadcast", 1).i("axis", 1);
      m.output("y");
      Tensor a = testing::noise({2, 3, 4, 5}, 7);
      std::vector<std::pair<std::string, Tensor>> feeds = {{"a", a}};
      if (!b_const) feeds.push_back({"b", b});
      auto y = run(m.bytes(), feeds);
      ASSERT_EQ(y[0].shape(), (Shape{2, 3, 4, 5}));
      const std::string o = op;
      for (int n = 0; n < 2; ++n)
        for (int c = 0; c < 3; ++c)
          for (int h = 0; h < 4; ++h)
            for (int w = 0; w < 5; ++w) {
              const int i = ((n * 3 + c) * 4 + h) * 5 + w;
              const float av = a.data<float>()[i], bv = b.data<float>()[c * 4 + h];
              const float want = o == "Add" ? av + bv : o == "Sub" ? av - bv : o == "Mul" ? av * bv : av / bv;
              ASSERT_FLOAT_EQ(y[0].data<float>()[i], want) << op << " " << b_const << " at " << i;
            }
    }
  }
}

// Without axis, B matches A's trailing dimensions (as NumPy's), or is one
// element; axis=0 puts a (2) B along A's first dimension.
TEST(LegacyOpsets, BinaryBroadcastSuffixScalarAndAxisZero) {
  {
    ModelBuilder m(1, 3);
    m.input("a", DType::kFloat32, {2, 3});
    m.initializer("b", testing::iota({3}, 10.0f));
    m.initializer("s", testing::iota({1, 1}, 100.0f));
    m.node("Add", {"a", "b"}, {"t"}).i("broadcast", 1).ints("consumed_inputs", {0, 0});
    m.node("Mul", {"t", "s"}, {"y"}).i("broadcast", 1);
    m.output("y");
    Tensor a = testing::iota({2, 3});
    auto y = run(m.bytes(), {{"a", a}});
    ASSERT_EQ(y[0].shape(), (Shape{2, 3}));
    for (int i = 0; i < 6; ++i)
      EXPECT_FLOAT_EQ(y[0].data<float>()[i], (static_cast<float>(i) + 10.0f + i % 3) * 100.0f);
  }
  {
    ModelBuilder m(6, 3);
    m.input("a", DType::kFloat32, {2, 3});
    m.initializer("b", testing::iota({2}, 1.0f));
    m.node("Greater", {"a", "b"}, {"y"}, "gt").i("broadcast", 1).i("axis", 0);
    m.output("y", DType::kBool);
    Tensor a = testing::iota({2, 3});  // rows 0 1 2 | 3 4 5, against 1 and 2
    auto y = run(m.bytes(), {{"a", a}});
    ASSERT_EQ(y[0].shape(), (Shape{2, 3}));
    const bool want[] = {false, false, true, true, true, true};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(y[0].data<uint8_t>()[i] != 0, want[i]) << i;
  }
}

// A 1 in B expands too: a C x 1 x 1 bias with broadcast=1 and no axis (as
// onnx.version_converter writes Add for opset 6), and C x 1 from axis 1.
TEST(LegacyOpsets, BinaryBroadcastOnesInBExpand) {
  for (bool axis : {false, true}) {
    ModelBuilder m(6, 3);
    m.input("x", DType::kFloat32, {1, 2, 3, 4});
    m.initializer("bias", testing::iota(axis ? Shape{2, 1} : Shape{2, 1, 1}, 100.0f, 100.0f));
    auto add = m.node("Add", {"x", "bias"}, {"y"}).i("broadcast", 1);
    if (axis) add.i("axis", 1);
    m.output("y");
    Tensor x = testing::iota({1, 2, 3, 4});
    auto y = run(m.bytes(), {{"x", x}});
    ASSERT_EQ(y[0].shape(), (Shape{1, 2, 3, 4}));
    for (int i = 0; i < 24; ++i) EXPECT_EQ(y[0].data<float>()[i], static_cast<float>(i + 100 * (1 + i / 12))) << axis;
  }
}

// broadcast=0 with A and B of one shape: elementwise (an axis, if given, is unused).
TEST(LegacyOpsets, BinaryWithoutBroadcastOnOneShape) {
  ModelBuilder m(6, 3);
  m.input("a", DType::kFloat32, {2, 3});
  m.input("b", DType::kFloat32, {2, 3});
  m.node("Sub", {"a", "b"}, {"y"}).i("axis", 1);
  m.output("y");
  auto y = run(m.bytes(), {{"a", testing::iota({2, 3}, 5.0f)}, {"b", testing::iota({2, 3}, 0.0f, 2.0f)}});
  ASSERT_EQ(y[0].shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[0].data<float>()[i], 5.0f - static_cast<float>(i));
}

TEST(LegacyOpsets, BinaryBroadcastRefusalsNameNodeOpAndRule) {
  {
    // broadcast=0 (the default) needs one shape.
    ModelBuilder m(6, 3);
    m.input("a", DType::kFloat32, {2, 3});
    m.input("b", DType::kFloat32, {3});
    m.node("Add", {"a", "b"}, {"y"}, "add_nobc");
    m.output("y");
    Error e = load_error(m.bytes(), "legacy.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'add_nobc' (Add)"), HasSubstr("Add version 6 (opset 6)"),
                                HasSubstr("broadcast=0"), HasSubstr("2x3"), HasSubstr("broadcast=1")));
  }
  {
    // B does not match A from the axis (NumPy would broadcast it: 4 is A's
    // dimension 2, but axis says dimension 1).
    ModelBuilder m(5, 3);
    m.input("a", DType::kFloat32, {2, 3, 4});
    m.input("b", DType::kFloat32, {4});
    m.node("Mul", {"a", "b"}, {"y"}, "mul_axis").i("broadcast", 1).i("axis", 1);
    m.output("y");
    Error e = load_error(m.bytes(), "legacy.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_THAT(e.what(),
                AllOf(HasSubstr("node 'mul_axis' (Mul)"), HasSubstr("Mul version 1"), HasSubstr("from axis 1")));
  }
  {
    // Only B broadcasts: A of (3) and B of (2, 3) is NumPy's but not version 6's.
    ModelBuilder m(6, 3);
    m.input("a", DType::kFloat32, {3});
    m.input("b", DType::kFloat32, {2, 3});
    m.node("Sub", {"a", "b"}, {"y"}, "sub_rank").i("broadcast", 1);
    m.output("y");
    Error e = load_error(m.bytes(), "legacy.onnx");
    EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'sub_rank' (Sub)"), HasSubstr("higher rank")));
  }
  {
    // Sum before opset 8: one shape.
    ModelBuilder m(6, 3);
    m.input("a", DType::kFloat32, {2, 3});
    m.input("b", DType::kFloat32, {3});
    m.node("Sum", {"a", "b"}, {"y"}, "sum6");
    m.output("y");
    Error e = load_error(m.bytes(), "legacy.onnx");
    EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'sum6' (Sum)"), HasSubstr("before opset 8")));
  }
}

TEST(LegacyOpsets, GemmBroadcastAttribute) {
  for (int64_t broadcast : {0, 1}) {
    ModelBuilder m(6, 3);
    m.input("a", DType::kFloat32, {2, 3});
    m.initializer("b", testing::iota({3, 4}));
    m.initializer("c", testing::iota({4}, 0.5f));
    m.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm").i("broadcast", broadcast);
    m.output("y");
    if (broadcast == 0) {
      Error e = load_error(m.bytes(), "legacy.onnx");
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
      EXPECT_THAT(e.what(),
                  AllOf(HasSubstr("node 'gemm' (Gemm)"), HasSubstr("Gemm version 6"), HasSubstr("broadcast=0")));
      continue;
    }
    Tensor a = testing::iota({2, 3}, 1.0f);
    auto y = run(m.bytes(), {{"a", a}});
    ASSERT_EQ(y[0].shape(), (Shape{2, 4}));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j) {
        float want = 0.5f + static_cast<float>(j);
        for (int k = 0; k < 3; ++k) want += static_cast<float>(1 + i * 3 + k) * static_cast<float>(k * 4 + j);
        EXPECT_FLOAT_EQ(y[0].data<float>()[i * 4 + j], want);
      }
  }
}

// PRelu-6 with one slope per channel: along axis 1.
TEST(LegacyOpsets, PReluSlopePerChannel) {
  ModelBuilder m(6, 3);
  m.input("x", DType::kFloat32, {1, 3, 2, 2});
  m.initializer("slope", testing::iota({3}, 0.1f, 0.1f));
  m.node("PRelu", {"x", "slope"}, {"y"});
  m.output("y");
  Tensor x = testing::iota({1, 3, 2, 2}, -6.0f);
  auto y = run(m.bytes(), {{"x", x}});
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 4; ++k) {
      const float v = x.data<float>()[c * 4 + k];
      EXPECT_FLOAT_EQ(y[0].data<float>()[c * 4 + k], v >= 0 ? v : v * 0.1f * static_cast<float>(c + 1));
    }
}

TEST(LegacyOpsets, ReshapeOneTakesTheShapeAttribute) {
  ModelBuilder m(4, 3);
  m.input("x", DType::kFloat32, {2, 3, 2});
  m.node("Reshape", {"x"}, {"y"}, "r").ints("shape", {0, -1});
  m.output("y");
  Tensor x = testing::iota({2, 3, 2});
  auto y = run(m.bytes(), {{"x", x}});
  ASSERT_EQ(y[0].shape(), (Shape{2, 6}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y[0].data<float>()[i], static_cast<float>(i));
  // From opset 5 the shape is an input.
  ModelBuilder m5(5, 3);
  m5.input("x", DType::kFloat32, {2, 3});
  m5.node("Reshape", {"x"}, {"y"}, "r5").ints("shape", {3, 2});
  m5.output("y");
  Error e = load_error(m5.bytes());
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'r5' (Reshape)"), HasSubstr("shape input is required")));
}

TEST(LegacyOpsets, CastOneNamesTheTypeAsAString) {
  ModelBuilder m(5, 3);
  m.input("x", DType::kFloat32, {4});
  m.node("Cast", {"x"}, {"y"}, "c").s("to", "INT32");
  m.output("y", DType::kInt32);
  Tensor x = testing::iota({4}, -1.5f, 1.25f);  // -1.5 -0.25 1 2.25
  auto y = run(m.bytes(), {{"x", x}});
  ASSERT_EQ(y[0].dtype(), DType::kInt32);
  const int32_t want[] = {-1, 0, 1, 2};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[0].data<int32_t>()[i], want[i]);
  ModelBuilder bad(5, 3);
  bad.input("x", DType::kFloat32, {4});
  bad.node("Cast", {"x"}, {"y"}, "cbad").s("to", "float32");
  bad.output("y");
  Error e = load_error(bad.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'cbad' (Cast)"), HasSubstr("Cast version 1"), HasSubstr("'float32'")));
}

// Pad-2: pads and value attributes; Pad-1: the same as `paddings`.
TEST(LegacyOpsets, PadAttributes) {
  for (int64_t opset : {1, 2}) {
    ModelBuilder m(opset, 3);
    m.input("x", DType::kFloat32, {2, 2});
    m.node("Pad", {"x"}, {"y"}, "pad").ints(opset == 1 ? "paddings" : "pads", {0, 1, 1, 2}).f("value", 1.5f);
    m.output("y");
    Tensor x = testing::iota({2, 2}, 10.0f);
    auto y = run(m.bytes(), {{"x", x}});
    ASSERT_EQ(y[0].shape(), (Shape{3, 5})) << opset;
    const float p = 1.5f;
    const float want[] = {p, 10, 11, p, p, p, 12, 13, p, p, p, p, p, p, p};
    for (int i = 0; i < 15; ++i) EXPECT_EQ(y[0].data<float>()[i], want[i]) << opset << " at " << i;
  }
}

TEST(LegacyOpsets, ConcatOneDefaultsToAxisOne) {
  ModelBuilder m(3, 3);
  m.input("a", DType::kFloat32, {2, 1});
  m.input("b", DType::kFloat32, {2, 2});
  m.node("Concat", {"a", "b"}, {"y"});
  m.output("y");
  auto y = run(m.bytes(), {{"a", testing::iota({2, 1})}, {"b", testing::iota({2, 2}, 10.0f)}});
  ASSERT_EQ(y[0].shape(), (Shape{2, 3}));
  const float want[] = {0, 10, 11, 1, 12, 13};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[0].data<float>()[i], want[i]);
}

TEST(LegacyOpsets, SplitOneTakesItsSplitAsAnInput) {
  ModelBuilder m(1, 3);
  m.input("x", DType::kFloat32, {2, 5});
  Tensor split = Tensor::zeros(DType::kInt64, {2});
  split.data<int64_t>()[0] = 2;
  split.data<int64_t>()[1] = 3;
  m.initializer("split", split);
  m.node("Split", {"x", "split"}, {"p", "q"}).i("axis", 1);
  m.output("p");
  m.output("q");
  auto y = run(m.bytes(), {{"x", testing::iota({2, 5})}});
  ASSERT_EQ(y[0].shape(), (Shape{2, 2}));
  ASSERT_EQ(y[1].shape(), (Shape{2, 3}));
  EXPECT_EQ(y[1].data<float>()[3], 7.0f);
  // Versions 2 to 11 take only the attribute.
  ModelBuilder m2(2, 3);
  m2.input("x", DType::kFloat32, {2, 5});
  m2.initializer("split", split);
  m2.node("Split", {"x", "split"}, {"p", "q"}, "s2").i("axis", 1);
  m2.output("p");
  m2.output("q");
  EXPECT_THAT(load_error(m2.bytes()).what(),
              AllOf(HasSubstr("node 's2' (Split)"), HasSubstr("attribute, not an input")));
}

TEST(LegacyOpsets, TileOneRepeatsAlongOneAxis) {
  ModelBuilder m(5, 3);
  m.input("x", DType::kFloat32, {2, 2});
  Tensor tiles = Tensor::zeros(DType::kInt64, {});
  *tiles.data<int64_t>() = 3;
  Tensor axis = Tensor::zeros(DType::kInt64, {});
  *axis.data<int64_t>() = 1;
  m.initializer("tiles", tiles);
  m.initializer("axis", axis);
  m.node("Tile", {"x", "tiles", "axis"}, {"y"});
  m.output("y");
  auto y = run(m.bytes(), {{"x", testing::iota({2, 2})}});
  ASSERT_EQ(y[0].shape(), (Shape{2, 6}));
  const float want[] = {0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y[0].data<float>()[i], want[i]);
}

TEST(LegacyOpsets, UpsampleOneHeightAndWidthScales) {
  ModelBuilder m(6, 3);
  m.input("x", DType::kFloat32, {1, 1, 2, 2});
  m.node("Upsample", {"x"}, {"y"}).f("height_scale", 2.0f).f("width_scale", 3.0f);
  m.output("y");
  auto y = run(m.bytes(), {{"x", testing::iota({1, 1, 2, 2}, 1.0f)}});
  ASSERT_EQ(y[0].shape(), (Shape{1, 1, 4, 6}));
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 6; ++w) EXPECT_EQ(y[0].data<float>()[h * 6 + w], static_cast<float>(1 + (h / 2) * 2 + w / 3));
}

TEST(LegacyOpsets, SeluOneDefaults) {
  for (int64_t opset : {1, 6}) {
    ModelBuilder m(opset, 3);
    m.input("x", DType::kFloat32, {2});
    m.node("Selu", {"x"}, {"y"});
    m.output("y");
    Tensor x = testing::iota({2}, -1.0f, 101.0f);  // -1, 100
    auto y = run(m.bytes(), {{"x", x}});
    // Version 1's defaults are 1.6732 and 1.0507; version 6's 1.67326319... and 1.05070102...
    const double alpha = opset == 1 ? 1.6732 : 1.6732632423543772, gamma = opset == 1 ? 1.0507 : 1.0507009873554805;
    EXPECT_NEAR(y[0].data<float>()[0], gamma * alpha * (std::exp(-1.0) - 1.0), 5e-6) << opset;
    EXPECT_NEAR(y[0].data<float>()[1], gamma * 100.0, 2e-5) << opset;
  }
}

// is_test before opset 7: 1 is inference; an explicit 0 is training mode,
// refused where it computes something else; absent (the schema's default
// is 0) is read as inference, as onnx.version_converter reads it.
TEST(LegacyOpsets, IsTestChoosesTheMode) {
  for (int64_t is_test : {-1, 0, 1}) {
    ModelBuilder m(6, 3);
    m.input("x", DType::kFloat32, {1, 2, 1, 2});
    Tensor one = testing::iota({2}, 1.0f, 0.0f), zero = testing::iota({2}, 0.0f, 0.0f);
    m.initializer("scale", one);
    m.initializer("bias", zero);
    m.initializer("mean", testing::iota({2}, 1.0f));
    m.initializer("var", one);
    auto bn = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"t"}, "bn").f("epsilon", 0.0f);
    auto dr = m.node("Dropout", {"t"}, {"y"}, "drop");
    if (is_test >= 0) {
      bn.i("is_test", is_test);
      dr.i("is_test", is_test);
    }
    m.output("y");
    if (is_test == 0) {
      Error e = load_error(m.bytes(), "legacy.onnx");
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_THAT(e.what(),
                  AllOf(HasSubstr("BatchNormalization version 6 with is_test=0"), HasSubstr("training mode")));
      continue;
    }
    auto y = run(m.bytes(), {{"x", testing::iota({1, 2, 1, 2})}});
    const float want[] = {-1, 0, 0, 1};  // x - mean per channel (means 1 and 2)
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[0].data<float>()[i], want[i]);
  }
  ModelBuilder m(6, 3);
  m.input("x", DType::kFloat32, {2});
  m.node("Dropout", {"x"}, {"y"}, "drop").f("ratio", 0.25f).i("is_test", 0);
  m.output("y");
  Error e = load_error(m.bytes(), "legacy.onnx");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'drop' (Dropout)"), HasSubstr("Dropout version 6 with is_test=0"),
                              HasSubstr("ratio 0.25")));
}

}  // namespace
}  // namespace minirt
