// Google Benchmark cases for pooling and data movement (part of
// minirt_kernel_bench, with kernels_bench.cpp): MaxPool and the global pools,
// a YOLO detector's SPP block, its 2x nearest upsample, Concat and
// Transpose, in the plain and the channel-blocked layout.
//
//   build/bin/minirt_kernel_bench --benchmark_filter='MaxPool|SppMaxPool|ResizeNearest2x|Concat4|Transpose'
#include "bench/bench_util.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_ops.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/resize.h"
#include "runtime/ops/shape_ops.h"

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace minirt {
namespace {

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
    ->Args({8, 112, 3, 2, 1})   // the same, cache-resident
    ->Args({64, 112, 3, 2, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_GlobalAveragePool(benchmark::State& state) {
  OneNode node("GlobalAveragePool", nullptr, {random_tensor({1, state.range(0), state.range(1), state.range(1)}, 1)},
               1);
  for (auto _ : state) node.run();
}
BENCHMARK(BM_GlobalAveragePool)
    ->ArgNames({"C", "HW"})
    ->Args({2048, 7})  // ResNet-50
    ->Args({1280, 7})  // MobileNetV2
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ---------------------------------------------------------------- pooling and data movement
//
//   build/bin/minirt_kernel_bench --benchmark_filter='SppMaxPool|ResizeNearest2x|Concat4|Transpose'
//
// The SPP block of a YOLO detector (MaxPool 5/9/13, stride 1, pads k/2 on
// the last backbone stages), its 2x nearest upsample and the neck's Concat.

// args: C, HW, kernel, threads
void BM_SppMaxPool(benchmark::State& state) {
  auto a = std::make_shared<PoolAttrs>();
  a->kind = PoolKind::kMax;
  int64_t k = state.range(2);
  a->kernel_shape = {k, k};
  a->strides = {1, 1};
  a->dilations = {1, 1};
  a->pads = {k / 2, k / 2, k / 2, k / 2};
  int64_t c = state.range(0), hw = state.range(1);
  OneNode node("MaxPool", a, {random_tensor({1, c, hw, hw}, 1)}, static_cast<int>(state.range(3)));
  for (auto _ : state) node.run();
  state.SetBytesProcessed(state.iterations() * 2 * c * hw * hw * 4);
}
void spp_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"C", "HW", "k", "threads"});
  for (int threads : {1, 2})
    for (auto [c, hw] : {std::pair<int64_t, int64_t>{256, 13}, {128, 26}, {64, 52}})
      for (int64_t k : {5, 9, 13}) b->Args({c, hw, k, threads});
}
BENCHMARK(BM_SppMaxPool)->Apply(spp_args)->Unit(benchmark::kMicrosecond)->UseRealTime();

// args: C, HW, threads. Resize-13 nearest, scales [1, 1, 2, 2] (half_pixel,
// round_prefer_floor: each input pixel copied to a 2x2 square).
void BM_ResizeNearest2x(benchmark::State& state) {
  auto a = std::make_shared<ResizeAttrs>();
  int64_t c = state.range(0), hw = state.range(1);
  Tensor roi = Tensor::zeros(DType::kFloat32, {0});
  Tensor scales = Tensor::zeros(DType::kFloat32, {4});
  const float sc[] = {1.0f, 1.0f, 2.0f, 2.0f};
  std::copy(sc, sc + 4, scales.data<float>());
  OneNode node("Resize", a, {random_tensor({1, c, hw, hw}, 1), roi, scales}, static_cast<int>(state.range(2)));
  for (auto _ : state) node.run();
  state.SetBytesProcessed(state.iterations() * 5 * c * hw * hw * 4);
}
BENCHMARK(BM_ResizeNearest2x)
    ->ArgNames({"C", "HW", "threads"})
    ->Args({128, 26, 1})
    ->Args({128, 26, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: C per input, HW, threads. Concat of four [1, C, HW, HW] on axis 1.
void BM_Concat4(benchmark::State& state) {
  auto a = std::make_shared<AxisAttrs>();
  a->axis = 1;
  int64_t c = state.range(0), hw = state.range(1);
  std::vector<Tensor> ins;
  for (uint32_t i = 0; i < 4; ++i) ins.push_back(random_tensor({1, c, hw, hw}, i + 1));
  OneNode node("Concat", a, std::move(ins), static_cast<int>(state.range(2)));
  for (auto _ : state) node.run();
  state.SetBytesProcessed(state.iterations() * 8 * c * hw * hw * 4);
}
BENCHMARK(BM_Concat4)
    ->ArgNames({"C", "HW", "threads"})
    ->Args({128, 13, 1})
    ->Args({128, 13, 2})
    ->Args({128, 26, 1})
    ->Args({128, 26, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: the input [1, C, H, W] and the permutation's index (0: NCHW -> NHWC,
// 1: NHWC-ordered data back, perm 0 3 1 2; 2: a 2-D transpose of [C, H * W]).
void BM_Transpose(benchmark::State& state) {
  auto a = std::make_shared<TransposeAttrs>();
  int64_t c = state.range(0), hw = state.range(1);
  Tensor x = random_tensor({1, c, hw, hw}, 1);
  switch (state.range(2)) {
    case 0:
      a->perm = {0, 2, 3, 1};
      break;
    case 1:
      a->perm = {0, 3, 1, 2};
      break;
    default:
      x = random_tensor({c, hw * hw}, 1);
      a->perm = {1, 0};
  }
  OneNode node("Transpose", a, {x}, static_cast<int>(state.range(3)));
  for (auto _ : state) node.run();
  state.SetBytesProcessed(state.iterations() * 8 * c * hw * hw);
}
BENCHMARK(BM_Transpose)
    ->ArgNames({"C", "HW", "perm", "threads"})
    ->Args({64, 56, 0, 1})
    ->Args({64, 56, 1, 1})
    ->Args({64, 56, 2, 1})
    ->Args({64, 56, 0, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The same ops on the channel-blocked layout (kernels/cpu/nchwc_ops.h), block
// 16 under AVX-512 and 8 under AVX2 (MINIRT_SGEMM_ISA=avx2).
//
//   build/bin/minirt_kernel_bench --benchmark_filter=Nchwc

// A OneNode whose kernel is the blocked one, on blocked copies of its 4-D inputs.
struct BlockedNode {
  OneNode node;
  int b;
  std::unique_ptr<Kernel> kernel;
  std::vector<std::vector<float>> ins;
  std::vector<float> out, workspace;
  std::vector<const void*> in_ptrs;
  void* out_ptr = nullptr;

  BlockedNode(const std::string& op, std::shared_ptr<OpAttrs> attrs, std::vector<Tensor> inputs, int threads,
              bool all_inputs_blocked)
      : node(op, std::move(attrs), std::move(inputs), threads), b(cpu::nchwc_block(cpu::sgemm_default_isa())) {
    if (b == 0) return;
    const Node& n = node.g.nodes[0];
    kernel = cpu::make_nchwc_data_kernel(node.g, n, threads, b);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Shape& s = node.inputs[i].shape();
      if (i > 0 && !all_inputs_blocked) {
        in_ptrs.push_back(node.inputs[i].raw());
        continue;
      }
      ins.emplace_back(static_cast<size_t>(s[0] * cpu::nchwc_padded(s[1], b) * s[2] * s[3]));
      cpu::nchwc_reorder_to_blocked(node.inputs[i].data<float>(), ins.back().data(), s[0], s[1], s[2] * s[3], b,
                                    *node.pool);
      in_ptrs.push_back(ins.back().data());
    }
    const Shape& y = node.g.values[n.outputs[0]].shape;
    out.resize(static_cast<size_t>(y[0] * cpu::nchwc_padded(y[1], b) * y[2] * y[3]));
    out_ptr = out.data();
    workspace.resize((kernel->workspace_bytes() + 3) / 4);
  }
  void run() {
    KernelArgs args{in_ptrs.data(), &out_ptr, workspace.data(), node.pool.get()};
    kernel->run(args);
  }
};

// args: C, HW, kernel, threads
void BM_NchwcSppMaxPool(benchmark::State& state) {
  auto a = std::make_shared<PoolAttrs>();
  a->kind = PoolKind::kMax;
  int64_t k = state.range(2);
  a->kernel_shape = {k, k};
  a->strides = {1, 1};
  a->dilations = {1, 1};
  a->pads = {k / 2, k / 2, k / 2, k / 2};
  int64_t c = state.range(0), hw = state.range(1);
  BlockedNode node("MaxPool", a, {random_tensor({1, c, hw, hw}, 1)}, static_cast<int>(state.range(3)), false);
  if (node.b == 0) return state.SkipWithError("no blocked layout for this ISA");
  for (auto _ : state) node.run();
  state.SetBytesProcessed(state.iterations() * 2 * c * hw * hw * 4);
  state.SetLabel("b" + std::to_string(node.b));
}
BENCHMARK(BM_NchwcSppMaxPool)->Apply(spp_args)->Unit(benchmark::kMicrosecond)->UseRealTime();

// args: C, HW, kernel, stride, pad, threads: the strided max pools after a
// stem (SqueezeNet 1.1: 64 x 111 x 111, 3x3 stride 2, no padding; ResNet:
// 64 x 112 x 112, padding 1).
void BM_NchwcMaxPool(benchmark::State& state) {
  auto a = std::make_shared<PoolAttrs>();
  a->kind = PoolKind::kMax;
  const int64_t c = state.range(0), hw = state.range(1), k = state.range(2), s = state.range(3), p = state.range(4);
  a->kernel_shape = {k, k};
  a->strides = {s, s};
  a->dilations = {1, 1};
  a->pads = {p, p, p, p};
  BlockedNode node("MaxPool", a, {random_tensor({1, c, hw, hw}, 1)}, static_cast<int>(state.range(5)), false);
  if (node.b == 0) return state.SkipWithError("no blocked layout for this ISA");
  for (auto _ : state) node.run();
  const int64_t o = (hw + 2 * p - k) / s + 1;
  state.SetBytesProcessed(state.iterations() * c * (hw * hw + o * o) * 4);
  state.SetLabel("b" + std::to_string(node.b));
}
BENCHMARK(BM_NchwcMaxPool)
    ->ArgNames({"C", "HW", "k", "stride", "pad", "threads"})
    ->Args({64, 111, 3, 2, 0, 1})
    ->Args({64, 112, 3, 2, 1, 1})
    ->Args({64, 111, 3, 2, 0, 2})
    ->Args({96, 55, 3, 2, 0, 1})
    ->Args({64, 56, 3, 1, 1, 1})  // stride 1 (detectors, Inception)
    ->Args({64, 112, 2, 2, 0, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: C, HW, threads
void BM_NchwcResizeNearest2x(benchmark::State& state) {
  auto a = std::make_shared<ResizeAttrs>();
  int64_t c = state.range(0), hw = state.range(1);
  Tensor roi = Tensor::zeros(DType::kFloat32, {0});
  Tensor scales = Tensor::zeros(DType::kFloat32, {4});
  const float sc[] = {1.0f, 1.0f, 2.0f, 2.0f};
  std::copy(sc, sc + 4, scales.data<float>());
  BlockedNode node("Resize", a, {random_tensor({1, c, hw, hw}, 1), roi, scales}, static_cast<int>(state.range(2)),
                   false);
  if (node.b == 0) return state.SkipWithError("no blocked layout for this ISA");
  for (auto _ : state) node.run();
  state.SetBytesProcessed(state.iterations() * 5 * c * hw * hw * 4);
}
BENCHMARK(BM_NchwcResizeNearest2x)
    ->ArgNames({"C", "HW", "threads"})
    ->Args({128, 26, 1})
    ->Args({128, 26, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: C per input, HW, threads
void BM_NchwcConcat4(benchmark::State& state) {
  auto a = std::make_shared<AxisAttrs>();
  a->axis = 1;
  int64_t c = state.range(0), hw = state.range(1);
  std::vector<Tensor> ins;
  for (uint32_t i = 0; i < 4; ++i) ins.push_back(random_tensor({1, c, hw, hw}, i + 1));
  BlockedNode node("Concat", a, std::move(ins), static_cast<int>(state.range(2)), true);
  if (node.b == 0) return state.SkipWithError("no blocked layout for this ISA");
  for (auto _ : state) node.run();
  state.SetBytesProcessed(state.iterations() * 8 * c * hw * hw * 4);
}
BENCHMARK(BM_NchwcConcat4)
    ->ArgNames({"C", "HW", "threads"})
    ->Args({128, 13, 1})
    ->Args({128, 13, 2})
    ->Args({12, 13, 1})  // channel offsets not multiples of the block: lanes gathered
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace minirt
