// The Session API: bad input at run time gets a clear error, plans follow
// input shapes, and the device choice is explained.
// (That a steady-state run allocates nothing is tests/alloc/no_alloc_test.cpp.)
#include <minirt/minirt.h>

#include "model_builder.h"
#include "runtime/gpu/probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace minirt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;

// conv (3x3, pad 1) -> relu -> global average pool -> flatten -> gemm, with a
// symbolic batch.
std::shared_ptr<const Model> small_cnn() {
  ModelBuilder m;
  m.input("image", DType::kFloat32, {-1, 2, 6, 6}, {"N"});
  m.initializer("w", testing::iota({4, 2, 3, 3}, -0.5f, 0.01f));
  m.initializer("b", testing::iota({4}, 0.1f, 0.1f));
  m.initializer("fc", testing::iota({3, 4}, 0.2f, -0.05f));
  m.node("Conv", {"image", "w", "b"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("GlobalAveragePool", {"r"}, {"p"}, "gap");
  m.node("Flatten", {"p"}, {"f"}, "flat");
  m.node("Gemm", {"f", "fc"}, {"logits"}, "fc").i("transB", 1);
  m.output("logits");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "small_cnn.onnx");
}

Error run_error(Session& s, const NamedTensors& in) {
  try {
    s.run(in);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "run succeeded";
  return Error(ErrorCode::kInternal, "");
}

TEST(Session, CastOfFloatsOutsideTheIntegerRangeSaturates) {
  // C++ leaves float-to-int conversion of NaN and out-of-range values
  // undefined; minirt defines it: NaN gives 0, the rest the nearest end of
  // the range. (The sanitizer run checks that no undefined conversion
  // happens on the way.)
  ModelBuilder m;
  m.input("x", DType::kFloat32, {6});
  m.node("Cast", {"x"}, {"i64"}, "to_i64").i("to", 7);
  m.node("Cast", {"x"}, {"i32"}, "to_i32").i("to", 6);
  m.node("Cast", {"x"}, {"u8"}, "to_u8").i("to", 2);
  m.output("i64", DType::kInt64).output("i32", DType::kInt32).output("u8", DType::kUInt8);
  std::string bytes = m.bytes();
  Session s(Model::load_from_memory(bytes.data(), bytes.size(), "cast.onnx"), {.device = Device::kCpu, .threads = 1});
  Tensor x = Tensor::zeros(DType::kFloat32, {6});
  const float v[] = {std::numeric_limits<float>::quiet_NaN(), 1e30f, -1e30f, 3.9f, -3.9f, 300.0f};
  std::memcpy(x.data<float>(), v, sizeof v);
  std::vector<Tensor> out = s.run({{"x", x}});
  ASSERT_EQ(out.size(), 3u);
  const int64_t want64[] = {0, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 3, -3, 300};
  const int32_t want32[] = {0, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 3, -3, 300};
  const uint8_t want8[] = {0, 255, 0, 3, 0, 255};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(out[0].data<int64_t>()[i], want64[i]) << i;
    EXPECT_EQ(out[1].data<int32_t>()[i], want32[i]) << i;
    EXPECT_EQ(out[2].data<uint8_t>()[i], want8[i]) << i;
  }
}

TEST(Session, MatMulWithAnEmptyBatchAgainstASharedMatrixComputesNothing) {
  // Found by fuzz_model: the batch axis 0 of A broadcast against B's
  // missing one was taken as max(0, 1) = 1, and the kernel wrote a matrix
  // into an output with no elements.
  ModelBuilder m;
  m.input("a", DType::kFloat32, {0, 1, 6});
  m.input("b3", DType::kFloat32, {1, 6, 2});
  m.initializer("k", testing::iota({6, 2}, 0.5f, 0.25f));
  m.node("MatMul", {"a", "k"}, {"y"}, "shared_b");
  m.node("MatMul", {"a", "b3"}, {"z"}, "batched_b");
  m.output("y").output("z");
  std::string bytes = m.bytes();
  Session s(Model::load_from_memory(bytes.data(), bytes.size(), "empty_matmul.onnx"),
            {.device = Device::kCpu, .threads = 2});
  std::vector<Tensor> out = s.run({{"a", Tensor::zeros(DType::kFloat32, {0, 1, 6})}, {"b3", testing::iota({1, 6, 2})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{0, 1, 2}));
  EXPECT_EQ(out[1].shape(), (Shape{0, 1, 2}));
}

TEST(Session, UnknownInputNameListsTheRealOnes) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
  Error e = run_error(s, {{"img", Tensor::zeros(DType::kFloat32, {1, 2, 6, 6})}});
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("small_cnn.onnx"), HasSubstr("'img'"), HasSubstr("'image'")));
}

