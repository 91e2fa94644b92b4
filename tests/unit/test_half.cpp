// float16 and bfloat16: the conversions (every half pattern, rounding at
// every midpoint, NumPy's and onnxruntime's results for chosen values), the
// loader's half tensors and its errors, and half models end to end (weights
// converted at load, inputs and outputs in their declared type, Cast
// rounding kept).
#include <minirt/minirt.h>

#include "kernels/cpu/cpu_backend.h"
#include "load_error.h"
#include "model_builder.h"
#include "runtime/ops/shape_ops.h"
#include "runtime/passes/passes.h"
#include "runtime/thread_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace minirt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::load_error;
using testing::ModelBuilder;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool half_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu); }

TEST(Half, KnownPatterns) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(bits(half_to_float(0x8000)), 0x80000000u);  // -0
  EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7c01)));
}

// Every one of the 65,536 patterns, NaNs included, survives half -> float ->
// half unchanged, and half -> float is monotonic over the finite ones.
TEST(Half, AllPatternsRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t p = static_cast<uint16_t>(h);
    const float f = half_to_float(p);
    EXPECT_EQ(float_to_half(f), p) << std::hex << h;
    EXPECT_EQ(std::isnan(f), half_is_nan(p)) << std::hex << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;
  }
  for (uint32_t h = 0; h < 0x7c00; ++h)
    EXPECT_LT(half_to_float(static_cast<uint16_t>(h)), half_to_float(static_cast<uint16_t>(h + 1)));
}

// Between every two neighbouring finite halves (both signs): the exact
// midpoint goes to the one with the even pattern, anything above it up and
// anything below it down. Midpoints of halves are exact in float32.
TEST(Half, RoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t k = 0; k < 0x7bff; ++k) {
      const uint16_t a = static_cast<uint16_t>(sign | k), b = static_cast<uint16_t>(sign | (k + 1));
      const float fa = half_to_float(a), fb = half_to_float(b);
      const float mid = (fa + fb) / 2;
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(fa) + fb) / 2) << "midpoint not exact at " << k;
      EXPECT_EQ(float_to_half(mid), (k & 1) ? b : a) << std::hex << k;
      const float away = sign ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      EXPECT_EQ(float_to_half(std::nextafter(mid, away)), b) << std::hex << k;
      EXPECT_EQ(float_to_half(std::nextafter(mid, -away)), a) << std::hex << k;
    }
  }
}

