// Small helpers the command-line tools share.
//
//   std::optional<size_t> b = minirt::tools::parse_size("64M");   // 67108864
//   out << minirt::tools::json_str("a \"quoted\" name");
#pragma once

#include <minirt/session.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace minirt::tools {

// "grow", or "preallocate:FRACTION" with FRACTION in (0, 1]; nullopt for
// anything else.
struct MemoryPolicyChoice {
  MemoryPolicy policy = MemoryPolicy::kGrow;
  double fraction = 0;
};
std::optional<MemoryPolicyChoice> parse_memory_policy(const std::string& text);

// "cached", "exhaustive", "heuristic", or an algorithm name (letters,
// digits, '_', '-', '.', '+') for TuningMode::kFixed; nullopt for anything else.
struct TuningChoiceText {
  TuningMode mode = TuningMode::kCached;
  std::string algorithm;  // with kFixed
};
std::optional<TuningChoiceText> parse_tuning(const std::string& text);

// --device's and --math's words: cpu, cuda (or gpu), auto; fp32, tf32.
// nullopt for anything else.
std::optional<Device> parse_device(const std::string& text);
std::optional<MathMode> parse_math(const std::string& text);

// ONNX backend-test case folders (each holds model.onnx): every argument
// that is one, and the case folders directly inside the others, sorted per
// argument. An argument that is not a folder: nullopt, with `error` naming it.
std::optional<std::vector<std::string>> case_folders(const std::vector<std::string>& args, std::string* error);

// The entries of `dir` named PREFIX<number>..., in the order of that number
// (input_10 after input_9): a test case's test_data_set_N folders and
// input_N.pb files.
std::vector<std::string> numbered_entries(const std::string& dir, const std::string& prefix);

// "4096", "64K", "1.5M", "2G" (powers of 1024; a trailing "B" or "iB" is
// allowed) as bytes; nullopt for anything else.
std::optional<size_t> parse_size(const std::string& text);

// The library's sentences name its API (SessionOptions::memory_limit, ...),
// never a tool's flags; a tool's error line puts its own flag before each
// field it has one for: "(SessionOptions::memory_limit)" reads
// "(--memory-limit, SessionOptions::memory_limit)" from runmodel. `flags`:
// pairs of (API field as the library writes it, this tool's flag).
struct FlagName {
  const char* field;
  const char* flag;
};
std::string with_flag_names(const std::string& message, const std::vector<FlagName>& flags);
// runmodel's flags for SessionOptions' fields.
const std::vector<FlagName>& session_flag_names();

// "" when `threads` (from --threads) is within minirt::max_threads(), else
// the sentence saying why not: the value, the ceiling, the cores seen.
std::string threads_problem(long threads);

// The p-th percentile (0 to 100) of v, interpolated between neighbours; 0 for none.
double percentile(std::vector<double> v, double p);

// "512 B", "12.0 KiB", "1.50 MiB", "2.00 GiB": runtime/format_bytes.h's
// format_bytes, for the tools that include the public API only.
std::string human_bytes(size_t bytes);

// A JSON string literal, quotes included.
std::string json_str(const std::string& s);

}  // namespace minirt::tools