TEST(Session, MissingInput) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
  Error e = run_error(s, {});
  EXPECT_THAT(e.what(), HasSubstr("'image' was not given"));
}

TEST(Session, WrongDtypeRankAndShape) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
  EXPECT_THAT(run_error(s, {{"image", Tensor::zeros(DType::kInt64, {1, 2, 6, 6})}}).what(),
              AllOf(HasSubstr("'image'"), HasSubstr("float32"), HasSubstr("int64")));
  EXPECT_THAT(run_error(s, {{"image", Tensor::zeros(DType::kFloat32, {2, 6, 6})}}).what(),
              AllOf(HasSubstr("'image'"), HasSubstr("rank 4")));
  EXPECT_THAT(run_error(s, {{"image", Tensor::zeros(DType::kFloat32, {1, 3, 6, 6})}}).what(),
              AllOf(HasSubstr("'image'"), HasSubstr("1x3x6x6")));
}

TEST(Session, NullBufferAndEmptyTensorAreRefused) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
  EXPECT_THAT(run_error(s, {{"image", Tensor::wrap(DType::kFloat32, {1, 2, 6, 6}, nullptr)}}).what(),
              HasSubstr("null"));
  EXPECT_THAT(run_error(s, {{"image", Tensor()}}).what(), HasSubstr("empty"));
}

TEST(Session, InputGivenTwice) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
  Tensor x = Tensor::zeros(DType::kFloat32, {1, 2, 6, 6});
  EXPECT_THAT(run_error(s, {{"image", x}, {"image", x}}).what(), HasSubstr("twice"));
}

TEST(Session, SessionStaysUsableAfterAnError) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
  run_error(s, {{"image", Tensor::zeros(DType::kFloat32, {1, 3, 6, 6})}});
  auto out = s.run({{"image", Tensor::zeros(DType::kFloat32, {1, 2, 6, 6})}});
  EXPECT_EQ(out[0].shape(), (Shape{1, 3}));
}

TEST(Session, BatchChangeReplansAndEachItemMatchesBatchOne) {
  auto model = small_cnn();
  Session s(model, {.device = Device::kCpu, .threads = 2});
  Tensor one = testing::iota({1, 2, 6, 6}, -1.0f, 0.03f);
  std::vector<Tensor> first = s.run({{"image", one}});
  std::vector<float> single(first[0].data<float>(), first[0].data<float>() + 3);
  EXPECT_EQ(s.plans_made(), 1);
  Tensor three = Tensor::zeros(DType::kFloat32, {3, 2, 6, 6});
  for (int k = 0; k < 3; ++k) std::copy(one.data<float>(), one.data<float>() + 72, three.data<float>() + 72 * k);
  auto out = s.run({{"image", three}});
  EXPECT_EQ(s.plans_made(), 2);
  ASSERT_EQ(out[0].shape(), (Shape{3, 3}));
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(out[0].data<float>()[k * 3 + j], single[j], 1e-5f);
  s.run({{"image", three}});
  EXPECT_EQ(s.plans_made(), 2);  // same shape: the plan is kept
}

TEST(Session, DeviceChoiceIsExplained) {
  Session cpu(small_cnn(), {.device = Device::kCpu});
  EXPECT_EQ(cpu.device(), Device::kCpu);
  EXPECT_THAT(cpu.device_reason(), HasSubstr("as requested"));
  // Auto follows the compatibility gate: the GPU where the stack is usable,
  // else the CPU with the gate's sentence; cuda fails with that sentence.
  const gpu::GateResult& gate = gpu::check_gpu_stack();
  Session autod(small_cnn(), {.device = Device::kAuto});
  if (!gate.usable) {
    EXPECT_EQ(autod.device(), Device::kCpu);
    EXPECT_THAT(autod.device_reason(), HasSubstr("running on the CPU: "));
    const gpu::Verdict* fatal = gate.first_fatal();
    ASSERT_NE(fatal, nullptr);
    EXPECT_THAT(autod.device_reason(), HasSubstr(fatal->message));
    try {
      Session cuda(small_cnn(), {.device = Device::kCuda});
      FAIL() << "Device::kCuda succeeded without a usable GPU stack";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDeviceUnavailable);
      EXPECT_THAT(e.what(), HasSubstr(fatal->message));
    }
  } else {
    EXPECT_THAT(autod.device_reason(), HasSubstr("cuda"));
  }
}

