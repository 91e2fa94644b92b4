// Background tuning (SessionOptions::tune_in_background): the first run
// measures nothing and runs the heuristic's picks; the background tuner
// measures them between runs and its plan takes over between two runs, with
// the same results; concurrent runs meet the swap safely (ThreadSanitizer
// runs Session*); pausing stops all measuring; a closing session stops its
// tuner and keeps what was measured; an idle session burns no CPU. The gate
// (runtime/background_tuner.h) on its own: no sample it keeps overlapped a
// run, and under back-to-back runs it still makes progress within its share.
#include <minirt/minirt.h>

#include "model_builder.h"
#include "runtime/api/session_internal.h"
#include "runtime/background_tuner.h"
#include "runtime/tuner.h"

#include <gtest/gtest.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

namespace minirt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::ModelBuilder;

// x 2x8x11x9 -> conv (8->16 3x3, pad 1) -> relu -> conv2 (16->16 3x3, pad 1) -> y
std::shared_ptr<const Model> two_cpu_convs() {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2, 8, 11, 9});
  m.initializer("w", testing::iota({16, 8, 3, 3}, -0.4f, 0.0007f));
  m.initializer("b", testing::iota({16}, -0.1f, 0.013f));
  m.initializer("w2", testing::iota({16, 16, 3, 3}, 0.3f, -0.0004f));
  m.node("Conv", {"x", "w", "b"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("Conv", {"r", "w2"}, {"y"}, "conv2").ints("pads", {1, 1, 1, 1});
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "two_cpu_convs.onnx");
}

NamedTensors input() { return {{"x", testing::iota({2, 8, 11, 9}, -1.0f, 0.001f)}}; }

void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-4f * (1 + std::fabs(b.data<float>()[i]))) << "at " << i;
}

// Injected timings: every candidate but the heuristic's is fast, the last
// one listed fastest, so the tuned plan changes every choice. Counts calls,
// and notes when the second convolution's began.
struct Timer {
  std::atomic<int> calls{0};
  std::atomic<bool> second_conv{false};
  std::atomic<int> sleep_us{0};
  std::atomic<int> last_sleep_ms{0};      // the second convolution's last candidate sleeps this long
  std::atomic<bool> in_last_call{false};  // ... and says so first
  // When set, each call's span (with its sleep) is added here, under spans_mu.
  std::vector<std::pair<Clock::time_point, Clock::time_point>>* spans = nullptr;
  std::mutex* spans_mu = nullptr;
  TuningTimer fn() {
    return [this](const KernelProvider& b, const Graph& g, const Node& n, const AlgorithmOption& o) -> double {
      ++calls;
      if (n.name == "conv2") second_conv = true;
      const Clock::time_point t0 = Clock::now();
      if (int us = sleep_us.load()) std::this_thread::sleep_for(std::chrono::microseconds(us));
      if (spans) {
        std::lock_guard<std::mutex> lock(*spans_mu);
        spans->emplace_back(t0, Clock::now());
      }
      const auto opts = b.algorithms(g, n);
      if (int ms = last_sleep_ms.load(); ms > 0 && n.name == "conv2" && o.name == opts.back().name) {
        in_last_call = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      }
      if (o.name == b.heuristic_algorithm(g, n)) return 10.0;
      for (size_t i = 0; i < opts.size(); ++i)
        if (opts[i].name == o.name) return 5.0 - static_cast<double>(i) * 0.1;
      return 9.0;
    };
  }
};

