// The Triton backend's model configuration: auto-completion from the ONNX
// model, the checks of an explicit configuration against it, and the
// backend's parameters as minirt::SessionOptions. No Triton header is needed
// here (the configuration arrives as JSON), so this is unit-tested on every
// machine; tools/triton/backend.cpp is the part that speaks Triton's C API.
//
//   json::Value cfg = json::parse(text_from_triton);
//   if (auto_complete_allowed) changed = autocomplete(cfg, *model, {.default_max_batch_size = 4});
//   ModelConfig mc = read_config(cfg, *model, "resnet18");  // throws ConfigError naming model, tensor, field
//   SessionOptions so = instance_options(mc, InstanceKind::kCpu, 0);
#pragma once

#include <minirt/session.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/triton/json.h"

namespace minirt::triton {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "TYPE_FP32" and back; "TYPE_INVALID" / kUndefined for what has no match.
const char* config_type_name(DType t);
DType dtype_from_config_name(const std::string& name);

struct TensorConfig {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;  // without the batch dimension when max_batch_size > 0; -1: any size
};

enum class InstanceKind { kAuto, kCpu, kGpu, kModel };
InstanceKind instance_kind_from_name(const std::string& name);  // "KIND_CPU", ...

// The backend's parameters, from `parameters { key: ... value { string_value: ... } }`.
struct Parameters {
  Device device = Device::kAuto;  // "device": auto | cpu | cuda
  bool device_given = false;
  int threads = 0;  // "threads": 0 (the default) shares the cores among the model's CPU instances
  TuningMode tuning = TuningMode::kCached;  // "tuning": cached | exhaustive | heuristic | an algorithm name
  std::string tuning_algorithm;
  std::string algo_cache;                            // "algo_cache": the algorithm cache file
  size_t memory_limit = 0;                           // "memory_limit": bytes, "256M", "2G"
  MemoryPolicy memory_policy = MemoryPolicy::kGrow;  // "memory_policy": grow | preallocate:FRACTION
  double preallocate_fraction = 0;
  MathMode math = MathMode::kFp32;  // "math": fp32 | tf32 | fp16 | bf16 (the CPU's)
  bool warmup = true;               // "warmup": true | false: one run of zeros (batch 1) when an instance starts
  bool tune_in_background = true;   // "tune_in_background": true | false (SessionOptions::tune_in_background)
  double run_timeout_ms = 0;        // "run_timeout_ms": the most one run may take; 0: no limit
};

struct ModelConfig {
  std::string name;
  int64_t max_batch_size = 0;
  std::vector<TensorConfig> inputs;
  std::vector<TensorConfig> outputs;
  Parameters parameters;
  int cpu_instances = 0;  // the instances the configuration asks for that run on the CPU (for threads)
  bool dynamic_batching = false;
};

struct AutocompleteOptions {
  int64_t default_max_batch_size = 4;  // for models whose first dimension is symbolic (Triton's default)
};

// Fills what `config` lacks from the model: inputs and outputs (names, data
// types, dims), and max_batch_size (the default when every input and output
// has a symbolic first dimension and none was given, else 0), and, when it
// turned batching on and no scheduler is chosen, dynamic batching (a
// max_batch_size written by hand keeps the scheduler as written). Returns true
// when it changed anything. Tensors the configuration already lists are kept
// as written (read_config checks them).
bool autocomplete(json::Value& config, const Model& model, const AutocompleteOptions& options = {});

// Reads the configuration and checks it against the model: every model input
// listed, each listed tensor in the model with the same data type and
// compatible dims, batching only where the model's first dimension is
// symbolic, the parameters valid. Throws ConfigError with one sentence naming
// the model, the tensor and the field.
ModelConfig read_config(const json::Value& config, const Model& model, const std::string& model_name);

// The session of one model instance: the parameters, with the instance's
// kind deciding the device (KIND_CPU: the CPU; KIND_GPU: CUDA on `gpu_id`,
// or kAuto when the parameter device is "auto"; otherwise the parameter).
// Without the parameter threads, `hardware_threads` (the cores the server may
// use, minirt::usable_cores()) are shared among the model's CPU instances.
SessionOptions instance_options(const ModelConfig& config, InstanceKind kind, int gpu_id, int hardware_threads);

// A library sentence with each SessionOptions field it names preceded by the
// model config parameter that sets it ("parameter memory_limit,
// SessionOptions::memory_limit"), for the errors the backend reports.
std::string with_parameter_names(const std::string& message);

// "dims [3,224,224]"-style text for messages.
std::string dims_str(const std::vector<int64_t>& dims);

}  // namespace minirt::triton