// float32 bit patterns and numpy.float32(x).astype(numpy.float16) of them
// (NumPy 2.4): rounding, overflow past 65504, subnormals, underflow.
TEST(Half, MatchesNumpy) {
  const struct {
    uint32_t f;
    uint16_t h;
  } cases[] = {
      {0x3dcccccdu, 0x2e66u},  // 0.1
      {0x3eaaaaabu, 0x3555u},  // 1/3
      {0x477fe000u, 0x7bffu},  // 65504
      {0x477feffdu, 0x7bffu},  // 65519.99
      {0x477ff000u, 0x7c00u},  // 65520: the tie goes to infinity
      {0x47800000u, 0x7c00u},  // 65536
      {0x47c35000u, 0x7c00u},  // 1e5
      {0xc7c35000u, 0xfc00u},  // -1e5
      {0x38800000u, 0x0400u},  // 2^-14
      {0x387fc000u, 0x03ffu},  // largest subnormal
      {0x33800000u, 0x0001u},  // 2^-24
      {0x33000000u, 0x0000u},  // 2^-25: tie to zero
      {0x33000001u, 0x0001u},  // just above it
      {0x33400000u, 0x0001u},  // 1.5 * 2^-25
      {0x33c00000u, 0x0002u},  // 1.5 * 2^-24: tie to even 2
      {0x3f802000u, 0x3c01u},  // 1 + 2^-10
      {0x3f801000u, 0x3c00u},  // 1 + 2^-11: tie to even
      {0x3f803000u, 0x3c02u},  // 1 + 3 * 2^-11: tie to even
      {0xb2d6bf95u, 0x8000u},  // -2.5e-8 to -0
      {0x3ef535b8u, 0x37aau},  // 0.47892547
      {0x40490fdbu, 0x4248u},  // pi
      {0x80000000u, 0x8000u},  // -0
      {0x2edbe6ffu, 0x0000u},  // 1e-10
      {0x45001000u, 0x6800u},  // 2049: tie to even 2048
      {0x45003000u, 0x6802u},  // 2051: tie to even 2052
  };
  for (const auto& c : cases) EXPECT_EQ(float_to_half(from_bits(c.f)), c.h) << std::hex << c.f;
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(half_is_nan(float_to_half(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(half_is_nan(float_to_half(from_bits(0x7f800001u))));      // a NaN whose payload is all in the low bits
  EXPECT_EQ(float_to_half(from_bits(0xffc00000u)) & 0x8000u, 0x8000u);  // sign of a NaN kept
}

#if defined(__FLT16_MAX__)
// The compiler's own _Float16 conversion (IEEE round to nearest even) over
// a stride through all 2^32 float32 patterns.
TEST(Half, MatchesCompilerFloat16) {
  for (uint64_t u = 0; u < (1ull << 32); u += 9973) {
    const float f = from_bits(static_cast<uint32_t>(u));
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    const uint16_t got = float_to_half(f);
    if (std::isnan(f))
      EXPECT_TRUE(half_is_nan(got));
    else
      ASSERT_EQ(got, want) << std::hex << u;
  }
}
#endif

// onnxruntime's Cast float -> bfloat16 -> float (1.32) on these values.
TEST(BFloat16, MatchesOnnxruntime) {
  const struct {
    uint32_t f;
    uint16_t b;
  } cases[] = {
      {0x3ef535b8u, 0x3ef5u}, {0x3ef5eeb0u, 0x3ef6u}, {0x3effd6b2u, 0x3f00u},
      {0x3f51b0e5u, 0x3f52u}, {0x3f808000u, 0x3f80u},  // a tie: to even
      {0x3f818000u, 0x3f82u},                          // a tie: to even
      {0x7f7fffffu, 0x7f80u},                          // the largest float rounds to infinity
      {0xff7fffffu, 0xff80u}, {0x000116c2u, 0x0001u}, {0xc0200000u, 0xc020u},
  };
  for (const auto& c : cases) EXPECT_EQ(float_to_bfloat16(from_bits(c.f)), c.b) << std::hex << c.f;
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(from_bits(0x7f800001u)))));
}

TEST(BFloat16, AllPatternsRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t p = static_cast<uint16_t>(b);
    const float f = bfloat16_to_float(p);
    EXPECT_EQ(bits(f), b << 16);
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(f))));
    else
      EXPECT_EQ(float_to_bfloat16(f), p) << std::hex << b;
  }
}

TEST(Half, TensorConversions) {
  Tensor f = Tensor::zeros(DType::kFloat32, {3});
  f.data<float>()[0] = 1.0f;
  f.data<float>()[1] = 0.1f;
  f.data<float>()[2] = 70000.0f;
  Tensor h = from_float32(f, DType::kFloat16);
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(h.data<uint16_t>()[1], 0x2e66);
  EXPECT_EQ(h.data<uint16_t>()[2], 0x7c00);
  Tensor back = to_float32(h);
  EXPECT_EQ(back.dtype(), DType::kFloat32);
  EXPECT_EQ(back.data<float>()[1], half_to_float(0x2e66));
  EXPECT_EQ(to_float32(f).raw(), f.raw());  // not half: returned as it is
  EXPECT_THROW(from_float32(h, DType::kFloat16), Error);
}

// ---- helpers: half tensors from float values, and back ----

// A float16 tensor of `values` (exact in float16) as raw_data.
Tensor half_tensor(Shape shape, std::vector<float> values, DType t = DType::kFloat16) {
  Tensor f = Tensor::zeros(DType::kFloat32, shape);
  std::copy(values.begin(), values.end(), f.data<float>());
  return from_float32(f, t);
}

