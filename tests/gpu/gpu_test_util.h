// Helpers of the GPU tests: whether a GPU is usable here (and if not, the
// gate's or the loader's sentence to skip with), one CUDA backend shared by
// the op tests, and the comparison of a one-node model run on the GPU with
// the same model run by the CPU kernels.
//
//   TEST(GpuOps, Relu) {
//     MINIRT_SKIP_WITHOUT_GPU();
//     OpCase c("relu 2x3", 13);
//     c.m.input("x", DType::kFloat32, {2, 3});
//     c.m.node("Relu", {"x"}, {"y"});
//     c.m.output("y");
//     c.feed("x", random_tensor({2, 3}, 1));
//     check_case(c, Tol{0, 0});
//   }
#pragma once

#include <gtest/gtest.h>
#include <minirt/minirt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model_builder.h"
#include "runtime/api/session_internal.h"
#include "runtime/gpu/module.h"
#include "runtime/gpu/probe.h"

namespace minirt::gputest {

using testing::ModelBuilder;

// Empty when a GPU backend can be had here; else why not, in one sentence.
inline const std::string& gpu_unusable_reason() {
  static const std::string why = [] {
    const gpu::GateResult& g = gpu::check_gpu_stack();
    if (!g.usable) return g.summary;
    gpu::LoadedBackend m = gpu::load_cuda_backend({});
    return m.backend ? std::string() : m.error;
  }();
  return why;
}

#define MINIRT_SKIP_WITHOUT_GPU()                                                    \
  do {                                                                               \
    if (!::minirt::gputest::gpu_unusable_reason().empty())                           \
      GTEST_SKIP() << "no usable GPU: " << ::minirt::gputest::gpu_unusable_reason(); \
  } while (0)

// MINIRT_GPU_CASES=load: the op tests (test_gpu_ops.cpp) run without a GPU
// and only build each case's model, load it and run it on the CPU, so that
// every case is a model minirt accepts (ctest gpu.every_op_case_loads, on
// every machine). Their first line is MINIRT_CASES_SKIP_WITHOUT_GPU(); what
// follows a case and needs the GPU itself returns first when load_only().
inline bool load_only() {
  static const bool v = [] {
    const char* e = std::getenv("MINIRT_GPU_CASES");
    return e && std::string(e) == "load";
  }();
  return v;
}
inline int& cases_loaded() {
  static int n = 0;
  return n;
}

#define MINIRT_CASES_SKIP_WITHOUT_GPU()                             \
  do {                                                              \
    if (!::minirt::gputest::load_only()) MINIRT_SKIP_WITHOUT_GPU(); \
  } while (0)

// In load-only mode, a run that loaded no case at all fails.
class LoadOnlyReport final : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!load_only()) return;
    std::printf("MINIRT_GPU_CASES=load: %d GPU op cases built, loaded and run on the CPU\n", cases_loaded());
    if (cases_loaded() == 0) ADD_FAILURE() << "MINIRT_GPU_CASES=load, but no GPU op case was loaded";
  }
};
inline ::testing::Environment* const kLoadOnlyReport = ::testing::AddGlobalTestEnvironment(new LoadOnlyReport);

// One fp32 backend for all op cases (each session still gets its own
// streams). Never destroyed: at exit the CUDA runtime may go first.
inline std::shared_ptr<KernelProvider> shared_backend() {
  static auto* b = new std::shared_ptr<KernelProvider>(gpu::load_cuda_backend({}).backend);
  return *b;
}

inline Tensor random_tensor(Shape shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t = Tensor::zeros(DType::kFloat32, std::move(shape));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

template <typename T>
Tensor int_tensor(DType dtype, Shape shape, std::vector<T> values) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) t.data<T>()[i] = values[i];
  return t;
}

// |gpu - cpu| <= atol + rtol * |cpu|, element by element.
struct Tol {
  double atol = 0, rtol = 0;
};

struct OpCase {
  std::string name;
  ModelBuilder m;
  NamedTensors inputs;
  bool optimize = false;  // run the passes (fusion) too
  int gpu_nodes = 1;      // nodes expected on cuda after the passes
  OpCase(std::string n, int64_t opset = 13) : name(std::move(n)), m(opset) {}
  void feed(const std::string& input, Tensor t) { inputs.emplace_back(input, std::move(t)); }
};

// Largest |a - b| and where the tolerance is broken first.
inline ::testing::AssertionResult close(const Tensor& gpu, const Tensor& cpu, Tol tol) {
  if (gpu.dtype() != cpu.dtype() || gpu.shape() != cpu.shape())
    return ::testing::AssertionFailure() << "shape/dtype differ: " << shape_str(gpu.shape()) << " vs "
                                         << shape_str(cpu.shape());
  size_t bytes = cpu.nbytes();
  if (cpu.dtype() != DType::kFloat32) {
    if (std::memcmp(gpu.raw(), cpu.raw(), bytes) != 0) return ::testing::AssertionFailure() << "bytes differ";
    return ::testing::AssertionSuccess();
  }
  const float* a = gpu.data<float>();
  const float* b = cpu.data<float>();
  double worst = 0;
  int64_t bad = -1;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    if (both_nan) continue;
    if (std::isnan(d)) d = INFINITY;
    worst = std::max(worst, d);
    if (bad < 0 && !(d <= tol.atol + tol.rtol * std::fabs(b[i]))) bad = i;
  }
  if (bad >= 0)
    return ::testing::AssertionFailure() << "element " << bad << ": gpu " << a[bad] << " vs cpu " << b[bad]
                                         << " (largest difference " << worst << ", tolerance atol " << tol.atol
                                         << " + rtol " << tol.rtol << ")";
  return ::testing::AssertionSuccess() << "largest difference " << worst;
}

