// The bf16 convolution (kernels/cpu/conv_bf16.h) on ResNet-50's layers, beside the float32 blocked kernel it replaces
// under MathMode::kBf16; `minirt-fma-peak` prints the AMX tile peak to read
// its GFLOP/s against.
//
//   build/bin/minirt_bf16_bench                                  # every layer, AMX and AVX512_BF16, fp32
//   build/bin/minirt_bf16_bench --benchmark_filter='Bf16Conv/resnet50.*isa:2'   # AMX only
//
// Bf16Conv/<model>/C/HW/K/R/stride/threads/isa: isa 0 float32 (NchwcDirectConv,
// the rules' blocked direct kernel), 1 AVX512_BF16, 2 AMX; input and output
// blocked (NCHW16c float32), bias and ReLU fused; isa 3: AMX with bf16 input
// and output (groups of 32 channels), as between two bf16 convolutions in a
// model (the stem: bf16 output only); isa 4: the same on AVX512_BF16. The
// label is the kernel's own description.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/conv_bf16.h"
#include "kernels/cpu/conv_int8.h"
#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_conv.h"
#include "runtime/thread_pool.h"

namespace minirt {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return v;
}

// One image, c x hw x hw in, k filters of r x r, stride s, padding r / 2, on the AVX-512 blocked layout.
cpu::NchwcConvSpec square_spec(int64_t c, int64_t hw, int64_t k, int64_t r, int64_t s) {
  cpu::NchwcConvSpec spec;
  spec.isa = cpu::SgemmIsa::kAvx512;
  spec.block = 16;
  cpu::Geometry& q = spec.q;
  q.n = 1, q.c = c, q.h = q.w = hw, q.m = k, q.kh = q.kw = r, q.sh = q.sw = s, q.dh = q.dw = 1;
  q.ph = q.pw = r / 2;
  q.oh = q.ow = (hw + 2 * (r / 2) - r) / s + 1;
  q.groups = 1;
  return spec;
}

