// The layout pass and the channel-blocked kernels: where the blocked layout
// flows, the reorders at its seams, and that a blocked plan computes what
// the plain plan of the same model does (the plain kernels are checked
// against references and onnxruntime elsewhere), for both blocks (8 on
// AVX2, 16 on AVX-512) where the CPU has them.
#include <minirt/minirt.h>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/sgemm.h"
#include "loaders/onnx/onnx_loader.h"
#include "model_builder.h"
#include "runtime/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace minirt {
namespace {

using cpu::SgemmIsa;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;

using testing::noise;

// The ISAs with a blocked layout that this CPU runs.
std::vector<SgemmIsa> blocked_isas() {
  std::vector<SgemmIsa> v;
  for (SgemmIsa i : {SgemmIsa::kAvx2, SgemmIsa::kAvx512})
    if (cpu::sgemm_isa_supported(i)) v.push_back(i);
  return v;
}

struct IsaScope {
  explicit IsaScope(SgemmIsa i) { cpu::sgemm_force_isa(i); }
  ~IsaScope() { cpu::sgemm_reset_isa(); }
};

struct Planned {
  std::unique_ptr<KernelProvider> cpu;
  std::unique_ptr<Plan> plan;
  std::vector<std::string> ops;
};

Planned plan_of(const std::string& bytes, const std::vector<Tensor>& inputs) {
  Graph g = onnx::load_bytes(bytes.data(), bytes.size(), "t.onnx");
  ThreadPool pool(1);
  std::vector<const Tensor*> in;
  for (const auto& t : inputs) in.push_back(&t);
  Planned p;
  p.cpu = make_cpu_backend(1);
  p.plan = make_plan(g, in, *p.cpu, pool, {});
  for (const auto& s : p.plan->steps) p.ops.push_back(s.op);
  return p;
}

std::vector<Tensor> run(const std::string& bytes, const NamedTensors& in, CpuLayout layout, int threads = 2) {
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "t.onnx");
  Session s(model, {.device = Device::kCpu, .threads = threads, .tuning = TuningMode::kHeuristic, .layout = layout});
  return s.run(in);
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape()) << what;
    for (int64_t i = 0; i < got[o].numel(); ++i) {
      float a = got[o].data<float>()[i], b = want[o].data<float>()[i];
      ASSERT_NEAR(a, b, tol * (1.0f + std::fabs(b))) << what << ": output " << o << " element " << i;
    }
  }
}

TEST(Layout, ReordersPutEveryElementWhereTheLayoutSays) {
  for (int b : {8, 16}) {
    SgemmIsa isa = b == 16 ? SgemmIsa::kAvx512 : SgemmIsa::kAvx2;
    bool vector = cpu::sgemm_isa_supported(isa);  // else the portable path
    for (int64_t n : {1, 2})
      for (int64_t c : {1, 5, 8, 16, 19, 40})
        for (int64_t hw : {1, 7, 16, 33, 1500}) {
          Tensor x = noise({n, c, hw}, static_cast<uint32_t>(c * 100 + hw));
          int64_t cb = cpu::nchwc_blocks(c, b);
          std::vector<float> blocked(static_cast<size_t>(n * cb * hw * b), -7.0f),
              back(static_cast<size_t>(n * c * hw));
          for (int threads : {1, 3}) {
            ThreadPool pool(threads);
            cpu::nchwc_reorder_to_blocked(x.data<float>(), blocked.data(), n, c, hw, b, pool);
            for (int64_t i = 0; i < n; ++i)
              for (int64_t k = 0; k < cb * b; ++k)
                for (int64_t p = 0; p < hw; ++p) {
                  float want = k < c ? x.data<float>()[(i * c + k) * hw + p] : 0.0f;
                  ASSERT_EQ(blocked[static_cast<size_t>(((i * cb + k / b) * hw + p) * b + k % b)], want)
                      << "b=" << b << " vector=" << vector << " n=" << n << " c=" << c << " hw=" << hw;
                }
            cpu::nchwc_reorder_to_plain(blocked.data(), back.data(), n, c, hw, b, pool);
            ASSERT_EQ(0, std::memcmp(back.data(), x.data<float>(), back.size() * sizeof(float)));
          }
        }
  }
}

