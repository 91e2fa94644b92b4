// The executor (runtime/executor.h) and the plan cache (runtime/plan_cache.h)
// without a Session: a plan made for a tiny graph, bound and run here, its
// outputs checked against a plain loop; the deadline's sentence. And the
// session's requests as a function of its options (runtime/session_options.h).
#include <minirt/minirt.h>

#include "kernels/cpu/cpu_backend.h"
#include "model_builder.h"
#include "runtime/api/model_impl.h"
#include "runtime/executor.h"
#include "runtime/plan_cache.h"
#include "runtime/session_options.h"
#include "runtime/thread_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace minirt {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::StartsWith;

// y = Relu(x * w) + b (x of any batch), with r = Relu(x * w) an output too (an intermediate
// the caller reads) and y given twice (the second a copy of the first).
std::shared_ptr<const Model> tiny() {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {-1, 2, 3, 3}, {"N"});
  m.initializer("w", testing::iota({1, 2, 1, 1}, 0.5f, 1.0f));   // 0.5 and 1.5, per channel
  m.initializer("b", testing::iota({1, 2, 1, 1}, -1.0f, 2.0f));  // -1 and 1, per channel
  m.node("Mul", {"x", "w"}, {"m"}, "mul");
  m.node("Relu", {"m"}, {"r"}, "relu");
  m.node("Add", {"r", "b"}, {"y"}, "add");
  m.output("y");
  m.output("r");
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "tiny.onnx");
}

// The same, by hand: per channel c, r = max(0, x * w[c]) and y = r + b[c].
void expect_tiny(const Tensor& x, const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 3u);
  const float w[2] = {0.5f, 1.5f}, b[2] = {-1.0f, 1.0f};
  for (const Tensor& t : out) ASSERT_EQ(t.shape(), (Shape{1, 2, 3, 3}));
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 9; ++i) {
      const float r = std::max(0.0f, x.data<float>()[c * 9 + i] * w[c]);
      EXPECT_FLOAT_EQ(out[1].data<float>()[c * 9 + i], r) << "r at " << c << "," << i;
      EXPECT_FLOAT_EQ(out[0].data<float>()[c * 9 + i], r + b[c]) << "y at " << c << "," << i;
      EXPECT_FLOAT_EQ(out[2].data<float>()[c * 9 + i], r + b[c]) << "second y at " << c << "," << i;
    }
}

struct Rig {
  std::shared_ptr<const Model> model = tiny();
  const Graph& g = model->impl().graph;
  std::unique_ptr<KernelProvider> cpu = make_cpu_backend(1);
  ThreadPool pool{1};
  MemoryPool host{std::make_shared<HostAllocator>()};
  PlanCache cache{.graph = &g, .value_inputs = value_inputs(g)};
  ExecEnv env{.name = "tiny.onnx", .host_memory = &host, .threads = &pool};

  std::shared_ptr<const PlanEntry> plan(const std::vector<const Tensor*>& inputs, PlanOptions po = {}) {
    if (auto hit = cache.find(inputs)) return hit;
    return cache.add(make_plan(g, inputs, *cpu, pool, po), inputs);
  }
};

TEST(Executor, RunsAPlanWithoutASession) {
  for (bool optimize : {true, false}) {
    SCOPED_TRACE(optimize ? "optimize" : "no passes");
    Rig rig;
    rig.env.profile = true;
    RunContext ctx;
    Tensor x = testing::noise({1, 2, 3, 3}, 11);
    ctx.ordered = {&x};
    bind_plan(ctx, rig.plan(ctx.ordered, {.optimize = optimize}), rig.env);
    EXPECT_GE(rig.host.stats().in_use_bytes, ctx.bound->plan->arena_bytes);
    std::vector<Tensor> out;
    execute(ctx, out, rig.env, RunDeadline{RunClock::now(), 0});
    expect_tiny(x, out);
    // Every step was timed, on the host's clock, named as the plan names it.
    ASSERT_EQ(ctx.profile.size(), ctx.bound->plan->steps.size());
    for (const StepTiming& t : ctx.profile) {
      EXPECT_EQ(t.device, "cpu");
      EXPECT_FALSE(t.device_clock);
      EXPECT_GE(t.duration_us, 0);
    }
    // Other values, the same signature: the bound plan and the caller's
    // output tensors are reused.
    Tensor x2 = testing::noise({1, 2, 3, 3}, 12);
    ctx.ordered = {&x2};
    auto entry = rig.plan(ctx.ordered);
    EXPECT_EQ(entry, ctx.bound);
    const void* y = out[0].raw();
    execute(ctx, out, rig.env, RunDeadline{RunClock::now(), 0});
    EXPECT_EQ(out[0].raw(), y);
    expect_tiny(x2, out);
    // Unbound, the arena is back in the pool.
    EXPECT_EQ(unbind(ctx), entry->plan->arena_bytes);
    EXPECT_EQ(rig.host.stats().in_use_bytes, 0u);
  }
}

