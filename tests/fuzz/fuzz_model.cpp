// libFuzzer target: arbitrary bytes as an ONNX model. Loading must either
// succeed or throw minirt::Error; a model that loads is then run once on
// zero inputs (when its inputs are small), which must likewise succeed or
// throw minirt::Error. Anything else (a crash, a sanitizer report, another
// exception type, unbounded allocation) is a finding.
#include <minirt/minirt.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/cpu_backend.h"
#include "runtime/api/model_impl.h"
#include "runtime/passes/passes.h"
#include "runtime/stages.h"
#include "runtime/thread_pool.h"

namespace {

// Elements of a shape as far as load-time inference knows it (unknown and
// symbolic dimensions count 1, as the inputs below are made).
double elements(const minirt::Value& v) {
  if (!v.shape_known) return 1;
  double n = 1;
  for (int64_t d : v.shape) n *= d > 0 ? static_cast<double>(d) : 1.0;
  return n;
}

// Roughly the multiply-adds a run of the model costs: each output element,
// times the weights behind it for Conv/ConvTranspose/MatMul/Gemm. A model
// may legitimately ask for minutes of arithmetic (under ASan and coverage, a
// 171x1x38x69 convolution with 50-wide filters took 27 s); the fuzzer should
// spend that time on new paths, and libFuzzer would report it as a timeout.
double work(const minirt::Graph& g) {
  double total = 0;
  for (const auto& n : g.nodes) {
    double out = 0;
    for (int v : n.outputs)
      if (v >= 0) out += elements(g.values[v]);
    double per = 1;
    auto in = [&](size_t i) -> const minirt::Value* { return n.input(i) >= 0 ? &g.values[n.inputs[i]] : nullptr; };
    if ((n.op == "Conv" || n.op == "ConvTranspose") && in(1) && in(1)->shape_known && !in(1)->shape.empty()) {
      per = elements(*in(1)) / std::max<int64_t>(1, in(1)->shape[0]);
      if (n.op == "ConvTranspose") per = elements(*in(1));
    } else if ((n.op == "MatMul" || n.op == "Gemm") && in(0) && in(0)->shape_known && !in(0)->shape.empty()) {
      per = static_cast<double>(std::max<int64_t>(1, in(0)->shape.back()));
    }
    total += out * per;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minirt;
  std::shared_ptr<const Model> model;
  try {
    model = Model::load_from_memory(data, size, "fuzz.onnx");
  } catch (const Error&) {
    return 0;
  }
  {
    // Shapes as the run below will have them: inference on a copy, with
    // symbolic input dimensions set to 1.
    // A model cut at value-sized nodes (runtime/stages.h): its first stage,
    // the part whose shapes follow from the inputs'.
    Graph g = model->impl().graph;
    std::vector<Stage> parts = split_stages(g);
    if (!parts.empty() && parts[0].cut < 0) g = parts[0].graph;
    if (!parts.empty() && parts[0].cut >= 0) g.nodes.clear();
    for (int v : g.inputs) {
      for (auto& d : g.values[v].shape) d = d < 0 ? 1 : d;
      g.values[v].shape_known = true;
    }
    try {
      static ThreadPool pool(1);
      static std::unique_ptr<KernelProvider> cpu = make_cpu_backend(1);
      infer_and_fold(g, *cpu, pool, false);
    } catch (const Error&) {
      return 0;  // the session would refuse it the same way
    }
    if (work(g) > 3e7) return 0;
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
    // declines), or the rules alone, the activation layout (blocked,
    // where the native blocked kernels run, or plain) and the CPU math
    // (bf16 runs nchwc_bf16 on AMX or AVX512_BF16 where the CPU has them).
    // Fixed mode measures nothing and never touches the algorithm cache file.
    static const char* const kAlgorithms[] = {
        "im2col_gemm",  "implicit_gemm",   "gemm_1x1",          "depthwise_direct",  "winograd_f2x2", "winograd_f4x4",
        "nchwc_direct", "nchwc_depthwise", "nchwc_winograd_f2", "nchwc_winograd_f4", "nchwc_bf16",    nullptr};
    constexpr size_t kCount = sizeof kAlgorithms / sizeof kAlgorithms[0];
    const char* algo = kAlgorithms[size % kCount];
    SessionOptions options{.device = Device::kCpu, .threads = 1, .memory_limit = 256u << 20};
    options.layout = (size / kCount) % 3 == 2 ? CpuLayout::kNchw : CpuLayout::kAuto;
    options.math = (size / kCount / 3) % 2 ? MathMode::kBf16 : MathMode::kFp32;
    options.tuning = algo ? TuningMode::kFixed : TuningMode::kHeuristic;
    if (algo) options.tuning_algorithm = algo;
    Session session(model, options);
    session.run(inputs);
  } catch (const Error&) {
  }
  return 0;
}