// A small CNN: stem Conv on the image, Relu, a Conv pair with a residual
// Add, BatchNormalization on its own, a per-channel gate (squeeze-excitation
// style: GlobalAveragePool -> Conv -> Sigmoid -> Mul), a constant scale, and
// a plain-only tail (Flatten, Gemm). `c` channels, not a multiple of 8 or 16
// by default.
std::string small_cnn(int c) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3, 9, 11});
  m.initializer("w0", noise({c, 3, 3, 3}, 1)).initializer("b0", noise({c}, 2));
  m.initializer("w1", noise({c, c, 3, 3}, 3)).initializer("w2", noise({c, c, 1, 1}, 4));
  m.initializer("wse", noise({c, c, 1, 1}, 5));
  m.initializer("bn_s", noise({c}, 6)).initializer("bn_b", noise({c}, 7)).initializer("bn_m", noise({c}, 8));
  Tensor var = noise({c}, 9);
  for (int64_t i = 0; i < c; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.5f;
  m.initializer("bn_v", var);
  Tensor k = noise({1, c, 1, 1}, 10);
  m.initializer("k", k);
  m.initializer("fc", noise({c * 5 * 6, 4}, 11));
  m.node("Conv", {"x", "w0", "b0"}, {"s0"}, "stem").ints("pads", {1, 1, 1, 1}).ints("strides", {2, 2});
  m.node("Relu", {"s0"}, {"a0"}, "relu0");
  m.node("Conv", {"a0", "w1"}, {"s1"}, "conv1").ints("pads", {1, 1, 1, 1});
  m.initializer("slope", noise({c, 1, 1}, 32));
  m.node("PRelu", {"s1", "slope"}, {"a1"}, "prelu1");  // per-channel slope: blocked, not fused
  m.node("Conv", {"a1", "w2"}, {"s2"}, "conv2");
  m.node("Add", {"s2", "a0"}, {"r"}, "add");
  m.node("BatchNormalization", {"r", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"}, "bn");
  m.node("GlobalAveragePool", {"bn"}, {"gap"}, "gap");
  m.node("Conv", {"gap", "wse"}, {"se"}, "se");
  m.node("Sigmoid", {"se"}, {"gate"}, "sig");
  m.node("Mul", {"bn", "gate"}, {"g"}, "mul");
  m.node("Mul", {"g", "k"}, {"gk0"}, "scale");
  Tensor kd = noise({c, 1, 1}, 31);
  for (int64_t i = 0; i < c; ++i) kd.data<float>()[i] += 2.0f;  // away from 0
  m.initializer("kd", kd);
  m.node("Div", {"gk0", "kd"}, {"gk"}, "div");
  m.node("Flatten", {"gk"}, {"f"}, "flat");
  m.node("Gemm", {"f", "fc"}, {"y"}, "fc");
  m.output("y");
  m.output("gk");  // a blocked value that is also a graph output
  return m.bytes();
}

TEST(Layout, BlockedFlowsFromTheStemToThePlainTailWithFewReorders) {
  for (SgemmIsa isa : blocked_isas()) {
    IsaScope scope(isa);
    int b = cpu::nchwc_block(isa);
    Tensor x = noise({2, 3, 9, 11}, 12);
    Planned p = plan_of(small_cnn(12), {x});
    EXPECT_EQ(p.plan->stats.block, b);
    std::string report = p.plan->report();
    EXPECT_THAT(report, HasSubstr("layout: nchw" + std::to_string(b) + "c"));
    // The stem reads the image as it is; GlobalAveragePool runs plain (for
    // now), so its input and the gate's way back are the seams; the graph
    // output gk leaves plain once for Flatten and the caller alike.
    int to_blocked = 0, to_plain = 0;
    for (const auto& op : p.ops) {
      to_blocked += op == "ReorderToBlocked";
      to_plain += op == "ReorderToPlain";
    }
    EXPECT_GE(to_plain, 1);
    EXPECT_LE(to_blocked + to_plain, 4) << report;
    EXPECT_EQ(p.plan->stats.reorders, to_blocked + to_plain);
    // Outputs keep their names and the plain layout.
    for (int v : p.plan->output_values) EXPECT_EQ(p.plan->graph.values[v].block, 0);
    EXPECT_EQ(p.plan->graph.values[p.plan->output_values[1]].name, "gk");
  }
}

TEST(Layout, BlockedPlanComputesWhatThePlainPlanDoes) {
  for (SgemmIsa isa : blocked_isas()) {
    IsaScope scope(isa);
    for (int c : {5, 8, 12, 16, 20, 33}) {
      std::string bytes = small_cnn(c);
      NamedTensors in{{"x", noise({2, 3, 9, 11}, 13)}};
      for (int threads : {1, 3})
        expect_same(run(bytes, in, CpuLayout::kAuto, threads), run(bytes, in, CpuLayout::kNchw, threads), 1e-4f,
                    std::string(cpu::sgemm_isa_name(isa)) + " c=" + std::to_string(c));
    }
  }
}

TEST(Layout, NchwOptionAndGenericIsaKeepEverythingPlain) {
  std::string bytes = small_cnn(12);
  Tensor x = noise({2, 3, 9, 11}, 14);
  {
    IsaScope scope(SgemmIsa::kGeneric);
    Planned p = plan_of(bytes, {x});
    EXPECT_EQ(p.plan->stats.block, 0);
    for (const Value& v : p.plan->graph.values) EXPECT_EQ(v.block, 0);
  }
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "t.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1, .layout = CpuLayout::kNchw});
  s.run({{"x", x}});
  EXPECT_THAT(s.plan_report(), Not(HasSubstr("Reorder")));
}

TEST(Layout, AValueReadPlainTwiceIsReorderedOnce) {
  for (SgemmIsa isa : blocked_isas()) {
    IsaScope scope(isa);
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 4, 5, 5});
    m.initializer("w", noise({8, 4, 3, 3}, 15));
    m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
    m.node("Transpose", {"c"}, {"t1"}, "t1").ints("perm", {0, 2, 3, 1});
    m.node("Softmax", {"c"}, {"t2"}, "t2").i("axis", 1);
    m.output("t1");
    m.output("t2");
    Planned p = plan_of(m.bytes(), {noise({1, 4, 5, 5}, 16)});
    EXPECT_EQ(p.plan->stats.reorders, 1);
    NamedTensors in{{"x", noise({1, 4, 5, 5}, 16)}};
    expect_same(run(m.bytes(), in, CpuLayout::kAuto), run(m.bytes(), in, CpuLayout::kNchw), 1e-5f, "two readers");
  }
}

