// The compatibility gate: judges the probed GPU stack against what this
// build was compiled for. judge() is a pure function of the two sets of
// facts, so every rule is tested with synthetic facts on any machine.
//
//   GateResult r = judge(stack, BuildFacts::this_build());
//   for (const Verdict& v : r.verdicts) std::cout << level_name(v.level) << " " << v.message << "\n";
//   if (!r.usable) std::cout << r.summary << "\n";   // "CPU fallback: no NVIDIA driver ..."
//
// Every fatal or warning verdict is one sentence that says what is wrong and
// what to do: which package, which variable, which path.
#pragma once

#include <string>
#include <vector>

#include "runtime/gpu/stack.h"

namespace minirt::gpu {

// The layers in the order they are judged (and reported).
enum class Layer { kBuild, kDriver, kDevice, kCudnn, kCublas };
// kNote: a fact worth saying that changes nothing (e.g. a layer not checked).
enum class Level { kOk, kNote, kWarning, kFatal };

const char* layer_name(Layer l);  // "build", "driver", "device", "cudnn", "cublas"
const char* level_name(Level l);  // "ok", "note", "warning", "fatal"

struct Verdict {
  Layer layer;
  Level level;
  std::string rule;     // a stable id, e.g. "driver.too_old", "cudnn.major"
  std::string message;  // one sentence with the fix
};

struct GateResult {
  bool usable = false;  // no fatal verdict
  std::vector<Verdict> verdicts;
  // One line: "GPU usable: ..." or "CPU fallback: <the first fatal verdict>".
  std::string summary;

  // The first fatal verdict (layer order), or nullptr when usable.
  const Verdict* first_fatal() const;
  int warnings() const;
  bool has(const std::string& rule) const;
  const Verdict* find(const std::string& rule) const;
};

// The device the session would use: ordinal 0 of the visible devices.
constexpr int kSelectedDevice = 0;

GateResult judge(const StackFacts& stack, const BuildFacts& build);

// The CUDA driver error name for the codes the gate talks about ("CUDA_ERROR_NO_DEVICE").
std::string cuda_error_name(int code);

}  // namespace minirt::gpu