TEST(Executor, ADeadlinePassedStopsTheRunWithOneSentence) {
  Rig rig;
  RunContext ctx;
  Tensor x = testing::noise({1, 2, 3, 3}, 3);
  ctx.ordered = {&x};
  bind_plan(ctx, rig.plan(ctx.ordered), rig.env);
  std::vector<Tensor> out;
  // A run that began 10 s ago with a limit of 1 s stops before its first step.
  const RunDeadline late{RunClock::now() - std::chrono::seconds(10), 1.0};
  try {
    execute(ctx, out, rig.env, late);
    FAIL() << "the run was not stopped";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDeadlineExceeded);
    EXPECT_THAT(e.what(), StartsWith("tiny.onnx: the run (inputs x 1x2x3x3) stopped before its first step "
                                     "(planning took the time), 10"));
    EXPECT_THAT(e.what(), EndsWith(" s after it began, past its limit of 1 s "
                                   "(SessionOptions::run_timeout_seconds); the session stays usable: "
                                   "give smaller inputs or a longer limit"));
  }
  // The context stays bound and runs in time.
  execute(ctx, out, rig.env, RunDeadline{RunClock::now(), 60});
  expect_tiny(x, out);
  // The same sentence, without inputs, for a run stopped between the parts
  // of a cut model.
  try {
    deadline_exceeded("cut.onnx", "", "before NonZero 'nz'", RunDeadline{RunClock::now(), 0.25});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDeadlineExceeded);
    EXPECT_THAT(e.what(), StartsWith("cut.onnx: the run stopped before NonZero 'nz', "));
    EXPECT_THAT(e.what(), HasSubstr(" after it began, past its limit of 0.25 s (SessionOptions::run_timeout_seconds)"));
  }
}