// Relative to the output's scale, as GpuModels checks whole models: over a
// whole tensor, max |gpu - cpu| <= rel * max |cpu| + abs. For 16-bit math,
// whose error grows with the sums' size and not with each output's own
// (an output near zero is the sum of large products that cancel).
struct ScaleTol {
  double rel = 0, abs = 0;
};

// --math fp16 and bf16 on the sixteen_bit_math network (test_gpu_ops.cpp),
// checked on the CPU against the emulation of their roundings
// (test_fp16_emulation.cpp): float16 keeps 11 significant bits, bfloat16 8.
inline constexpr ScaleTol kFp16MathTol{1e-2, 1e-3};
inline constexpr ScaleTol kBf16MathTol{8e-2, 1e-2};

inline ::testing::AssertionResult close_to_scale(const float* gpu, const float* cpu, int64_t n, ScaleTol tol) {
  double worst = 0, scale = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < n; ++i) {
    double d = std::fabs(static_cast<double>(gpu[i]) - cpu[i]);
    if (std::isnan(d)) d = INFINITY;  // inf against inf too: a scale bound has no room for it
    if (at < 0 || d > worst) {
      worst = d;
      at = i;
    }
    scale = std::max(scale, static_cast<double>(std::fabs(cpu[i])));
  }
  const double bound = tol.rel * scale + tol.abs;
  if (at >= 0 && !(worst <= bound))
    return ::testing::AssertionFailure() << "element " << at << ": gpu " << gpu[at] << " vs cpu " << cpu[at]
                                         << ", max |gpu - cpu| " << worst << " > " << bound << " (" << tol.rel
                                         << " x max |cpu| " << scale << " + " << tol.abs << ")";
  return ::testing::AssertionSuccess() << "max |gpu - cpu| " << worst << " <= " << bound << " (max |cpu| " << scale
                                       << ")";
}

inline ::testing::AssertionResult close_to_scale(const Tensor& gpu, const Tensor& cpu, ScaleTol tol) {
  if (gpu.dtype() != DType::kFloat32 || cpu.dtype() != DType::kFloat32 || gpu.shape() != cpu.shape())
    return ::testing::AssertionFailure() << "shape/dtype differ: " << shape_str(gpu.shape()) << " vs "
                                         << shape_str(cpu.shape());
  return close_to_scale(gpu.data<float>(), cpu.data<float>(), cpu.numel(), tol);
}

// Runs the case on the CPU kernels and on the shared CUDA backend and
// compares every output; the GPU must have taken the expected nodes.
// Load-only mode: the case's model loads and runs on the CPU.
inline void load_on_cpu(OpCase& c) {
  SCOPED_TRACE(c.name);
  std::string bytes = c.m.bytes();
  std::shared_ptr<const Model> model;
  try {
    model = Model::load_from_memory(bytes.data(), bytes.size(), c.name + ".onnx");
  } catch (const std::exception& e) {
    FAIL() << "the case does not load: " << e.what();
  }
  Session cpu(model, {.device = Device::kCpu, .threads = 1, .optimize = c.optimize});
  try {
    cpu.run(c.inputs);
  } catch (const std::exception& e) {
    FAIL() << "the case does not run on the CPU: " << e.what();
  }
  ++cases_loaded();
}

inline void check_case(OpCase& c, Tol tol) {
  if (load_only()) return load_on_cpu(c);
  SCOPED_TRACE(c.name);
  std::string bytes = c.m.bytes();
  std::shared_ptr<const Model> model;
  ASSERT_NO_THROW(model = Model::load_from_memory(bytes.data(), bytes.size(), c.name + ".onnx"));
  Session cpu(model, {.device = Device::kCpu, .threads = 1, .optimize = c.optimize});
  Session gpu(model, {.device = Device::kCpu, .threads = 1, .optimize = c.optimize});
  SessionInternals::add_device(gpu, shared_backend());
  std::vector<Tensor> want, got, again;
  ASSERT_NO_THROW(want = cpu.run(c.inputs));
  try {
    got = gpu.run(c.inputs);
    again = gpu.run(c.inputs);  // a second run reuses the arena and the plan
  } catch (const std::exception& e) {
    FAIL() << "GPU run failed: " << e.what() << "\n" << gpu.plan_report();
  }
  std::string placement = gpu.placement();
  std::string expect = "placed " + std::to_string(c.gpu_nodes) + " node" + (c.gpu_nodes == 1 ? "" : "s") + " on cuda,";
  EXPECT_EQ(placement.rfind(expect, 0), 0u) << placement << "\n" << gpu.plan_report();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(close(got[i], want[i], tol)) << "output " << i << "\n" << gpu.plan_report();
    EXPECT_TRUE(close(again[i], got[i], Tol{1e-6, 1e-5}))
        << "output " << i << " of the second run differs from the first";
  }
}

}  // namespace minirt::gputest
