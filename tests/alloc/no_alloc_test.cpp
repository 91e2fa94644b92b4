// A steady-state Session::run allocates nothing: after the first runs (which
// plan and size the arena and the outputs), further runs with the same input
// shapes make no heap allocation on any thread. Its own binary, because it
// replaces the global operator new.
#include <minirt/minirt.h>

#include "tests/unit/model_builder.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
// The nothrow forms too, so every form pairs with the deletes below (and a
// sanitizer's own operator new never meets our delete).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace minirt {
namespace {

using testing::ModelBuilder;

std::shared_ptr<const Model> model_with_every_kind_of_step() {
  // Conv (im2col workspace), pooling, broadcast Add, Reshape fed by a folded
  // Shape chain, Concat, Gemm and Softmax-free tail.
  ModelBuilder m;
  m.input("image", DType::kFloat32, {-1, 2, 8, 8}, {"N"});
  m.initializer("w", testing::iota({4, 2, 3, 3}, -0.5f, 0.01f));
  m.initializer("bias", testing::iota({1, 4, 1, 1}, 0.1f, 0.1f));
  m.initializer("fc", testing::iota({3, 32}, 0.2f, -0.01f));
  m.initializer("zero", testing::ints64({0}));
  m.initializer("minus1", testing::ints64({-1}));
  m.node("Conv", {"image", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Add", {"c", "bias"}, {"cb"}, "add_bias");
  m.node("Relu", {"cb"}, {"r"}, "relu");
  m.node("MaxPool", {"r"}, {"p"}, "pool").ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  m.node("AveragePool", {"r"}, {"q"}, "avg").ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  m.node("Concat", {"p", "q"}, {"pq"}, "cat").i("axis", 1);
  m.node("Shape", {"pq"}, {"s"}, "shape");
  m.node("Gather", {"s", "zero"}, {"n"}, "gather");
  m.node("Concat", {"n", "minus1"}, {"target"}, "target").i("axis", 0);
  m.node("Reshape", {"pq", "target"}, {"flat"}, "reshape");
  m.node("Slice", {"flat", "zero", "minus1", "minus1"}, {"sliced"}, "slice");  // drop the last column
  m.output("sliced");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "alloc.onnx");
}

TEST(NoAlloc, SteadyStateRunAllocatesNothing) {
  for (int threads : {1, 2, 4}) {
    // A cache of this test's own, so that the convolution is tuned in the
    // background and its tuned plan takes over before the runs counted.
    const std::string cache =
        ::testing::TempDir() + "no_alloc_cache_" + std::to_string(::getpid()) + "_" + std::to_string(threads) + ".txt";
    std::remove(cache.c_str());
    Session s(model_with_every_kind_of_step(), {.device = Device::kCpu, .threads = threads, .algo_cache_path = cache});
    Tensor x = testing::iota({2, 2, 8, 8}, 0.0f, 0.01f);
    NamedTensors in = {{"image", x}};
    std::vector<Tensor> out;
    s.run(in, out);
    s.wait_for_tuning();  // steady state: the tuned plan has taken over (SessionOptions::tune_in_background)
    s.run(in, out);
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < 20; ++i) s.run(in, out);
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0) << threads << " threads";
    EXPECT_EQ(out[0].shape(), (Shape{2, 127}));
    EXPECT_EQ(s.tuning_report().swaps.size(), 1u) << "the tuned plan did not take over";
    std::remove(cache.c_str());
  }
}

std::shared_ptr<const Model> model_with_newer_ops() {
  // One of each kernel family added for detector exporters: variadic and
  // comparison broadcasting, Where, TopK (index workspace), ArgMax,
  // GatherElements, Tile, DepthToSpace, LayerNormalization with its
  // statistics, a two-pass LogSumExp, a fused Mish, Dropout's mask.
  ModelBuilder m(18, 9);
  m.input("x", DType::kFloat32, {-1, 8, 4, 4}, {"N"});
  m.initializer("w", testing::iota({8, 8, 1, 1}, -0.3f, 0.01f));
  m.initializer("half", testing::iota({1}, 0.5f));
  m.initializer("k", testing::ints64({3}));
  m.initializer("rep", testing::ints64({1, 2}));
  m.initializer("ln_scale", testing::iota({8}, 0.5f, 0.1f));
  m.initializer("axes", testing::ints64({2, 3}));
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  m.node("Mish", {"c"}, {"mish"}, "mish");
  m.node("Max", {"mish", "x", "half"}, {"mx"}, "max");
  m.node("Greater", {"mx", "half"}, {"gt"}, "greater");
  m.node("Where", {"gt", "mx", "x"}, {"wh"}, "where");
  m.node("Dropout", {"wh"}, {"dr", "mask"}, "dropout");
  m.node("DepthToSpace", {"dr"}, {"d2s"}, "d2s").i("blocksize", 2);           // N x 2 x 8 x 8
  m.node("ReduceLogSumExp", {"x", "axes"}, {"lse"}, "lse").i("keepdims", 0);  // N x 8
  m.node("LayerNormalization", {"lse", "ln_scale"}, {"ln", "ln_mean", "ln_inv"}, "ln");
  m.node("TopK", {"ln", "k"}, {"top", "top_idx"}, "topk");
  m.node("ArgMax", {"d2s"}, {"am"}, "argmax").i("axis", 1);
  m.node("GatherElements", {"ln", "top_idx"}, {"ge"}, "gather_elements").i("axis", 1);
  m.node("Tile", {"ge", "rep"}, {"tiled"}, "tile");
  m.output("tiled").output("top").output("ln_inv").output("mask", DType::kBool).output("am", DType::kInt64);
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "alloc_newer_ops.onnx");
}

