// libFuzzer target: run-time inputs. A fixed model (conv, pool, a PyTorch-
// style flatten through Shape/Gather/Concat/Reshape, Slice, Resize, Softmax)
// with symbolic dimensions gets input shapes and values from the fuzzer's
// bytes: dims 0..15 (so empty tensors too), values that include NaN, Inf and
// denormals. Each run must succeed or throw minirt::Error.
#include <minirt/minirt.h>

#include "tests/unit/model_builder.h"

#include <cstring>

namespace {

using namespace minirt;

std::shared_ptr<const Model> make_model() {
  testing::ModelBuilder m(13);
  m.input("x", DType::kFloat32, {-1, 3, -1, -1}, {"N", "", "H", "W"});
  m.initializer("w", testing::iota({4, 3, 3, 3}, -0.2f, 0.01f));
  m.initializer("zero", testing::ints64({0}));
  m.initializer("one", testing::ints64({1}));
  m.initializer("minus1", testing::ints64({-1}));
  Tensor scales = Tensor::zeros(DType::kFloat32, {4});
  float s[4] = {1, 1, 2, 0.5f};
  std::memcpy(scales.raw(), s, sizeof s);
  m.initializer("scales", scales);
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"r"}, "relu");
  m.node("MaxPool", {"r"}, {"p"}, "pool").ints("kernel_shape", {2, 2}).ints("pads", {1, 1, 1, 1}).i("ceil_mode", 1);
  m.node("Resize", {"p", "", "scales"}, {"z"}, "resize").s("mode", "linear");
  m.node("Shape", {"z"}, {"s"}, "shape");
  m.node("Gather", {"s", "zero"}, {"n"}, "gather");
  m.node("Concat", {"n", "minus1"}, {"target"}, "concat").i("axis", 0);
  m.node("Reshape", {"z", "target"}, {"flat"}, "reshape");
  m.node("Slice", {"flat", "one", "minus1", "minus1"}, {"cut"}, "slice");
  m.node("Softmax", {"cut"}, {"y"}, "softmax");
  m.output("y");
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "fuzz_inputs.onnx");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto model = make_model();
  static Session session(model, {.device = Device::kCpu,
                                 .threads = 2,
                                 .memory_limit = 64u << 20,
                                 .tuning = TuningMode::kHeuristic});  // no measuring, no cache file
  if (size < 3) return 0;
  Shape shape = {data[0] % 4, 3, data[1] % 16, data[2] % 16};
  Tensor x = Tensor::zeros(DType::kFloat32, shape);
  size_t n = static_cast<size_t>(x.numel());
  size_t avail = (size - 3) / sizeof(float);
  std::memcpy(x.raw(), data + 3, std::min(n, avail) * sizeof(float));
  try {
    session.run({{"x", x}});
  } catch (const Error&) {
  }
  return 0;
}
