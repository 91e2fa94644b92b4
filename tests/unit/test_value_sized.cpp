// Models cut at value-sized nodes (NonZero, NonMaxSuppression): the split
// into plan stages (runtime/stages.h) and sessions running them. The ops'
// results against onnxruntime are in tests/op_cases (value_sized_cases) and
// ONNX's node tests; here, what the cut itself must do.
#include <minirt/minirt.h>

#include "fake_device.h"
#include "model_builder.h"
#include "runtime/api/model_impl.h"
#include "runtime/api/session_internal.h"
#include "runtime/stages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

namespace minirt {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

std::shared_ptr<const Model> load(const ModelBuilder& m, const char* name) {
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), name);
}

Tensor floats(std::vector<float> v) {
  Tensor t = Tensor::zeros(DType::kFloat32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

// x[n] -> Greater(x, 0) -> NonZero -> Cast(float) -> Mul(2) -> y ; and Relu(x) -> r
ModelBuilder positions_model() {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {-1}, {"n"});
  Tensor zero = Tensor::zeros(DType::kFloat32, {});
  Tensor two = Tensor::zeros(DType::kFloat32, {});
  two.data<float>()[0] = 2.0f;
  m.initializer("zero", zero);
  m.initializer("two", two);
  m.node("Greater", {"x", "zero"}, {"pos"}, "gt");
  m.node("NonZero", {"pos"}, {"idx"}, "nz");
  m.node("Cast", {"idx"}, {"idxf"}, "cast").i("to", 1);
  m.node("Mul", {"idxf", "two"}, {"y"}, "twice");
  m.node("Relu", {"x"}, {"r"}, "relu");
  m.output("y");
  m.output("r");
  return m;
}

// The positions of the positive elements, twice, as the model computes them.
std::vector<float> expected_positions(const std::vector<float>& x) {
  std::vector<float> out;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] > 0) out.push_back(2.0f * static_cast<float>(i));
  return out;
}

TEST(ValueSized, SplitsAtTheCutWithTheValuesEachPartPassesOn) {
  auto model = load(positions_model(), "positions.onnx");
  const Graph& g = model->impl().graph;
  std::vector<Stage> parts = split_stages(g);
  ASSERT_EQ(parts.size(), 3u);
  // Stage 1: Greater and Relu (they read only the input); its outputs the
  // mask (for the cut) and r (the caller's).
  ASSERT_LT(parts[0].cut, 0);
  std::vector<std::string> in0, out0;
  for (int v : parts[0].graph.inputs) in0.push_back(g.values[v].name);
  for (int v : parts[0].graph.outputs) out0.push_back(g.values[v].name);
  EXPECT_EQ(in0, std::vector<std::string>({"x"}));
  EXPECT_THAT(out0, ::testing::UnorderedElementsAre("pos", "r"));
  // The cut, then stage 2 reading its output.
  ASSERT_GE(parts[1].cut, 0);
  EXPECT_EQ(g.nodes[parts[1].cut].op, "NonZero");
  ASSERT_LT(parts[2].cut, 0);
  ASSERT_EQ(parts[2].graph.inputs.size(), 1u);
  EXPECT_EQ(g.values[parts[2].graph.inputs[0]].name, "idx");
  ASSERT_EQ(parts[2].graph.outputs.size(), 1u);
  EXPECT_EQ(g.values[parts[2].graph.outputs[0]].name, "y");
  // A model without value-sized nodes is not split.
  ModelBuilder plain(13);
  plain.input("x", DType::kFloat32, {4});
  plain.node("Relu", {"x"}, {"y"});
  plain.output("y");
  EXPECT_TRUE(split_stages(load(plain, "plain.onnx")->impl().graph).empty());
}