TEST(Layout, BroadcastsThatAreNotPerChannelRunPlain) {
  for (SgemmIsa isa : blocked_isas()) {
    IsaScope scope(isa);
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 4, 5, 6});
    m.input("row", DType::kFloat32, {1, 1, 1, 6});
    m.initializer("w", noise({4, 4, 1, 1}, 17));
    m.node("Conv", {"x", "w"}, {"c"}, "conv");
    m.node("Add", {"c", "row"}, {"y"}, "add");  // broadcast along W: not a blocked case
    m.output("y");
    Planned p = plan_of(m.bytes(), {noise({1, 4, 5, 6}, 18), noise({1, 1, 1, 6}, 19)});
    EXPECT_EQ(p.ops, (std::vector<std::string>{"Conv", "ReorderToPlain", "Add"}));
    NamedTensors in{{"x", noise({1, 4, 5, 6}, 18)}, {"row", noise({1, 1, 1, 6}, 19)}};
    expect_same(run(m.bytes(), in, CpuLayout::kAuto), run(m.bytes(), in, CpuLayout::kNchw), 1e-5f, "row add");
  }
}

// SPP-like: a Conv, two chained MaxPools of it, the three concatenated,
// then a Conv. `c` channels per branch.
std::string spp_model(int64_t n, int c) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {n, 3, 7, 7});
  m.initializer("w0", noise({c, 3, 3, 3}, 21)).initializer("w1", noise({4, 3 * c, 1, 1}, 22));
  m.node("Conv", {"x", "w0"}, {"a"}, "conv0").ints("pads", {1, 1, 1, 1});
  m.node("MaxPool", {"a"}, {"p1"}, "pool1").ints("kernel_shape", {5, 5}).ints("pads", {2, 2, 2, 2});
  m.node("MaxPool", {"p1"}, {"p2"}, "pool2").ints("kernel_shape", {5, 5}).ints("pads", {2, 2, 2, 2});
  m.node("Concat", {"a", "p1", "p2"}, {"cat"}, "cat").i("axis", 1);
  m.node("Conv", {"cat", "w1"}, {"y"}, "conv1");
  m.output("y");
  return m.bytes();
}