void BM_Bf16Conv(benchmark::State& state) {
  using namespace cpu;
  const int64_t c = state.range(0), hw = state.range(1), k = state.range(2), r = state.range(3), s = state.range(4);
  const int threads = static_cast<int>(state.range(5));
  const int isa_arg = static_cast<int>(state.range(6));
  const Bf16Isa isa = isa_arg == 2 || isa_arg == 3   ? Bf16Isa::kAmx
                      : isa_arg == 1 || isa_arg == 4 ? Bf16Isa::kAvx512Bf16
                                                     : Bf16Isa::kNone;
  if (!cpu_isa_supported(CpuIsa::kAvx512)) return state.SkipWithError("needs AVX-512 (the 16-channel layout)");
  if (isa == Bf16Isa::kAmx && !cpu_isa_supported(CpuIsa::kAmx)) return state.SkipWithError("no AMX here");
  if (isa == Bf16Isa::kAvx512Bf16 && !cpu_isa_supported(CpuIsa::kAvx512Bf16))
    return state.SkipWithError("no AVX512_BF16 here");
  NchwcConvSpec spec = square_spec(c, hw, k, r, s);
  const Geometry& q = spec.q;
  spec.input_blocked = c > 8;  // a stem reads the plain image
  spec.act.kind = ActKind::kRelu;
  if (isa_arg >= 3) {
    spec.x_bf16 = spec.input_blocked;
    spec.y_bf16 = true;
  }
  std::vector<float> x = random_floats(static_cast<size_t>(nchwc_padded(c, 16) * hw * hw), 1);
  std::vector<float> w = random_floats(static_cast<size_t>(k * c * r * r), 2), b = random_floats(k, 3);
  std::vector<float> y(static_cast<size_t>(nchwc_padded(k, 16) * q.oh * q.ow));
  ThreadPool pool(threads);
  std::unique_ptr<Bf16Conv> bf16;
  std::unique_ptr<NchwcDirectConv> fp32;
  size_t ws_bytes = 0;
  if (isa == Bf16Isa::kNone) {
    fp32 = std::make_unique<NchwcDirectConv>(spec, w.data(), b.data(), threads);
  } else {
    bf16 = std::make_unique<Bf16Conv>(spec, isa, w.data(), b.data());
    ws_bytes = bf16->workspace_bytes();
  }
  std::vector<float> ws(ws_bytes / sizeof(float) + 16);
  for (auto _ : state) {
    if (bf16)
      bf16->run(x.data(), nullptr, y.data(), ws.data(), pool);
    else
      fp32->run(x.data(), nullptr, y.data(), 0, nullptr, pool);
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * static_cast<double>(k * q.oh * q.ow) * c * r * r;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(bf16 ? bf16->describe() : fp32->describe());
}

void resnet50_dense(benchmark::internal::Benchmark* b) {
  // ResNet-50 (torchvision v1.5): the stem on the plain image (bf16 folds its
  // window columns into the channels), then the bottleneck layers.
  const int64_t shapes[][5] = {
      {3, 224, 64, 7, 2},   {64, 56, 64, 1, 1},    {64, 56, 64, 3, 1},   {64, 56, 256, 1, 1},   {256, 56, 64, 1, 1},
      {256, 56, 128, 1, 1}, {128, 56, 128, 3, 2},  {128, 28, 512, 1, 1}, {256, 56, 512, 1, 2},  {512, 28, 128, 1, 1},
      {128, 28, 128, 3, 1}, {512, 28, 256, 1, 1},  {256, 28, 256, 3, 2}, {256, 14, 1024, 1, 1}, {1024, 14, 256, 1, 1},
      {256, 14, 256, 3, 1}, {1024, 14, 512, 1, 1}, {512, 14, 512, 3, 2}, {512, 7, 2048, 1, 1},  {2048, 7, 512, 1, 1},
      {512, 7, 512, 3, 1},
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes)
      for (int isa : {0, 1, 2, 3, 4}) b->Args({s[0], s[1], s[2], s[3], s[4], threads, isa});
  b->ArgNames({"C", "HW", "K", "R", "stride", "threads", "isa"});
}
BENCHMARK(BM_Bf16Conv)->Name("Bf16Conv/resnet50")->Apply(resnet50_dense)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The int8 convolution (kernels/cpu/conv_int8.h) on MobileNetV2's stem and
// 1x1 layers (and a 3x3 one of ResNet's for scale), beside the float32 kernel:
// Int8Conv/<model>/C/HW/K/R/stride/threads/form: form 0 float32
// (NchwcDirectConv, blocked floats in and out), 1 int8 on blocked floats in
// and out, 2 int8 values in and out (uint8 codes in groups of 64 channels,
// as between two int8 convolutions of a quantized model; the stem: the plain
// image in, int8 values out), output on a grid.
void BM_Int8Conv(benchmark::State& state) {
  using namespace cpu;
  const int64_t c = state.range(0), hw = state.range(1), k = state.range(2), r = state.range(3), s = state.range(4);
  const int threads = static_cast<int>(state.range(5));
  const int form = static_cast<int>(state.range(6));
  if (!cpu_isa_supported(CpuIsa::kAvx512)) return state.SkipWithError("needs AVX-512 (the 16-channel layout)");
  std::string why;
  const Int8ConvIsa isa = int8_conv_isa(&why);
  if (form > 0 && isa == Int8ConvIsa::kReference)
    return state.SkipWithError(("no int8 convolution here: " + why).c_str());
  NchwcConvSpec spec = square_spec(c, hw, k, r, s);
  const Geometry& q = spec.q;
  spec.input_blocked = c > 8;  // the stem reads the plain image (its window folded into the channels)
  // The output's grid (uint8, zero point 128: k in [-128, 127]); ReLU-free, as MobileNetV2's projections.
  spec.act.kind = ActKind::kQuantGrid;
  spec.act.alpha = 0.05f, spec.act.beta = -128, spec.act.gamma = 127;
  spec.x_u8 = form == 2 && spec.input_blocked;
  spec.y_u8 = form == 2;
  Int8ConvQuant quant{0.02f, -128, 127, {0.01f}};
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> code(-127, 127), xcode(-128, 127);
  std::vector<float> w(static_cast<size_t>(k * c * r * r)), b = random_floats(k, 3);
  for (float& v : w) v = 0.01f * static_cast<float>(code(rng));
  std::vector<float> x(static_cast<size_t>(nchwc_padded(c, 16) * hw * hw));
  for (float& v : x) v = 0.02f * static_cast<float>(xcode(rng));  // on the input's grid
  std::vector<uint8_t> xu(static_cast<size_t>(nchwc_padded(c, 64) * hw * hw));
  for (uint8_t& v : xu) v = static_cast<uint8_t>(xcode(rng) + 128);
  std::vector<float> y(static_cast<size_t>(nchwc_padded(k, 64) * q.oh * q.ow));
  ThreadPool pool(threads);
  std::unique_ptr<Int8Conv> int8;
  std::unique_ptr<NchwcDirectConv> fp32;
  size_t ws_bytes = 0;
  if (form == 0) {
    fp32 = std::make_unique<NchwcDirectConv>(spec, w.data(), b.data(), threads);
  } else {
    int8 = std::make_unique<Int8Conv>(spec, isa, quant, w.data(), b.data());
    ws_bytes = int8->workspace_bytes();
  }
  std::vector<float> ws(ws_bytes / sizeof(float) + 16);
  const void* xin = spec.x_u8 ? static_cast<const void*>(xu.data()) : x.data();
  for (auto _ : state) {
    if (int8)
      int8->run(xin, nullptr, y.data(), ws.data(), pool);
    else
      fp32->run(x.data(), nullptr, y.data(), 0, nullptr, pool);
    benchmark::DoNotOptimize(y.data());
  }
  const double ops = 2.0 * static_cast<double>(k * q.oh * q.ow) * c * r * r;
  state.counters["GOP/s"] =
      benchmark::Counter(ops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(int8 ? int8->describe() : fp32->describe());
}

void mobilenetv2_pointwise(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][5] = {
      {3, 224, 32, 3, 2},  {16, 112, 96, 1, 1}, {96, 56, 24, 1, 1},  {24, 56, 144, 1, 1},
      {144, 56, 24, 1, 1}, {96, 14, 576, 1, 1}, {960, 7, 320, 1, 1}, {128, 28, 128, 3, 1},
  };
  for (int threads : {1, 2})
    for (const auto& s : shapes)
      for (int form : {0, 1, 2}) b->Args({s[0], s[1], s[2], s[3], s[4], threads, form});
  b->ArgNames({"C", "HW", "K", "R", "stride", "threads", "form"});
}
BENCHMARK(BM_Int8Conv)
    ->Name("Int8Conv/mobilenetv2")
    ->Apply(mobilenetv2_pointwise)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace minirt

BENCHMARK_MAIN();