TEST(ValueSized, OnePlanPerCountKeptAndReusedWhenTheCountRecurs) {
  Session s(load(positions_model(), "positions.onnx"), SessionOptions{.device = Device::kCpu, .threads = 1});
  std::vector<std::vector<float>> inputs = {
      {1, -1, 2, 0, 3},   // 3 positive
      {-1, -2, 5, 0, 0},  // 1
      {4, 3, 2, 1, -1},   // 4
      {0, 7, 0, 6, 9},    // 3 again: stage 2's plan for 3 is reused
  };
  int plans_after_first_three = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    auto out = s.run({{"x", floats(inputs[k])}});
    ASSERT_EQ(out.size(), 2u);
    std::vector<float> want = expected_positions(inputs[k]);
    // NonZero of a rank-1 input: [1, count].
    ASSERT_EQ(out[0].shape(), (Shape{1, static_cast<int64_t>(want.size())})) << "input " << k;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out[0].data<float>()[i], want[i]);
    for (size_t i = 0; i < inputs[k].size(); ++i) EXPECT_EQ(out[1].data<float>()[i], std::max(0.0f, inputs[k][i]));
    if (k == 2) plans_after_first_three = s.plans_made();
  }
  // Stage 1 once (same input shape), stage 2 once per count: 1 + 3.
  EXPECT_EQ(plans_after_first_three, 4);
  EXPECT_EQ(s.plans_made(), 4);
  std::string report = s.plan_report();
  EXPECT_THAT(report, HasSubstr("2 plan stages"));
  EXPECT_THAT(report, HasSubstr("then NonZero 'nz' on the host"));
  EXPECT_THAT(report, HasSubstr("stage 2 of 2"));
}

TEST(ValueSized, NoneKeptIsAnEmptyResultNotAnError) {
  Session s(load(positions_model(), "positions.onnx"), SessionOptions{.device = Device::kCpu, .threads = 1});
  auto out = s.run({{"x", floats({-1, -2, 0})}});
  EXPECT_EQ(out[0].shape(), (Shape{1, 0}));
  out = s.run({{"x", floats({3, -2, 0})}});
  ASSERT_EQ(out[0].shape(), (Shape{1, 1}));
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);
}

TEST(ValueSized, TheProfileShowsTheCutNodeBetweenTheStages) {
  Session s(load(positions_model(), "positions.onnx"),
            SessionOptions{.device = Device::kCpu, .threads = 1, .profile = true});
  s.run({{"x", floats({1, -1, 2})}});
  std::vector<std::string> ops;
  for (const StepTiming& t : s.last_profile()) ops.push_back(t.op);
  auto nz = std::find(ops.begin(), ops.end(), "NonZero");
  ASSERT_NE(nz, ops.end());
  EXPECT_NE(std::find(ops.begin(), nz, "Greater"), nz);   // stage 1 before it
  EXPECT_NE(std::find(nz, ops.end(), "Mul"), ops.end());  // stage 2 after it
  for (const StepTiming& t : s.last_profile()) EXPECT_GE(t.duration_us, 0.0);
}

// On a device (the pretend GPU of fake_device.h, whose memory holds every
// byte scrambled): each stage is placed on its own, the cut node's input
// comes back to the host and its output goes to the device with the next
// stage's copies; the results are the CPU's.
TEST(ValueSized, EachStageIsPlacedOnTheDeviceAndTheResultsAreTheCpus) {
  auto model = load(positions_model(), "positions.onnx");
  Session cpu(model, SessionOptions{.device = Device::kCpu, .threads = 1});
  Session dev(model, SessionOptions{.device = Device::kCpu, .threads = 1});
  SessionInternals::add_device(
      dev, std::make_shared<testing::FakeDevice>(std::set<std::string>{"Greater", "NonZero", "Cast", "Mul", "Relu"}));
  for (const std::vector<float>& x : {std::vector<float>{1, -1, 2, 0, 3}, std::vector<float>{-4, 5, -6, 7, 0}}) {
    auto want = cpu.run({{"x", floats(x)}});
    auto got = dev.run({{"x", floats(x)}});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].shape(), want[i].shape());
      EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), got[i].nbytes()), 0) << "output " << i;
    }
  }
  // Both stages on the device, each with its own placement line.
  EXPECT_THAT(dev.placement(), HasSubstr("; then "));
  SeamCopies seams = dev.seam_copies();
  EXPECT_GE(seams.to_device, 2);  // x into stage 1, NonZero's output into stage 2
  EXPECT_GE(seams.to_host, 3);    // the mask and r out of stage 1, y out of stage 2
}

// boxes [1, n, 4] and scores [1, 1, n] -> NonMaxSuppression -> selected
ModelBuilder nms_model() {
  ModelBuilder m(11);
  m.input("boxes", DType::kFloat32, {1, -1, 4}, {"", "n"});
  m.input("scores", DType::kFloat32, {1, 1, -1}, {"", "", "n"});
  m.initializer("max", testing::ints64({10}));
  Tensor iou = Tensor::zeros(DType::kFloat32, {1});
  iou.data<float>()[0] = 0.5f;
  m.initializer("iou", iou);
  m.node("NonMaxSuppression", {"boxes", "scores", "max", "iou"}, {"selected"}, "nms");
  m.output("selected", DType::kInt64);
  return m;
}