TEST(NoAlloc, NewerOpsAllocateNothingEither) {
  for (int threads : {1, 3}) {
    Session s(model_with_newer_ops(), {.device = Device::kCpu, .threads = threads});
    Tensor x = testing::iota({2, 8, 4, 4}, -1.0f, 0.01f);
    NamedTensors in = {{"x", x}};
    std::vector<Tensor> out;
    s.run(in, out);
    s.wait_for_tuning();  // steady state: the tuned plan has taken over (SessionOptions::tune_in_background)
    s.run(in, out);
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < 20; ++i) s.run(in, out);
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0) << threads << " threads";
    ASSERT_EQ(out.size(), 5u);
    EXPECT_EQ(out[0].shape(), (Shape{2, 6}));
  }
}

// A float16 model: the input and output conversions and the inner Casts to
// float16 (from float32 and from int32, both lowered to rounding float32
// Casts) allocate nothing either.
TEST(NoAlloc, Float16ModelAllocatesNothingEither) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat16, {-1, 4, 8, 8}, {"N"});
  m.initializer("w", from_float32(testing::iota({4, 4, 3, 3}, -0.2f, 0.003f), DType::kFloat16));
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Cast", {"c"}, {"c16"}, "round16").i("to", static_cast<int64_t>(DType::kFloat16));
  m.node("Cast", {"c16"}, {"ci"}, "to_int").i("to", static_cast<int64_t>(DType::kInt32));
  m.node("Cast", {"ci"}, {"ch"}, "int_to_half").i("to", static_cast<int64_t>(DType::kFloat16));
  m.node("Relu", {"c16"}, {"y"}, "relu");
  m.output("y", DType::kFloat16).output("ch", DType::kFloat16);
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "alloc_fp16.onnx");
  for (int threads : {1, 3}) {
    Session s(model, {.device = Device::kCpu, .threads = threads});
    Tensor x = from_float32(testing::iota({2, 4, 8, 8}, -1.0f, 0.004f), DType::kFloat16);
    NamedTensors in = {{"x", x}};
    std::vector<Tensor> out;
    s.run(in, out);
    s.wait_for_tuning();  // steady state: the tuned plan has taken over (SessionOptions::tune_in_background)
    s.run(in, out);
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < 20; ++i) s.run(in, out);
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0) << threads << " threads";
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].dtype(), DType::kFloat16);
    EXPECT_EQ(out[1].dtype(), DType::kFloat16);
  }
}

TEST(NoAlloc, CountingWorks) {
  // The counter itself must see allocations, or the test above proves nothing.
  g_allocations = 0;
  g_counting = true;
  auto* v = new std::vector<int>(100);
  g_counting = false;
  delete v;
  EXPECT_GE(g_allocations.load(), 1);
}

// bf16 math on the CPU (the packed bf16 input lives in the arena's
// workspace, the packed weights in the kernel): a residual block and a
// classifier allocate nothing either. On a CPU without bf16 instructions
// the session runs float32 and says why; the run must still allocate nothing.
TEST(NoAlloc, Bf16MathAllocatesNothingEither) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {-1, 16, 12, 12}, {"N"});
  m.initializer("w1", testing::iota({32, 16, 3, 3}, -0.2f, 0.0001f));
  m.initializer("w2", testing::iota({32, 32, 1, 1}, -0.1f, 0.0002f));
  m.initializer("fc", testing::iota({32, 10}, -0.05f, 0.001f));
  m.node("Conv", {"x", "w1"}, {"c1"}, "conv1").ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  m.node("Conv", {"r1", "w2"}, {"c2"}, "conv2");
  m.node("Add", {"c2", "r1"}, {"sum"}, "add");
  m.node("Relu", {"sum"}, {"r2"}, "relu2");
  m.node("GlobalAveragePool", {"r2"}, {"gap"}, "gap");
  m.node("Flatten", {"gap"}, {"flat"}, "flatten");
  m.node("MatMul", {"flat", "fc"}, {"y"}, "fc");
  m.output("y");
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "alloc_bf16.onnx");
  for (int threads : {1, 3}) {
    // The rules' choices (bf16 wherever the accuracy policy allows, on AMX):
    // a measured choice may prefer float32 on layers this small.
    Session s(model,
              {.device = Device::kCpu, .threads = threads, .math = MathMode::kBf16, .tuning = TuningMode::kHeuristic});
    Tensor x = testing::iota({2, 16, 12, 12}, -1.0f, 0.001f);
    NamedTensors in = {{"x", x}};
    std::vector<Tensor> out;
    s.run(in, out);
    s.run(in, out);
    if (s.math_reason().find("AMX tiles") != std::string::npos) {
      EXPECT_NE(s.plan_report().find("precision bf16"), std::string::npos) << s.plan_report();
      EXPECT_NE(s.plan_report().find("bf16_gemm"), std::string::npos) << "the classifier's MatMul\n" << s.plan_report();
    }
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < 20; ++i) s.run(in, out);
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0) << threads << " threads; " << s.math_reason();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), (Shape{2, 10}));
  }
}
}  // namespace
}  // namespace minirt
