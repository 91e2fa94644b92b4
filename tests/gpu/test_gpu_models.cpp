// Whole models on the GPU against the CPU, placed by the real session
// (Device::kCuda: the gate, the module, placement with CPU fallback per
// node): every .onnx file in the folders of MINIRT_GPU_TEST_MODELS
// (colon-separated; default BUILD/models, where the model tests and
// tools/gpu-check.sh write the generated models, and ../shared/models beside
// the source tree), at batch 1 and, where the batch is symbolic, 2. Inputs
// are seeded random floats in [0, 1) (integer inputs zeros). Symbolic
// dimensions other than the batch are 1, unless MINIRT_GPU_TEST_SHAPES
// (NAME=DxDx...,...; default x=1x3x48x192, the shared PP-OCR classifier's
// input, as tests/run_model_tests.sh gives it) names that input: then its
// shape, with the batch in front.
//
// Each comparison prints one line for tools/gpu-check.sh's report:
//   parity resnet50.onnx batch 1: max |gpu - cpu| 3.1e-05, max |cpu| 7.2, ok; placed 57 nodes on cuda, 0 nodes on cpu
// and passes when max |gpu - cpu| <= 1e-3 * max |cpu| + 1e-4 for every
// output (fp32 math: different summation orders and convolution algorithms
// over up to ~50 layers).
#include <cstdlib>
#include <filesystem>
#include <map>

#include "gpu_test_util.h"

namespace minirt::gputest {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> model_files() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("MINIRT_GPU_TEST_MODELS")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  } else {
    dirs = {std::string(MINIRT_BINARY_DIR) + "/models", std::string(MINIRT_SOURCE_DIR) + "/../shared/models"};
  }
  std::vector<fs::path> out;
  for (const std::string& d : dirs) {
    std::error_code ec;
    if (fs::is_regular_file(d, ec)) {
      out.emplace_back(d);
      continue;
    }
    if (!fs::is_directory(d, ec)) continue;
    std::vector<fs::path> here;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".onnx") here.push_back(e.path());
    std::sort(here.begin(), here.end());
    out.insert(out.end(), here.begin(), here.end());
  }
  return out;
}

// MINIRT_GPU_TEST_SHAPES as name -> shape.
std::map<std::string, Shape> given_shapes() {
  const char* env = std::getenv("MINIRT_GPU_TEST_SHAPES");
  std::string s = env ? env : "x=1x3x48x192";
  std::map<std::string, Shape> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    size_t eq = item.find('=');
    if (eq != std::string::npos) {
      Shape shape;
      std::string dims = item.substr(eq + 1);
      size_t p = 0;
      while (p < dims.size()) {
        size_t x = dims.find('x', p);
        if (x == std::string::npos) x = dims.size();
        shape.push_back(std::atoll(dims.substr(p, x - p).c_str()));
        p = x + 1;
      }
      out[item.substr(0, eq)] = shape;
    }
    start = end + 1;
  }
  return out;
}

NamedTensors make_inputs(const Model& m, int64_t batch, uint64_t seed) {
  NamedTensors in;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  static const std::map<std::string, Shape> given = given_shapes();
  for (const ValueDesc& d : m.inputs()) {
    Shape s = d.dims;
    bool symbolic = false;
    for (size_t i = 1; i < s.size(); ++i) symbolic = symbolic || s[i] < 0;
    auto g = given.find(d.name);
    if (symbolic && g != given.end() && g->second.size() == s.size()) {
      for (size_t i = 1; i < s.size(); ++i) s[i] = g->second[i];
    }
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] < 0) s[i] = i == 0 ? batch : 1;
    Tensor t = Tensor::zeros(d.dtype, s);
    if (d.dtype == DType::kFloat32)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    in.emplace_back(d.name, std::move(t));
  }
  return in;
}

TEST(GpuModels, EveryModelMatchesTheCpu) {
  MINIRT_SKIP_WITHOUT_GPU();
  std::vector<fs::path> files = model_files();
  if (files.empty())
    GTEST_SKIP() << "no .onnx files found (set MINIRT_GPU_TEST_MODELS, or make them: minirt-make-models --out "
                 << MINIRT_BINARY_DIR << "/models)";
  int compared = 0;
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    std::shared_ptr<const Model> model;
    try {
      model = Model::load(f.string());
    } catch (const Error& e) {
      std::printf("parity %s: skipped, minirt cannot load it: %s\n", f.filename().c_str(), e.what());
      continue;
    }
    bool symbolic_batch = false;
    for (const ValueDesc& d : model->inputs()) symbolic_batch = symbolic_batch || (!d.dims.empty() && d.dims[0] < 0);
    for (int64_t batch : symbolic_batch ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1}) {
      NamedTensors in = make_inputs(*model, batch, 7);
      std::vector<Tensor> want, got;
      try {
        Session cpu(model, {.device = Device::kCpu});
        want = cpu.run(in);
      } catch (const Error& e) {
        std::printf("parity %s batch %lld: skipped, the CPU cannot run it: %s\n", f.filename().c_str(),
                    static_cast<long long>(batch), e.what());
        continue;
      }
      std::string placement;
      try {
        Session gpu(model, {.device = Device::kCuda});
        got = gpu.run(in);
        got = gpu.run(in);  // the steady state: arena reused
        placement = gpu.placement();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "GPU run failed: " << e.what();
        std::printf("parity %s batch %lld: FAILED to run on the GPU: %s\n", f.filename().c_str(),
                    static_cast<long long>(batch), e.what());
        continue;
      }
      ASSERT_EQ(got.size(), want.size());
      double worst = 0, scale = 0;
      bool ok = true;
      for (size_t i = 0; i < want.size(); ++i) {
        if (want[i].dtype() != DType::kFloat32) {
          ok = ok && std::memcmp(got[i].raw(), want[i].raw(), want[i].nbytes()) == 0;
          continue;
        }
        double d = 0, s = 0;
        for (int64_t k = 0; k < want[i].numel(); ++k) {
          double a = got[i].data<float>()[k], b = want[i].data<float>()[k];
          double diff = std::fabs(a - b);
          if (std::isnan(diff)) diff = INFINITY;
          d = std::max(d, diff);
          s = std::max(s, std::fabs(b));
        }
        ok = ok && d <= 1e-3 * s + 1e-4;
        worst = std::max(worst, d);
        scale = std::max(scale, s);
      }
      std::printf("parity %s batch %lld: max |gpu - cpu| %.3g, max |cpu| %.3g, %s; %s\n", f.filename().c_str(),
                  static_cast<long long>(batch), worst, scale, ok ? "ok" : "MISMATCH", placement.c_str());
      std::fflush(stdout);
      EXPECT_TRUE(ok) << "max |gpu - cpu| " << worst << " with max |cpu| " << scale << " at batch " << batch;
      ++compared;
    }
  }
  EXPECT_GT(compared, 0) << "no model could be compared";
}

}  // namespace
}  // namespace minirt::gputest
