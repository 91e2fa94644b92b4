// Google Benchmark cases for the per-step overhead of Session::run: a chain
// of 100 cheap elementwise ops (50 x Add of a per-channel constant, then
// Relu), built in memory, run at 1 and 2 threads. What is left after the few
// nanoseconds of arithmetic per step is the runtime's own cost: walking the
// plan, binding buffers, and handing work to the thread pool and back.
//
//   build/bin/minirt_dispatch_bench
//   build/bin/minirt_dispatch_bench --benchmark_filter='Dispatch/tiny'
//   build/bin/minirt_dispatch_bench --benchmark_filter=AfterSleep --benchmark_repetitions=5
//
// Cases (arguments: threads):
// - Dispatch/tiny:  [1,16,8,8] (1 K elements); every step is smaller than an
//   elementwise kernel's parallel grain, so it runs on the calling thread and
//   the time is the session's dispatch alone. At 2 threads it must not be
//   slower than at 1 (issue 8: a tiny model at N threads is never slower).
// - Dispatch/small: [1,64,32,32] (64 K elements); each step splits across
//   the pool, so this adds the cost of waking the workers and joining them,
//   100 times per run.
// - DispatchAfterSleep/tiny, /small: the same, but each timed run comes
//   after the calling thread slept 5 ms (not timed), long enough for the
//   pool's workers to stop spinning and block; it exposes the wake-up cost
//   a model pays when runs are not back to back (a server between requests).
//
// Counters: us_per_step = run time / 100 steps (the number to compare),
// us_per_run. Timing is manual (steady_clock around Session::run only).
//
// Stages/*: a detector's tail cut at NonMaxSuppression (runtime/stages.h):
// 200 boxes, 4 classes, Sigmoid and Transpose (stage 1), the NMS (on the
// host), the kept boxes gathered and scaled (stage 2, one plan per count).
// - Stages/same_count: one input over and over: every run reuses both plans;
//   the cost of a cut run (two plans, the NMS, passing values) at its best.
// - Stages/new_count: twelve inputs (ten distinct counts kept), in turn: more counts
//   than the 8 plans a stage remembers, so stage 2 is planned again every run
//   (the worst case: a detector whose number of boxes kept never repeats
//   within 8 runs). Counter us_per_run.
#include <minirt/session.h>

#include "tests/unit/model_builder.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace minirt {
namespace {

constexpr int kSteps = 100;

// x -> Add(c_0) -> Relu -> Add(c_1) -> Relu ... (kSteps nodes), y the last.
std::shared_ptr<const Model> chain_model(int64_t channels, int64_t hw) {
  testing::ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, channels, hw, hw});
  std::string prev = "x";
  for (int i = 0; i < kSteps; ++i) {
    const std::string out = i + 1 == kSteps ? "y" : "t" + std::to_string(i);
    if (i % 2 == 0) {
      // A per-channel constant, broadcast over H and W like a bias: small
      // alternating values keep the Relu chain from dying out or growing.
      const std::string c = "c" + std::to_string(i);
      m.initializer(c, testing::iota({1, channels, 1, 1}, (i % 4 == 0) ? 0.01f : -0.01f, 0.001f));
      m.node("Add", {prev, c}, {out}, "add" + std::to_string(i));
    } else {
      m.node("Relu", {prev}, {out}, "relu" + std::to_string(i));
    }
    prev = out;
  }
  m.output("y");
  const std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "dispatch_chain");
}

void run_chain(benchmark::State& state, int64_t channels, int64_t hw, bool sleep_first) {
  const int threads = static_cast<int>(state.range(0));
  auto model = chain_model(channels, hw);
  SessionOptions opt;
  opt.device = Device::kCpu;
  opt.threads = threads;
  opt.tuning = TuningMode::kHeuristic;  // no convolutions; and never touch the cache file
  Session session(model, opt);
  Tensor x = testing::iota({1, channels, hw, hw}, -0.5f, 1.0f / static_cast<float>(channels * hw * hw));
  const NamedTensors inputs = {{"x", x}};
  std::vector<Tensor> outputs;
  for (int i = 0; i < 3; ++i) session.run(inputs, outputs);  // plan, allocate, warm

  double total_s = 0;
  for (auto _ : state) {
    if (sleep_first) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto t0 = std::chrono::steady_clock::now();
    session.run(inputs, outputs);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(dt);
    total_s += dt;
  }
  benchmark::DoNotOptimize(outputs[0].data<float>()[0]);
  const double runs = static_cast<double>(state.iterations());
  state.counters["us_per_run"] = total_s * 1e6 / runs;
  state.counters["us_per_step"] = total_s * 1e6 / runs / kSteps;
  state.SetLabel(std::to_string(session.threads()) + " thread(s), " + std::to_string(channels * hw * hw) +
                 " elements per step");
}

void BM_Dispatch_tiny(benchmark::State& s) { run_chain(s, 16, 8, false); }
void BM_Dispatch_small(benchmark::State& s) { run_chain(s, 64, 32, false); }
void BM_DispatchAfterSleep_tiny(benchmark::State& s) { run_chain(s, 16, 8, true); }
void BM_DispatchAfterSleep_small(benchmark::State& s) { run_chain(s, 64, 32, true); }

