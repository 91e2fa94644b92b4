#include "kernels/cpu/cpu_backend.h"

#include "kernels/cpu/conv_algorithms.h"
#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/eigen_util.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_int8.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"

#include <minirt/minirt.h>

#include <algorithm>
#include <fstream>
#include <unordered_map>

namespace minirt {

namespace {

// The first CPU's value of `key` in /proc/cpuinfo ("model name", "cpu
// family", "model"); empty when absent.
std::string cpuinfo_value(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos || line.find_last_not_of(" \t", colon - 1) + 1 != key.size()) continue;
    size_t b = line.find_first_not_of(" \t", colon + 1);
    size_t e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) break;
    return line.substr(b, e - b + 1);
  }
  return "";
}

// What a measured choice's speed depends on in the CPU itself: its name,
// family and model, and its caches (sysfs; a cache file copied from another
// CPU, even one that reports the same name in a VM, is retuned, not trusted):
// "AMD EPYC (family 25 model 17; L1d 32K, L2 1024K, L3 32768K)".
std::string cpu_identity() {
  std::string name = cpuinfo_value("model name");
  std::string out = name.empty() ? "unknown cpu" : name;
  std::string detail;
  const std::string family = cpuinfo_value("cpu family"), model = cpuinfo_value("model");
  if (!family.empty() && !model.empty()) detail = "family " + family + " model " + model;
  std::string caches;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
    std::string l, t, s;
    if (!(level >> l) || !(type >> t) || !(size >> s)) break;
    if (t == "Instruction") continue;
    caches += (caches.empty() ? "" : ", ") + std::string("L") + l + (t == "Data" ? "d" : "") + " " + s;
  }
  if (!caches.empty()) detail += (detail.empty() ? "" : "; ") + caches;
  return detail.empty() ? out : out + " (" + detail + ")";
}

// The instruction sets the SGEMM microkernel (and so every Conv lowering) runs on.
const char* isa_features(cpu::SgemmIsa isa) {
  switch (isa) {
    case cpu::SgemmIsa::kAvx512:
      return "avx512f+fma";
    case cpu::SgemmIsa::kAvx2:
      return "avx2+fma";
    case cpu::SgemmIsa::kGeneric:
      break;
  }
  return "generic";
}

