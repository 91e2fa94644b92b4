// Many threads running one Session at once: every output is identical to the
// same request run alone, whatever the interleaving, also when the runs use
// different batch sizes (and so different plans) at the same time.
#include <minirt/minirt.h>

#include "model_builder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

namespace minirt {
namespace {

using testing::ModelBuilder;

std::shared_ptr<const Model> cnn() {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {-1, 3, 16, 16}, {"N"});
  m.initializer("w1", testing::iota({8, 3, 3, 3}, -0.3f, 0.003f));
  m.initializer("w2", testing::iota({16, 8, 1, 1}, 0.2f, -0.004f));
  m.initializer("dw", testing::iota({16, 1, 3, 3}, -0.1f, 0.002f));
  m.initializer("fc", testing::iota({10, 16}, 0.05f, 0.001f));
  m.initializer("scale", testing::iota({16}, 0.9f, 0.01f));
  m.initializer("shift", testing::iota({16}, -0.1f, 0.01f));
  m.initializer("mean", testing::iota({16}, 0.0f, 0.02f));
  m.initializer("var", testing::iota({16}, 1.0f, 0.05f));
  m.node("Conv", {"x", "w1"}, {"a"}, "conv1").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"a"}, {"b"}, "relu1");
  m.node("MaxPool", {"b"}, {"c"}, "pool").ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  m.node("Conv", {"c", "w2"}, {"d"}, "conv2");
  m.node("BatchNormalization", {"d", "scale", "shift", "mean", "var"}, {"e"}, "bn");
  m.node("Conv", {"e", "dw"}, {"f"}, "depthwise").i("group", 16).ints("pads", {1, 1, 1, 1});
  m.node("GlobalAveragePool", {"f"}, {"g"}, "gap");
  m.node("Flatten", {"g"}, {"h"}, "flatten");
  m.node("Gemm", {"h", "fc"}, {"logits"}, "fc").i("transB", 1);
  m.node("Softmax", {"logits"}, {"prob"}, "softmax");
  m.output("prob");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "cnn.onnx");
}

Tensor random_input(int64_t batch, uint32_t seed) {
  Tensor t = Tensor::zeros(DType::kFloat32, {batch, 3, 16, 16});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

TEST(Concurrency, ManyThreadsOneSessionMatchSequentialRuns) {
  auto model = cnn();
  constexpr int kRequests = 48;
  std::vector<Tensor> inputs, expected;
  {
    Session alone(model, {.device = Device::kCpu, .threads = 2});
    for (int r = 0; r < kRequests; ++r) {
      inputs.push_back(random_input(1 + r % 3, 1000 + r));
      expected.push_back(alone.run({{"x", inputs.back()}})[0]);
    }
  }
  Session shared(model, {.device = Device::kCpu, .threads = 2});
  std::atomic<int> next{0}, mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      std::vector<Tensor> out;
      for (int r; (r = next.fetch_add(1)) < kRequests * 4;) {
        int k = r % kRequests;
        try {
          shared.run({{"x", inputs[k]}}, out);
          if (out[0].shape() != expected[k].shape() ||
              std::memcmp(out[0].raw(), expected[k].raw(), expected[k].nbytes()) != 0)
            mismatches++;
        } catch (const std::exception&) {
          errors++;
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(shared.plans_made(), 3);  // batch 1, 2 and 3
}

TEST(Concurrency, SessionsOnOneModelInParallel) {
  auto model = cnn();
  Tensor x = random_input(2, 7);
  Tensor want = Session(model, {.device = Device::kCpu, .threads = 1}).run({{"x", x}})[0];
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      Session s(model, {.device = Device::kCpu, .threads = 1});
      for (int i = 0; i < 10; ++i) {
        Tensor y = s.run({{"x", x}})[0];
        if (std::memcmp(y.raw(), want.raw(), want.nbytes()) != 0) mismatches++;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Concurrency, ModelReleasedByTheCallerStaysAliveForItsSessions) {
  auto model = cnn();
  Session s(model, {.device = Device::kCpu, .threads = 1});
  std::weak_ptr<const Model> watch = model;
  model.reset();  // the session keeps it
  EXPECT_FALSE(watch.expired());
  auto out = s.run({{"x", random_input(1, 3)}});
  EXPECT_EQ(out[0].shape(), (Shape{1, 10}));
}

}  // namespace
}  // namespace minirt
