#include "tools/triton/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tools/cli_util.h"

namespace minirt::triton {

namespace {

struct TypeName {
  DType dtype;
  const char* name;
};

// Triton's model-config data types (model_config.proto) for minirt's DTypes.
constexpr TypeName kTypes[] = {
    {DType::kFloat32, "TYPE_FP32"},  {DType::kFloat16, "TYPE_FP16"},  {DType::kFloat64, "TYPE_FP64"},
    {DType::kBFloat16, "TYPE_BF16"}, {DType::kInt8, "TYPE_INT8"},     {DType::kInt16, "TYPE_INT16"},
    {DType::kInt32, "TYPE_INT32"},   {DType::kInt64, "TYPE_INT64"},   {DType::kUInt8, "TYPE_UINT8"},
    {DType::kUInt16, "TYPE_UINT16"}, {DType::kUInt32, "TYPE_UINT32"}, {DType::kUInt64, "TYPE_UINT64"},
    {DType::kBool, "TYPE_BOOL"},     {DType::kString, "TYPE_STRING"},
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

const json::Value* member(const json::Value& v, const char* key) { return v.is_object() ? v.find(key) : nullptr; }

// A member that must be an array when present (Triton writes empty repeated
// fields either as [] or not at all).
const std::vector<json::Value>* array_member(const json::Value& v, const char* key) {
  const json::Value* m = member(v, key);
  if (!m || m->is_null()) return nullptr;
  if (!m->is_array()) throw ConfigError(std::string("'") + key + "' is not a list");
  return &m->items();
}

std::string string_member(const json::Value& v, const char* key) {
  const json::Value* m = member(v, key);
  return m && m->is_string() ? m->text() : std::string();
}

std::vector<int64_t> dims_of(const json::Value& t, const std::string& where) {
  std::vector<int64_t> dims;
  if (const auto* a = array_member(t, "dims")) {
    for (const json::Value& d : *a) {
      try {
        dims.push_back(d.as_int());
      } catch (const std::exception&) {
        throw ConfigError(where + ": 'dims' holds '" + d.dump() + "', not a whole number");
      }
    }
  }
  return dims;
}

json::Value dims_json(const std::vector<int64_t>& dims) {
  json::Value a = json::Value::array();
  for (int64_t d : dims) a.push_back(json::Value::integer(d));
  return a;
}

// The model's dims as a configuration writes them: -1 for symbolic or unknown.
std::vector<int64_t> config_dims(const ValueDesc& d, bool batched) {
  std::vector<int64_t> out;
  for (size_t i = batched ? 1 : 0; i < d.dims.size(); ++i) out.push_back(d.dims[i] < 0 ? -1 : d.dims[i]);
  return out;
}

bool first_dim_symbolic(const ValueDesc& d) { return d.has_shape && !d.dims.empty() && d.dims[0] < 0; }

// The name the inputs give their first dimension when they all name it the
// same ("N"), else empty.
std::string batch_symbol(const Model& model) {
  std::string name;
  for (const ValueDesc& d : model.inputs()) {
    std::string p = d.dim_params.empty() ? std::string() : d.dim_params[0];
    if (p.empty() || (!name.empty() && p != name)) return {};
    name = p;
  }
  return name;
}

// Whether an output's first dimension can be the batch: symbolic, and not
// named apart from the inputs' batch (NonMaxSuppression's [num_selected, 3]
// under inputs of [N, ...]: its rows are boxes kept, not requests).
bool output_first_dim_is_batch(const Model& model, const ValueDesc& d) {
  if (!first_dim_symbolic(d)) return false;
  std::string batch = batch_symbol(model);
  std::string p = d.dim_params.empty() ? std::string() : d.dim_params[0];
  return batch.empty() || p.empty() || p == batch;
}

// Whether the model allows batching along the first dimension: every input
// and output has a symbolic first dimension, the outputs' not another name
// than the inputs'.
bool model_batchable(const Model& model) {
  for (const ValueDesc& d : model.inputs())
    if (!first_dim_symbolic(d)) return false;
  for (const ValueDesc& d : model.outputs())
    if (!output_first_dim_is_batch(model, d)) return false;
  return !model.inputs().empty();
}

bool has_scheduler(const json::Value& config) {
  for (const char* k : {"dynamic_batching", "sequence_batching", "ensemble_scheduling"}) {
    const json::Value* m = member(config, k);
    if (m && !m->is_null()) return true;
  }
  return false;
}

// Fills the list `key` of `config` from the model's tensors when it is empty;
// fills data_type and dims of tensors listed without them.
bool complete_tensors(json::Value& config, const char* key, const std::vector<ValueDesc>& model_tensors, bool batched) {
  bool changed = false;
  json::Value& list = config[key];
  if (list.is_null()) list = json::Value::array();
  if (!list.is_array()) return false;  // read_config reports it
  if (list.items().empty()) {
    for (const ValueDesc& d : model_tensors) {
      json::Value t = json::Value::object();
      t["name"] = json::Value::string(d.name);
      t["data_type"] = json::Value::string(config_type_name(d.dtype));
      t["dims"] = dims_json(config_dims(d, batched));
      list.push_back(std::move(t));
    }
    return !model_tensors.empty();
  }
  for (json::Value& t : list.items()) {
    std::string name = string_member(t, "name");
    auto it =
        std::find_if(model_tensors.begin(), model_tensors.end(), [&](const ValueDesc& d) { return d.name == name; });
    if (it == model_tensors.end()) continue;
    std::string type = string_member(t, "data_type");
    if (type.empty() || type == "TYPE_INVALID") {
      t["data_type"] = json::Value::string(config_type_name(it->dtype));
      changed = true;
    }
    const json::Value* dims = member(t, "dims");
    if ((!dims || (dims->is_array() && dims->items().empty())) && !(member(t, "reshape"))) {
      std::vector<int64_t> d = config_dims(*it, batched);
      if (!d.empty()) {
        t["dims"] = dims_json(d);
        changed = true;
      }
    }
  }
  return changed;
}

std::string parameter(const json::Value& config, const std::string& key, bool* present) {
  const json::Value* params = member(config, "parameters");
  *present = false;
  if (!params || !params->is_object()) return {};
  const json::Value* p = params->find(key);
  if (!p) return {};
  *present = true;
  if (p->is_string()) return p->text();
  return string_member(*p, "string_value");
}

Parameters read_parameters(const json::Value& config, const std::string& where) {
  Parameters out;
  const json::Value* params = member(config, "parameters");
  if (params && !params->is_null() && !params->is_object())
    throw ConfigError(where + ": 'parameters' is not a map of key to string_value");
  static const char* const kKnown[] = {"device",     "threads",       "tuning",        "tune_in_background",
                                       "algo_cache", "memory_limit",  "memory_policy", "math",
                                       "warmup",     "run_timeout_ms"};
  if (params && params->is_object()) {
    for (const auto& [key, value] : params->members()) {
      bool known = false;
      for (const char* k : kKnown) known = known || key == k;
      if (!known)
        throw ConfigError(
            where + ": unknown parameter '" + key +
            "' (minirt's parameters: device, threads, tuning, tune_in_background, algo_cache, memory_limit, "
            "memory_policy, math, warmup, run_timeout_ms)");
    }
  }
  bool given = false;
  std::string v = parameter(config, "device", &given);
  if (given) {
    out.device_given = true;
    if (v == "auto")
      out.device = Device::kAuto;
    else if (v == "cpu")
      out.device = Device::kCpu;
    else if (v == "cuda")
      out.device = Device::kCuda;
    else
      throw ConfigError(where + ": parameter 'device' must be auto, cpu or cuda, got " + quoted(v));
  }
  v = parameter(config, "threads", &given);
  if (given) {
    char* end = nullptr;
    long t = std::strtol(v.c_str(), &end, 10);
    const int ceiling = max_threads();
    if (v.empty() || *end != '\0' || t < 0 || t > ceiling)
      throw ConfigError(where + ": parameter 'threads' must be a whole number from 0 to " + std::to_string(ceiling) +
                        " (0: share the cores; the ceiling is 4 x the " + std::to_string(usable_cores()) +
                        " cores this server may use, at least 8, at most 1024), got " + quoted(v));
    out.threads = static_cast<int>(t);
  }
  v = parameter(config, "tuning", &given);
  if (given) {
    auto c = tools::parse_tuning(v);
    if (!c)
      throw ConfigError(
          where + ": parameter 'tuning' must be cached, exhaustive, heuristic or an algorithm name, got " + quoted(v));
    out.tuning = c->mode;
    out.tuning_algorithm = c->algorithm;
  }
  out.algo_cache = parameter(config, "algo_cache", &given);
  v = parameter(config, "memory_limit", &given);
  if (given) {
    std::optional<size_t> b = tools::parse_size(v);
    if (!b)
      throw ConfigError(where +
                        ": parameter 'memory_limit' must be a size such as 268435456, 256M or 2G (0: none), got " +
                        quoted(v));
    out.memory_limit = *b;
  }
  v = parameter(config, "memory_policy", &given);
  if (given) {
    auto c = tools::parse_memory_policy(v);
    if (!c && v.rfind("preallocate:", 0) == 0)
      throw ConfigError(where + ": parameter 'memory_policy' preallocate:FRACTION needs a fraction in (0, 1], got " +
                        quoted(v));
    if (!c)
      throw ConfigError(where + ": parameter 'memory_policy' must be grow or preallocate:FRACTION, got " + quoted(v));
    out.memory_policy = c->policy;
    out.preallocate_fraction = c->fraction;
  }
  v = parameter(config, "run_timeout_ms", &given);
  if (given) {
    char* end = nullptr;
    double ms = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(ms >= 0) || !std::isfinite(ms))
      throw ConfigError(where + ": parameter 'run_timeout_ms' must be milliseconds, 0 or more (0: no limit), got " +
                        quoted(v));
    out.run_timeout_ms = ms;
  }
  auto flag = [&](const char* key, bool* to) {
    v = parameter(config, key, &given);
    if (!given) return;
    if (v == "true")
      *to = true;
    else if (v == "false")
      *to = false;
    else
      throw ConfigError(where + ": parameter '" + key + "' must be true or false, got " + quoted(v));
  };
  flag("warmup", &out.warmup);
  flag("tune_in_background", &out.tune_in_background);
  v = parameter(config, "math", &given);
  if (given) {
    if (v == "fp32")
      out.math = MathMode::kFp32;
    else if (v == "tf32")
      out.math = MathMode::kTf32;
    else if (v == "fp16")
      out.math = MathMode::kFp16;
    else if (v == "bf16")
      out.math = MathMode::kBf16;
    else
      throw ConfigError(where + ": parameter 'math' must be fp32, tf32, fp16 or bf16, got " + quoted(v));
  }
  return out;
}

// Reads one list of tensors and checks each against the model's.
std::vector<TensorConfig> read_tensors(const json::Value& config, const char* key, const char* what,
                                       const std::vector<ValueDesc>& model_tensors, bool batched,
                                       const std::string& where) {
  std::vector<TensorConfig> out;
  const auto* list = array_member(config, key);
  if (!list) return out;
  for (const json::Value& t : *list) {
    TensorConfig tc;
    tc.name = string_member(t, "name");
    if (tc.name.empty()) throw ConfigError(where + ": an " + std::string(what) + " without a name");
    std::string w = where + ", " + what + " " + quoted(tc.name);
    for (const TensorConfig& seen : out)
      if (seen.name == tc.name) throw ConfigError(w + ": listed twice");
    auto it =
        std::find_if(model_tensors.begin(), model_tensors.end(), [&](const ValueDesc& d) { return d.name == tc.name; });
    if (it == model_tensors.end()) {
      std::string names;
      for (const ValueDesc& d : model_tensors) names += (names.empty() ? "" : ", ") + d.name;
      throw ConfigError(w + ": the model has no " + what + " of that name (its " + what + "s: " + names + ")");
    }
    if (member(t, "reshape") && !member(t, "reshape")->is_null())
      throw ConfigError(w + ": 'reshape' is not supported by the minirt backend; give the model's own dims");
    std::string type = string_member(t, "data_type");
    tc.dtype = dtype_from_config_name(type);
    if (tc.dtype != it->dtype)
      throw ConfigError(w + ": 'data_type' is " + (type.empty() ? std::string("missing") : type) +
                        " but the model's is " + config_type_name(it->dtype));
    tc.dims = dims_of(t, w);
    for (int64_t d : tc.dims)
      if (d < -1 || d == 0)
        throw ConfigError(w + ": 'dims' " + dims_str(tc.dims) + " holds " + std::to_string(d) +
                          " (use -1 for any size)");
    if (it->has_shape) {
      std::vector<int64_t> want = config_dims(*it, batched);
      if (batched && !first_dim_symbolic(*it))
        throw ConfigError(w + ": max_batch_size is " + "greater than 0 but the model's first dimension is " +
                          (it->dims.empty() ? std::string("missing (a scalar)") : std::to_string(it->dims[0])) +
                          ", not a batch; set max_batch_size: 0 and give the full dims " +
                          dims_str(config_dims(*it, false)));
      if (tc.dims.size() != want.size())
        throw ConfigError(w + ": 'dims' " + dims_str(tc.dims) + " has " + std::to_string(tc.dims.size()) +
                          " dimensions but the model's " + (batched ? "(after the batch dimension) " : "") + "are " +
                          dims_str(want) +
                          (batched ? "" : "; with max_batch_size > 0 the batch dimension is left out"));
      for (size_t i = 0; i < want.size(); ++i)
        if (want[i] >= 0 && tc.dims[i] >= 0 && want[i] != tc.dims[i])
          throw ConfigError(w + ": 'dims' " + dims_str(tc.dims) + " differ from the model's " + dims_str(want) +
                            " at dimension " + std::to_string(i + (batched ? 1 : 0)));
    }
    out.push_back(std::move(tc));
  }
  return out;
}

}  // namespace

const char* config_type_name(DType t) {
  for (const TypeName& n : kTypes)
    if (n.dtype == t) return n.name;
  return "TYPE_INVALID";
}

DType dtype_from_config_name(const std::string& name) {
  for (const TypeName& n : kTypes)
    if (name == n.name) return n.dtype;
  return DType::kUndefined;
}

InstanceKind instance_kind_from_name(const std::string& name) {
  if (name == "KIND_CPU") return InstanceKind::kCpu;
  if (name == "KIND_GPU") return InstanceKind::kGpu;
  if (name == "KIND_MODEL") return InstanceKind::kModel;
  return InstanceKind::kAuto;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

bool autocomplete(json::Value& config, const Model& model, const AutocompleteOptions& options) {
  bool changed = false;
  if (!config.is_object()) config = json::Value::object();
  int64_t mbs = 0;
  bool set_batch = false;  // batching chosen here (then the dynamic batcher too)
  const json::Value* m = member(config, "max_batch_size");
  try {
    mbs = m && !m->is_null() ? m->as_int() : 0;
  } catch (const std::exception&) {
    return false;  // read_config reports it
  }
  if (mbs == 0 && model_batchable(model) && options.default_max_batch_size > 0) {
    // Only when the configuration lists no tensors yet: tensors written with
    // full dims mean the writer chose not to batch.
    const auto* in = array_member(config, "input");
    const auto* out = array_member(config, "output");
    if ((!in || in->empty()) && (!out || out->empty())) {
      config["max_batch_size"] = json::Value::integer(options.default_max_batch_size);
      mbs = options.default_max_batch_size;
      set_batch = true;
      changed = true;
    }
  }
  bool batched = mbs > 0;
  changed |= complete_tensors(config, "input", model.inputs(), batched);
  changed |= complete_tensors(config, "output", model.outputs(), batched);
  if (set_batch && !has_scheduler(config)) {
    config["dynamic_batching"] = json::Value::object();
    changed = true;
  }
  return changed;
}

ModelConfig read_config(const json::Value& config, const Model& model, const std::string& model_name) {
  const std::string where = "model " + quoted(model_name);
  if (!config.is_object()) throw ConfigError(where + ": the configuration is not a JSON object");
  ModelConfig mc;
  mc.name = model_name;
  if (const json::Value* m = member(config, "max_batch_size"); m && !m->is_null()) {
    try {
      mc.max_batch_size = m->as_int();
    } catch (const std::exception&) {
      throw ConfigError(where + ": 'max_batch_size' is " + m->dump() + ", not a whole number");
    }
    if (mc.max_batch_size < 0)
      throw ConfigError(where + ": 'max_batch_size' is " + std::to_string(mc.max_batch_size) + ", below 0");
  }
  bool batched = mc.max_batch_size > 0;
  mc.inputs = read_tensors(config, "input", "input", model.inputs(), batched, where);
  mc.outputs = read_tensors(config, "output", "output", model.outputs(), batched, where);
  for (const ValueDesc& d : model.inputs()) {
    bool listed =
        std::any_of(mc.inputs.begin(), mc.inputs.end(), [&](const TensorConfig& t) { return t.name == d.name; });
    if (!listed)
      throw ConfigError(where + ": the model's input " + quoted(d.name) + " (" + config_type_name(d.dtype) +
                        ") is not in the configuration's 'input' list; every input must be fed");
  }
  if (mc.outputs.empty()) throw ConfigError(where + ": the configuration lists no output");
  if (batched) {
    // Outputs must carry the batch too, or it cannot be split per request.
    for (const TensorConfig& t : mc.outputs) {
      auto it = std::find_if(model.outputs().begin(), model.outputs().end(),
                             [&](const ValueDesc& d) { return d.name == t.name; });
      if (it != model.outputs().end() && it->has_shape && !output_first_dim_is_batch(model, *it))
        throw ConfigError(where + ", output " + quoted(t.name) +
                          ": max_batch_size is greater than 0 but the output's first dimension is not a batch" +
                          (first_dim_symbolic(*it) ? " ('" + it->dim_params[0] + "', the inputs' is '" +
                                                         batch_symbol(model) + "'); set max_batch_size: 0"
                                                   : std::string()));
    }
  }
  mc.parameters = read_parameters(config, where);
  mc.dynamic_batching = member(config, "dynamic_batching") && !member(config, "dynamic_batching")->is_null();
  if (const auto* groups = array_member(config, "instance_group")) {
    for (const json::Value& g : *groups) {
      int64_t count = 1;
      if (const json::Value* c = member(g, "count"); c && !c->is_null()) {
        try {
          count = c->as_int();
        } catch (const std::exception&) {
          count = 1;
        }
      }
      InstanceKind kind = instance_kind_from_name(string_member(g, "kind"));
      bool on_cpu = kind == InstanceKind::kCpu || ((kind == InstanceKind::kAuto || kind == InstanceKind::kModel) &&
                                                   mc.parameters.device != Device::kCuda);
      if (on_cpu) mc.cpu_instances += static_cast<int>(std::max<int64_t>(count, 0));
    }
  }
  return mc;
}

SessionOptions instance_options(const ModelConfig& config, InstanceKind kind, int gpu_id, int hardware_threads) {
  const Parameters& p = config.parameters;
  SessionOptions o;
  switch (kind) {
    case InstanceKind::kCpu:
      o.device = Device::kCpu;
      break;
    case InstanceKind::kGpu:
      if (p.device_given && p.device == Device::kCpu)
        throw ConfigError(
            "model '" + config.name +
            "': an instance group of KIND_GPU asks for a GPU but parameter 'device' is cpu; use KIND_CPU, "
            "or device auto (the GPU when usable, else the CPU) or cuda");
      o.device = p.device_given && p.device == Device::kAuto ? Device::kAuto : Device::kCuda;
      o.device_id = gpu_id < 0 ? 0 : gpu_id;
      break;
    default:
      o.device = p.device;
      break;
  }
  int share = std::max(1, config.cpu_instances);
  int hw = std::max(1, hardware_threads);
  o.threads = p.threads > 0 ? p.threads : std::max(1, hw / share);
  o.tuning = p.tuning;
  o.tuning_algorithm = p.tuning_algorithm;
  o.algo_cache_path = p.algo_cache;
  o.tune_in_background = p.tune_in_background;
  o.memory_limit = p.memory_limit;
  o.memory_policy = p.memory_policy;
  o.preallocate_fraction = p.preallocate_fraction;
  o.math = p.math;
  o.run_timeout_seconds = p.run_timeout_ms / 1000.0;
  return o;
}

std::string with_parameter_names(const std::string& message) {
  static const std::vector<tools::FlagName> names = {
      {"SessionOptions::memory_limit", "parameter memory_limit"},
      {"SessionOptions::memory_policy = MemoryPolicy::kGrow", "parameter memory_policy grow"},
      {"SessionOptions::memory_policy", "parameter memory_policy"},
      {"SessionOptions::preallocate_fraction", "parameter memory_policy preallocate:FRACTION"},
      {"SessionOptions::threads", "parameter threads"},
      {"SessionOptions::run_timeout_seconds", "parameter run_timeout_ms"},
      {"SessionOptions::math = MathMode::kBf16", "parameter math bf16"},
  };
  return tools::with_flag_names(message, names);
}

}  // namespace minirt::triton