BENCHMARK(BM_Dispatch_tiny)->Name("Dispatch/tiny")->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime();
BENCHMARK(BM_Dispatch_small)->Name("Dispatch/small")->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime();
// Each iteration sleeps 5 ms, so a fixed count keeps these cases short.
BENCHMARK(BM_DispatchAfterSleep_tiny)
    ->Name("DispatchAfterSleep/tiny")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Iterations(200);
BENCHMARK(BM_DispatchAfterSleep_small)
    ->Name("DispatchAfterSleep/small")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Iterations(200);

// boxes [1, 200, 4], logits [1, 200, 4] -> Sigmoid -> Transpose -> NMS ->
// Gather of the kept boxes -> Mul(2).
std::shared_ptr<const Model> detector_tail() {
  testing::ModelBuilder m(13);
  m.input("boxes", DType::kFloat32, {1, 200, 4});
  m.input("logits", DType::kFloat32, {1, 200, 4});
  m.initializer("maxk", testing::ints64({200}));
  Tensor iou = Tensor::zeros(DType::kFloat32, {1}), thr = Tensor::zeros(DType::kFloat32, {1});
  iou.data<float>()[0] = 0.5f;
  thr.data<float>()[0] = 0.6f;
  m.initializer("iou", iou);
  m.initializer("thr", thr);
  m.initializer("flat", testing::ints64({-1, 4}));
  Tensor two = Tensor::zeros(DType::kInt64, {});
  two.data<int64_t>()[0] = 2;
  m.initializer("two", two);
  Tensor scale = Tensor::zeros(DType::kFloat32, {});
  scale.data<float>()[0] = 2.0f;
  m.initializer("scale", scale);
  m.node("Sigmoid", {"logits"}, {"sg"});
  m.node("Transpose", {"sg"}, {"scores"}).ints("perm", {0, 2, 1});
  m.node("NonMaxSuppression", {"boxes", "scores", "maxk", "iou", "thr"}, {"keep"}, "nms").i("center_point_box", 1);
  m.node("Gather", {"keep", "two"}, {"idx"}).i("axis", 1);
  m.node("Reshape", {"boxes", "flat"}, {"fb"});
  m.node("Gather", {"fb", "idx"}, {"picked"}).i("axis", 0);
  m.node("Mul", {"picked", "scale"}, {"y"});
  m.output("y");
  const std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "detector_tail");
}

// Inputs whose kept counts differ: logits shifted so more or fewer clear the threshold.
NamedTensors tail_inputs(int variant) {
  Tensor boxes = Tensor::zeros(DType::kFloat32, {1, 200, 4});
  Tensor logits = Tensor::zeros(DType::kFloat32, {1, 200, 4});
  float* b = boxes.data<float>();
  float* l = logits.data<float>();
  for (int i = 0; i < 200; ++i) {
    b[4 * i + 0] = static_cast<float>((i * 37) % 100);  // centres spread out, some overlapping
    b[4 * i + 1] = static_cast<float>((i * 61) % 100);
    b[4 * i + 2] = 6.0f;
    b[4 * i + 3] = 6.0f;
    for (int k = 0; k < 4; ++k)
      l[4 * i + k] = static_cast<float>(((i * 7 + k * 13) % 40) - 30) / 10.0f + 0.08f * variant;
  }
  return {{"boxes", boxes}, {"logits", logits}};
}

void run_stages(benchmark::State& state, int variants) {
  SessionOptions opt;
  opt.device = Device::kCpu;
  opt.threads = 1;
  opt.tuning = TuningMode::kHeuristic;
  Session session(detector_tail(), opt);
  std::vector<NamedTensors> inputs;
  std::vector<int64_t> counts;
  for (int v = 0; v < variants; ++v) {
    inputs.push_back(tail_inputs(v));
    counts.push_back(session.run(inputs.back())[0].shape()[0]);
  }
  std::vector<Tensor> outputs;
  double total_s = 0;
  size_t k = 0;
  const int plans_before = session.plans_made();
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    session.run(inputs[k++ % inputs.size()], outputs);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(dt);
    total_s += dt;
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["us_per_run"] = total_s * 1e6 / runs;
  state.counters["plans_per_run"] = (session.plans_made() - plans_before) / runs;
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  state.SetLabel(std::to_string(counts.size()) + " distinct counts kept (" + std::to_string(counts.front()) + " to " +
                 std::to_string(counts.back()) + ")");
}

void BM_Stages_same(benchmark::State& s) { run_stages(s, 1); }
void BM_Stages_new(benchmark::State& s) { run_stages(s, 12); }
BENCHMARK(BM_Stages_same)->Name("Stages/same_count")->UseManualTime();
BENCHMARK(BM_Stages_new)->Name("Stages/new_count")->UseManualTime();

}  // namespace
}  // namespace minirt

BENCHMARK_MAIN();