TEST(ValueSized, BadInputNamesTheNodeAndTheSessionStaysUsable) {
  Session s(load(nms_model(), "detector.onnx"), SessionOptions{.device = Device::kCpu, .threads = 1});
  // Boxes of 3 coordinates bind (the symbolic n), but NonMaxSuppression refuses them.
  Tensor bad = Tensor::zeros(DType::kFloat32, {1, 2, 3});
  try {
    s.run({{"boxes", bad}, {"scores", Tensor::zeros(DType::kFloat32, {1, 1, 2})}});
    FAIL() << "boxes of 3 coordinates ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("detector.onnx: node 'nms' (NonMaxSuppression): boxes must be"));
    EXPECT_THAT(e.what(), HasSubstr("[batches, boxes, 4]"));
  }
  // Two overlapping boxes and one apart: the lower-scored overlapping one goes.
  Tensor boxes = Tensor::zeros(DType::kFloat32, {1, 3, 4});
  const float b[] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 5, 5, 6, 6};
  std::copy(b, b + 12, boxes.data<float>());
  Tensor scores = Tensor::zeros(DType::kFloat32, {1, 1, 3});
  const float sc[] = {0.6f, 0.9f, 0.3f};
  std::copy(sc, sc + 3, scores.data<float>());
  auto out = s.run({{"boxes", boxes}, {"scores", scores}});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
  const int64_t* sel = out[0].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(sel, sel + 6), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
}

// NaN sorts after every number (so the sorts stay well defined) and all NaNs
// are one value of Unique.
TEST(ValueSized, NanSortsLastInUniqueAndNonMaxSuppression) {
  ModelBuilder m(11);
  m.input("x", DType::kFloat32, {6});
  m.node("Unique", {"x"}, {"y", "first", "inverse", "counts"}, "unique");
  m.output("y");
  m.output("counts", DType::kInt64);
  Session s(load(m, "unique.onnx"), SessionOptions{.device = Device::kCpu, .threads = 1});
  const float nan = std::nanf("");
  auto out = s.run({{"x", floats({3, nan, 1, nan, 3, -0.0f})}});
  ASSERT_EQ(out[0].shape(), (Shape{4}));
  const float* y = out[0].data<float>();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_TRUE(std::isnan(y[3]));
  const int64_t* c = out[1].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(c, c + 4), (std::vector<int64_t>{1, 1, 2, 2}));

  Session nms(load(nms_model(), "detector.onnx"), SessionOptions{.device = Device::kCpu, .threads = 1});
  Tensor boxes = Tensor::zeros(DType::kFloat32, {1, 3, 4});
  const float b[] = {0, 0, 1, 1, 5, 5, 6, 6, 10, 10, 11, 11};  // apart: none suppresses another
  std::copy(b, b + 12, boxes.data<float>());
  Tensor scores = Tensor::zeros(DType::kFloat32, {1, 1, 3});
  const float sc[] = {nan, 0.2f, 0.7f};
  std::copy(sc, sc + 3, scores.data<float>());
  auto kept = nms.run({{"boxes", boxes}, {"scores", scores}});
  ASSERT_EQ(kept[0].shape(), (Shape{3, 3}));
  const int64_t* k = kept[0].data<int64_t>();
  EXPECT_EQ((std::vector<int64_t>{k[2], k[5], k[8]}), (std::vector<int64_t>{2, 1, 0}));
}

TEST(ValueSized, ConcurrentRunsOfOneSessionEachGetTheirOwnCounts) {
  Session s(load(positions_model(), "positions.onnx"), SessionOptions{.device = Device::kCpu, .threads = 2});
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 25; ++r) {
        std::vector<float> x(8);
        for (int i = 0; i < 8; ++i) x[i] = ((i * 7 + r * 3 + t) % 5) - 2.0f;
        auto out = s.run({{"x", floats(x)}});
        std::vector<float> want = expected_positions(x);
        if (out[0].numel() != static_cast<int64_t>(want.size()) ||
            !std::equal(want.begin(), want.end(), out[0].data<float>()))
          ++failures[t];
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace minirt
