// Choosing convolution algorithms: with injected timings exhaustive picks
// the fastest allowed candidate; the workspace limit and declines are
// respected and reported; a warm cache measures nothing; a version change
// retunes and says so; a damaged or foreign cache file is ignored with a
// warning; a fixed algorithm runs where it can. Then the real CPU backend:
// every algorithm gives the same outputs.
#include <minirt/minirt.h>

#include "fake_device.h"
#include "kernels/cpu/cpu_caps.h"
#include "model_builder.h"
#include "runtime/api/session_internal.h"
#include "runtime/tuner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace minirt {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::FakeDevice;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;

// A pretend GPU (tests/unit/fake_device.h: XOR-encoded memory) that offers
// four algorithms for Conv: one fast with a big workspace, one medium, one
// slow with none, and one that always declines. They all run the same CPU
// kernel; what matters here is which one the tuner asks for.
class TunableDevice final : public KernelProvider {
 public:
  TunableDevice() : dev_(std::make_shared<FakeDevice>(std::set<std::string>{"Conv", "Relu"})) {}
  const char* name() const override { return "fakegpu"; }
  bool supports(const Graph& g, const Node& n, std::string* why) const override { return dev_->supports(g, n, why); }
  std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) const override { return dev_->make_kernel(g, n); }

  std::vector<AlgorithmOption> algorithms(const Graph&, const Node& n) const override {
    if (n.op != "Conv") return {};
    return {
        {"fast_big", size_t{1} << 20, ""}, {"medium", 1024, ""}, {"slow", 0, ""}, {"refused", 0, "not for this shape"}};
  }
  std::string heuristic_algorithm(const Graph&, const Node&) const override { return "slow"; }
  std::unique_ptr<Kernel> make_kernel_with(const Graph& g, const Node& n, const std::string& algorithm) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      made_.push_back(algorithm);
    }
    return dev_->make_kernel(g, n);
  }
  std::string tuning_context() const override { return "fakegpu | Fake GPU 1 | fakelib " + version + " | fp32"; }
  // The margin the heuristic's pick keeps (KernelProvider::keep_heuristic_within); negative: the tuner's.
  double keep_heuristic_within(const Graph&, const Node&, double usual) const override {
    return margin >= 0 ? margin : usual;
  }
  double margin = -1;

  std::vector<std::string> made() const {
    std::lock_guard<std::mutex> lock(mu_);
    return made_;
  }
  const FakeDevice& device() const override { return *dev_; }  // its memory and streams: the fake's
  std::string version = "1.0";

 private:
  std::shared_ptr<FakeDevice> dev_;
  mutable std::mutex mu_;
  mutable std::vector<std::string> made_;
};

// Injected timings: fast_big 1 ms, medium 2 ms, slow 3 ms; counts its calls.
struct FakeTimer {
  std::map<std::string, int> calls;
  std::set<std::string> failing;
  std::map<std::string, double> ms = {{"fast_big", 1.0}, {"medium", 2.0}, {"slow", 3.0}};
  int total() const {
    int n = 0;
    for (const auto& [k, v] : calls) n += v;
    return n;
  }
  TuningTimer fn() {
    return [this](const KernelProvider&, const Graph&, const Node&, const AlgorithmOption& o) -> double {
      calls[o.name]++;
      if (failing.count(o.name)) throw std::runtime_error("no kernel image for this device");
      return ms.at(o.name);
    };
  }
};

// x 1x3x8x8 -> conv1 (3->4, 3x3, pad 1) -> relu -> conv2 (4->4, 3x3, pad 1) -> y
std::shared_ptr<const Model> two_convs() {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {-1, 3, 8, 8}, {"N"});
  m.initializer("w1", testing::iota({4, 3, 3, 3}, -0.5f, 0.01f));
  m.initializer("w2", testing::iota({4, 4, 3, 3}, 0.3f, -0.005f));
  m.node("Conv", {"x", "w1"}, {"c1"}, "conv1").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c1"}, {"r1"}, "relu1");
  m.node("Conv", {"r1", "w2"}, {"y"}, "conv2").ints("pads", {1, 1, 1, 1});
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "two_convs.onnx");
}

NamedTensors input(int64_t batch = 1) { return {{"x", testing::iota({batch, 3, 8, 8}, 0.0f, 0.01f)}}; }

class TunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("minirt_tuner_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    cache_ = (dir_ / "algo_cache.txt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A session on the tunable device, the tuner configured as given (cache in
  // the test's folder, timings from `timer` unless it is null).
  struct Run {
    std::shared_ptr<TunableDevice> dev = std::make_shared<TunableDevice>();
    std::unique_ptr<Session> session;
    std::vector<Tensor> out;
    TuningReport report;
  };
  Run run(TunerOptions o, FakeTimer* timer, const std::string& version = "1.0", double margin = -1) {
    Run r;
    r.dev->version = version;
    r.dev->margin = margin;
    r.session = std::make_unique<Session>(two_convs(), SessionOptions{.device = Device::kCpu, .threads = 1});
    SessionInternals::add_device(*r.session, r.dev);
    if (o.cache_path.empty()) o.cache_path = cache_;
    if (timer) o.time = timer->fn();
    SessionInternals::configure_tuning(*r.session, std::move(o));
    r.out = r.session->run(input());
    r.report = r.session->tuning_report();
    return r;
  }
  std::string read_cache() {
    std::ifstream f(cache_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  static std::vector<std::string> algorithms(const TuningReport& r) {
    std::vector<std::string> a;
    for (const auto& c : r.choices) a.push_back(c.algorithm);
    return a;
  }
  static bool logged(const TuningReport& r, const std::string& what) {
    for (const auto& l : r.log)
      if (l.find(what) != std::string::npos) return true;
    return false;
  }

  fs::path dir_;
  std::string cache_;
};

// The reference: the same model with no tuning on the plain CPU.
std::vector<Tensor> reference() {
  Session s(two_convs(), {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  return s.run(input());
}

void expect_close(const Tensor& a, const Tensor& b, float tol = 1e-4f) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], tol * (1 + std::fabs(b.data<float>()[i]))) << "at " << i;
}

TEST_F(TunerTest, TheHeuristicsPickStaysUnlessClearlySlower) {
  // 2% slower than the fastest: within the noise, the heuristic's stays.
  FakeTimer near;
  near.ms["slow"] = 1.02;
  Run r = run({.mode = TuningMode::kExhaustive}, &near);
  EXPECT_THAT(algorithms(r.report), ElementsAre("slow", "slow"));
  EXPECT_DOUBLE_EQ(r.report.choices[0].time_ms, 1.02);
  // 5% slower: the fastest wins; and with no margin even 2% is enough.
  FakeTimer far;
  far.ms["slow"] = 1.05;
  EXPECT_THAT(algorithms(run({.mode = TuningMode::kExhaustive, .write_cache = false}, &far).report),
              ElementsAre("fast_big", "fast_big"));
  FakeTimer strict;
  strict.ms["slow"] = 1.02;
  EXPECT_THAT(
      algorithms(
          run({.mode = TuningMode::kExhaustive, .write_cache = false, .keep_heuristic_within = 0}, &strict).report),
      ElementsAre("fast_big", "fast_big"));
}

TEST_F(TunerTest, ABackendWidensTheHeuristicsMarginWhereItsPickHelpsTheStepsAround) {
  // The CPU's nchwc_bf16 before a depthwise convolution keeps 10%
  // (nchwc_bf16_margin): 5% slower alone stays, 15% does not.
  FakeTimer five;
  five.ms["slow"] = 1.05;
  EXPECT_THAT(algorithms(run({.mode = TuningMode::kExhaustive, .write_cache = false}, &five, "1.0", 0.10).report),
              ElementsAre("slow", "slow"));
  FakeTimer fifteen;
  fifteen.ms["slow"] = 1.15;
  EXPECT_THAT(algorithms(run({.mode = TuningMode::kExhaustive, .write_cache = false}, &fifteen, "1.0", 0.10).report),
              ElementsAre("fast_big", "fast_big"));
}

TEST_F(TunerTest, ExhaustivePicksTheFastestAllowedCandidate) {
  FakeTimer timer;
  Run r = run({.mode = TuningMode::kExhaustive}, &timer);
  EXPECT_THAT(algorithms(r.report), ElementsAre("fast_big", "fast_big"));
  EXPECT_EQ(r.report.nodes, 2);
  EXPECT_EQ(r.report.measured, 2);
  EXPECT_EQ(r.report.from_cache, 0);
  // Each problem measured once: conv1 and conv2 differ (3 vs 4 channels).
  EXPECT_EQ(timer.calls["fast_big"], 2);
  EXPECT_EQ(timer.calls["medium"], 2);
  EXPECT_EQ(timer.calls["slow"], 2);
  const TuningChoice& c = r.report.choices[0];
  EXPECT_EQ(c.node, "conv1");
  EXPECT_EQ(c.summary, "Conv 3->4 3x3");
  EXPECT_EQ(c.source, ChoiceSource::kMeasured);
  EXPECT_EQ(c.heuristic, "slow");
  EXPECT_DOUBLE_EQ(c.time_ms, 1.0);
  EXPECT_EQ(c.workspace_bytes, size_t{1} << 20);
  ASSERT_EQ(c.candidates.size(), 4u);
  EXPECT_EQ(c.candidates[3].status, CandidateStatus::kDeclined);
  EXPECT_EQ(c.candidates[3].reason, "not for this shape");
  EXPECT_EQ(to_string(c), "conv1 (Conv 3->4 3x3): fast_big, 1.00 ms, workspace 1.0 MiB, measured");
  // The plan runs the chosen kernels, and they compute what the CPU does.
  EXPECT_THAT(r.dev->made(), ElementsAre("fast_big", "fast_big"));
  expect_close(r.out[0], reference()[0]);
  // Exhaustive results are kept for cached runs.
  EXPECT_THAT(read_cache(), HasSubstr("groups=1 -> fast_big ws=1048576 ms=1.0000"));
}

TEST_F(TunerTest, DeclinedCandidatesAreNeverRun) {
  FakeTimer timer;
  Run r = run({.mode = TuningMode::kExhaustive}, &timer);
  EXPECT_EQ(timer.calls.count("refused"), 0u);
  EXPECT_THAT(r.dev->made(), Not(Contains("refused")));
  EXPECT_LT(r.report.choices[0].candidates[3].time_ms, 0);
}

TEST_F(TunerTest, WorkspaceLimitSkipsBiggerCandidatesAndReportsThem) {
  FakeTimer timer;
  Run r = run({.mode = TuningMode::kExhaustive, .workspace_limit = 64 << 10}, &timer);
  EXPECT_THAT(algorithms(r.report), ElementsAre("medium", "medium"));
  EXPECT_EQ(timer.calls.count("fast_big"), 0u);
  const TuningCandidate& big = r.report.choices[0].candidates[0];
  EXPECT_EQ(big.algorithm, "fast_big");
  EXPECT_EQ(big.status, CandidateStatus::kOverWorkspaceLimit);
  EXPECT_THAT(big.reason, HasSubstr("needs 1.0 MiB, the limit is 64.0 KiB"));
  // A limited choice is not the unlimited one: its own cache entry.
  EXPECT_THAT(read_cache(), HasSubstr("workspace<=65536 -> medium"));
  FakeTimer again;
  Run unlimited = run({.mode = TuningMode::kCached}, &again);
  EXPECT_THAT(algorithms(unlimited.report), ElementsAre("fast_big", "fast_big"));
  EXPECT_EQ(unlimited.report.measured, 2);
}

TEST_F(TunerTest, ACandidateThatThrowsIsReportedFailedAndSkipped) {
  FakeTimer timer;
  timer.failing = {"fast_big"};
  Run r = run({.mode = TuningMode::kExhaustive}, &timer);
  EXPECT_THAT(algorithms(r.report), ElementsAre("medium", "medium"));
  EXPECT_EQ(r.report.choices[0].candidates[0].status, CandidateStatus::kFailed);
  EXPECT_THAT(r.report.choices[0].candidates[0].reason, HasSubstr("no kernel image"));
}

TEST_F(TunerTest, CachedOnAWarmCacheMeasuresNothing) {
  FakeTimer first;
  Run cold = run({.mode = TuningMode::kCached}, &first);
  EXPECT_EQ(cold.report.measured, 2);
  EXPECT_EQ(first.total(), 6);
  FakeTimer second;
  Run warm = run({.mode = TuningMode::kCached}, &second);
  EXPECT_EQ(second.total(), 0);  // the timing function was never called
  EXPECT_EQ(warm.report.measured, 0);
  EXPECT_EQ(warm.report.from_cache, 2);
  EXPECT_THAT(algorithms(warm.report), ElementsAre("fast_big", "fast_big"));
  EXPECT_EQ(warm.report.choices[0].source, ChoiceSource::kCache);
  EXPECT_DOUBLE_EQ(warm.report.choices[0].time_ms, 1.0);
  EXPECT_THAT(to_string(warm.report.choices[1]),
              HasSubstr("conv2 (Conv 4->4 3x3): fast_big, 1.00 ms, workspace 1.0 MiB, from cache"));
  EXPECT_TRUE(warm.report.log.empty());
}

TEST_F(TunerTest, TuningHappensOnlyWhenAPlanIsMade) {
  FakeTimer timer;
  Run r = run({.mode = TuningMode::kExhaustive}, &timer);
  int calls = timer.total();
  size_t made = r.dev->made().size();
  for (int i = 0; i < 3; ++i) r.session->run(input());
  EXPECT_EQ(timer.total(), calls);
  EXPECT_EQ(r.dev->made().size(), made);
  // A new batch size is a new plan, and new problems to measure.
  r.session->run(input(2));
  EXPECT_EQ(r.session->tuning_report().measured, 4);
  EXPECT_THAT(r.session->tuning_report().choices[2].problem, HasSubstr("Conv N=2 C=3 H=8 W=8 K=4 kernel=3x3"));
}

TEST_F(TunerTest, AVersionChangeRetunesAndSaysSo) {
  FakeTimer first;
  run({.mode = TuningMode::kCached}, &first, "1.0");
  FakeTimer second;
  Run upgraded = run({.mode = TuningMode::kCached}, &second, "2.0");
  EXPECT_EQ(upgraded.report.measured, 2);
  EXPECT_EQ(second.total(), 6);
  EXPECT_TRUE(logged(upgraded.report, "cache made with fakelib 1.0, this is 2.0: retuning"))
      << ::testing::PrintToString(upgraded.report.log);
  EXPECT_EQ(upgraded.report.log.size(), 1u);  // once, not once per convolution
  // Both versions' entries stay in the file.
  EXPECT_THAT(read_cache(), HasSubstr("fakelib 1.0"));
  EXPECT_THAT(read_cache(), HasSubstr("fakelib 2.0"));
}

TEST_F(TunerTest, ADamagedCacheFileIsIgnoredWithAWarningAndTheSessionRuns) {
  {
    std::ofstream f(cache_);
    f << "minirt-algo-cache 1\n[fakegpu | Fake GPU 1 | fakelib 1.0 | fp32 | float32]\nConv N=1 C=3 H=8 W=8 K=4 -> sl";
  }
  FakeTimer timer;
  Run r = run({.mode = TuningMode::kCached}, &timer);
  EXPECT_TRUE(logged(r.report, "damaged line(s); the whole file is ignored")) << ::testing::PrintToString(r.report.log);
  EXPECT_EQ(r.report.measured, 2);
  expect_close(r.out[0], reference()[0]);
  EXPECT_THAT(read_cache(), HasSubstr("-> fast_big"));  // rewritten whole
}

TEST_F(TunerTest, AForeignCacheFileIsIgnoredAndLeftAlone) {
  { std::ofstream(cache_) << "my precious notes\n"; }
  FakeTimer timer;
  Run r = run({.mode = TuningMode::kCached}, &timer);
  EXPECT_TRUE(logged(r.report, "not a minirt algorithm cache")) << ::testing::PrintToString(r.report.log);
  EXPECT_EQ(r.report.measured, 2);
  expect_close(r.out[0], reference()[0]);
  EXPECT_EQ(read_cache(), "my precious notes\n");
}

TEST_F(TunerTest, FixedAlgorithmWhereItCanRunElseTheHeuristicsWithALogLine) {
  FakeTimer timer;
  Run fixed = run({.mode = TuningMode::kFixed, .algorithm = "medium"}, &timer);
  EXPECT_THAT(algorithms(fixed.report), ElementsAre("medium", "medium"));
  EXPECT_EQ(fixed.report.fixed, 2);
  EXPECT_EQ(timer.total(), 0);
  EXPECT_FALSE(fs::exists(cache_));  // fixed and heuristic modes leave the cache alone

  Run refused = run({.mode = TuningMode::kFixed, .algorithm = "refused"}, &timer);
  EXPECT_THAT(algorithms(refused.report), ElementsAre("slow", "slow"));
  EXPECT_EQ(refused.report.heuristic, 2);
  EXPECT_TRUE(logged(refused.report,
                     "conv1 (Conv 3->4 3x3): 'refused' declines it (not for this shape); using the heuristic's slow"))
      << ::testing::PrintToString(refused.report.log);

  Run unknown = run({.mode = TuningMode::kFixed, .algorithm = "warp_drive"}, &timer);
  EXPECT_THAT(algorithms(unknown.report), ElementsAre("slow", "slow"));
  EXPECT_TRUE(logged(unknown.report, "'warp_drive' is not one of fakegpu's algorithms for it"));

  Run too_big = run({.mode = TuningMode::kFixed, .algorithm = "fast_big", .workspace_limit = 4096}, &timer);
  EXPECT_THAT(algorithms(too_big.report), ElementsAre("slow", "slow"));
  EXPECT_TRUE(logged(too_big.report, "over the limit of 4.0 KiB"));
  EXPECT_EQ(timer.total(), 0);

  EXPECT_THROW(Session(two_convs(), {.tuning = TuningMode::kFixed}), Error);  // kFixed needs a name
}

TEST_F(TunerTest, HeuristicModeMeasuresNothingAndLeavesTheCacheAlone) {
  FakeTimer timer;
  Run r = run({.mode = TuningMode::kHeuristic}, &timer);
  EXPECT_THAT(algorithms(r.report), ElementsAre("slow", "slow"));
  EXPECT_EQ(r.report.heuristic, 2);
  EXPECT_EQ(timer.total(), 0);
  EXPECT_FALSE(fs::exists(cache_));
  EXPECT_THAT(to_string(r.report.choices[0]), HasSubstr("conv1 (Conv 3->4 3x3): slow, workspace 0 B, heuristic"));
}

TEST_F(TunerTest, TheRealTimerMeasuresOnTheDevicesOwnMemory) {
  Run r = run({.mode = TuningMode::kExhaustive, .min_repeats = 1, .max_repeats = 2, .target_ms = 0}, nullptr);
  ASSERT_EQ(r.report.choices.size(), 2u);
  for (const auto& c : r.report.choices) {
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(c.candidates[i].status, CandidateStatus::kOk) << c.candidates[i].reason;
      EXPECT_GE(c.candidates[i].time_ms, 0);
    }
    EXPECT_EQ(c.candidates[3].status, CandidateStatus::kDeclined);
  }
  EXPECT_EQ(r.dev->device().errors.load(), 0);  // every pointer the kernels saw was device memory
  expect_close(r.out[0], reference()[0]);
}

TEST(TuningProblem, NamesEveryParameterReadably) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2, 8, 9, 7});
  m.initializer("w", testing::iota({8, 2, 3, 3}, 0.0f, 0.01f));
  m.node("Conv", {"x", "w"}, {"c"}, "dw")
      .ints("pads", {1, 0, 1, 2})
      .ints("strides", {2, 1})
      .ints("dilations", {1, 2})
      .i("group", 4);
  m.node("Relu", {"c"}, {"y"}, "relu");
  m.output("y");
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "grouped.onnx");
  auto dev = std::make_shared<TunableDevice>();
  Session s(model, {.device = Device::kCpu, .threads = 1});
  SessionInternals::add_device(s, dev);
  SessionInternals::configure_tuning(s, {.mode = TuningMode::kHeuristic});
  s.run({{"x", testing::iota({2, 8, 9, 7}, 0.0f, 0.001f)}});
  TuningReport r = s.tuning_report();
  ASSERT_EQ(r.choices.size(), 1u);
  EXPECT_EQ(r.choices[0].problem,
            "Conv N=2 C=8 H=9 W=7 K=8 kernel=3x3 pads=1,0,1,2 strides=2,1 dilations=1,2 groups=4 act=Relu");
  EXPECT_EQ(r.choices[0].summary, "Conv 8->8 3x3 s2x1 d1x2 g4");
}