std::vector<float> floats_of(const Tensor& t) {
  Tensor f = to_float32(t);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

// ---- the Cast kernel's paths through float32 ----

// One Cast node of a constant input, evaluated by the CPU backend (with its
// workspace, as a plan would).
Tensor cast(const Tensor& x, DType to, DType round = DType::kUndefined) {
  Graph g;
  int in = g.add_constant("x", x);
  int out = g.add_value("y");
  g.values[out].dtype = to;
  g.values[out].shape = x.shape();
  g.values[out].shape_known = true;
  int n = g.add_node("cast", "Cast", {in}, {out});
  auto a = std::make_shared<CastAttrs>();
  a->to = to;
  a->round = round;
  g.nodes[n].parsed = a;
  ThreadPool pool(1);
  auto cpu = make_cpu_backend(1);
  return evaluate_node(g, g.nodes[n], *cpu, pool)[0];
}

TEST(HalfCast, EveryPathThroughFloat32) {
  Tensor h = half_tensor({4}, {1.5f, -2.75f, 0.0f, 3.0f});
  Tensor i32 = cast(h, DType::kInt32);  // float16 -> int32: widened in the workspace
  ASSERT_EQ(i32.dtype(), DType::kInt32);
  EXPECT_EQ(std::vector<int32_t>(i32.data<int32_t>(), i32.data<int32_t>() + 4), (std::vector<int32_t>{1, -2, 0, 3}));
  Tensor b = cast(h, DType::kBool);
  EXPECT_EQ(std::vector<uint8_t>(b.data<uint8_t>(), b.data<uint8_t>() + 4), (std::vector<uint8_t>{1, 1, 0, 1}));
  Tensor same = cast(h, DType::kFloat16);
  EXPECT_EQ(std::memcmp(same.raw(), h.raw(), 8), 0);

  Tensor ints = Tensor::zeros(DType::kInt32, {3});
  ints.data<int32_t>()[0] = 1;
  ints.data<int32_t>()[1] = -3;
  ints.data<int32_t>()[2] = 70000;          // beyond float16: infinity
  Tensor h2 = cast(ints, DType::kFloat16);  // int32 -> float16: narrowed from the workspace
  ASSERT_EQ(h2.dtype(), DType::kFloat16);
  EXPECT_EQ(h2.data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(h2.data<uint16_t>()[1], 0xc200);
  EXPECT_EQ(h2.data<uint16_t>()[2], 0x7c00);

  Tensor tenth = half_tensor({1}, {0.1f});
  Tensor bf = cast(tenth, DType::kBFloat16);  // float16 -> bfloat16: both ways through the workspace
  EXPECT_EQ(bf.data<uint16_t>()[0], float_to_bfloat16(half_to_float(tenth.data<uint16_t>()[0])));

  // bfloat16 -> float32 rounded to float16 precision (the lowering's kind of Cast).
  Tensor third = half_tensor({1}, {1.0f / 3}, DType::kBFloat16);
  Tensor r = cast(third, DType::kFloat32, DType::kFloat16);
  EXPECT_EQ(r.data<float>()[0], half_to_float(float_to_half(bfloat16_to_float(third.data<uint16_t>()[0]))));
}

// ---- the loader ----

// x (float32) + w (float16 initializer): a mixed model, as keep_io_types writes.
TEST(HalfLoader, RawAndInt32DataInitializers) {
  for (bool int32_data : {false, true}) {
    ModelBuilder m;
    m.input("x", DType::kFloat32, {4});
    Tensor w = half_tensor({4}, {0.5f, -2.0f, 1024.0f, 0.099975586f});
    auto* init = m.proto().mutable_graph()->add_initializer();
    testing::fill_tensor_proto(init, "w", w);
    if (int32_data) {
      init->clear_raw_data();
      for (int i = 0; i < 4; ++i) init->add_int32_data(w.data<uint16_t>()[i]);
    }
    m.node("Add", {"x", "w"}, {"y"}, "add");
    m.output("y");
    auto model = Model::load_from_memory(m.bytes().data(), m.bytes().size(), "mixed.onnx");
    EXPECT_THAT(model->info().half_precision, HasSubstr("float16 model: 1 initializer converted to float32 at load"));
    EXPECT_EQ(model->inputs()[0].dtype, DType::kFloat32);
    Session s(model, {.device = Device::kCpu, .threads = 1});
    Tensor x = Tensor::zeros(DType::kFloat32, {4});
    auto y = s.run({{"x", x}});
    ASSERT_EQ(y[0].dtype(), DType::kFloat32);
    EXPECT_EQ(floats_of(y[0]), (std::vector<float>{0.5f, -2.0f, 1024.0f, 0.099975586f})) << int32_data;
  }
}

TEST(HalfLoader, WrongDataLengthNamesFileTensorAndNode) {
  {
    ModelBuilder m;
    m.input("x", DType::kFloat32, {4});
    auto* init = m.proto().mutable_graph()->add_initializer();
    init->set_name("half_w");
    init->set_data_type(static_cast<int>(DType::kFloat16));
    init->add_dims(4);
    init->set_raw_data(std::string(6, '\0'));  // 3 elements for 4
    m.node("Add", {"x", "half_w"}, {"y"}, "add");
    m.output("y");
    Error e = load_error(m.bytes(), "short.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("short.onnx"), HasSubstr("'half_w'"), HasSubstr("4 elements"),
                                HasSubstr("raw_data holds 3")));
  }
  {
    ModelBuilder m;
    m.input("x", DType::kFloat32, {4});
    auto* init = m.proto().mutable_graph()->add_initializer();
    init->set_name("odd_w");
    init->set_data_type(static_cast<int>(DType::kFloat16));
    init->add_dims(4);
    init->set_raw_data(std::string(7, '\0'));  // not whole elements
    m.node("Add", {"x", "odd_w"}, {"y"}, "add");
    m.output("y");
    Error e = load_error(m.bytes(), "odd.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("odd.onnx"), HasSubstr("'odd_w'"), HasSubstr("7 bytes"),
                                HasSubstr("2-byte float16"), HasSubstr("needs 8 bytes")));
  }
  {
    // A Constant node's float16 value with too few int32_data entries: the node is named.
    ModelBuilder m;
    m.input("x", DType::kFloat16, {3});
    auto node = m.node("Constant", {}, {"c"}, "const_half");
    Tensor v = half_tensor({3}, {1, 2, 3});
    node.tensor("value", v);
    auto* t = m.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t();
    t->clear_raw_data();
    t->add_int32_data(0x3c00);
    m.node("Add", {"x", "c"}, {"y"}, "add");
    m.output("y", DType::kFloat16);
    Error e = load_error(m.bytes(), "const.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("const.onnx"), HasSubstr("const_half"), HasSubstr("Constant"),
                                HasSubstr("'value'"), HasSubstr("int32_data holds 1")));
  }
  {
    // int32_data beyond 16 bits is not a float16 pattern.
    ModelBuilder m;
    m.input("x", DType::kFloat32, {1});
    auto* init = m.proto().mutable_graph()->add_initializer();
    init->set_name("big");
    init->set_data_type(static_cast<int>(DType::kBFloat16));
    init->add_dims(1);
    init->add_int32_data(70000);
    m.node("Add", {"x", "big"}, {"y"}, "add");
    m.output("y");
    Error e = load_error(m.bytes(), "big.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("big.onnx"), HasSubstr("'big'"), HasSubstr("70000"), HasSubstr("bfloat16")));
  }
}