class SessionBackgroundTuning : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("minirt_bg_tuning_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    cache_ = (dir_ / "algo_cache.txt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Session> session(Timer* timer, int threads = 2, const std::string& cache = {}) {
    auto s = std::make_unique<Session>(two_cpu_convs(), SessionOptions{.device = Device::kCpu, .threads = threads});
    TunerOptions o{.mode = TuningMode::kCached, .cache_path = cache.empty() ? cache_ : cache};
    if (timer) o.time = timer->fn();
    SessionInternals::configure_tuning(*s, std::move(o));
    return s;
  }
  std::string read_cache() const {
    std::ifstream f(cache_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  fs::path dir_;
  std::string cache_;
};

TEST_F(SessionBackgroundTuning, TheFirstRunMeasuresNothingAndTheTunedPlanTakesOver) {
  Timer timer;
  auto s = session(&timer);
  s->pause_tuning(true);  // so that the report between the runs is certain
  std::vector<Tensor> first = s->run(input());
  TuningReport r = s->tuning_report();
  ASSERT_EQ(r.nodes, 2);
  EXPECT_EQ(r.pending, 2);
  EXPECT_EQ(r.heuristic, 2);
  EXPECT_EQ(r.measured, 0);
  EXPECT_EQ(timer.calls.load(), 0);
  for (const TuningChoice& c : r.choices) {
    EXPECT_TRUE(c.pending);
    EXPECT_EQ(c.algorithm, c.heuristic);
  }
  EXPECT_FALSE(s->wait_for_tuning(0.05));  // paused with work left: false at once

  s->pause_tuning(false);
  ASSERT_TRUE(s->wait_for_tuning(60));
  r = s->tuning_report();
  EXPECT_EQ(r.pending, 0);
  EXPECT_EQ(r.measured, 2);
  EXPECT_EQ(r.heuristic, 0);
  EXPECT_GT(timer.calls.load(), 0);
  ASSERT_EQ(r.swaps.size(), 1u);
  EXPECT_EQ(r.swaps[0].measured, 2);
  EXPECT_EQ(r.swaps[0].changed, 2);
  EXPECT_DOUBLE_EQ(r.swaps[0].before_ms, 20.0);  // the heuristic's 10 ms, twice
  EXPECT_LT(r.swaps[0].after_ms, 10.0);
  EXPECT_EQ(r.swaps[0].runs_before, 1);
  EXPECT_NE(to_string(r.swaps[0]).find("2 of 2 choices measured changed, 20.00 -> "), std::string::npos)
      << to_string(r.swaps[0]);
  for (const TuningChoice& c : r.choices) {
    EXPECT_FALSE(c.pending);
    EXPECT_EQ(c.source, ChoiceSource::kMeasured);
    EXPECT_NE(c.algorithm, c.heuristic);
  }
  // The tuned plan runs the measured picks, with the same results.
  std::vector<Tensor> after = s->run(input());
  expect_close(after[0], first[0]);
  EXPECT_NE(s->plan_report().find(r.choices[0].algorithm), std::string::npos) << s->plan_report();
  EXPECT_NE(read_cache().find(r.choices[0].algorithm), std::string::npos);
  EXPECT_EQ(s->plans_made(), 1);  // a swap is not a new input signature

  // The next session starts from the cache: nothing pending, nothing measured.
  Timer again;
  auto t = session(&again);
  t->run(input());
  TuningReport warm = t->tuning_report();
  EXPECT_EQ(warm.from_cache, 2);
  EXPECT_EQ(warm.pending, 0);
  EXPECT_TRUE(t->wait_for_tuning(0));
  EXPECT_EQ(again.calls.load(), 0);
}

// Runs back to back leave the tuner no gap: it holds a run back now and
// then, within its share, and gets done while the runs go on.
TEST_F(SessionBackgroundTuning, TuningCompletesBetweenBackToBackRuns) {
  Timer timer;
  timer.sleep_us = 200;
  auto s = session(&timer);
  std::vector<Tensor> ref = s->run(input());
  std::vector<Tensor> out;
  const auto t0 = Clock::now();
  int runs = 0;
  while (!s->wait_for_tuning(0) && Clock::now() - t0 < std::chrono::seconds(60)) {
    s->run(input(), out);
    ++runs;
    expect_close(out[0], ref[0]);
  }
  ASSERT_TRUE(s->wait_for_tuning(0)) << "not tuned after " << runs << " back-to-back runs";
  ASSERT_EQ(s->tuning_report().swaps.size(), 1u);
  EXPECT_GE(s->tuning_report().swaps[0].runs_before, 1);
  EXPECT_LE(s->tuning_report().swaps[0].runs_before, runs + 1);
  expect_close(s->run(input())[0], ref[0]);
}

TEST_F(SessionBackgroundTuning, ConcurrentRunsMeetTheSwapSafely) {
  Timer timer;
  timer.sleep_us = 300;
  auto s = session(&timer, 1);
  s->pause_tuning(true);  // resumed once the callers run, so that the swap comes among their runs
  std::vector<Tensor> ref = s->run(input());
  std::atomic<int> bad{0};
  std::atomic<int> started{0};
  auto differs = [&](const std::vector<Tensor>& out) {
    for (int64_t k = 0; k < out[0].numel(); ++k)
      if (std::fabs(out[0].data<float>()[k] - ref[0].data<float>()[k]) >
          1e-4f * (1 + std::fabs(ref[0].data<float>()[k])))
        return true;
    return false;
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      std::vector<Tensor> out;
      ++started;
      // Until the tuned plan has taken over (at most a minute), then a few more.
      const auto t0 = Clock::now();
      while (!s->wait_for_tuning(0) && Clock::now() - t0 < std::chrono::seconds(60)) {
        s->run(input(), out);
        if (differs(out)) ++bad;
      }
      for (int i = 0; i < 5; ++i) {
        s->run(input(), out);
        if (differs(out)) ++bad;
      }
    });
  while (started.load() < 3) std::this_thread::yield();
  s->pause_tuning(false);
  for (auto& c : callers) c.join();
  EXPECT_EQ(bad.load(), 0);
  ASSERT_TRUE(s->wait_for_tuning(0));
  ASSERT_EQ(s->tuning_report().swaps.size(), 1u);
  EXPECT_GT(s->tuning_report().swaps[0].runs_before, 1) << "the swap came before the concurrent runs";
  expect_close(s->run(input())[0], ref[0]);
}

TEST_F(SessionBackgroundTuning, AClosingSessionStopsItsTunerAndKeepsWhatWasMeasured) {
  Timer timer;
  timer.sleep_us = 20000;  // 20 ms a candidate: tuning both takes far longer than this test waits
  auto s = session(&timer);
  s->run(input());
  for (int i = 0; i < 20000 && !timer.second_conv.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(timer.second_conv.load());
  const auto t0 = Clock::now();
  s.reset();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
  const int calls = timer.calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(timer.calls.load(), calls);  // nothing measures any more
  // The first convolution was measured before the stop, and is cached.
  EXPECT_NE(read_cache().find("Conv N=2 C=8 H=11 W=9 K=16"), std::string::npos) << read_cache();
  EXPECT_EQ(read_cache().find("Conv N=2 C=16"), std::string::npos) << read_cache();
}

// The session closes while the last sample is taken: nothing is left to
// stop, so the tuned plan is made and swapped in as the session goes.
TEST_F(SessionBackgroundTuning, ASessionClosingAsItsTunedPlanIsMadeGoesCleanly) {
  Timer timer;
  timer.last_sleep_ms = 200;
  auto s = session(&timer);
  s->run(input());
  for (int i = 0; i < 20000 && !timer.in_last_call.load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(timer.in_last_call.load());
  s.reset();
  EXPECT_NE(read_cache().find("Conv N=2 C=16"), std::string::npos) << read_cache();
}

// Two sessions tuning at once (each its own cache file, so that neither
// finds the other's results): their tuners take turns, one timed sample at
// a time in the process, and both plans take over.
TEST_F(SessionBackgroundTuning, TwoSessionsTuningAtOnceTakeTurns) {
  std::mutex mu;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> spans;
  Timer ta, tb;
  for (Timer* t : {&ta, &tb}) {
    t->sleep_us = 1500;
    t->spans = &spans;
    t->spans_mu = &mu;
  }
  auto a = session(&ta, 1);
  auto b = session(&tb, 1, (dir_ / "other_cache.txt").string());
  std::thread ra([&] { a->run(input()); });
  b->run(input());
  ra.join();
  ASSERT_TRUE(a->wait_for_tuning(60));
  ASSERT_TRUE(b->wait_for_tuning(60));
  EXPECT_EQ(a->tuning_report().swaps.size(), 1u);
  EXPECT_EQ(b->tuning_report().swaps.size(), 1u);
  ASSERT_GT(ta.calls.load(), 2);
  ASSERT_GT(tb.calls.load(), 2);
  std::sort(spans.begin(), spans.end());
  int overlaps = 0;
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second) ++overlaps;
  EXPECT_EQ(overlaps, 0) << "of " << spans.size() << " samples";
}

// Two sessions of one model on one cache file, both plans pending: the
// second tuner, resumed after the first saved, takes the second
// convolution from the file instead of measuring it again (its first it
// looked up before that save, and measures).
TEST_F(SessionBackgroundTuning, ASecondSessionTakesWhatTheFirstSaved) {
  Timer ta, tb;
  auto a = session(&ta, 1);
  auto b = session(&tb, 1);
  a->pause_tuning(true);
  b->pause_tuning(true);
  a->run(input());
  b->run(input());
  // Time for b's job to look conv1 up (and open the file) and stop at its
  // first sample; were it later, it would read a's choices anyway.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  a->pause_tuning(false);
  ASSERT_TRUE(a->wait_for_tuning(60));
  ASSERT_TRUE(ta.second_conv.load());
  ASSERT_NE(read_cache().find("Conv N=2 C=16"), std::string::npos) << read_cache();
  b->pause_tuning(false);
  ASSERT_TRUE(b->wait_for_tuning(60));
  EXPECT_FALSE(tb.second_conv.load()) << "the second session measured conv2 again";
  ASSERT_EQ(b->tuning_report().swaps.size(), 1u);
  expect_close(b->run(input())[0], a->run(input())[0]);
}

// Two sessions of one model tuning at the same time (a server's instances
// started together): each problem is measured once in the process, the
// second tuner to reach it waiting for the first's result (MeasureClaims).
TEST_F(SessionBackgroundTuning, TwoSessionsTuningTogetherMeasureEachProblemOnce) {
  Timer ta, tb;
  ta.sleep_us = tb.sleep_us = 50000;  // 50 ms a candidate: both jobs reach conv1 while it is measured
  auto a = session(&ta, 1);
  auto b = session(&tb, 1);
  std::thread first([&] { a->run(input()); });
  b->run(input());
  first.join();
  ASSERT_TRUE(a->wait_for_tuning(60));
  ASSERT_TRUE(b->wait_for_tuning(60));
  const TuningReport ra = a->tuning_report(), rb = b->tuning_report();
  EXPECT_EQ(ra.measured + rb.measured, 2) << "a measured " << ra.measured << ", b " << rb.measured;
  EXPECT_EQ(ra.from_cache + rb.from_cache, 2);
  ASSERT_EQ(ra.swaps.size(), 1u);
  ASSERT_EQ(rb.swaps.size(), 1u);
  for (size_t i = 0; i < ra.choices.size(); ++i) EXPECT_EQ(ra.choices[i].algorithm, rb.choices[i].algorithm);
  expect_close(b->run(input())[0], a->run(input())[0]);
}

// A tuner waiting for another's result goes on when its session closes.
TEST(MeasureClaimsTest, AWaiterStopsWithItsSessionAndAStoppedClaimantHandsTheProblemOn) {
  struct Stop : SampleGate {
    std::atomic<bool> stop{false};
    void begin() override {}
    bool end() override { return true; }
    bool stopping() const override { return stop.load(); }
  } gate;
  MeasureClaims claims;
  MeasureClaims::Result r;
  ASSERT_EQ(claims.claim("p", &r, &gate), MeasureClaims::Answer::kClaimed);
  std::atomic<int> answer{-1};
  std::thread waiter([&] {
    try {
      claims.claim("p", &r, &gate);
      answer = 0;
    } catch (const TuningStopped&) {
      answer = 1;
    }
  });
  while (claims.waiters("p") == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  gate.stop = true;
  waiter.join();
  EXPECT_EQ(answer.load(), 1);
  // The claimant stops without a result: the next one claims it.
  claims.done("p", nullptr);
  gate.stop = false;
  EXPECT_EQ(claims.claim("p", &r, &gate), MeasureClaims::Answer::kClaimed);
  // With a result and a waiter, the waiter takes it; nothing is kept after.
  std::thread second([&] {
    MeasureClaims::Result got;
    EXPECT_EQ(claims.claim("p", &got, &gate), MeasureClaims::Answer::kResult);
    EXPECT_EQ(got.algorithm, "winograd");
  });
  while (claims.waiters("p") == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const MeasureClaims::Result mine{"winograd", 0, 1.5};
  claims.done("p", &mine);
  second.join();
  EXPECT_EQ(claims.claim("p", &r, &gate), MeasureClaims::Answer::kClaimed);
  claims.done("p", nullptr);
  // Still measured by another after `patience`: measure alone.
  ASSERT_EQ(claims.claim("q", &r, &gate), MeasureClaims::Answer::kClaimed);
  EXPECT_EQ(claims.claim("q", &r, &gate, 0.05), MeasureClaims::Answer::kAlone);
}

TEST_F(SessionBackgroundTuning, OffMeasuresInTheFirstRun) {
  Timer timer;
  Session s(two_cpu_convs(), {.device = Device::kCpu, .threads = 1, .tune_in_background = false});
  SessionInternals::configure_tuning(s, {.mode = TuningMode::kCached, .cache_path = cache_, .time = timer.fn()});
  s.run(input());
  TuningReport r = s.tuning_report();
  EXPECT_EQ(r.measured, 2);
  EXPECT_EQ(r.pending, 0);
  EXPECT_TRUE(r.swaps.empty());
  EXPECT_GT(timer.calls.load(), 0);
}

TEST_F(SessionBackgroundTuning, AnIdleSessionBurnsNoCpu) {
  auto s = session(nullptr);  // the real timer
  s->run(input());
  ASSERT_TRUE(s->wait_for_tuning(120));
  s->run(input());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the pool's bounded spin ends
  auto cpu_seconds = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = cpu_seconds() - before;
  EXPECT_LT(used, 0.02) << "an idle session used " << used << " s of CPU in 1 s";
}

// The gate alone: a job that takes timed samples while another thread runs
// back to back, as a benchmark loop or a busy server does.
TEST(SessionBackgroundGate, KeptSamplesNeverOverlapARunAndHeldTimeStaysInItsShare) {
  BackgroundTuner bg(TunerOptions{}, 1);
  std::atomic<bool> in_run{false};
  std::atomic<int> kept_overlapping{0};
  std::atomic<int> kept{0};
  std::atomic<bool> done{false};
  bg.add([&](Tuner&, ThreadPool&) {
    while (kept.load() < 40) {
      bg.begin();
      bool overlapped = in_run.load();
      const auto until = Clock::now() + std::chrono::microseconds(300);
      while (Clock::now() < until) overlapped = overlapped || in_run.load();
      if (bg.end()) {
        ++kept;
        if (overlapped) ++kept_overlapping;
      }
    }
    done = true;
  });
  const auto t0 = Clock::now();
  int runs = 0;
  while (!done.load() && Clock::now() - t0 < std::chrono::seconds(60)) {
    bg.run_begins();
    in_run = true;
    const auto until = Clock::now() + std::chrono::microseconds(500);
    while (Clock::now() < until) {
    }
    in_run = false;
    bg.run_ends();
    ++runs;
  }
  ASSERT_TRUE(bg.wait(60));
  EXPECT_TRUE(done.load()) << "the tuner made no progress under back-to-back runs";
  EXPECT_EQ(kept_overlapping.load(), 0);
  BackgroundTuner::Counts c = bg.counts();
  EXPECT_GT(c.held, 0);
  // Held samples (300 us each) within kHoldShare of the time, and one more.
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LE(static_cast<double>(c.held) * 300e-6, BackgroundTuner::kHoldShare * seconds + 0.01)
      << c.held << " held samples in " << seconds << " s, " << runs << " runs";
}

}  // namespace
}  // namespace minirt
