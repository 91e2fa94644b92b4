// libFuzzer target: arbitrary bytes as an ONNX model. Loading must either
// succeed or throw minirt::Error; a model that loads is then run once on
// zero inputs (when its inputs are small), which must likewise succeed or
// throw minirt::Error. Anything else (a crash, a sanitizer report, another
// exception type, unbounded allocation) is a finding.
#include <minirt/minirt.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minirt;
  std::shared_ptr<const Model> model;
  try {
    model = Model::load_from_memory(data, size, "fuzz.onnx");
  } catch (const Error&) {
    return 0;
  }
  try {
    NamedTensors inputs;
    int64_t total = 0;
    for (const auto& d : model->inputs()) {
      Shape shape = d.dims;
      for (auto& dim : shape) dim = dim < 0 ? 1 : dim;
      total += shape_numel(shape);
      if (total > (1 << 20)) return 0;
      inputs.emplace_back(d.name, Tensor::zeros(d.dtype, shape));
    }
    // Every convolution algorithm gets fuzzed shapes: the input's length
    // picks one (fixed mode falls back to the rules' pick where it
    // declines), or the rules alone. Fixed mode measures nothing and never
    // touches the algorithm cache file.
    static const char* const kAlgorithms[] = {"im2col_gemm",   "implicit_gemm", "gemm_1x1",     "depthwise_direct",
                                              "winograd_f2x2", "winograd_f4x4", nullptr};
    const char* algo = kAlgorithms[size % (sizeof kAlgorithms / sizeof kAlgorithms[0])];
    SessionOptions options{.device = Device::kCpu, .threads = 1, .memory_limit = 256u << 20};
    options.tuning = algo ? TuningMode::kFixed : TuningMode::kHeuristic;
    if (algo) options.tuning_algorithm = algo;
    Session session(model, options);
    session.run(inputs);
  } catch (const Error&) {
  }
  return 0;
}