class CpuBackend final : public KernelProvider {
 public:
  CpuBackend(int threads, MathMode math)
      : threads_(threads), bf16_(math == MathMode::kBf16 ? cpu::bf16_isa() : cpu::Bf16Isa::kNone) {
    std::vector<cpu::KernelEntry> entries;
    cpu::add_conv_kernels(entries);
    cpu::add_pool_kernels(entries);
    cpu::add_elementwise_kernels(entries);
    cpu::add_gemm_kernels(entries);
    cpu::add_norm_kernels(entries);
    cpu::add_shape_kernels(entries);
    cpu::add_cast_pad_kernels(entries);
    cpu::add_resize_kernels(entries);
    cpu::add_grid_sample_kernels(entries);
    cpu::add_roi_align_kernels(entries);
    cpu::add_logic_kernels(entries);
    cpu::add_index_kernels(entries);
    cpu::add_quant_kernels(entries);
    cpu::add_value_sized_kernels(entries);
    for (const auto& e : entries) table_[e.op] = e.make;
    if (math == MathMode::kBf16) {
      std::string why = cpu::bf16_isa_reason();
      if (bf16_ == cpu::Bf16Isa::kNone)
        math_note_ = "fp32 (MathMode::kBf16 asked): " + why;
      else
        math_note_ = bf16_ == cpu::Bf16Isa::kAmx
                         ? std::string("bf16 convolutions on AMX tiles")
                         : "bf16 convolutions on AVX512_BF16 where measured faster than float32 (" + why + ")";
    }
  }
  std::string math_note() const override { return math_note_; }
  int fuse_chosen(Graph& g, const std::map<int, std::string>& algorithm, const std::vector<int>& order) const override {
    return cpu::nchwc_fuse_chosen(g, algorithm, order, threads_, bf16_);
  }
  int narrow_values(Graph& g, const std::map<int, std::string>& algorithm) const override {
    const int int8 = cpu::nchwc_int8_values(g, algorithm, threads_, bf16_);
    return int8 + cpu::nchwc_bf16_values(g, algorithm, threads_, bf16_);
  }
  const char* name() const override { return "cpu"; }
  const ComputeDevice& device() const override { return host_device(); }
  bool supports(const Graph&, const Node& n, std::string* why) const override {
    if (table_.count(n.op)) return true;
    if (n.domain == "minirt" && (n.op == "ReorderToBlocked" || n.op == "ReorderToPlain")) return true;
    if (why) *why = "the CPU backend has no kernel for " + n.op;
    return false;
  }
  std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) const override {
    if (blocked(g, n)) return cpu::make_nchwc_kernel(g, n, threads_, "", bf16_);
    // A quantized model's product on its codes, whatever the math mode.
    if (n.op == "Gemm" || n.op == "MatMul")
      if (auto k = cpu::make_int8_product_kernel(g, n)) return k;
    if (bf16_ != cpu::Bf16Isa::kNone && (n.op == "Gemm" || n.op == "MatMul"))
      if (auto k = cpu::make_bf16_product_kernel(g, n, bf16_)) return k;
    auto it = table_.find(n.op);
    if (it == table_.end()) node_fail(ErrorCode::kUnsupported, g, n, "the CPU backend has no kernel for " + n.op);
    return it->second(g, n, threads_);
  }

  // Only Conv has a choice; its declined candidates are listed with the
  // reason so that a report can say why they were not tried.
  std::vector<AlgorithmOption> algorithms(const Graph& g, const Node& n) const override {
    std::vector<AlgorithmOption> out;
    if (n.op != "Conv" || conv3d(g, n)) return out;  // 3-D: one way only (conv.cpp's Conv3dKernel)
    bool b = blocked(g, n);
    for (const std::string& a : b ? cpu::nchwc_conv_algorithm_names() : cpu::conv_algorithm_names()) {
      AlgorithmOption o;
      o.name = a;
      o.declined = b ? cpu::nchwc_conv_declined(g, n, a, bf16_) : cpu::conv_algorithm_declined(g, n, a);
      if (o.declined.empty())
        o.workspace = b ? cpu::nchwc_conv_workspace_bytes(g, n, threads_, a, bf16_)
                        : cpu::conv_workspace_bytes(g, n, threads_, a);
      out.push_back(std::move(o));
    }
    return out;
  }
  std::string heuristic_algorithm(const Graph& g, const Node& n) const override {
    if (n.op != "Conv" || conv3d(g, n)) return {};
    return blocked(g, n) ? cpu::nchwc_conv_heuristic(g, n, threads_, bf16_)
                         : cpu::conv_heuristic_algorithm(g, n, threads_);
  }
  std::unique_ptr<Kernel> make_kernel_with(const Graph& g, const Node& n, const std::string& algorithm) const override {
    // No name: no choice made, the rules' pick (what make_kernel runs).
    if (algorithm.empty()) return make_kernel(g, n);
    if (n.op == "Conv" && !conv3d(g, n))
      return blocked(g, n) ? cpu::make_nchwc_kernel(g, n, threads_, algorithm, bf16_)
                           : cpu::make_conv_kernel(g, n, threads_, algorithm);
    node_fail(ErrorCode::kInvalidArgument, g, n,
              "the CPU backend has no algorithm choice for " + n.op + ", so not '" + algorithm + "'");
  }
  double keep_heuristic_within(const Graph& g, const Node& n, double usual) const override {
    if (bf16_ == cpu::Bf16Isa::kNone || n.op != "Conv" || conv3d(g, n) || !blocked(g, n)) return usual;
    return std::max(usual, cpu::nchwc_bf16_margin(g, n, threads_, bf16_));
  }
  std::unique_ptr<Kernel> make_tuning_kernel(const Graph& g, const Node& n,
                                             const std::string& algorithm) const override {
    if (n.op == "Conv" && !conv3d(g, n) && blocked(g, n) && !algorithm.empty())
      return cpu::make_nchwc_tuning_kernel(g, n, threads_, algorithm, bf16_);
    return make_kernel_with(g, n, algorithm);
  }
  // The blocked layout follows the ISA kernels are made for: NCHW16c on
  // AVX-512, NCHW8c on AVX2, none on the portable path.
  int channel_block() const override { return cpu::nchwc_block(cpu::sgemm_default_isa()); }
  bool blocked_inputs(const Graph& g, const Node& n, std::vector<LayoutNeed>* needs) const override {
    return cpu::nchwc_blocked_inputs(g, n, channel_block(), needs);
  }

  // "cpu | AMD EPYC (family 25 model 17; L1d 32K, L2 1024K, L3 32768K) |
  // avx2+fma | minirt 0.1.0 | eigen 3.4.0 | fp32": what a measured choice
  // depends on (cpu_identity). The ISA is the one kernels are made with now
  // (MINIRT_CPU_ISA may force a lesser one); the math is "bf16-amx+values" or
  // "bf16-avx512_bf16+values" when bf16 convolutions are candidates.
  std::string tuning_context() const override {
    static const std::string model = cpu_identity();
    // "+values": nchwc_bf16 timed as it runs between bf16 values (make_tuning_kernel).
    std::string math =
        bf16_ == cpu::Bf16Isa::kNone ? "fp32" : std::string("bf16-") + cpu::bf16_isa_name(bf16_) + "+values";
    return "cpu | " + model + " | " + isa_features(cpu::sgemm_default_isa()) + " | minirt " MINIRT_VERSION_STRING +
           " | eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
           std::to_string(EIGEN_MINOR_VERSION) + " | " + math;
  }

 private:
  // A node with a blocked input or output runs on the blocked kernels.
  static bool conv3d(const Graph& g, const Node& n) { return in_shape(g, n, 0).size() == 5; }
  static bool blocked(const Graph& g, const Node& n) {
    if (n.domain == "minirt") return true;  // the reorders
    for (int v : n.inputs)
      if (v >= 0 && g.values[v].block > 0) return true;
    for (int v : n.outputs)
      if (v >= 0 && g.values[v].block > 0) return true;
    return false;
  }

  int threads_;
  cpu::Bf16Isa bf16_;  // kNone: float32 math
  std::string math_note_;
  std::unordered_map<std::string, cpu::KernelFactory> table_;
};

}  // namespace

std::unique_ptr<KernelProvider> make_cpu_backend(int threads, MathMode math) {
  return std::make_unique<CpuBackend>(threads < 1 ? 1 : threads, math);
}

BackendFactory cpu_backend_factory() {
  BackendFactory f;
  f.name = "cpu";
  f.kind = Device::kCpu;
  f.open = [](const BackendRequest& request) {
    OpenedBackend b;
    // A kernel override that cannot be followed stops here, said, rather
    // than running other kernels than the ones asked for.
    std::string problem = cpu::cpu_env_isa_problem();
    if (problem.empty()) problem = cpu::sgemm_env_isa_problem();
    if (!problem.empty()) {
      b.error = problem;
      b.error_code = ErrorCode::kInvalidArgument;
      return b;
    }
    b.kernels = make_cpu_backend(request.threads, request.math);
    b.description = "the CPU";
    return b;
  };
  return f;
}

}  // namespace minirt