TEST(Session, ThreadsOption) {
  Session a(small_cnn(), {.device = Device::kCpu, .threads = 3});
  EXPECT_EQ(a.threads(), 3);
  Session b(small_cnn(), {.device = Device::kCpu});
  EXPECT_GE(b.threads(), 1);
}

TEST(Session, ResultsDoNotDependOnThreadCount) {
  Tensor x = testing::iota({2, 2, 6, 6}, -1.0f, 0.013f);
  Session one(small_cnn(), {.device = Device::kCpu, .threads = 1});
  Session four(small_cnn(), {.device = Device::kCpu, .threads = 4});
  auto a = one.run({{"image", x}});
  auto b = four.run({{"image", x}});
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(a[0].data<float>()[i], b[0].data<float>()[i], 1e-5f);
}

TEST(Session, PlanReportShowsStepsShapesAndArena) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
  EXPECT_EQ(s.plan_report(), "");
  s.run({{"image", Tensor::zeros(DType::kFloat32, {1, 2, 6, 6})}});
  std::string r = s.plan_report();
  EXPECT_THAT(r,
              AllOf(HasSubstr("Conv+Relu"), HasSubstr("1x2x6x6"), HasSubstr("arena:"), HasSubstr("GlobalAveragePool")));
  EXPECT_GT(s.arena_bytes(), 0u);
}

TEST(Session, ProfileRecordsEveryStep) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 1, .profile = true});
  s.run({{"image", Tensor::zeros(DType::kFloat32, {1, 2, 6, 6})}});
  const auto& p = s.last_profile();
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p[0].op, "Conv+Relu");
  for (const auto& st : p) EXPECT_GE(st.duration_us, 0.0);
}

TEST(Session, OutputsOwnTheirMemory) {
  std::vector<Tensor> kept;
  {
    Session s(small_cnn(), {.device = Device::kCpu, .threads = 1});
    kept = s.run({{"image", testing::iota({1, 2, 6, 6})}});
  }
  EXPECT_TRUE(std::isfinite(kept[0].data<float>()[0]));
}

}  // namespace
}  // namespace minirt

namespace minirt {
namespace {

TEST(SessionMemory, LimitRefusesALargeBatchAndTheSessionRecovers) {
  auto model = small_cnn();
  // Batch 1 needs a few KiB of arena; batch 512 needs about 1 MiB.
  Session s(model, {.device = Device::kCpu, .threads = 1, .memory_limit = 256 * 1024});
  auto small = s.run({{"image", testing::iota({1, 2, 6, 6}, 0.0f, 0.01f)}});
  try {
    s.run({{"image", Tensor::zeros(DType::kFloat32, {512, 2, 6, 6})}});
    FAIL() << "the limit was not enforced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("small_cnn.onnx"), HasSubstr("image 512x2x6x6"), HasSubstr("memory limit"),
                                HasSubstr("smaller batch")));
  }
  auto again = s.run({{"image", testing::iota({1, 2, 6, 6}, 0.0f, 0.01f)}});
  EXPECT_EQ(std::memcmp(small[0].raw(), again[0].raw(), small[0].nbytes()), 0);
}

}  // namespace
}  // namespace minirt

