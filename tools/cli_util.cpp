#include "tools/cli_util.h"

#include "runtime/format_bytes.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace minirt::tools {

std::optional<size_t> parse_size(const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end == v.c_str() || !(x >= 0) || v[0] == '-' || v[0] == '+') return std::nullopt;
  std::string suffix(end);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double unit = 1;
  if (!suffix.empty() && (suffix[0] == 'K' || suffix[0] == 'M' || suffix[0] == 'G')) {
    unit = suffix[0] == 'K' ? 1024.0 : suffix[0] == 'M' ? 1048576.0 : 1073741824.0;
    suffix.erase(0, 1);
    if (suffix == "IB") suffix = "B";
  }
  if (!suffix.empty() && suffix != "B") return std::nullopt;
  double bytes = std::floor(x * unit);
  if (bytes >= 18446744073709551616.0) return std::nullopt;
  return static_cast<size_t>(bytes);
}

std::optional<MemoryPolicyChoice> parse_memory_policy(const std::string& v) {
  const std::string pre = "preallocate:";
  if (v == "grow") return MemoryPolicyChoice{MemoryPolicy::kGrow, 0};
  if (v.rfind(pre, 0) != 0) return std::nullopt;
  std::string f = v.substr(pre.size());
  char* end = nullptr;
  double x = std::strtod(f.c_str(), &end);
  if (f.empty() || *end || !(x > 0.0 && x <= 1.0)) return std::nullopt;
  return MemoryPolicyChoice{MemoryPolicy::kPreallocate, x};
}

std::optional<TuningChoiceText> parse_tuning(const std::string& v) {
  if (v == "cached") return TuningChoiceText{TuningMode::kCached, ""};
  if (v == "exhaustive") return TuningChoiceText{TuningMode::kExhaustive, ""};
  if (v == "heuristic") return TuningChoiceText{TuningMode::kHeuristic, ""};
  bool name = !v.empty();
  for (char c : v)
    name = name && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+');
  if (!name) return std::nullopt;
  return TuningChoiceText{TuningMode::kFixed, v};
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else
      o += c;
  }
  return o + "\"";
}

}  // namespace minirt::tools

namespace minirt::tools {

std::string threads_problem(long threads) {
  const int ceiling = max_threads();
  if (threads >= 0 && threads <= ceiling) return "";
  if (threads < 0)
    return "--threads " + std::to_string(threads) + " is negative; give 1 to " + std::to_string(ceiling) +
           ", or 0 for all usable cores";
  return "--threads " + std::to_string(threads) + " is more than the ceiling of " + std::to_string(ceiling) +
         " threads (4 x the " + std::to_string(usable_cores()) +
         " cores this process may use, at least 8, at most 1024); give 1 to " + std::to_string(ceiling) +
         ", or 0 for all usable cores";
}

}  // namespace minirt::tools

namespace minirt::tools {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::string human_bytes(size_t b) { return format_bytes(b); }

std::optional<Device> parse_device(const std::string& text) {
  if (text == "cpu") return Device::kCpu;
  if (text == "cuda" || text == "gpu") return Device::kCuda;
  if (text == "auto") return Device::kAuto;
  return std::nullopt;
}

std::optional<MathMode> parse_math(const std::string& text) {
  if (text == "fp32") return MathMode::kFp32;
  if (text == "tf32") return MathMode::kTf32;
  if (text == "fp16") return MathMode::kFp16;
  if (text == "bf16") return MathMode::kBf16;
  return std::nullopt;
}

std::vector<std::string> numbered_entries(const std::string& dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  auto number = [&](const std::string& p) {
    return std::atoi(fs::path(p).filename().string().c_str() + prefix.size());
  };
  std::sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) { return number(a) < number(b); });
  return out;
}

std::optional<std::vector<std::string>> case_folders(const std::vector<std::string>& args, std::string* error) {
  namespace fs = std::filesystem;
  std::vector<std::string> cases;
  for (const std::string& a : args) {
    std::error_code ec;
    if (!fs::is_directory(a, ec)) {
      if (error) *error = a + " is not a folder";
      return std::nullopt;
    }
    if (fs::exists(fs::path(a) / "model.onnx", ec)) {
      cases.push_back(a);
      continue;
    }
    std::vector<std::string> sub;
    for (const auto& e : fs::directory_iterator(a, ec))
      if (fs::exists(e.path() / "model.onnx", ec)) sub.push_back(e.path().string());
    std::sort(sub.begin(), sub.end());
    cases.insert(cases.end(), sub.begin(), sub.end());
  }
  return cases;
}

std::string with_flag_names(const std::string& message, const std::vector<FlagName>& flags) {
  std::string out;
  size_t at = 0;
  while (at < message.size()) {
    // The earliest field from here, the longest where several start there.
    size_t best = std::string::npos, best_len = 0;
    const FlagName* hit = nullptr;
    for (const FlagName& f : flags) {
      const size_t p = message.find(f.field, at);
      const size_t len = std::strlen(f.field);
      if (p != std::string::npos && (p < best || (p == best && len > best_len))) best = p, best_len = len, hit = &f;
    }
    if (!hit) break;
    out.append(message, at, best - at);
    out += std::string(hit->flag) + ", " + hit->field;
    at = best + best_len;
  }
  out.append(message, at, std::string::npos);
  return out;
}

const std::vector<FlagName>& session_flag_names() {
  static const std::vector<FlagName> names = {
      {"SessionOptions::memory_limit", "--memory-limit"},
      {"SessionOptions::memory_policy = MemoryPolicy::kGrow", "--memory-policy grow"},
      {"SessionOptions::memory_policy", "--memory-policy"},
      {"SessionOptions::preallocate_fraction", "--memory-policy preallocate:FRACTION"},
      {"SessionOptions::threads", "--threads"},
      {"SessionOptions::run_timeout_seconds", "--run-timeout"},
      {"SessionOptions::math = MathMode::kBf16", "--math bf16"},
      {"SessionOptions::workspace_limit", "--workspace-limit"},
  };
  return names;
}

}  // namespace minirt::tools
