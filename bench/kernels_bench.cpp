// Google Benchmark cases for the CPU Conv, GEMM and elementwise kernels at
// the shapes of ResNet-18/50, MobileNetV2 and SqueezeNet 1.1 layers (batch 1,
// 224x224 input), and for the SGEMM engine itself; pooling and data movement
// are kernels_bench_data.cpp, in the same binary.
//
//   build/bin/minirt_kernel_bench --benchmark_filter=Conv/
//   build/bin/minirt_kernel_bench --benchmark_filter=ConvAlgo/resnet18   # every candidate per layer
//   MINIRT_SGEMM_ISA=avx2 build/bin/minirt_kernel_bench --benchmark_filter=Sgemm
//
// Each case builds a one-node graph, plans it like a Session would (shape
// inference, kernel made once) and times only Kernel::run. Counters report
// GFLOP/s for the heavy ops; the label is the kernel's describe() (algorithm
// and SGEMM variant).
#include "bench/bench_util.h"
#include "kernels/cpu/conv_algorithms.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_conv.h"
#include "kernels/cpu/nchwc_ops.h"
#include "kernels/cpu/nchwc_winograd.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/op_registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/linalg.h"
#include "runtime/ops/resize.h"
#include "runtime/ops/shape_ops.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace minirt {
namespace {

// args: C, H(=W), K, kernel, stride, groups, threads; algo: the backend's
// algorithm name, or empty for its rules' pick.
void conv_bench(benchmark::State& state, const std::string& algo) {
  int64_t c = state.range(0), hw = state.range(1), k = state.range(2), r = state.range(3), s = state.range(4),
          groups = state.range(5);
  int threads = static_cast<int>(state.range(6));
  auto a = std::make_shared<ConvAttrs>();
  a->strides = {s, s};
  a->pads = {r / 2, r / 2, r / 2, r / 2};
  a->group = groups;
  std::unique_ptr<OneNode> made;
  try {
    made =
        std::make_unique<OneNode>("Conv", a,
                                  std::vector<Tensor>{random_tensor({1, c, hw, hw}, 1),
                                                      random_tensor({k, c / groups, r, r}, 2), random_tensor({k}, 3)},
                                  threads, algo);
  } catch (const Error& e) {
    state.SkipWithError(e.what());  // a candidate that declines the layer
    return;
  }
  OneNode& node = *made;
  for (auto _ : state) {
    node.run();
    benchmark::DoNotOptimize(node.outputs[0].raw());
  }
  const Shape& y = node.outputs[0].shape();
  double flops = 2.0 * static_cast<double>(shape_numel(y)) * (c / groups) * r * r;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(node.kernel->describe());
}

void BM_Conv(benchmark::State& state) { conv_bench(state, ""); }
// The same with args[7]: an index into conv_algorithm_names().
void BM_ConvAlgo(benchmark::State& state) {
  conv_bench(state, cpu::conv_algorithm_names().at(static_cast<size_t>(state.range(7))));
}

// One layer's arguments, once or once per candidate algorithm.
void add_conv_args(benchmark::internal::Benchmark* b, const int64_t (&s)[6], int threads, bool every_algo) {
  if (!every_algo) return void(b->Args({s[0], s[1], s[2], s[3], s[4], s[5], threads}));
  for (size_t i = 0; i < cpu::conv_algorithm_names().size(); ++i)
    b->Args({s[0], s[1], s[2], s[3], s[4], s[5], threads, static_cast<int64_t>(i)});
}
void conv_arg_names(benchmark::internal::Benchmark* b, bool every_algo) {
  if (every_algo)
    b->ArgNames({"C", "HW", "K", "R", "stride", "groups", "threads", "algo"});
  else
    b->ArgNames({"C", "HW", "K", "R", "stride", "groups", "threads"});
}

// ResNet-18 layers: stem, the 3x3 convs of each stage (the first strided),
// the strided 1x1 downsamples.
void resnet18_convs(benchmark::internal::Benchmark* b, bool every_algo) {
  const int64_t shapes[][6] = {
      {3, 224, 64, 7, 2, 1},   {64, 56, 64, 3, 1, 1},                             // conv1, layer1
      {64, 56, 128, 3, 2, 1},  {128, 28, 128, 3, 1, 1}, {64, 56, 128, 1, 2, 1},   // layer2
      {128, 28, 256, 3, 2, 1}, {256, 14, 256, 3, 1, 1}, {128, 28, 256, 1, 2, 1},  // layer3
      {256, 14, 512, 3, 2, 1}, {512, 7, 512, 3, 1, 1},  {256, 14, 512, 1, 2, 1},  // layer4
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes) add_conv_args(b, s, threads, every_algo);
  conv_arg_names(b, every_algo);
}

// SqueezeNet 1.1 layers: stem, fire squeeze 1x1 and expand 1x1 / 3x3.
void squeezenet_convs(benchmark::internal::Benchmark* b, bool every_algo) {
  const int64_t shapes[][6] = {
      {3, 224, 64, 3, 2, 1},  {64, 55, 16, 1, 1, 1},  {16, 55, 64, 1, 1, 1},
      {16, 55, 64, 3, 1, 1},  {128, 27, 32, 1, 1, 1}, {32, 27, 128, 3, 1, 1},
      {256, 13, 48, 1, 1, 1}, {48, 13, 192, 3, 1, 1}, {512, 13, 1000, 1, 1, 1},
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes) add_conv_args(b, s, threads, every_algo);
  conv_arg_names(b, every_algo);
}

// ResNet-50 (torchvision v1.5) layers: stem, bottleneck 1x1/3x3/1x1 per stage.
void resnet50_convs(benchmark::internal::Benchmark* b, bool every_algo) {
  const int64_t shapes[][6] = {
      {3, 224, 64, 7, 2, 1},                                                        // conv1
      {64, 56, 64, 1, 1, 1},    {64, 56, 64, 3, 1, 1},   {64, 56, 256, 1, 1, 1},    // layer1
      {256, 56, 128, 1, 1, 1},  {128, 56, 128, 3, 2, 1}, {128, 28, 512, 1, 1, 1},   // layer2
      {512, 28, 256, 1, 1, 1},  {256, 28, 256, 3, 2, 1}, {256, 14, 1024, 1, 1, 1},  // layer3
      {1024, 14, 512, 1, 1, 1}, {512, 14, 512, 3, 2, 1}, {512, 7, 2048, 1, 1, 1},   // layer4
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes) add_conv_args(b, s, threads, every_algo);
  conv_arg_names(b, every_algo);
}

// MobileNetV2 layers: stem, expansion 1x1, depthwise 3x3 (stride 1 and 2), projection 1x1.
void mobilenetv2_convs(benchmark::internal::Benchmark* b, bool every_algo) {
  const int64_t shapes[][6] = {
      {3, 224, 32, 3, 2, 1},     {32, 112, 32, 3, 1, 32},   {32, 112, 16, 1, 1, 1},    {16, 112, 96, 1, 1, 1},
      {96, 112, 96, 3, 2, 96},   {96, 56, 24, 1, 1, 1},     {144, 56, 144, 3, 1, 144}, {192, 28, 192, 3, 1, 192},
      {384, 14, 384, 3, 1, 384}, {576, 14, 576, 3, 2, 576}, {960, 7, 960, 3, 1, 960},  {320, 7, 1280, 1, 1, 1},
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes) add_conv_args(b, s, threads, every_algo);
  conv_arg_names(b, every_algo);
}

// Conv/<model>: the rules' pick per layer; ConvAlgo/<model>: every candidate
// per layer (algo = the index in conv_algorithm_names(); declined ones are
// listed as skipped, with the reason), for setting the rules.
#define MINIRT_CONV_BENCH(model)                                                  \
  BENCHMARK(BM_Conv)                                                              \
      ->Name("Conv/" #model)                                                      \
      ->Apply([](benchmark::internal::Benchmark* b) { model##_convs(b, false); }) \
      ->Unit(benchmark::kMicrosecond)                                             \
      ->UseRealTime();                                                            \
  BENCHMARK(BM_ConvAlgo)                                                          \
      ->Name("ConvAlgo/" #model)                                                  \
      ->Apply([](benchmark::internal::Benchmark* b) { model##_convs(b, true); })  \
      ->Unit(benchmark::kMicrosecond)                                             \
      ->UseRealTime()
MINIRT_CONV_BENCH(resnet18);
MINIRT_CONV_BENCH(resnet50);
MINIRT_CONV_BENCH(squeezenet);
MINIRT_CONV_BENCH(mobilenetv2);

// args: M, K, N, threads (Gemm with transB, as classifier layers are exported)
void BM_Gemm(benchmark::State& state) {
  int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  auto a = std::make_shared<GemmAttrs>();
  a->trans_b = true;
  OneNode node("Gemm", a, {random_tensor({m, k}, 1), random_tensor({n, k}, 2), random_tensor({n}, 3)},
               static_cast<int>(state.range(3)));
  for (auto _ : state) node.run();
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * k * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
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

// The SGEMM engine alone: A packed once, B (row-major) packed per call, a
// row bias and ReLU in the epilogue. args: M, N, K, threads
void BM_Sgemm(benchmark::State& state) {
  using namespace cpu;
  int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  int threads = static_cast<int>(state.range(3));
  SgemmIsa isa = sgemm_default_isa();
  Tensor a = random_tensor({m, k}, 1), b = random_tensor({k, n}, 2), bias = random_tensor({m}, 3);
  Tensor c = Tensor::zeros(DType::kFloat32, {m, n});
  AlignedFloats pa = sgemm_pack_a(isa, a.data<float>(), k, 1, m, k);
  SgemmArgs g;
  g.isa = isa;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = pa.data();
  g.b = SgemmB::matrix(b.data<float>(), n, 1);
  g.c = c.data<float>();
  g.ldc = n;
  g.ep.row_bias = bias.data<float>();
  g.ep.act.kind = ActKind::kRelu;
  SgemmSplit split = sgemm_split(isa, 1, m, n, k, threads);
  Tensor ws = Tensor::zeros(DType::kUInt8, {static_cast<int64_t>(sgemm_workspace_bytes(split, isa, k, n, true)) + 64});
  ThreadPool pool(threads);
  for (auto _ : state) sgemm_run(pool, g, split, ws.data<float>());
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(std::string("isa=") + sgemm_isa_name(isa));
}
BENCHMARK(BM_Sgemm)
    ->ArgNames({"M", "N", "K", "threads"})
    ->Args({256, 256, 256, 1})
    ->Args({512, 512, 512, 1})
    ->Args({1024, 1024, 1024, 1})
    ->Args({64, 3136, 576, 1})  // ResNet layer1 3x3 as a GEMM
    ->Args({512, 49, 4608, 1})  // ResNet layer4 3x3 as a GEMM
    ->Args({1024, 1024, 1024, 2})
    ->Args({512, 49, 4608, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace minirt

// ---------------------------------------------------------------- channel-blocked convolution (nchwc_conv.h)
//
//   build/bin/minirt_kernel_bench --benchmark_filter='NchwcConv/|FmaPeak'
//   MINIRT_SGEMM_ISA=avx2 build/bin/minirt_kernel_bench --benchmark_filter='NchwcConv/|FmaPeak'
//
// NchwcConv/<model>: the blocked kernels on the layers of Conv/<model> and
// ConvAlgo/<model> above (same arguments; efficientnet_dw: EfficientNet-B0's
// depthwise layers, Conv/efficientnet_dw for the plain-layout kernel), for the ISA the SGEMM would use
// (block 16 on AVX-512, 8 on AVX2): input and output already blocked (the
// stem reads the plain image), bias and ReLU fused; the label says how the
// kernel tiled the layer. FmaPeak: what the core can do at all, an FMA-only
// loop (12 independent vector chains per thread), to read the GFLOP/s
// against.
namespace minirt {
namespace {

// args: C, HW, K, R, stride, groups, threads; act: the fused activation;
// residual: a residual input added before it.
// bf16_values: the input and output as the bf16 values between bf16
// convolutions (nchwc_bf16_values: 32 channels a group), depthwise only;
// u8_values: as the uint8 codes between int8 convolutions (64 channels a
// group, on grids as a quantized MobileNetV2's), depthwise only.
void nchwc_conv_bench(benchmark::State& state, ActKind act, bool residual, cpu::DwBorder border = cpu::DwBorder::kAuto,
                      bool bf16_values = false, bool u8_values = false) {
  using namespace cpu;
  const int64_t c = state.range(0), hw = state.range(1), k = state.range(2), r = state.range(3), s = state.range(4),
                groups = state.range(5);
  const int threads = static_cast<int>(state.range(6));
  NchwcConvSpec spec;
  spec.isa = sgemm_default_isa();
  spec.block = nchwc_block(spec.isa);
  if (spec.block == 0) return state.SkipWithError("no blocked layout for this CPU");
  Geometry& q = spec.q;
  q.n = 1, q.c = c, q.h = q.w = hw, q.m = k, q.kh = q.kw = r, q.sh = q.sw = s, q.dh = q.dw = 1;
  q.ph = q.pw = r / 2;
  q.oh = q.ow = (hw + 2 * (r / 2) - r) / s + 1;
  q.groups = groups;
  spec.input_blocked = c > 4;  // a stem reads the image as it comes
  spec.act.kind = act;
  if (act == ActKind::kClip) spec.act.alpha = 0.0f, spec.act.beta = 6.0f;
  spec.residual = residual;
  const bool dw = groups > 1;
  spec.x_bf16 = spec.y_bf16 = bf16_values;
  if (u8_values) {
    spec.x_u8 = spec.y_u8 = true;
    spec.x_grid.kind = spec.act.kind = ActKind::kQuantGrid;
    spec.x_grid.alpha = 0.02f, spec.x_grid.beta = -128, spec.x_grid.gamma = 127;
    spec.act.alpha = 0.05f, spec.act.beta = 0, spec.act.gamma = 255;  // a Clip(0, 6)'s grid: codes from 0
  }
  const std::string why = dw                         ? nchwc_depthwise_declined(spec)
                          : bf16_values || u8_values ? std::string("depthwise only")
                                                     : nchwc_direct_declined(spec);
  if (!why.empty()) return state.SkipWithError(why.c_str());
  Tensor x = random_tensor({nchwc_padded(c, spec.block) * hw * hw}, 1);
  if (bf16_values) {
    // The same numbers rounded to bf16, channel c of a pixel at lane c % 32 of group c / 32.
    std::vector<uint16_t> h(static_cast<size_t>(nchwc_padded(c, 32) * hw * hw), 0);
    const float* xf = x.data<float>();
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw * hw; ++p) {
        uint32_t bits;
        std::memcpy(&bits, xf + (ch / spec.block * hw * hw + p) * spec.block + ch % spec.block, 4);
        h[static_cast<size_t>((ch / 32 * hw * hw + p) * 32 + ch % 32)] = static_cast<uint16_t>(bits >> 16);
      }
    std::memcpy(x.raw(), h.data(), h.size() * sizeof(uint16_t));
  }
  if (u8_values) {
    // Codes that vary, 64 channels a group (fewer bytes than the floats x holds).
    auto* u = static_cast<uint8_t*>(x.raw());
    for (int64_t i = 0; i < nchwc_padded(c, 64) * hw * hw; ++i) u[i] = static_cast<uint8_t>(i * 37 % 251);
  }
  Tensor w = random_tensor({k, c / groups, r, r}, 2), b = random_tensor({k}, 3);
  Tensor y = Tensor::zeros(DType::kFloat32, {nchwc_padded(k, spec.block) * q.oh * q.ow});
  Tensor res = random_tensor({residual ? nchwc_padded(k, spec.block) * q.oh * q.ow : 1}, 4);
  const float* rp = residual ? res.data<float>() : nullptr;
  ThreadPool pool(threads);
  std::unique_ptr<NchwcDirectConv> direct;
  std::unique_ptr<NchwcDepthwiseConv> depthwise;
  if (dw)
    depthwise = std::make_unique<NchwcDepthwiseConv>(spec, w.data<float>(), b.data<float>(), threads, border);
  else
    direct = std::make_unique<NchwcDirectConv>(spec, w.data<float>(), b.data<float>(), threads);
  Tensor ws = Tensor::zeros(DType::kFloat32,
                            {static_cast<int64_t>((dw ? depthwise->workspace_bytes() : 0) / sizeof(float)) + 1});
  for (auto _ : state) {
    if (dw)
      depthwise->run(x.data<float>(), rp, y.data<float>(), 0, ws.data<float>(), pool);
    else
      direct->run(x.data<float>(), rp, y.data<float>(), 0, nullptr, pool);
    benchmark::DoNotOptimize(y.raw());
  }
  const double flops = 2.0 * static_cast<double>(k * q.oh * q.ow) * (c / groups) * r * r;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(dw ? depthwise->describe() : direct->describe());
}

void BM_NchwcConv(benchmark::State& state) { nchwc_conv_bench(state, ActKind::kRelu, false); }

// NchwcConvAct/weak: args as above plus act (0 none, 1 Relu, 2 Clip(0, 6),
// 3 SiLU) and residual (0, 1): the layers of the mobile and detector models
// that ran furthest below the FMA peak, with the epilogue their models fuse.
void BM_NchwcConvAct(benchmark::State& state) {
  const ActKind acts[] = {ActKind::kNone, ActKind::kRelu, ActKind::kClip, ActKind::kSilu};
  nchwc_conv_bench(state, acts[std::clamp<int64_t>(state.range(7), 0, 3)], state.range(8) != 0);
}
void weak_convs(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][9] = {
      // stems on the plain image: EfficientNet (SiLU), MobileNetV2 (Clip), SqueezeNet, ResNet
      {3, 224, 32, 3, 2, 1, 0, 3, 0},
      {3, 224, 32, 3, 2, 1, 0, 2, 0},
      {3, 224, 64, 3, 2, 1, 0, 1, 0},
      {3, 224, 64, 7, 2, 1, 0, 1, 0},
      // 1x1 with one output block or a short K: SqueezeNet squeeze / expand,
      // MobileNetV2 / EfficientNet expansions and projections
      {128, 55, 16, 1, 1, 1, 0, 1, 0},
      {64, 55, 16, 1, 1, 1, 0, 1, 0},
      {16, 55, 64, 1, 1, 1, 0, 1, 0},
      {16, 112, 96, 1, 1, 1, 0, 3, 0},
      {16, 112, 96, 1, 1, 1, 0, 2, 0},
      {24, 56, 144, 1, 1, 1, 0, 3, 0},
      {24, 56, 144, 1, 1, 1, 0, 2, 0},
      {40, 28, 240, 1, 1, 1, 0, 3, 0},
      {96, 56, 24, 1, 1, 1, 0, 0, 0},
      {144, 56, 24, 1, 1, 1, 0, 0, 1},
      {32, 112, 16, 1, 1, 1, 0, 0, 0},
      // 3x3 on 7x7 planes (ResNet layer4)
      {512, 7, 512, 3, 1, 1, 0, 1, 0},
      // depthwise with SiLU (EfficientNet)
      {32, 112, 32, 3, 1, 32, 0, 3, 0},
      {96, 112, 96, 3, 2, 96, 0, 3, 0},
      {144, 56, 144, 5, 2, 144, 0, 3, 0},
      {240, 28, 240, 5, 1, 240, 0, 3, 0},
      {672, 14, 672, 5, 1, 672, 0, 3, 0},
  };
  b->ArgNames({"C", "HW", "K", "R", "stride", "groups", "threads", "act", "res"});
  for (int threads : {1, 2})
    for (const auto& s : shapes) b->Args({s[0], s[1], s[2], s[3], s[4], s[5], threads, s[7], s[8]});
}
BENCHMARK(BM_NchwcConvAct)->Name("NchwcConvAct/weak")->Apply(weak_convs)->Unit(benchmark::kMicrosecond)->UseRealTime();

// NchwcDepthwiseBorder: EfficientNet-B0's depthwise layers (SiLU) with the
// border walked in a padded frame (border 1) or in place (2), one after the
// other for each layer: args as NchwcConv's, then border.
void BM_NchwcDepthwiseBorder(benchmark::State& state) {
  const cpu::DwBorder borders[] = {cpu::DwBorder::kAuto, cpu::DwBorder::kPadded, cpu::DwBorder::kDirect};
  nchwc_conv_bench(state, ActKind::kSilu, false, borders[std::clamp<int64_t>(state.range(7), 0, 2)]);
}
void depthwise_border_args(benchmark::internal::Benchmark* b) {
  const int64_t layers[][3] = {{1152, 7, 5}, {1152, 7, 3}, {672, 14, 5}, {480, 14, 3},
                               {240, 28, 5}, {144, 56, 3}, {32, 112, 3}};
  b->ArgNames({"C", "HW", "K", "R", "stride", "groups", "threads", "border"});
  for (int threads : {1, 2})
    for (const auto& l : layers)
      for (int border : {1, 2}) b->Args({l[0], l[1], l[0], l[2], 1, l[0], threads, border});
}
BENCHMARK(BM_NchwcDepthwiseBorder)->Apply(depthwise_border_args)->Unit(benchmark::kMicrosecond)->UseRealTime();

// NchwcDepthwiseValues: MobileNetV2's depthwise layers (Clip) on float32
// values (values 0), on the bf16 values between bf16 convolutions (values 1:
// read and written in place, dw_bf16_isa.h) and on the uint8 codes between
// int8 convolutions (values 2, a quantized model's), one after the other for
// each layer: args as NchwcConv's, then values.
void BM_NchwcDepthwiseValues(benchmark::State& state) {
  nchwc_conv_bench(state, ActKind::kClip, false, cpu::DwBorder::kAuto, state.range(7) == 1, state.range(7) == 2);
}
void depthwise_values_args(benchmark::internal::Benchmark* b) {
  const int64_t layers[][3] = {{96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1}, {384, 14, 1}, {960, 7, 1}};
  b->ArgNames({"C", "HW", "K", "R", "stride", "groups", "threads", "values"});
  for (int threads : {1, 2})
    for (const auto& l : layers)
      for (int values : {0, 1, 2}) b->Args({l[0], l[1], l[0], 3, l[2], l[0], threads, values});
}
BENCHMARK(BM_NchwcDepthwiseValues)->Apply(depthwise_values_args)->Unit(benchmark::kMicrosecond)->UseRealTime();

// NchwcConvCold/<layer>: as in a model, whose weights do not stay in cache
// between runs (ResNet-18's 45 MB, ResNet-50's 100 MB): each iteration runs
// the next of enough copies of the layer (weights and input) that together
// they exceed 64 MB, so a layer's weights come from memory. args: C, HW, K,
// R, stride, threads; Relu.
void BM_NchwcConvCold(benchmark::State& state) {
  using namespace cpu;
  const int64_t c = state.range(0), hw = state.range(1), k = state.range(2), r = state.range(3), s = state.range(4);
  const int threads = static_cast<int>(state.range(5));
  NchwcConvSpec spec;
  spec.isa = sgemm_default_isa();
  spec.block = nchwc_block(spec.isa);
  if (spec.block == 0) return state.SkipWithError("no blocked layout for this CPU");
  Geometry& q = spec.q;
  q.n = 1, q.c = c, q.h = q.w = hw, q.m = k, q.kh = q.kw = r, q.sh = q.sw = s, q.dh = q.dw = 1;
  q.ph = q.pw = r / 2;
  q.oh = q.ow = (hw + 2 * (r / 2) - r) / s + 1;
  q.groups = 1;
  spec.act.kind = ActKind::kRelu;
  const std::string why = nchwc_direct_declined(spec);
  if (!why.empty()) return state.SkipWithError(why.c_str());
  const int64_t bytes = 4 * (k * c * r * r + nchwc_padded(c, spec.block) * hw * hw);
  const int64_t copies = std::max<int64_t>(2, (int64_t{64} << 20) / bytes + 1);
  std::vector<Tensor> xs;
  std::vector<std::unique_ptr<NchwcDirectConv>> convs;
  Tensor b = random_tensor({k}, 3);
  for (int64_t i = 0; i < copies; ++i) {
    Tensor w = random_tensor({k, c, r, r}, static_cast<uint32_t>(10 + i));
    convs.push_back(std::make_unique<NchwcDirectConv>(spec, w.data<float>(), b.data<float>(), threads));
    xs.push_back(random_tensor({nchwc_padded(c, spec.block) * hw * hw}, static_cast<uint32_t>(100 + i)));
  }
  Tensor y = Tensor::zeros(DType::kFloat32, {nchwc_padded(k, spec.block) * q.oh * q.ow});
  ThreadPool pool(threads);
  size_t i = 0;
  for (auto _ : state) {
    convs[i]->run(xs[i].data<float>(), nullptr, y.data<float>(), 0, nullptr, pool);
    benchmark::DoNotOptimize(y.raw());
    i = (i + 1) % convs.size();
  }
  const double flops = 2.0 * static_cast<double>(k * q.oh * q.ow) * c * r * r;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(convs[0]->describe());
}
BENCHMARK(BM_NchwcConvCold)
    ->Name("NchwcConvCold/layers")
    ->ArgNames({"C", "HW", "K", "R", "stride", "threads"})
    ->Args({512, 7, 512, 3, 1, 1})    // ResNet layer4
    ->Args({256, 14, 512, 3, 2, 1})   // ResNet layer4, strided
    ->Args({256, 14, 256, 3, 1, 1})   // ResNet-18 layer3
    ->Args({512, 7, 2048, 1, 1, 1})   // ResNet-50 layer4 expansion
    ->Args({2048, 7, 512, 1, 1, 1})   // ResNet-50 layer4 projection
    ->Args({1152, 7, 320, 1, 1, 1})   // EfficientNet-B0 projection
    ->Args({512, 13, 1000, 1, 1, 1})  // SqueezeNet classifier
    ->Args({512, 7, 512, 3, 1, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

#define MINIRT_NCHWC_BENCH(model)                                                 \
  BENCHMARK(BM_NchwcConv)                                                         \
      ->Name("NchwcConv/" #model)                                                 \
      ->Apply([](benchmark::internal::Benchmark* b) { model##_convs(b, false); }) \
      ->Unit(benchmark::kMicrosecond)                                             \
      ->UseRealTime()
// EfficientNet-B0's depthwise layers (3x3 and 5x5, stride 1 and 2), with the
// plain-layout kernel the rules pick next to them (Conv/efficientnet_dw).
void efficientnet_dw_convs(benchmark::internal::Benchmark* b, bool every_algo) {
  const int64_t shapes[][6] = {
      {32, 112, 32, 3, 1, 32},   {96, 112, 96, 3, 2, 96},     {144, 56, 144, 3, 1, 144},   {144, 56, 144, 5, 2, 144},
      {240, 28, 240, 5, 1, 240}, {240, 28, 240, 3, 2, 240},   {480, 14, 480, 3, 1, 480},   {672, 14, 672, 5, 1, 672},
      {672, 14, 672, 5, 2, 672}, {1152, 7, 1152, 5, 1, 1152}, {1152, 7, 1152, 3, 1, 1152},
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes) add_conv_args(b, s, threads, every_algo);
  conv_arg_names(b, every_algo);
}
BENCHMARK(BM_Conv)
    ->Name("Conv/efficientnet_dw")
    ->Apply([](benchmark::internal::Benchmark* b) { efficientnet_dw_convs(b, false); })
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

MINIRT_NCHWC_BENCH(efficientnet_dw);
MINIRT_NCHWC_BENCH(resnet18);
MINIRT_NCHWC_BENCH(resnet50);
MINIRT_NCHWC_BENCH(squeezenet);
MINIRT_NCHWC_BENCH(mobilenetv2);

#if defined(__x86_64__) || defined(__i386__)
// n iterations of 12 independent FMA chains; returns a sum so nothing is elided.
__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t n) {
  __m512 acc[12];
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < n; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float t[16];
  _mm512_store_ps(t, s);
  float sum = 0;
  for (float v : t) sum += v;
  return sum;
}
__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t n) {
  __m256 acc[12];
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (int64_t it = 0; it < n; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float t[8];
  _mm256_store_ps(t, s);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

// args: threads. The vector width of the ISA the SGEMM would use.
void BM_FmaPeak(benchmark::State& state) {
  const cpu::SgemmIsa isa = cpu::sgemm_default_isa();
  if (isa == cpu::SgemmIsa::kGeneric) return state.SkipWithError("no AVX2 or AVX-512");
  const int threads = static_cast<int>(state.range(0));
  const int lanes = isa == cpu::SgemmIsa::kAvx512 ? 16 : 8;
  constexpr int64_t kIters = 1 << 20;
  ThreadPool pool(threads);
  std::vector<float> sink(static_cast<size_t>(threads));
  for (auto _ : state) {
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        sink[static_cast<size_t>(t)] = isa == cpu::SgemmIsa::kAvx512 ? fma_loop_avx512(kIters) : fma_loop_avx2(kIters);
    };
    pool.parallel_for(threads, body);
    benchmark::DoNotOptimize(sink.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * kIters * 12 * lanes * threads, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(std::string("isa=") + cpu::sgemm_isa_name(isa));
}
BENCHMARK(BM_FmaPeak)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
#endif

// ---- Elementwise: activations, unary math and broadcast binary ops over
// 1 << 20 floats (4 MiB, as a YOLO neck's activations).
//
//   build/bin/minirt_kernel_bench --benchmark_filter='Unary|ActScalar|Binary'
//   MINIRT_SGEMM_ISA=avx2 build/bin/minirt_kernel_bench --benchmark_filter='Unary|Binary'
//
// BM_Unary times the CPU kernel of one op (its vector math and its threads);
// BM_ActScalar times Activation::apply, the scalar std:: loop, on one thread,
// for comparison.

constexpr int64_t kEltCount = int64_t{1} << 20;

struct UnaryCase {
  const char* op;  // the op the kernel is made for
  UnaryKind kind;
  ActKind act;
};
// Silu has no ONNX op: a Sigmoid node carrying it, as the fusion pass makes.
constexpr UnaryCase kUnaryCases[] = {
    {"Sigmoid", UnaryKind::kActivation, ActKind::kSigmoid}, {"Sigmoid", UnaryKind::kActivation, ActKind::kSilu},
    {"Tanh", UnaryKind::kActivation, ActKind::kTanh},       {"Exp", UnaryKind::kExp, ActKind::kNone},
    {"Gelu", UnaryKind::kActivation, ActKind::kGelu},       {"Log", UnaryKind::kLog, ActKind::kNone}};

std::string unary_case_name(const UnaryCase& c) {
  return c.kind == UnaryKind::kActivation ? Activation{c.act}.name() : c.op;
}

// args: case index, threads
void BM_Unary(benchmark::State& state) {
  const UnaryCase& c = kUnaryCases[state.range(0)];
  auto a = std::make_shared<UnaryAttrs>();
  a->kind = c.kind;
  a->act.kind = c.act;
  Tensor x = random_tensor({kEltCount}, 1);
  if (c.kind == UnaryKind::kLog)
    for (int64_t i = 0; i < kEltCount; ++i) x.data<float>()[i] = std::fabs(x.data<float>()[i]) + 1e-3f;
  OneNode node(c.op, a, {std::move(x)}, static_cast<int>(state.range(1)));
  for (auto _ : state) node.run();
  state.SetItemsProcessed(state.iterations() * kEltCount);
  state.SetLabel(unary_case_name(c));
}
BENCHMARK(BM_Unary)
    ->ArgNames({"case", "threads"})
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: case index (activations only)
void BM_ActScalar(benchmark::State& state) {
  const UnaryCase& c = kUnaryCases[state.range(0)];
  Tensor x = random_tensor({kEltCount}, 1);
  Tensor y = Tensor::zeros(DType::kFloat32, {kEltCount});
  Activation act{c.act};
  for (auto _ : state) {
    std::memcpy(y.raw(), x.raw(), static_cast<size_t>(kEltCount) * sizeof(float));
    act.apply(y.data<float>(), kEltCount);
    benchmark::DoNotOptimize(y.raw());
  }
  state.SetItemsProcessed(state.iterations() * kEltCount);
  state.SetLabel(unary_case_name(c));
}
BENCHMARK(BM_ActScalar)->Arg(0)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMicrosecond);

// Mul of [1, 64, 128, 128] by: 0 the same shape, 1 a per-channel [1, 64, 1, 1]
// (a squeeze-excitation scale), 2 a scalar; args: case, threads.
void BM_Binary(benchmark::State& state) {
  auto a = std::make_shared<BinaryAttrs>();
  a->kind = BinaryKind::kMul;
  Shape y{1, 64, 128, 128};
  Shape b = state.range(0) == 0 ? y : state.range(0) == 1 ? Shape{1, 64, 1, 1} : Shape{};
  OneNode node("Mul", a, {random_tensor(y, 1), random_tensor(b, 2)}, static_cast<int>(state.range(1)));
  for (auto _ : state) node.run();
  state.SetItemsProcessed(state.iterations() * shape_numel(y));
  state.SetLabel(state.range(0) == 0 ? "same shape" : state.range(0) == 1 ? "per channel" : "scalar");
}
BENCHMARK(BM_Binary)
    ->ArgNames({"case", "threads"})
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace minirt

// ---------------------------------------------------------------- Winograd on the blocked layout (nchwc_winograd.h)
//
//   build/bin/minirt_kernel_bench --benchmark_filter=NchwcWinograd
//   MINIRT_SGEMM_ISA=avx2 build/bin/minirt_kernel_bench --benchmark_filter=NchwcWinograd
//
// NchwcWinograd/<C>/<HW>/<threads>/<algo>: a 3x3 stride-1 convolution, C
// channels in and out, padding 1, batch 1, bias and ReLU fused, input and
// output blocked for the ISA the SGEMM would use; algo 0 is NchwcDirectConv,
// 2 and 4 NchwcWinogradConv F(2x2,3x3) and F(4x4,3x3). GFLOP/s counts the
// direct convolution's FLOPs (2 C^2 9 HW^2) for all three, so the numbers
// compare times; the label is the kernel's describe(). Shapes: ResNet-18/50's
// 3x3 stride-1 layers (64 x 56x56, 128 x 28x28, 256 x 14x14, 512 x 7x7) and a
// YOLO neck's at 416x416 input (128 x 52x52, 256 x 26x26, 512 x 13x13).
namespace minirt {
namespace {

void BM_NchwcWinograd(benchmark::State& state) {
  using namespace cpu;
  const int64_t c = state.range(0), hw = state.range(1);
  const int threads = static_cast<int>(state.range(2)), algo = static_cast<int>(state.range(3));
  NchwcConvSpec spec;
  spec.isa = sgemm_default_isa();
  spec.block = nchwc_block(spec.isa);
  if (spec.block == 0) return state.SkipWithError("no blocked layout for this CPU");
  Geometry& q = spec.q;
  q.n = 1, q.c = c, q.h = q.w = hw, q.m = c, q.kh = q.kw = 3, q.sh = q.sw = 1, q.dh = q.dw = 1;
  q.ph = q.pw = 1, q.oh = q.ow = hw, q.groups = 1;
  spec.act.kind = ActKind::kRelu;
  const std::string why = algo == 0 ? nchwc_direct_declined(spec) : nchwc_winograd_declined(spec, algo);
  if (!why.empty()) return state.SkipWithError(why.c_str());
  Tensor x = random_tensor({nchwc_padded(c, spec.block) * hw * hw}, 1);
  Tensor w = random_tensor({c, c, 3, 3}, 2), b = random_tensor({c}, 3);
  Tensor y = Tensor::zeros(DType::kFloat32, {nchwc_padded(c, spec.block) * hw * hw});
  ThreadPool pool(threads);
  std::unique_ptr<NchwcDirectConv> direct;
  std::unique_ptr<NchwcWinogradConv> wino;
  std::unique_ptr<AlignedFloats> ws;
  if (algo == 0) {
    direct = std::make_unique<NchwcDirectConv>(spec, w.data<float>(), b.data<float>(), threads);
  } else {
    wino = std::make_unique<NchwcWinogradConv>(spec, algo, w.data<float>(), b.data<float>(), threads);
    ws = std::make_unique<AlignedFloats>(std::max<size_t>(1, wino->workspace_bytes() / sizeof(float)));
  }
  for (auto _ : state) {
    if (direct)
      direct->run(x.data<float>(), nullptr, y.data<float>(), 0, nullptr, pool);
    else
      wino->run(x.data<float>(), nullptr, y.data<float>(), 0, ws->data(), pool);
    benchmark::DoNotOptimize(y.raw());
  }
  const double flops = 2.0 * static_cast<double>(c * c * 9 * hw * hw);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(direct ? direct->describe() : wino->describe());
}

void winograd_args(benchmark::internal::Benchmark* b) {
  const int64_t layers[][2] = {{64, 56}, {128, 28}, {256, 14}, {512, 7}, {128, 52}, {256, 26}, {512, 13}};
  for (int64_t threads : {1, 2})
    for (const auto& l : layers)
      for (int64_t algo : {0, 2, 4}) b->Args({l[0], l[1], threads, algo});
  b->ArgNames({"C", "HW", "threads", "algo"});
}
BENCHMARK(BM_NchwcWinograd)->Apply(winograd_args)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace minirt

BENCHMARK_MAIN();