// ---- The real CPU backend ----

// conv (3x3, pad 1) with bias and ReLU on a batch of 2, odd sizes.
std::shared_ptr<const Model> cpu_conv() {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2, 8, 11, 9});
  m.initializer("w", testing::iota({16, 8, 3, 3}, -0.4f, 0.0007f));
  m.initializer("b", testing::iota({16}, -0.1f, 0.013f));
  m.node("Conv", {"x", "w", "b"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y"}, "relu");
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "cpu_conv.onnx");
}

TEST(TunerOnTheCpu, OutputsAreTheSameWhateverTheAlgorithm) {
  auto model = cpu_conv();
  NamedTensors in = {{"x", testing::iota({2, 8, 11, 9}, -1.0f, 0.001f)}};
  // The candidates, as the CPU backend lists them (timings injected: fast).
  Session probe(model, {.device = Device::kCpu, .threads = 2});
  std::map<std::string, int> order;
  SessionInternals::configure_tuning(
      probe, {.mode = TuningMode::kExhaustive,
              .write_cache = false,
              .time = [&](const KernelProvider&, const Graph&, const Node&, const AlgorithmOption& o) {
                return 1.0 + static_cast<double>(order.emplace(o.name, static_cast<int>(order.size())).first->second);
              }});
  std::vector<Tensor> heuristic_out =
      Session(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic}).run(in);
  probe.run(in);
  TuningReport r = probe.tuning_report();
  ASSERT_EQ(r.choices.size(), 1u) << "the CPU backend offers no Conv algorithms (KernelProvider::algorithms)";
  std::vector<std::string> runnable;
  for (const auto& c : r.choices[0].candidates)
    if (c.status == CandidateStatus::kOk) runnable.push_back(c.algorithm);
  ASSERT_GE(runnable.size(), 2u) << "a 3x3 convolution should have at least two CPU algorithms";
  for (const std::string& a : runnable) {
    Session s(model, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kFixed, .tuning_algorithm = a});
    std::vector<Tensor> out = s.run(in);
    ASSERT_EQ(s.tuning_report().choices.at(0).algorithm, a);
    ASSERT_EQ(s.tuning_report().choices.at(0).source, ChoiceSource::kFixed);
    SCOPED_TRACE(a);
    expect_close(out[0], heuristic_out[0], 1e-4f);
  }
}

