// Google Benchmark cases for the CPU Conv, GEMM and pooling kernels at the
// shapes of ResNet-50 and MobileNetV2 layers (batch 1, 224x224 input).
//
//   build/bin/minirt_kernel_bench --benchmark_filter=Conv
//
// Each case builds a one-node graph, plans it like a Session would (shape
// inference, kernel made once) and times only Kernel::run. Counters report
// GFLOP/s for the heavy ops.
#include "kernels/cpu/cpu_backend.h"
#include "runtime/op_registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/linalg.h"

#include <benchmark/benchmark.h>

#include <random>

namespace minirt {
namespace {

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t = Tensor::zeros(DType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// One node with its inputs (the first a run-time input, the rest constants),
// shapes inferred, a kernel made, buffers allocated.
struct OneNode {
  Graph g;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Kernel> kernel;
  std::vector<Tensor> inputs, outputs;
  Tensor workspace;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;

  OneNode(const std::string& op, std::shared_ptr<OpAttrs> attrs, std::vector<Tensor> ins, int threads) {
    g.opset = 17;
    std::vector<int> in_ids;
    for (size_t i = 0; i < ins.size(); ++i) {
      int v = g.add_value("in" + std::to_string(i));
      g.values[v].dtype = ins[i].dtype();
      g.values[v].shape = ins[i].shape();
      g.values[v].shape_known = true;
      if (i > 0) g.values[v].constant = std::make_shared<Tensor>(ins[i]);
      in_ids.push_back(v);
    }
    int out = g.add_value("out");
    int n = g.add_node("node", op, in_ids, {out});
    g.nodes[n].parsed = attrs ? std::shared_ptr<const OpAttrs>(attrs) : std::make_shared<OpAttrs>();
    InferContext ctx(g, g.nodes[n]);
    find_schema(op)->infer(ctx);
    backend = make_cpu_backend(threads);
    pool = std::make_unique<ThreadPool>(threads);
    kernel = backend->make_kernel(g, g.nodes[n]);
    inputs = std::move(ins);
    outputs.push_back(Tensor::zeros(DType::kFloat32, g.values[out].shape));
    if (size_t ws = kernel->workspace_bytes()) workspace = Tensor::zeros(DType::kUInt8, {static_cast<int64_t>(ws)});
    for (auto& t : inputs) in_ptrs.push_back(t.raw());
    out_ptrs.push_back(outputs[0].raw());
  }
  void run() {
    KernelArgs args{in_ptrs.data(), out_ptrs.data(), workspace.raw(), pool.get()};
    kernel->run(args);
  }
};

// args: C, H(=W), K, kernel, stride, groups, threads
void BM_Conv(benchmark::State& state) {
  int64_t c = state.range(0), hw = state.range(1), k = state.range(2), r = state.range(3), s = state.range(4),
          groups = state.range(5);
  int threads = static_cast<int>(state.range(6));
  auto a = std::make_shared<ConvAttrs>();
  a->strides = {s, s};
  a->pads = {r / 2, r / 2, r / 2, r / 2};
  a->group = groups;
  OneNode node("Conv", a, {random_tensor({1, c, hw, hw}, 1), random_tensor({k, c / groups, r, r}, 2), random_tensor({k}, 3)},
               threads);
  for (auto _ : state) {
    node.run();
    benchmark::DoNotOptimize(node.outputs[0].raw());
  }
  const Shape& y = node.outputs[0].shape();
  double flops = 2.0 * static_cast<double>(shape_numel(y)) * (c / groups) * r * r;
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(node.kernel->describe());
}

// ResNet-50 (torchvision v1.5) layers: stem, bottleneck 1x1/3x3/1x1 per stage.
void resnet50_convs(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][6] = {
      {3, 224, 64, 7, 2, 1},                                                // conv1
      {64, 56, 64, 1, 1, 1},    {64, 56, 64, 3, 1, 1},   {64, 56, 256, 1, 1, 1},    // layer1
      {256, 56, 128, 1, 1, 1},  {128, 56, 128, 3, 2, 1}, {128, 28, 512, 1, 1, 1},   // layer2
      {512, 28, 256, 1, 1, 1},  {256, 28, 256, 3, 2, 1}, {256, 14, 1024, 1, 1, 1},  // layer3
      {1024, 14, 512, 1, 1, 1}, {512, 14, 512, 3, 2, 1}, {512, 7, 2048, 1, 1, 1},   // layer4
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2], s[3], s[4], s[5], threads});
  b->ArgNames({"C", "HW", "K", "R", "stride", "groups", "threads"});
}

