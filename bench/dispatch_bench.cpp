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
#include <minirt/session.h>

#include "tests/unit/model_builder.h"

#include <benchmark/benchmark.h>

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

}  // namespace
}  // namespace minirt

BENCHMARK_MAIN();