TEST(TunerOnTheCpu, ExhaustiveWithTheRealTimerPicksAnAlgorithmThatRan) {
  auto model = cpu_conv();
  Session s(model, {.device = Device::kCpu, .threads = 1});
  SessionInternals::configure_tuning(
      s, {.mode = TuningMode::kExhaustive, .write_cache = false, .min_repeats = 1, .max_repeats = 1, .target_ms = 0});
  s.run({{"x", testing::iota({2, 8, 11, 9}, -1.0f, 0.001f)}});
  TuningReport r = s.tuning_report();
  ASSERT_EQ(r.choices.size(), 1u);
  const TuningChoice& c = r.choices[0];
  EXPECT_EQ(c.source, ChoiceSource::kMeasured);
  double best = 1e300;
  for (const auto& t : c.candidates)
    if (t.status == CandidateStatus::kOk) best = std::min(best, t.time_ms);
  // The fastest, or the heuristic's pick when that is within the margin.
  if (c.algorithm != c.heuristic)
    EXPECT_DOUBLE_EQ(c.time_ms, best);
  else
    EXPECT_LE(c.time_ms, best * 1.03);
  EXPECT_NE(c.algorithm, "");
}

// Under bf16 math the tuner times nchwc_bf16 as it runs between bf16 values
// (KernelProvider::make_tuning_kernel): its input bf16 where a convolution
// makes it, its output bf16 where only convolutions read it (not a pool);
// and on AMX,
// where the rules pick nchwc_bf16, that pick keeps a 10% margin where a
// depthwise convolution reads its output (nchwc_bf16_margin).
TEST(TunerOnTheCpu, Bf16IsTimedBetweenBf16ValuesAndKeptBeforeADepthwise) {
  if (cpu::bf16_isa() == cpu::Bf16Isa::kNone) GTEST_SKIP() << "no bf16 instructions here: " << cpu::bf16_isa_reason();
  // x -> a (1x1, 32->64) -> b (1x1, 64->64) -> dw (3x3, 64 groups) -> c (1x1, 64->16) -> e (1x1, 16->32) -> pool
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 32, 14, 14});
  m.initializer("wa", testing::iota({64, 32, 1, 1}, -0.3f, 0.0003f));
  m.initializer("wb", testing::iota({64, 64, 1, 1}, 0.2f, -0.0001f));
  m.initializer("wd", testing::iota({64, 1, 3, 3}, -0.1f, 0.0005f));
  m.initializer("wc", testing::iota({16, 64, 1, 1}, 0.1f, -0.0002f));
  m.initializer("we", testing::iota({32, 16, 1, 1}, -0.1f, 0.0004f));
  m.node("Conv", {"x", "wa"}, {"va"}, "a");
  m.node("Conv", {"va", "wb"}, {"vb"}, "b");
  m.node("Conv", {"vb", "wd"}, {"vd"}, "dw").ints("pads", {1, 1, 1, 1}).i("group", 64);
  m.node("Conv", {"vd", "wc"}, {"vc"}, "c");
  m.node("Conv", {"vc", "we"}, {"ve"}, "e");
  m.node("GlobalAveragePool", {"ve"}, {"y"}, "pool");  // e averaged: not one of the last layers kept float32
  m.output("y");
  std::string bytes = m.bytes();
  Session s(Model::load_from_memory(bytes.data(), bytes.size(), "bf16_chain.onnx"),
            {.device = Device::kCpu, .threads = 2, .math = MathMode::kBf16});
  std::map<std::string, std::string> timed;  // node -> how its nchwc_bf16 was made for timing
  std::map<std::string, double> margin;
  SessionInternals::configure_tuning(
      s, {.mode = TuningMode::kExhaustive,
          .write_cache = false,
          .time = [&](const KernelProvider& b, const Graph& g, const Node& n, const AlgorithmOption& o) {
            if (o.name == "nchwc_bf16") {
              timed[n.name] = b.make_tuning_kernel(g, n, o.name)->describe();
              margin[n.name] = b.keep_heuristic_within(g, n, 0.03);
            }
            return 1.0;
          }});
  s.run({{"x", testing::iota({1, 32, 14, 14}, -1.0f, 0.001f)}});
  ASSERT_EQ(timed.count("a") + timed.count("b") + timed.count("c") + timed.count("e"), 4u)
      << "nchwc_bf16 not timed for every 1x1";
  auto has = [&](const std::string& node, const std::string& what) {
    return timed[node].find(what) != std::string::npos;
  };
  // The rules pick nchwc_bf16 on AMX, and on AVX512_BF16 where it outpaces
  // the FMAs (AMD); there a and b are timed between bf16 values (the value
  // between them stays bf16 in the plan only where both run bf16), and the
  // margin before a depthwise convolution widens.
  const cpu::Bf16Isa path = cpu::bf16_isa();
  const bool rules_bf16 = path == cpu::Bf16Isa::kAmx || cpu::bf16_dot_outpaces_fma(path);
  EXPECT_FALSE(has("a", "in=bf16")) << timed["a"];  // the model's input
  EXPECT_EQ(has("a", "out=bf16"), rules_bf16) << timed["a"];
  EXPECT_EQ(has("b", "in=bf16"), rules_bf16) << timed["b"];
  EXPECT_TRUE(has("b", "out=bf16")) << timed["b"];  // read by the depthwise convolution
  EXPECT_TRUE(has("c", "in=bf16")) << timed["c"];   // made by it
  // e reads 16 channels (8 pairs of a 32-channel group, the rest skipped):
  // the rules take bf16 there as well, so c's output is bf16 too.
  EXPECT_EQ(has("c", "out=bf16"), rules_bf16) << timed["c"];
  EXPECT_EQ(has("e", "in=bf16"), rules_bf16) << timed["e"];
  EXPECT_FALSE(has("e", "out=bf16")) << timed["e"];  // read by the pool
  // The margin: 10% for b before the depthwise convolution where the rules
  // pick bf16; on AMD for every pick of the rules' bf16.
  const bool outpaces = cpu::bf16_dot_outpaces_fma(path);
  EXPECT_DOUBLE_EQ(margin["b"], rules_bf16 ? 0.10 : 0.03);
  EXPECT_DOUBLE_EQ(margin["a"], outpaces ? 0.10 : 0.03);
  EXPECT_DOUBLE_EQ(margin["c"], outpaces ? 0.10 : 0.03);
  EXPECT_DOUBLE_EQ(margin["e"], outpaces ? 0.10 : 0.03);
}

