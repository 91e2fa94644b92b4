// The planner's stages on their own: placement (runtime/placement.h) and the
// memory plan (runtime/memory_plan.h), with the op facts they read from the
// schemas (view, joins_inputs, reads_shape_only) instead of op names.
#include <minirt/minirt.h>

#include "fake_device.h"
#include "kernels/cpu/cpu_backend.h"
#include "model_builder.h"
#include "runtime/api/model_impl.h"
#include "runtime/memory_plan.h"
#include "runtime/op_registry.h"
#include "runtime/placement.h"
#include "runtime/thread_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace minirt {
namespace {

using testing::FakeDevice;
using ::testing::HasSubstr;
using testing::ModelBuilder;

std::shared_ptr<const Model> load(const ModelBuilder& m, const char* name) {
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), name);
}

// x -> Conv -> Relu -> MaxPool -> Flatten -> y
std::shared_ptr<const Model> chain() {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 2, 8, 8});
  m.initializer("w", testing::iota({4, 2, 3, 3}, -0.3f, 0.01f));
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("MaxPool", {"r"}, {"p"}, "pool").ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  m.node("Flatten", {"p"}, {"y"}, "flatten");
  m.output("y");
  return load(m, "chain.onnx");
}

int node_named(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

int value_named(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].name == name) return static_cast<int>(i);
  return -1;
}

TEST(PlanStages, PlacementTakesTheFirstDeviceThatSupportsEachNode) {
  auto model = chain();
  const Graph& g = model->impl().graph;
  auto cpu = make_cpu_backend(1);
  FakeDevice only_conv({"Conv"}), most({"Conv", "Relu", "MaxPool"});
  Placement p = place_nodes(g, g.topo_order(), *cpu, {&only_conv, &most});
  EXPECT_EQ(p.node_space[node_named(g, "conv")], 1);
  EXPECT_EQ(p.node_space[node_named(g, "relu")], 2);
  EXPECT_EQ(p.node_space[node_named(g, "pool")], 2);
  EXPECT_EQ(p.node_space[node_named(g, "flatten")], 0);
  EXPECT_EQ(p.placed, (std::vector<int>{1, 1, 2}));
  EXPECT_EQ(p.summary,
            "placed 2 nodes on fakegpu, 1 node on fakegpu, 1 node on cpu (Flatten: not implemented on fakegpu)");
  // No device: everything on the CPU, nothing to say.
  Placement alone = place_nodes(g, g.topo_order(), *cpu, {});
  EXPECT_EQ(alone.placed, (std::vector<int>{4}));
  EXPECT_EQ(alone.summary, "");
  EXPECT_TRUE(cpu_alone(g, {}));
  EXPECT_FALSE(cpu_alone(g, {&only_conv}));
  FakeDevice none({});
  EXPECT_TRUE(cpu_alone(g, {&none}));
}

// x -> Relu -> a, x -> Sigmoid -> b, Concat(a, b) -> c, Reshape(c) -> d, Neg(d) -> y
std::shared_ptr<const Model> join_and_view() {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 4, 3, 3});
  Tensor shape = Tensor::zeros(DType::kInt64, {2});
  shape.data<int64_t>()[0] = 1;
  shape.data<int64_t>()[1] = 72;
  m.initializer("shape", shape);
  m.node("Relu", {"x"}, {"a"}, "relu");
  m.node("Sigmoid", {"x"}, {"b"}, "sigmoid");
  m.node("Concat", {"a", "b"}, {"c"}, "concat").i("axis", 1);
  m.node("Reshape", {"c", "shape"}, {"d"}, "reshape");
  m.node("Neg", {"d"}, {"y"}, "neg");
  m.output("y");
  return load(m, "join.onnx");
}

