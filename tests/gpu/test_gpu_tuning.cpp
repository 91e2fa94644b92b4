// Autotuning on the GPU: every cuDNN forward algorithm the tuner lists for a
// convolution runs and matches the CPU; exhaustive mode picks the fastest
// one it timed; a second session on the same cache file measures nothing.
// Skipped, with the gate's or the loader's reason, where no GPU is usable.
#include "gpu_test_util.h"

#include <cstdlib>
#include <filesystem>

namespace minirt::gputest {
namespace {

constexpr Tol kProducts{2e-4, 2e-3};  // as in test_gpu_ops.cpp

std::shared_ptr<const Model> conv_model() {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2, 16, 20, 20});
  m.initializer("w", random_tensor({32, 16, 3, 3}, 11));
  m.initializer("b", random_tensor({32}, 12));
  m.node("Conv", {"x", "w", "b"}, {"y"}, "conv").ints("pads", {1, 1, 1, 1});
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "tuned_conv.onnx");
}

std::string temp_cache(const char* name) {
  auto p = std::filesystem::temp_directory_path() / (std::string("minirt-gpu-tuning-") + name + ".txt");
  std::filesystem::remove(p);
  return p.string();
}

TEST(GpuTuning, EveryCudnnCandidateMatchesTheCpuAndExhaustivePicksTheFastest) {
  MINIRT_SKIP_WITHOUT_GPU();
  auto model = conv_model();
  NamedTensors in{{"x", random_tensor({2, 16, 20, 20}, 13)}};
  Session cpu(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  std::vector<Tensor> want = cpu.run(in);

  const std::string cache = temp_cache("exhaustive");
  Session tuned(model,
                {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kExhaustive, .algo_cache_path = cache});
  SessionInternals::add_device(tuned, shared_backend());
  std::vector<Tensor> got = tuned.run(in);
  EXPECT_TRUE(close(got[0], want[0], kProducts));
  TuningReport r = tuned.tuning_report();
  ASSERT_EQ(r.choices.size(), 1u) << tuned.plan_report();
  const TuningChoice& c = r.choices[0];
  EXPECT_EQ(c.backend, "cuda");
  EXPECT_EQ(c.source, ChoiceSource::kMeasured);
  int ok = 0;
  double fastest = 1e30;
  for (const auto& k : c.candidates) {
    EXPECT_EQ(k.algorithm.rfind("cudnn_", 0), 0u) << k.algorithm;
    if (k.status == CandidateStatus::kDeclined) {
      EXPECT_FALSE(k.reason.empty()) << k.algorithm;
    }
    if (k.status != CandidateStatus::kOk) continue;
    ++ok;
    EXPECT_GT(k.time_ms, 0) << k.algorithm;
    fastest = std::min(fastest, k.time_ms);
  }
  ASSERT_GE(ok, 2) << "cuDNN should have several algorithms for a 3x3 convolution";
  EXPECT_DOUBLE_EQ(c.time_ms, fastest) << c.algorithm;

  // Each algorithm cuDNN timed, run by name, gives the CPU's answer.
  for (const auto& k : c.candidates) {
    if (k.status != CandidateStatus::kOk) continue;
    SCOPED_TRACE(k.algorithm);
    Session fixed(
        model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kFixed, .tuning_algorithm = k.algorithm});
    SessionInternals::add_device(fixed, shared_backend());
    std::vector<Tensor> y = fixed.run(in);
    EXPECT_TRUE(close(y[0], want[0], kProducts));
    TuningReport fr = fixed.tuning_report();
    ASSERT_EQ(fr.choices.size(), 1u);
    EXPECT_EQ(fr.choices[0].algorithm, k.algorithm);
    EXPECT_EQ(fr.choices[0].source, ChoiceSource::kFixed);
  }

  // The cache now holds the choice: a cached session measures nothing.
  Session warm(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kCached, .algo_cache_path = cache});
  SessionInternals::add_device(warm, shared_backend());
  warm.run(in);
  TuningReport wr = warm.tuning_report();
  EXPECT_EQ(wr.measured, 0);
  EXPECT_EQ(wr.from_cache, 1);
  ASSERT_EQ(wr.choices.size(), 1u);
  EXPECT_EQ(wr.choices[0].algorithm, c.algorithm);
  std::filesystem::remove(cache);
}

}  // namespace
}  // namespace minirt::gputest