TEST(TunerOnTheCpu, TheRulesTakeBf16WhereItsProductsOutpaceTheFmas) {
  if (cpu::bf16_isa() == cpu::Bf16Isa::kNone) GTEST_SKIP() << "no bf16 instructions here: " << cpu::bf16_isa_reason();
  // x (16 channels) -> narrow (1x1, 16->64) -> wide (1x1, 64->64)
  //   -> w64 (3x3, 64->128) -> w128 (3x3, 128->128) -> pool -> y; x -> n3 -> pool2 -> y2
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 16, 14, 14});
  m.initializer("wn", testing::iota({64, 16, 1, 1}, -0.3f, 0.0003f));
  m.initializer("ww", testing::iota({64, 64, 1, 1}, 0.2f, -0.0001f));
  m.initializer("w3a", testing::iota({128, 64, 3, 3}, 0.1f, -0.00001f));
  m.initializer("w3b", testing::iota({128, 128, 3, 3}, -0.1f, 0.00001f));
  m.node("Conv", {"x", "wn"}, {"vn"}, "narrow");
  m.node("Conv", {"vn", "ww"}, {"vw"}, "wide");
  m.node("Conv", {"vw", "w3a"}, {"v3a"}, "w64").ints("pads", {1, 1, 1, 1});
  m.node("Conv", {"v3a", "w3b"}, {"v3b"}, "w128").ints("pads", {1, 1, 1, 1});
  m.node("GlobalAveragePool", {"v3b"}, {"y"}, "pool");
  m.output("y");
  // x -> n3 (3x3, 16->32) -> pool2 -> y2
  m.initializer("w3n", testing::iota({32, 16, 3, 3}, 0.05f, -0.00002f));
  m.node("Conv", {"x", "w3n"}, {"v3n"}, "n3").ints("pads", {1, 1, 1, 1});
  m.node("GlobalAveragePool", {"v3n"}, {"y2"}, "pool2");
  m.output("y2");
  std::string bytes = m.bytes();
  Session s(Model::load_from_memory(bytes.data(), bytes.size(), "bf16_rules.onnx"),
            {.device = Device::kCpu, .threads = 2, .math = MathMode::kBf16, .tuning = TuningMode::kHeuristic});
  s.run({{"x", testing::iota({1, 16, 14, 14}, -1.0f, 0.001f)}});
  std::map<std::string, std::string> algo;
  for (const TuningChoice& c : s.tuning_report().choices) algo[c.node] = c.algorithm;
  const cpu::Bf16Isa path = cpu::bf16_isa();
  const bool amx = path == cpu::Bf16Isa::kAmx, outpaces = cpu::bf16_dot_outpaces_fma(path);
  EXPECT_EQ(outpaces, path == cpu::Bf16Isa::kAvx512Bf16 && cpu::cpu_features().amd);
  // 64 channels fill the bf16 pairs: bf16 wherever its products outpace the FMAs.
  EXPECT_EQ(algo["wide"], amx || outpaces ? "nchwc_bf16" : "nchwc_direct");
  // 16 channels fill 8 pairs of a 32-channel group, the rest skipped: twice
  // the FMAs' products too, 1x1 or 3x3.
  EXPECT_EQ(algo["narrow"], amx || outpaces ? "nchwc_bf16" : "nchwc_direct");
  EXPECT_EQ(algo["n3"], amx || outpaces ? "nchwc_bf16" : "nchwc_direct");
  // 3x3 from 64 channels and more: Winograd, F(2x2) with bf16 products where
  // they outpace the FMAs, from 128 channels or from 64 on a plane under 28.
  EXPECT_EQ(algo["w64"], amx ? "nchwc_bf16" : outpaces ? "nchwc_winograd_f2_bf16" : "nchwc_winograd_f4");
  EXPECT_EQ(algo["w128"], amx ? "nchwc_bf16" : outpaces ? "nchwc_winograd_f2_bf16" : "nchwc_winograd_f4");
}