TEST(PlanStages, MemoryPlanSharesViewsAndMakesJoinsInPlace) {
  auto model = join_and_view();
  auto cpu = make_cpu_backend(1);
  ThreadPool pool(1);
  Tensor x = testing::noise({1, 4, 3, 3}, 5);
  for (bool optimize : {true, false}) {
    SCOPED_TRACE(optimize ? "optimize" : "no passes");
    PlanOptions po{.optimize = optimize, .blocked_layout = false};
    auto plan = make_plan(model->impl().graph, {&x}, *cpu, pool, po);
    const Graph& g = plan->graph;
    int a = value_named(g, "a"), b = value_named(g, "b"), c = value_named(g, "c"), d = value_named(g, "d");
    ASSERT_TRUE(a >= 0 && b >= 0 && c >= 0 && d >= 0);
    ASSERT_EQ(plan->storage[c], Storage::kArena);
    // The view shares its input's block either way.
    EXPECT_EQ(plan->offset[d], plan->offset[c]);
    if (optimize) {
      // Each input made in its slice of the join's output; the join does nothing.
      EXPECT_EQ(plan->stats.concats_elided, 1);
      EXPECT_EQ(plan->offset[a], plan->offset[c]);
      EXPECT_EQ(plan->offset[b], plan->offset[c] + 36 * sizeof(float));
      EXPECT_THAT(plan->report(), HasSubstr("in place: each input was made in its slice"));
    } else {
      EXPECT_EQ(plan->stats.concats_elided, 0);
      EXPECT_NE(plan->offset[a], plan->offset[c]);
    }
  }
  // The facts come from the schemas.
  EXPECT_TRUE(find_schema("Reshape")->view);
  EXPECT_TRUE(find_schema("Flatten")->view);
  EXPECT_FALSE(find_schema("Transpose")->view);
  EXPECT_TRUE(find_schema("Concat")->joins_inputs);
  EXPECT_TRUE(find_schema("Shape")->reads_shape_only);
  EXPECT_FALSE(find_schema("Relu")->reads_shape_only);
}

// On a device, a Concat is made in place only where every slice starts on a
// kDeviceSliceAlign boundary of its block (cuDNN refuses misaligned
// pointers; issue 29): 4x3x3 floats (144 bytes) per input are not, 64x1x1
// (256 bytes) are. The host has no such rule.
TEST(PlanStages, ConcatSlicesInADevicesMemoryAreAligned) {
  auto cpu = make_cpu_backend(1);
  ThreadPool pool(1);
  FakeDevice gpu({"Relu", "Sigmoid", "Concat", "Neg", "Reshape"});
  for (int64_t channels : {4, 64}) {
    SCOPED_TRACE(std::to_string(channels) + " channels");
    const int64_t hw = channels == 4 ? 3 : 1;
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, channels, hw, hw});
    m.node("Relu", {"x"}, {"a"}, "relu");
    m.node("Sigmoid", {"x"}, {"b"}, "sigmoid");
    m.node("Concat", {"a", "b"}, {"c"}, "concat").i("axis", 1);
    m.node("Neg", {"c"}, {"y"}, "neg");
    m.output("y");
    auto model = load(m, "join.onnx");
    Tensor x = testing::noise({1, channels, hw, hw}, 5);
    for (bool on_device : {false, true}) {
      SCOPED_TRACE(on_device ? "on the pretend GPU" : "on the host");
      PlanOptions po{.optimize = true, .blocked_layout = false};
      if (on_device) po.devices = {&gpu};
      auto plan = make_plan(model->impl().graph, {&x}, *cpu, pool, po);
      const Graph& g = plan->graph;
      const int a = value_named(g, "a"), b = value_named(g, "b"), c = value_named(g, "c");
      ASSERT_EQ(plan->space[c], on_device ? 1 : 0);
      const bool aligned = channels * hw * hw * 4 % kDeviceSliceAlign == 0;
      if (!on_device || aligned) {
        EXPECT_EQ(plan->stats.concats_elided, 1);
        EXPECT_EQ(plan->offset[b], plan->offset[a] + static_cast<size_t>(channels * hw * hw) * sizeof(float));
      } else {
        EXPECT_EQ(plan->stats.concats_elided, 0);
      }
      if (on_device) {
        for (int v : {a, b, c}) EXPECT_EQ(plan->offset[v] % kDeviceSliceAlign, 0u) << g.values[v].name;
      }
    }
  }
}

TEST(PlanStages, TheMemoryPlanIsAStageOfItsOwn) {
  // Conv -> Relu -> MaxPool -> Flatten without passes, then the memory stage again.
  auto model = chain();
  auto cpu = make_cpu_backend(1);
  ThreadPool pool(1);
  Tensor x = testing::noise({1, 2, 8, 8}, 1);
  auto plan = make_plan(model->impl().graph, {&x}, *cpu, pool, {.optimize = false, .blocked_layout = false});
  const size_t arena = plan->arena_bytes;
  // Planning again from the same steps gives the same offsets.
  std::vector<size_t> offsets = plan->offset;
  plan_memory(*plan, false);
  EXPECT_EQ(plan->offset, offsets);
  EXPECT_EQ(plan->arena_bytes, arena);
  // Liveness: c (conv out, 1x4x8x8) and r (relu out) are both alive at the
  // Relu step, so the arena holds at least both.
  EXPECT_GE(arena, 2 * 256 * sizeof(float));
  EXPECT_LT(arena, plan->naive_bytes);
}

}  // namespace
}  // namespace minirt