// MobileNetV2 layers: stem, expansion 1x1, depthwise 3x3 (stride 1 and 2), projection 1x1.
void mobilenetv2_convs(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][6] = {
      {3, 224, 32, 3, 2, 1},   {32, 112, 32, 3, 1, 32},  {32, 112, 16, 1, 1, 1},
      {16, 112, 96, 1, 1, 1},  {96, 112, 96, 3, 2, 96},  {96, 56, 24, 1, 1, 1},
      {144, 56, 144, 3, 1, 144}, {192, 28, 192, 3, 1, 192}, {384, 14, 384, 3, 1, 384},
      {576, 14, 576, 3, 2, 576}, {960, 7, 960, 3, 1, 960}, {320, 7, 1280, 1, 1, 1},
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2], s[3], s[4], s[5], threads});
  b->ArgNames({"C", "HW", "K", "R", "stride", "groups", "threads"});
}

BENCHMARK(BM_Conv)->Name("Conv/resnet50")->Apply(resnet50_convs)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Conv)->Name("Conv/mobilenetv2")->Apply(mobilenetv2_convs)->Unit(benchmark::kMicrosecond)->UseRealTime();

// args: M, K, N, threads (Gemm with transB, as classifier layers are exported)
void BM_Gemm(benchmark::State& state) {
  int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  auto a = std::make_shared<GemmAttrs>();
  a->trans_b = true;
  OneNode node("Gemm", a, {random_tensor({m, k}, 1), random_tensor({n, k}, 2), random_tensor({n}, 3)},
               static_cast<int>(state.range(3)));
  for (auto _ : state) node.run();
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Gemm)
    ->ArgNames({"M", "K", "N", "threads"})
    ->Args({1, 2048, 1000, 1})   // ResNet-50 fc
    ->Args({1, 1280, 1000, 1})   // MobileNetV2 classifier
    ->Args({32, 2048, 1000, 1})  // batch 32
    ->Args({1, 2048, 1000, 2})
    ->Args({32, 2048, 1000, 2})
    ->Args({256, 256, 256, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: C, HW, kernel, stride, threads
void BM_MaxPool(benchmark::State& state) {
  auto a = std::make_shared<PoolAttrs>();
  a->kind = PoolKind::kMax;
  int64_t r = state.range(2), s = state.range(3);
  a->kernel_shape = {r, r};
  a->strides = {s, s};
  a->pads = {1, 1, 1, 1};
  OneNode node("MaxPool", a, {random_tensor({1, state.range(0), state.range(1), state.range(1)}, 1)},
               static_cast<int>(state.range(4)));
  for (auto _ : state) node.run();
}
BENCHMARK(BM_MaxPool)
    ->ArgNames({"C", "HW", "R", "stride", "threads"})
    ->Args({64, 112, 3, 2, 1})  // ResNet stem pool
    ->Args({64, 112, 3, 2, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_GlobalAveragePool(benchmark::State& state) {
  OneNode node("GlobalAveragePool", nullptr, {random_tensor({1, state.range(0), state.range(1), state.range(1)}, 1)}, 1);
  for (auto _ : state) node.run();
}
BENCHMARK(BM_GlobalAveragePool)
    ->ArgNames({"C", "HW"})
    ->Args({2048, 7})   // ResNet-50
    ->Args({1280, 7})   // MobileNetV2
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace minirt

BENCHMARK_MAIN();