TEST(Executor, BindInputsOrdersAndChecksTheCallersTensors) {
  Rig rig;
  Tensor x = testing::noise({1, 2, 3, 3}, 3);
  std::vector<const Tensor*> ordered;
  const NamedTensors given{{"x", x}};
  bind_inputs(rig.g, "tiny.onnx", given, ordered);
  ASSERT_EQ(ordered.size(), 1u);
  EXPECT_EQ(ordered[0], &given[0].second);  // the caller's tensor itself, not a copy
  auto error_of = [&](const NamedTensors& in) {
    try {
      bind_inputs(rig.g, "tiny.onnx", in, ordered);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({{"z", x}}), "tiny.onnx: the model has no input named 'z' (its inputs: 'x')");
  EXPECT_EQ(error_of({}), "tiny.onnx: input 'x' was not given");
  EXPECT_EQ(error_of({{"x", x}, {"x", x}}), "tiny.onnx: input 'x' was given twice");
  EXPECT_EQ(error_of({{"x", Tensor::zeros(DType::kInt64, {1})}}), "tiny.onnx: input 'x' must be float32, got int64");
}

TEST(PlanCache, KeepsTheMostRecentlyUsedPlans) {
  Rig rig;
  std::vector<Tensor> xs;
  for (int64_t n = 1; n <= static_cast<int64_t>(kMaxPlans) + 1; ++n)
    xs.push_back(Tensor::zeros(DType::kFloat32, {n, 2, 3, 3}));
  std::vector<std::shared_ptr<const PlanEntry>> made;
  for (const Tensor& x : xs) made.push_back(rig.plan({&x}));
  ASSERT_EQ(rig.cache.plans.size(), kMaxPlans);
  EXPECT_EQ(rig.cache.find({&xs[0]}), nullptr);  // the oldest went
  EXPECT_EQ(rig.cache.find({&xs[1]}), made[1]);
  EXPECT_EQ(rig.cache.plans.back(), made[1]);  // found: now the most recent
  EXPECT_EQ(made[2]->shapes, (std::vector<Shape>{{3, 2, 3, 3}}));
  // Outputs of one value: the second y is a copy of the first.
  EXPECT_EQ(made[1]->first_output_of_value, (std::vector<int>{-1, -1, 0}));
}

TEST(SessionRequests, FollowFromTheOptions) {
  CoreCount two;
  two.usable = 2;
  SessionRequests r = session_requests({}, two);
  EXPECT_EQ(r.threads, 2);  // 0: the usable cores
  EXPECT_EQ(r.host.threads, 2);
  EXPECT_EQ(r.pool.policy, PoolPolicy::kGrow);
  EXPECT_EQ(r.pool.limit, 0u);
  EXPECT_EQ(r.tuner.mode, TuningMode::kCached);
  EXPECT_EQ(r.tuner.min_repeats, TunerOptions{}.min_repeats);
  EXPECT_EQ(r.device, Device::kAuto);
  EXPECT_TRUE(r.optimize);
  EXPECT_TRUE(r.blocked_layout);

  r = session_requests({.device = Device::kCuda,
                        .threads = 3,
                        .memory_limit = 1 << 20,
                        .memory_policy = MemoryPolicy::kPreallocate,
                        .preallocate_fraction = 0.5,
                        .math = MathMode::kTf32,
                        .device_id = 1,
                        .tuning = TuningMode::kFixed,
                        .tuning_algorithm = "im2col",
                        .algo_cache_write = false,
                        .tuning_repeats = 5,
                        .workspace_limit = 4096,
                        .layout = CpuLayout::kNchw},
                       two);
  EXPECT_EQ(r.threads, 3);
  EXPECT_EQ(r.pool.policy, PoolPolicy::kPreallocate);
  EXPECT_EQ(r.pool.preallocate_fraction, 0.5);
  EXPECT_EQ(r.pool.limit, size_t{1} << 20);
  EXPECT_EQ(r.tuner.mode, TuningMode::kFixed);
  EXPECT_EQ(r.tuner.algorithm, "im2col");
  EXPECT_FALSE(r.tuner.write_cache);
  EXPECT_EQ(r.tuner.workspace_limit, 4096u);
  EXPECT_EQ(r.tuner.min_repeats, 5);  // a fixed count: no target time
  EXPECT_EQ(r.tuner.max_repeats, 5);
  EXPECT_EQ(r.tuner.target_ms, 0);
  EXPECT_EQ(r.device, Device::kCuda);
  EXPECT_EQ(r.device_backend.device_id, 1);
  EXPECT_EQ(r.device_backend.math, MathMode::kTf32);
  EXPECT_EQ(r.device_backend.threads, 1);
  EXPECT_EQ(r.host.math, MathMode::kTf32);
  EXPECT_FALSE(r.blocked_layout);
}

TEST(SessionRequests, RefuseSettingsOutOfRangeNamingTheField) {
  CoreCount two;
  two.usable = 2;
  auto error_of = [&](const SessionOptions& o) {
    try {
      session_requests(o, two);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of({.threads = 9}), StartsWith("SessionOptions: threads is 9, more than the ceiling of 8"));
  EXPECT_THAT(error_of({.run_timeout_seconds = -1}),
              StartsWith("SessionOptions: run_timeout_seconds must be 0 (no limit) or a positive number"));
  EXPECT_THAT(error_of({.run_timeout_seconds = std::nan("")}), HasSubstr("run_timeout_seconds"));
  EXPECT_THAT(error_of({.device_id = -1}), StartsWith("SessionOptions: device_id must be a CUDA device ordinal"));
  EXPECT_THAT(error_of({.memory_policy = MemoryPolicy::kPreallocate}),
              StartsWith("SessionOptions: MemoryPolicy::kPreallocate needs preallocate_fraction in (0, 1]"));
  EXPECT_EQ(error_of({.tuning = TuningMode::kFixed}),
            "SessionOptions: TuningMode::kFixed needs tuning_algorithm (its name)");
  EXPECT_EQ(error_of({.tuning_repeats = -2}), "SessionOptions: tuning_repeats must be 0 (adaptive) or more, got -2");
  // kGrow ignores the fraction.
  EXPECT_EQ(error_of({.preallocate_fraction = 7}), "no error");
}

}  // namespace
}  // namespace minirt
