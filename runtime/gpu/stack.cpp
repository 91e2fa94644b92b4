#include "runtime/gpu/stack.h"

#include <algorithm>
#include <cctype>
#include <charconv>

// Written by CMake (runtime/gpu/build_facts.h.in).
#include "runtime/gpu/build_facts.h"

namespace minirt::gpu {

namespace {

// Reads a non-negative integer at the front of s; advances s. -1 when none.
long long take_int(std::string_view& s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || v < 0) return -1;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  return v;
}

}  // namespace

std::string Version::str(bool with_patch) const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (with_patch) s += "." + std::to_string(patch);
  return s;
}

Version Version::parse(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  Version v;
  long long parts[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    long long x = take_int(text);
    if (x < 0 || x > 1000000) return i == 0 ? Version{} : v;
    parts[i] = x;
    v = Version{static_cast<int>(parts[0]), static_cast<int>(parts[1]), static_cast<int>(parts[2])};
    if (text.empty() || text.front() != '.') break;
    text.remove_prefix(1);
  }
  return v;
}

Version Version::from_cuda(long long v) {
  if (v <= 0) return {};
  return {static_cast<int>(v / 1000), static_cast<int>((v % 1000) / 10), 0};
}

Version Version::from_cudnn(long long v) {
  if (v <= 0) return {};
  if (v >= 90000) return {static_cast<int>(v / 10000), static_cast<int>((v % 10000) / 100), static_cast<int>(v % 100)};
  return {static_cast<int>(v / 1000), static_cast<int>((v % 1000) / 100), static_cast<int>(v % 100)};
}

std::string ComputeCapability::str() const { return std::to_string(major) + "." + std::to_string(minor); }

ComputeCapability ComputeCapability::from_int(int sm) {
  if (sm <= 0) return {};
  return {sm / 10, sm % 10};
}

ComputeCapability ComputeCapability::parse(std::string_view text) {
  if (text.find('.') != std::string_view::npos) {
    Version v = Version::parse(text);
    if (v.major <= 0 || v.minor > 9) return {};
    return {v.major, v.minor};
  }
  long long sm = take_int(text);
  if (sm <= 0 || !text.empty()) return {};
  return from_int(static_cast<int>(sm));
}

void BuildFacts::set_architectures(std::string_view spec) {
  arch_spec = std::string(spec);
  sass.clear();
  ptx.clear();
  arch_known = true;
  while (!spec.empty()) {
    size_t end = spec.find(';');
    std::string_view item = spec.substr(0, end);
    spec = end == std::string_view::npos ? std::string_view{} : spec.substr(end + 1);
    if (item.empty()) continue;
    std::string_view rest = item;
    long long sm = take_int(rest);
    if (sm <= 0) {  // "all", "native", "all-major": not knowable here
      arch_known = false;
      continue;
    }
    if (rest.empty()) {
      sass.push_back(static_cast<int>(sm));
      ptx.push_back(static_cast<int>(sm));
    } else if (rest == "-real") {
      sass.push_back(static_cast<int>(sm));
    } else if (rest == "-virtual") {
      ptx.push_back(static_cast<int>(sm));
    } else {  // arch-specific variants (90a) and anything else: not judged
      arch_known = false;
    }
  }
  std::sort(sass.begin(), sass.end());
  std::sort(ptx.begin(), ptx.end());
}

BuildFacts BuildFacts::this_build() {
  BuildFacts b;
  b.has_gpu_backend = MINIRT_GPU_BUILD_HAS_BACKEND != 0;
  b.why_not = MINIRT_GPU_BUILD_WHY_NOT;
  b.toolkit = Version::parse(MINIRT_GPU_BUILD_TOOLKIT);
  b.set_architectures(MINIRT_GPU_BUILD_ARCHITECTURES);
  b.cudnn = Version::parse(MINIRT_GPU_BUILD_CUDNN);
  b.cublas = Version::parse(MINIRT_GPU_BUILD_CUBLAS);
  return b;
}

Version cuda_for_driver_release(std::string_view release) {
  // The first driver branch of each CUDA release (Linux), from NVIDIA's
  // "CUDA Toolkit and Corresponding Driver Versions" table.
  struct Row {
    int branch;
    Version cuda;
  };
  static constexpr Row kTable[] = {
      {590, {13, 1, 0}}, {580, {13, 0, 0}}, {575, {12, 9, 0}}, {570, {12, 8, 0}}, {565, {12, 7, 0}}, {560, {12, 6, 0}},
      {555, {12, 5, 0}}, {550, {12, 4, 0}}, {545, {12, 3, 0}}, {535, {12, 2, 0}}, {530, {12, 1, 0}}, {525, {12, 0, 0}},
      {520, {11, 8, 0}}, {515, {11, 7, 0}}, {510, {11, 6, 0}}, {495, {11, 5, 0}}, {470, {11, 4, 0}}, {465, {11, 3, 0}},
      {460, {11, 2, 0}}, {455, {11, 1, 0}}, {450, {11, 0, 0}}, {440, {10, 2, 0}}, {418, {10, 1, 0}},
  };
  Version r = Version::parse(release);
  for (const Row& row : kTable)
    if (r.major >= row.branch) return row.cuda;
  return {};
}

}  // namespace minirt::gpu
