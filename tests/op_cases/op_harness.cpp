// minirt-op-harness: the op cases on the pretend GPU against the CPU, on
// any machine. Each case (tests/op_cases/make_op_cases.py's ONNX
// backend-test folders) runs twice: on the CPU alone, the reference, and in
// a session that also has a pretend GPU (tests/unit/fake_device.h: device
// memory whose bytes are XOR-ed, so a host kernel reading it, or a missed
// copy, gives wrong numbers) claiming every op the CUDA backend's support
// tables list. So placement, the copies between host and device, per-node
// fallback and plan stages are exercised for every case, as the real GPU
// would exercise them, while the numbers come from the CPU's kernels (the
// one tolerance: atol 1e-5 + rtol 1e-5 for floats, from the layouts' other
// summation order; other types exact, NaN matching NaN).
//
//   minirt-op-harness DIR...         # PASS/FAIL per case, a summary; exit 1 on a failure
//   minirt-op-harness --list-claimed # the ops the pretend GPU claims, one a line (ops.coverage)
//
// tests/op_cases/ops_test.py runs it per op (ctest ops.<Op>) and over every
// case (ctest ops.pretend_gpu). A test-side tool: it needs the session's
// internal device hook. Exit status: 0 all passed, 1 a failure, 2 usage.
#include <minirt/minirt.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/support.h"
#include "runtime/api/session_internal.h"
#include "tests/op_cases/case_inputs.h"
#include "tests/unit/fake_device.h"
#include "tools/cli_util.h"

namespace fs = std::filesystem;
using namespace minirt;

namespace {

constexpr double kAtol = 1e-5, kRtol = 1e-5;

// The ops the CUDA backend's tables list: what the pretend GPU claims.
std::set<std::string> cuda_op_names() {
  size_t n = 0;
  const char* const* ops = cuda::cuda_ops(&n);
  return std::set<std::string>(ops, ops + n);
}

// "" when `got` matches `want`; else what differs.
std::string compare(const Tensor& want, const Tensor& got) {
  if (want.dtype() != got.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", want " + dtype_name(want.dtype());
  if (want.shape() != got.shape()) return "shape " + shape_str(got.shape()) + ", want " + shape_str(want.shape());
  const size_t n = static_cast<size_t>(want.numel());
  if (want.dtype() == DType::kFloat32) {
    const float* w = want.data<float>();
    const float* g = got.data<float>();
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      if (w[i] == g[i]) continue;  // infinities too
      if (!(std::fabs(static_cast<double>(g[i]) - w[i]) <= kAtol + kRtol * std::fabs(static_cast<double>(w[i]))))
        return "element " + std::to_string(i) + ": " + std::to_string(g[i]) + ", want " + std::to_string(w[i]);
    }
    return {};
  }
  if (std::memcmp(want.raw(), got.raw(), n * dtype_size(want.dtype())) != 0) return "values differ";
  return {};
}

struct Result {
  bool ok = false;
  std::string why;
  size_t on_device = 0;  // kernel runs on the pretend GPU
};

Result run_case(const fs::path& dir, const std::set<std::string>& claimed) {
  Result r;
  try {
    auto model = Model::load((dir / "model.onnx").string());
    NamedTensors inputs = testing::case_inputs(dir, *model);
    Session cpu(model, {.device = Device::kCpu, .threads = 1});
    std::vector<Tensor> want = cpu.run(inputs);
    Session dev(model, {.device = Device::kCpu, .threads = 1});
    auto fake = std::make_shared<testing::FakeDevice>(claimed);
    fake->named("pretend-gpu");
    SessionInternals::add_device(dev, fake);
    std::vector<Tensor> got = dev.run(inputs);
    r.on_device = static_cast<size_t>(fake->kernels_run.load());
    if (fake->errors.load() != 0) {
      r.why = "the pretend GPU saw a host pointer or a missed copy";
      return r;
    }
    if (got.size() != want.size()) {
      r.why = std::to_string(got.size()) + " outputs, want " + std::to_string(want.size());
      return r;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      std::string d = compare(want[i], got[i]);
      if (!d.empty()) {
        r.why = "output " + std::to_string(i) + ": " + d;
        return r;
      }
    }
    r.ok = true;
  } catch (const std::exception& e) {
    r.why = e.what();
    r.why = r.why.substr(0, r.why.find('\n'));
  }
  return r;
}

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: minirt-op-harness DIR... | --list-claimed\n"
               "  DIR is an op case (model.onnx + test_data_set_*) or a folder of them.\n"
               "  Runs each case on the CPU and with a pretend GPU claiming the CUDA backend's\n"
               "  ops, and compares the outputs. Needs no GPU.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a == "--list-claimed") {
      for (const std::string& op : cuda_op_names()) std::printf("%s\n", op.c_str());
      return 0;
    }
    if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "minirt-op-harness: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
    dirs.push_back(a);
  }
  std::string bad;
  std::optional<std::vector<std::string>> cases = tools::case_folders(dirs, &bad);
  if (!cases) {
    std::fprintf(stderr, "minirt-op-harness: %s\n", bad.c_str());
    return 2;
  }
  if (cases->empty()) {
    usage(stderr);
    return 2;
  }
  const std::set<std::string> claimed = cuda_op_names();
  int failed = 0;
  size_t nodes = 0;
  for (const auto& c : *cases) {
    fs::path dir(c);
    Result r = run_case(dir, claimed);
    nodes += r.on_device;
    if (r.ok) {
      std::printf("PASS %s (%zu kernel runs on the pretend GPU)\n", dir.filename().c_str(), r.on_device);
    } else {
      std::printf("FAIL %s: %s\n", dir.filename().c_str(), r.why.c_str());
      ++failed;
    }
  }
  std::printf("pretend GPU: %zu passed, %d failed, %zu kernel runs on it\n", cases->size() - failed, failed, nodes);
  return failed ? 1 : 0;
}