// x (float16) * w (float16) -> Cast(to=float16) of a float32 path -> y (float16):
// inputs and outputs keep float16 at the API, the arithmetic is float32, an
// inner Cast to float16 still rounds.
TEST(HalfModel, Float16InputsOutputsAndInnerCast) {
  ModelBuilder m;
  m.input("x", DType::kFloat16, {2, 3});
  m.initializer("w", half_tensor({2, 3}, {1, 2, 3, 0.5f, 0.25f, -1}));
  m.node("Mul", {"x", "w"}, {"p"}, "mul");
  m.node("Cast", {"p"}, {"p32"}, "to32").i("to", 1);
  m.node("Div", {"p32", "three"}, {"q"}, "div");
  m.initializer("three", [] {
    Tensor t = Tensor::zeros(DType::kFloat32, {});
    *t.data<float>() = 3.0f;
    return t;
  }());
  m.node("Cast", {"q"}, {"q16"}, "to16").i("to", 10);  // rounds q to float16
  m.node("Cast", {"q16"}, {"q32"}, "back32").i("to", 1);
  m.node("Sub", {"q", "q32"}, {"err"}, "sub");  // the rounding error: nonzero where q is not a half
  m.node("Cast", {"err"}, {"err16"}, "err_to16").i("to", 10);
  m.output("q16", DType::kFloat16, {2, 3});
  m.output("err", DType::kFloat32, {2, 3});
  auto model = Model::load_from_memory(m.bytes().data(), m.bytes().size(), "half.onnx");
  const std::string& summary = model->info().half_precision;
  EXPECT_THAT(summary, AllOf(HasSubstr("float16 model"), HasSubstr("1 initializer converted to float32 at load"),
                             HasSubstr("2 casts to a half type"), HasSubstr("inputs x float16->float32"),
                             HasSubstr("outputs q16 float32->float16")));
  EXPECT_EQ(model->inputs()[0].dtype, DType::kFloat16);
  EXPECT_EQ(model->outputs()[0].dtype, DType::kFloat16);
  EXPECT_EQ(model->outputs()[0].name, "q16");
  EXPECT_EQ(model->outputs()[1].dtype, DType::kFloat32);

  Session s(model, {.device = Device::kCpu, .threads = 1});
  Tensor x = half_tensor({2, 3}, {1, 1, 1, 2, 4, 3});
  auto y = s.run({{"x", x}});
  ASSERT_EQ(y[0].dtype(), DType::kFloat16);
  ASSERT_EQ(y[0].shape(), (Shape{2, 3}));
  const float q[] = {1.0f / 3, 2.0f / 3, 1.0f, 1.0f / 3, 1.0f / 3, -1.0f};
  for (int i = 0; i < 6; ++i) {
    // The reference: q in float32, then rounded by the conversion tested above.
    EXPECT_EQ(y[0].data<uint16_t>()[i], float_to_half(q[i])) << i;
    EXPECT_EQ(y[1].data<float>()[i], q[i] - half_to_float(float_to_half(q[i]))) << i;
  }
  EXPECT_NE(y[1].data<float>()[0], 0.0f);  // 1/3 is not a half: the inner cast did round
  EXPECT_THAT(s.plan_report(), AllOf(HasSubstr("float16 model"), HasSubstr("rounded to float16 precision"),
                                     HasSubstr("float32 -> float16")));
  // The wrong dtype at the API is refused, naming what is wanted.
  try {
    s.run({{"x", to_float32(x)}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'x'"), HasSubstr("float16"), HasSubstr("float32")));
  }
}

TEST(HalfModel, BFloat16ConstantAndCastLike) {
  ModelBuilder m;
  m.input("x", DType::kBFloat16, {3});
  m.node("Constant", {}, {"c"}, "c").tensor("value", half_tensor({3}, {1.5f, 2, -0.5f}, DType::kBFloat16));
  m.node("Add", {"x", "c"}, {"s"}, "add");
  m.input("like", DType::kBFloat16, {1});
  m.node("Cast", {"s"}, {"s32"}, "to32").i("to", 1);
  m.node("Mul", {"s32", "k"}, {"t"}, "mul");
  m.initializer("k", [] {
    Tensor t = Tensor::zeros(DType::kFloat32, {});
    *t.data<float>() = 1.0f / 3;
    return t;
  }());
  m.node("CastLike", {"t", "like"}, {"y"}, "castlike");
  m.output("y", DType::kBFloat16, {3});
  auto model = Model::load_from_memory(m.bytes().data(), m.bytes().size(), "bf16.onnx");
  EXPECT_THAT(model->info().half_precision,
              AllOf(HasSubstr("bfloat16 model"), HasSubstr("1 Constant value"), HasSubstr("1 cast"),
                    HasSubstr("x bfloat16->float32"), HasSubstr("y float32->bfloat16")));
  Session s(model, {.device = Device::kCpu, .threads = 1});
  Tensor x = half_tensor({3}, {1, 2, 3}, DType::kBFloat16);
  Tensor like = half_tensor({1}, {0}, DType::kBFloat16);
  auto y = s.run({{"x", x}, {"like", like}});
  ASSERT_EQ(y[0].dtype(), DType::kBFloat16);
  const float sum[] = {2.5f, 4.0f, 2.5f};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(y[0].data<uint16_t>()[i], float_to_bfloat16(sum[i] * (1.0f / 3))) << i;
}

// A model the half lowering leaves alone says nothing about precision.
TEST(HalfModel, Float32ModelHasNoSummary) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  auto model = Model::load_from_memory(m.bytes().data(), m.bytes().size(), "f32.onnx");
  EXPECT_EQ(model->info().half_precision, "");
}

}  // namespace
}  // namespace minirt