TEST(TunerOnTheCpu, MeasuringAnEmptyBatchIsFine) {
  // The op grid under UBSan found it: an input of no elements has no host
  // buffer to copy from when the tuner fills its measuring inputs.
  ModelBuilder m;
  m.input("x", DType::kFloat32, {-1, 8, 11, 9}, {"N"});
  m.initializer("w", testing::iota({16, 8, 3, 3}, -0.4f, 0.0007f));
  m.node("Conv", {"x", "w"}, {"y"}, "conv").ints("pads", {1, 1, 1, 1});
  m.output("y");
  std::string bytes = m.bytes();
  Session s(Model::load_from_memory(bytes.data(), bytes.size(), "empty_batch.onnx"),
            {.device = Device::kCpu, .threads = 1});
  SessionInternals::configure_tuning(
      s, {.mode = TuningMode::kExhaustive, .write_cache = false, .min_repeats = 1, .max_repeats = 1, .target_ms = 0});
  std::vector<Tensor> out = s.run({{"x", Tensor::zeros(DType::kFloat32, {0, 8, 11, 9})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{0, 16, 11, 9}));
  EXPECT_EQ(s.tuning_report().choices.size(), 1u);
}

// Choosing from paired rounds (runtime/tuner.h, choose_by_rounds): noise
// keeps the heuristic's pick, a clear win replaces it, and near ties come out
// the same whatever the order of the medians.
TEST(ChooseByRounds, TheHeuristicsPickStaysWithinTheNoise) {
  // Candidate 1 is 2% faster in the median but swings +-10% round to round.
  std::vector<std::vector<double>> rounds = {{1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
                                             {0.88, 1.08, 0.9, 1.1, 0.98, 0.89, 1.07, 0.97, 0.99}};
  std::vector<std::array<double, 3>> r;
  EXPECT_EQ(choose_by_rounds(rounds, 0, 0.03, &r), 0u);
  EXPECT_NEAR(r[1][0], 0.98, 1e-9);
  EXPECT_LT(r[1][1], 0.98);
  EXPECT_GT(r[1][2], 1.0);  // the interval spans 1: not beyond the noise
  EXPECT_EQ(r[0][0], 0.0);  // the heuristic's own: not compared
}

TEST(ChooseByRounds, AClearWinReplacesItAndRoundsArePaired) {
  // The machine slows down in rounds 4-6 for everyone: paired ratios still
  // show candidate 2 at 0.7 of the heuristic's time in every round.
  std::vector<std::vector<double>> rounds = {
      {1.0, 1.0, 1.0, 2.0, 2.0, 2.0}, {1.2, 1.2, 1.2, 2.4, 2.4, 2.4}, {0.7, 0.7, 0.7, 1.4, 1.4, 1.4}};
  std::vector<std::array<double, 3>> r;
  EXPECT_EQ(choose_by_rounds(rounds, 0, 0.03, &r), 2u);
  EXPECT_NEAR(r[2][2], 0.7, 1e-9);
  EXPECT_NEAR(r[1][0], 1.2, 1e-9);
}

TEST(ChooseByRounds, NearTiesGoToTheEarlierListed) {
  std::vector<std::vector<double>> a = {{0.79, 0.8, 0.81, 0.8, 0.8}, {1, 1, 1, 1, 1}, {0.78, 0.79, 0.8, 0.79, 0.79}};
  std::vector<std::array<double, 3>> r;
  EXPECT_EQ(choose_by_rounds(a, 1, 0.03, &r), 0u);  // 0.80 is within 3% of 0.79: the first listed
  std::vector<std::vector<double>> b = {{0.9, 0.9, 0.9, 0.9}, {1, 1, 1, 1}, {0.6, 0.6, 0.6, 0.6}};
  EXPECT_EQ(choose_by_rounds(b, 1, 0.03, &r), 2u);  // not a tie: the faster
  // A candidate that did not run (no rounds) is never chosen.
  std::vector<std::vector<double>> c = {{}, {1, 1, 1}, {std::nan(""), 0.5, 0.5}};
  EXPECT_EQ(choose_by_rounds(c, 1, 0.03, &r), 2u);
  EXPECT_EQ(r[0][0], 0.0);
}

}  // namespace
}  // namespace minirt
