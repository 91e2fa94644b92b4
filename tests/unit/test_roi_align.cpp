// RoiAlign with regions that come from data and cannot be sampled: a
// coordinate that is not finite, or a region so large that onnxruntime's
// adaptive grid (ceil(size / bins) samples a side) would take billions of
// samples, is an error naming the node and the region; the session stays
// usable. (The op's results against onnxruntime are in tests/op_cases.)
#include <minirt/minirt.h>

#include "model_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace minirt {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

std::shared_ptr<const Model> roi_model(int64_t sampling_ratio, int64_t height = 6) {
  ModelBuilder m(16);
  m.input("x", DType::kFloat32, {1, 2, height, 6});
  m.input("rois", DType::kFloat32, {2, 4});
  m.input("batch", DType::kInt64, {2});
  m.node("RoiAlign", {"x", "rois", "batch"}, {"y"}, "align")
      .i("output_height", 2)
      .i("output_width", 3)
      .i("sampling_ratio", sampling_ratio);
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "roi.onnx");
}

NamedTensors feed(float x1_of_second) {
  Tensor x = testing::iota({1, 2, 6, 6}, -1.0f, 0.05f);
  Tensor rois = Tensor::zeros(DType::kFloat32, {2, 4});
  const float boxes[8] = {0.5f, 0.5f, 4.0f, 5.0f, 1.0f, 1.0f, x1_of_second, 3.0f};
  std::copy(boxes, boxes + 8, rois.data<float>());
  Tensor batch = Tensor::zeros(DType::kInt64, {2});
  return {{"x", x}, {"rois", rois}, {"batch", batch}};
}

std::string error_of(Session& s, const NamedTensors& in) {
  try {
    s.run(in);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "(no error)";
}

TEST(RoiAlign, RegionsThatCannotBeSampledAreErrorsNotHangsOrCrashes) {
  Session s(roi_model(0), {.device = Device::kCpu, .threads = 2});
  std::vector<Tensor> good = s.run(feed(4.0f));
  ASSERT_EQ(good[0].shape(), (Shape{2, 2, 2, 3}));

  const std::string nan = error_of(s, feed(std::nanf("")));
  EXPECT_THAT(nan, HasSubstr("node 'align' (RoiAlign)"));
  EXPECT_THAT(nan, HasSubstr("rois[1] (1.000000, 1.000000, nan, 3.000000) times spatial_scale is not finite"));
  EXPECT_THAT(error_of(s, feed(std::numeric_limits<float>::infinity())), HasSubstr("is not finite"));
  // 1e12 pixels wide: an adaptive grid of about 3e11 samples a side.
  EXPECT_THAT(error_of(s, feed(1e12f)), HasSubstr("rois[1] is 999999995904.000000 x 2.000000 pixels, whose sampling "
                                                  "grid would take more than 2^26 samples per channel"));

  // The session goes on, with the same answers as before.
  std::vector<Tensor> again = s.run(feed(4.0f));
  for (int64_t i = 0; i < good[0].numel(); ++i) ASSERT_EQ(again[0].data<float>()[i], good[0].data<float>()[i]);

  // A fixed sampling_ratio samples a huge region with a few points: it runs.
  Session fixed(roi_model(2), {.device = Device::kCpu, .threads = 1});
  std::vector<Tensor> y = fixed.run(feed(1e12f));
  for (int64_t i = 0; i < y[0].numel(); ++i) ASSERT_TRUE(std::isfinite(y[0].data<float>()[i])) << i;
}

// An image without pixels: every sample is outside it, every bin 0 (the
// kernel once read before the image's first element).
TEST(RoiAlign, AnImageWithoutPixelsGivesZeros) {
  Session s(roi_model(0, 0), {.device = Device::kCpu, .threads = 1});
  NamedTensors in = feed(4.0f);
  in[0].second = Tensor::zeros(DType::kFloat32, {1, 2, 0, 6});
  std::vector<Tensor> y = s.run(in);
  ASSERT_EQ(y[0].shape(), (Shape{2, 2, 2, 3}));
  for (int64_t i = 0; i < y[0].numel(); ++i) ASSERT_EQ(y[0].data<float>()[i], 0.0f) << i;
}

}  // namespace
}  // namespace minirt