// The session's memory pool: pressure, growth, reuse, trim and the policies.
namespace minirt {
namespace {

std::vector<float> floats(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

TEST(SessionMemory, UnderPressureTheRunFailsWithThePoolsSentenceAndASmallerInputThenRuns) {
  auto model = small_cnn();
  Session unlimited(model, {.device = Device::kCpu, .threads = 1});
  Session s(model, {.device = Device::kCpu, .threads = 1, .memory_limit = 256 * 1024});
  Tensor big = testing::iota({512, 2, 6, 6}, -1.0f, 0.0001f);
  unlimited.run({{"image", big}});
  ASSERT_GT(unlimited.arena_bytes(), 256u * 1024);  // the cap is below what batch 512 needs
  try {
    s.run({{"image", big}});
    FAIL() << "the cap was not enforced";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    std::string asked = "(" + std::to_string(unlimited.arena_bytes()) + " bytes) for the activation arena";
    EXPECT_THAT(e.what(), AllOf(HasSubstr("host memory pool: cannot allocate"), HasSubstr(asked),
                                HasSubstr("small_cnn.onnx (inputs image 512x2x6x6)"), HasSubstr("reserved in"),
                                HasSubstr("in use"), HasSubstr("largest free block"), HasSubstr("fragmentation"),
                                HasSubstr("memory limit is 256.0 KiB"), HasSubstr("smaller batch"),
                                HasSubstr("SessionOptions::memory_limit"), Not(HasSubstr("--memory-limit"))));
  }
  EXPECT_LE(s.memory_stats().reserved_bytes, 256u * 1024);
  // The same session, a smaller input: correct, and within the cap.
  Tensor two = testing::iota({2, 2, 6, 6}, -1.0f, 0.01f);
  auto want = unlimited.run({{"image", two}});
  auto got = s.run({{"image", two}});
  EXPECT_EQ(floats(got[0]), floats(want[0]));
  MemoryStats m = s.memory_stats();
  EXPECT_LE(m.reserved_bytes, 256u * 1024);
  EXPECT_EQ(m.limit_bytes, 256u * 1024);
  EXPECT_GE(m.in_use_bytes, s.arena_bytes());
}

TEST(SessionMemory, ALargerBatchGrowsThePoolAndASmallerOneReusesIt) {
  Session s(small_cnn(), {.device = Device::kCpu, .threads = 2});
  EXPECT_EQ(s.memory_stats().reserved_bytes, 0u);  // nothing before the first run
  Tensor one = testing::iota({1, 2, 6, 6}, -1.0f, 0.03f);
  auto first = s.run({{"image", one}});
  size_t small_arena = s.arena_bytes();
  MemoryStats a = s.memory_stats();
  EXPECT_EQ(a.allocations, 1u);
  EXPECT_GE(a.in_use_bytes, small_arena);
  EXPECT_GE(a.reserved_bytes, a.in_use_bytes);
  EXPECT_EQ(a.segments, 1u);

  // Batch 4096 needs an arena larger than the first segment: the pool grows.
  const int64_t n = 4096;
  Tensor batch = Tensor::zeros(DType::kFloat32, {n, 2, 6, 6});
  for (int64_t k = 0; k < n; ++k) std::copy(one.data<float>(), one.data<float>() + 72, batch.data<float>() + 72 * k);
  auto out = s.run({{"image", batch}});
  size_t big_arena = s.arena_bytes();
  ASSERT_GT(big_arena, a.reserved_bytes);
  MemoryStats b = s.memory_stats();
  EXPECT_GT(b.reserved_bytes, a.reserved_bytes);
  EXPECT_EQ(b.allocations, 2u);
  EXPECT_EQ(b.frees, 1u);  // the small arena went back to the pool first
  EXPECT_GE(b.in_use_bytes, big_arena);
  EXPECT_GE(b.peak_in_use_bytes, big_arena);
  for (int64_t k = 0; k < n; k += 511)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(out[0].data<float>()[k * 3 + j], first[0].data<float>()[j], 1e-5f);

  // Back to batch 1: the large arena is reused, nothing new is reserved.
  auto again = s.run({{"image", one}});
  MemoryStats c = s.memory_stats();
  EXPECT_EQ(c.allocations, 2u);
  EXPECT_EQ(c.reserved_bytes, b.reserved_bytes);
  EXPECT_EQ(floats(again[0]), floats(first[0]));

  // trim() gives the cached memory back; the session runs on, taking what it needs.
  EXPECT_EQ(s.trim(), b.reserved_bytes);
  MemoryStats d = s.memory_stats();
  EXPECT_EQ(d.reserved_bytes, 0u);
  EXPECT_EQ(d.in_use_bytes, 0u);
  EXPECT_EQ(d.segments, 0u);
  auto after = s.run({{"image", one}});
  EXPECT_EQ(floats(after[0]), floats(first[0]));
  MemoryStats e = s.memory_stats();
  EXPECT_EQ(e.allocations, 3u);
  EXPECT_GE(e.in_use_bytes, small_arena);
  EXPECT_EQ(e.peak_in_use_bytes, b.peak_in_use_bytes);
}

TEST(SessionMemory, PreallocatePolicyReservesUpFrontAndDoesNotGrow) {
  auto model = small_cnn();
  Session s(model, {.device = Device::kCpu,
                    .threads = 1,
                    .memory_limit = 256 * 1024,
                    .memory_policy = MemoryPolicy::kPreallocate,
                    .preallocate_fraction = 1.0});
  MemoryStats m = s.memory_stats();
  EXPECT_EQ(m.reserved_bytes, 256u * 1024);  // all free memory, capped by the limit
  EXPECT_EQ(m.segments, 1u);
  EXPECT_EQ(m.in_use_bytes, 0u);
  EXPECT_EQ(m.limit_bytes, 256u * 1024);
  Tensor one = testing::iota({1, 2, 6, 6}, 0.0f, 0.01f);
  auto first = s.run({{"image", one}});
  EXPECT_EQ(s.memory_stats().reserved_bytes, 256u * 1024);
  Error e = run_error(s, {{"image", Tensor::zeros(DType::kFloat32, {512, 2, 6, 6})}});
  EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("preallocated at 256.0 KiB"), HasSubstr("does not grow"),
                              HasSubstr("smaller batch"), HasSubstr("grow policy")));
  EXPECT_EQ(floats(s.run({{"image", one}})[0]), floats(first[0]));
}

TEST(SessionMemory, PreallocateNeedsAFraction) {
  for (double f : {0.0, 1.5}) {
    try {
      Session s(small_cnn(),
                {.device = Device::kCpu, .memory_policy = MemoryPolicy::kPreallocate, .preallocate_fraction = f});
      ADD_FAILURE() << "fraction " << f << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(e.what(), AllOf(HasSubstr("preallocate_fraction"), HasSubstr("(0, 1]")));
    }
  }
}

// Shape operands computed at run time from an input's values: Range's limit
// is Add(n, 1) of a scalar input, Pad's pads a Concat of an input with
// zeros. The plan is made per value of those inputs (the computation folded
// at plan time), as for an input read directly as a shape operand.
TEST(Session, ShapeOperandsComputedFromInputValuesArePlannedPerValue) {
  ModelBuilder m(13);
  m.input("n", DType::kInt64, {});
  m.input("left", DType::kInt64, {1});
  m.input("x", DType::kFloat32, {3});
  m.initializer("one", testing::ints64({1}));
  m.initializer("zero", testing::ints64({0}));
  m.initializer("zeros", testing::ints64({0}));
  m.node("Add", {"n", "one"}, {"limit"}, "limit");
  m.node("Squeeze", {"limit"}, {"limit0"}, "squeeze");
  m.node("Squeeze", {"zero"}, {"start"}, "start");
  m.node("Squeeze", {"one"}, {"step"}, "step");
  m.node("Range", {"start", "limit0", "step"}, {"ids"}, "range");
  m.node("Concat", {"left", "zeros"}, {"pads"}, "pads").i("axis", 0);
  m.node("Pad", {"x", "pads"}, {"padded"}, "pad");
  m.output("ids");
  m.output("padded");
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "operands.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1});
  auto scalar = [](int64_t v) {
    Tensor t = Tensor::zeros(DType::kInt64, {});
    *t.data<int64_t>() = v;
    return t;
  };
  Tensor x = testing::iota({3}, 1.0f, 1.0f);  // 1, 2, 3
  for (int64_t n : {4, 0, 4, 6}) {
    int64_t left = n % 3;
    std::vector<Tensor> out = s.run({{"n", scalar(n)}, {"left", testing::ints64({left})}, {"x", x.clone()}});
    ASSERT_EQ(out[0].shape(), Shape({n + 1})) << "n = " << n;
    for (int64_t i = 0; i <= n; ++i) EXPECT_EQ(out[0].data<int64_t>()[i], i);
    ASSERT_EQ(out[1].shape(), Shape({3 + left}));
    for (int64_t i = 0; i < left; ++i) EXPECT_EQ(out[1].data<float>()[i], 0.0f);
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(out[1].data<float>()[left + i], static_cast<float>(i + 1));
  }
  EXPECT_EQ(s.plans_made(), 3);  // n = 4 twice: its plan is kept
}

}  // namespace
}  // namespace minirt
