// runtime/constant_cache.h: a session's plans share equal constants (the
// weights folding makes again for every batch size), and nothing is kept
// alive by the cache itself.
#include <gtest/gtest.h>
#include <minirt/minirt.h>

#include "kernels/cpu/cpu_backend.h"
#include "loaders/onnx/onnx_loader.h"
#include "model_builder.h"
#include "runtime/constant_cache.h"
#include "runtime/planner.h"

namespace minirt {
namespace {

using testing::ModelBuilder;
using testing::noise;

std::shared_ptr<const Tensor> shared(const Tensor& t) { return std::make_shared<const Tensor>(t.clone()); }

TEST(ConstantCache, EqualTensorsBecomeOneAndTheCacheHoldsNothingAlive) {
  ConstantCache cache;
  auto a = shared(noise({32, 16, 3, 3}, 1));
  auto b = shared(noise({32, 16, 3, 3}, 1));  // the same bytes, another tensor
  auto c = shared(noise({32, 16, 3, 3}, 2));  // other bytes
  auto d = std::make_shared<const Tensor>(noise({32, 16, 3, 3}, 1).reshaped({16, 32, 3, 3}).clone());  // other shape
  ASSERT_NE(a.get(), b.get());
  EXPECT_EQ(cache.intern(a).get(), a.get());
  EXPECT_EQ(cache.intern(b).get(), a.get());
  EXPECT_EQ(cache.intern(c).get(), c.get());
  EXPECT_EQ(cache.intern(d).get(), d.get());
  EXPECT_EQ(cache.intern(a).get(), a.get());  // again: known, not hashed
  EXPECT_EQ(cache.alive_bytes(), a->nbytes() + c->nbytes() + d->nbytes());
  // Small tensors pass through.
  auto s1 = shared(noise({4}, 3)), s2 = shared(noise({4}, 3));
  EXPECT_EQ(cache.intern(s2).get(), s2.get());
  EXPECT_EQ(cache.intern(s1).get(), s1.get());
  // Weak: when the plans let go, so does the cache, and an equal tensor
  // interned later is kept as itself.
  std::weak_ptr<const Tensor> wa = a;
  a.reset();
  b.reset();
  EXPECT_TRUE(wa.expired());
  auto e = shared(noise({32, 16, 3, 3}, 1));
  EXPECT_EQ(cache.intern(e).get(), e.get());
  EXPECT_EQ(cache.alive_bytes(), e->nbytes() + c->nbytes() + d->nbytes());
}

TEST(ConstantCache, HashSeesEveryByteAndTheShape) {
  Tensor t = noise({1025}, 4);  // a tail past the last whole word
  uint64_t h = tensor_hash(t);
  Tensor u = t.clone();
  reinterpret_cast<unsigned char*>(u.raw())[u.nbytes() - 1] ^= 1;
  EXPECT_NE(tensor_hash(u), h);
  EXPECT_NE(tensor_hash(t.reshaped({25, 41})), h);
  EXPECT_EQ(tensor_hash(t.clone()), h);
}

// Conv + BatchNormalization: folding makes the convolution's weights again in
// every plan. A kernel that reads them as they are at run time (the plain
// depthwise convolution, without the blocked layout) keeps them: plans for
// two batch sizes with one cache hold one copy. A kernel that packs them
// keeps only its packed form, and the plan lets the folded tensor go.
TEST(ConstantCache, PlansForTwoBatchSizesShareTheFoldedWeights) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {-1, 128, 10, 10}, {"N"});
  m.initializer("w", noise({128, 1, 5, 5}, 5));
  m.initializer("scale", noise({128}, 6));
  m.initializer("bias", noise({128}, 7));
  m.initializer("mean", noise({128}, 8));
  Tensor var = noise({128}, 9);
  for (int64_t i = 0; i < 128; ++i) var.data<float>()[i] = 1.5f + var.data<float>()[i];
  m.initializer("var", var);
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {2, 2, 2, 2}).i("group", 128);
  m.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  m.output("y");
  std::string bytes = m.bytes();
  Graph g = onnx::load_bytes(bytes.data(), bytes.size(), "t.onnx");
  ThreadPool pool(1);
  auto cpu = make_cpu_backend(1);
  ConstantCache cache;
  auto folded_weight = [](const Plan& p) -> const Tensor* {
    for (const Step& s : p.steps) {
      const Node& n = p.graph.nodes[s.node];
      if (n.op == "Conv") return p.graph.values[n.inputs[1]].constant.get();
    }
    return nullptr;
  };
  Tensor x1 = noise({1, 128, 10, 10}, 10), x2 = noise({2, 128, 10, 10}, 11);
  const PlanOptions plain{.blocked_layout = false, .constants = &cache};
  auto p1 = make_plan(g, {&x1}, *cpu, pool, plain);
  auto p2 = make_plan(g, {&x2}, *cpu, pool, plain);
  const Tensor* w1 = folded_weight(*p1);
  ASSERT_NE(w1, nullptr);
  ASSERT_NE(w1->raw(), nullptr);                              // read at run time: kept
  EXPECT_NE(w1, g.values[g.find_value("w")].constant.get());  // folded: a new tensor
  EXPECT_EQ(folded_weight(*p2), w1);                          // one copy for both plans
  // Without the cache, each plan has its own.
  auto p3 = make_plan(g, {&x2}, *cpu, pool, {.blocked_layout = false});
  EXPECT_NE(folded_weight(*p3), w1);
  // In the blocked layout the kernel packs them: the plans keep nothing of the folded tensor.
  auto p4 = make_plan(g, {&x1}, *cpu, pool, {.constants = &cache});
  ASSERT_NE(folded_weight(*p4), nullptr);
  EXPECT_EQ(folded_weight(*p4)->raw(), nullptr);
  EXPECT_GT(p4->released, 0);
}

}  // namespace
}  // namespace minirt