// Where the plan put each of the Concat's inputs relative to its output, in
// bytes; empty when the Concat was not made in place.
std::vector<int64_t> concat_slices(const Plan& p) {
  for (const Step& s : p.steps) {
    if (s.op != "Concat" || s.kernel->describe().find("in place") == std::string::npos) continue;
    std::vector<int64_t> d;
    for (int v : s.inputs)
      d.push_back(static_cast<int64_t>(p.offset[v]) - static_cast<int64_t>(p.offset[s.outputs[0]]));
    return d;
  }
  return {};
}

TEST(Layout, ConcatOfBatchOneIsMadeInPlace) {
  for (CpuLayout layout : {CpuLayout::kNchw, CpuLayout::kAuto}) {
    std::string bytes = spp_model(1, 16);
    Tensor x = noise({1, 3, 7, 7}, 23);
    Graph g = onnx::load_bytes(bytes.data(), bytes.size(), "t.onnx");
    ThreadPool pool(1);
    auto cpu = make_cpu_backend(1);
    auto plan = make_plan(g, {&x}, *cpu, pool, {.blocked_layout = layout == CpuLayout::kAuto});
    EXPECT_EQ(plan->stats.concats_elided, 1) << plan->report();
    int64_t slice = 16 * 7 * 7 * 4;  // 16 channels are whole blocks of 8 or 16
    EXPECT_EQ(concat_slices(*plan), (std::vector<int64_t>{0, slice, 2 * slice})) << plan->report();
    NamedTensors in{{"x", x}};
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "t.onnx");
    Session fused(model, {.device = Device::kCpu, .threads = 2, .layout = layout});
    Session plain(model, {.device = Device::kCpu, .threads = 2, .optimize = false});
    expect_same(fused.run(in), plain.run(in), 1e-5f, "spp");
  }
}

TEST(Layout, ConcatIsCopiedWhenItsSlicesAreNotContiguous) {
  // Batch 2: each image's slice is apart from the next image's.
  std::string two = spp_model(2, 16);
  Tensor x2 = noise({2, 3, 7, 7}, 24);
  Planned p = plan_of(two, {x2});
  EXPECT_EQ(p.plan->stats.concats_elided, 0);
  NamedTensors in{{"x", x2}};
  expect_same(run(two, in, CpuLayout::kAuto), run(two, in, CpuLayout::kNchw), 1e-5f, "batch 2");
  // 12 channels: not whole blocks, so in the blocked layout the second
  // input would start inside a block of the output.
  for (SgemmIsa isa : blocked_isas()) {
    IsaScope scope(isa);
    std::string odd = spp_model(1, 12);
    Tensor x = noise({1, 3, 7, 7}, 25);
    Planned q = plan_of(odd, {x});
    bool blocked_cat = false;
    for (const Step& s : q.plan->steps)
      if (s.op == "Concat") blocked_cat = q.plan->graph.values[s.outputs[0]].block > 0;
    EXPECT_EQ(q.plan->stats.concats_elided, blocked_cat ? 0 : 1) << q.plan->report();
    NamedTensors one{{"x", x}};
    expect_same(run(odd, one, CpuLayout::kAuto), run(odd, one, CpuLayout::kNchw), 1e-5f, "12 channels");
  }
}

}  // namespace
}  // namespace minirt
