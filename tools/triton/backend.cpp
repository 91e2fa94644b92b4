// libtriton_minirt.so: a Triton Inference Server backend that serves ONNX
// models with minirt. It speaks only Triton's C API (tritonbackend.h) and
// minirt's public API (minirt/session.h): one minirt::Model per Triton model
// (loaded once, shared by its instances), one minirt::Session per model
// instance. Triton calls each instance's execute from that instance's own
// thread, so instances run concurrently and a session sees one run at a time.
//
// A batch of requests from Triton's dynamic batcher runs as one minirt run of
// the combined batch where the requests agree on their shapes past the batch
// dimension; the outputs are split back per request. A request that is wrong
// (shape, type, size, memory) gets its own error response; the others in the
// batch are answered as if it had not been there.
#include <minirt/session.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tools/triton/json.h"
#include "tools/triton/model_config.h"
#include "triton/core/tritonbackend.h"

namespace {

using minirt::DType;
using minirt::triton::ConfigError;
using minirt::triton::ModelConfig;
using minirt::triton::TensorConfig;

#define MINIRT_TRITON_RETURN_IF_ERROR(X) \
  do {                                   \
    TRITONSERVER_Error* err__ = (X);     \
    if (err__ != nullptr) return err__;  \
  } while (false)

TRITONSERVER_Error* make_error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

// The Triton error code of a failed run: the client's fault, a feature
// minirt lacks, or a limit of the server's machine (memory, threads, the
// run's time limit) that a later or smaller request may not hit.
TRITONSERVER_Error_Code triton_code(minirt::ErrorCode code) {
  switch (code) {
    case minirt::ErrorCode::kInvalidArgument:
      return TRITONSERVER_ERROR_INVALID_ARG;
    case minirt::ErrorCode::kUnsupported:
      return TRITONSERVER_ERROR_UNSUPPORTED;
    case minirt::ErrorCode::kOutOfMemory:
    case minirt::ErrorCode::kResourceExhausted:
    case minirt::ErrorCode::kDeadlineExceeded:
    case minirt::ErrorCode::kDeviceUnavailable:
      return TRITONSERVER_ERROR_UNAVAILABLE;
    default:
      return TRITONSERVER_ERROR_INTERNAL;
  }
}

void log(TRITONSERVER_LogLevel level, const std::string& message) {
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, "minirt", 0, message.c_str());
  if (e) TRITONSERVER_ErrorDelete(e);
}

std::string error_text(TRITONSERVER_Error* e) {
  std::string s = e ? TRITONSERVER_ErrorMessage(e) : "";
  return s;
}

// Triton's timestamps are steady-clock nanoseconds.
uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Triton's data type names are the configuration's without "TYPE_"; the one
// table of DTypes and names is model_config.cpp's.
TRITONSERVER_DataType to_triton(DType t) {
  return TRITONSERVER_StringToDataType(minirt::triton::config_type_name(t) + 5);
}

DType from_triton(TRITONSERVER_DataType t) {
  return minirt::triton::dtype_from_config_name(std::string("TYPE_") + TRITONSERVER_DataTypeString(t));
}

std::string shape_text(const int64_t* shape, uint32_t rank) {
  return minirt::triton::dims_str(std::vector<int64_t>(shape, shape + rank));
}

// The JSON of a TRITONSERVER_Message, deleting the message when the caller
// owns it (a model's configuration: yes; the backend's: no, Triton keeps it).
TRITONSERVER_Error* message_json(TRITONSERVER_Message* message, bool owned, minirt::json::Value* out) {
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* e = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  if (!e) {
    try {
      *out = minirt::json::parse(std::string(base, size));
    } catch (const std::exception& ex) {
      e = make_error(TRITONSERVER_ERROR_INTERNAL,
                     std::string("minirt backend: Triton's configuration is not JSON: ") + ex.what());
    }
  }
  if (owned) TRITONSERVER_MessageDelete(message);
  return e;
}

struct BackendState {
  int64_t default_max_batch_size = 4;
};

struct ModelState {
  std::string name;
  uint64_t version = 0;
  std::string path;
  std::shared_ptr<const minirt::Model> model;
  ModelConfig config;
};

struct InstanceState {
  ModelState* model = nullptr;
  std::string name;
  std::unique_ptr<minirt::Session> session;
  std::vector<minirt::Tensor> outputs;               // reused from run to run
  std::vector<std::vector<unsigned char>> staging;   // one buffer per input, for gathered batches
  std::vector<std::vector<unsigned char>> gathered;  // one per output: a batch run in pieces, put together
  std::vector<minirt::Tensor> gathered_tensors;
};

// One request's input as Triton hands it over.
struct InputView {
  std::vector<int64_t> shape;
  std::vector<std::pair<const void*, size_t>> buffers;
  size_t bytes = 0;
};

struct Pending {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_Response* response = nullptr;
  TRITONSERVER_Error* error = nullptr;  // set: the request is answered with it
  int64_t batch = 1;
  std::vector<InputView> inputs;                        // in the configuration's input order
  std::vector<std::vector<unsigned char>> host_copies;  // of input buffers Triton holds in GPU memory
  uint64_t compute_start = 0, compute_end = 0;
};

// Whether an instance's session runs on a GPU (a KIND_GPU instance that did
// not fall back to the CPU): only then can it reach tensors in GPU memory.
bool runs_on_gpu(const minirt::Session& s) { return s.device() == minirt::Device::kCuda; }

// Reads and checks one request's inputs against the configuration. Inputs
// in GPU memory (a client's CUDA shared memory) are copied to the host
// through the instance's GPU, minirt's inputs being host tensors.
TRITONSERVER_Error* read_request(const ModelConfig& config, const minirt::Session& session, Pending& p) {
  const bool batched = config.max_batch_size > 0;
  uint32_t count = 0;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(p.request, &count));
  if (count > config.inputs.size())
    return make_error(TRITONSERVER_ERROR_INVALID_ARG, "the request has " + std::to_string(count) +
                                                          " inputs but the model takes " +
                                                          std::to_string(config.inputs.size()));
  p.inputs.assign(config.inputs.size(), {});
  for (size_t i = 0; i < config.inputs.size(); ++i) {
    const TensorConfig& tc = config.inputs[i];
    TRITONBACKEND_Input* input = nullptr;
    if (TRITONSERVER_Error* e = TRITONBACKEND_RequestInput(p.request, tc.name.c_str(), &input)) {
      TRITONSERVER_ErrorDelete(e);
      return make_error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + tc.name + "' is missing from the request");
    }
    const char* name = nullptr;
    TRITONSERVER_DataType type;
    const int64_t* shape = nullptr;
    uint32_t rank = 0;
    uint64_t byte_size = 0;
    uint32_t buffer_count = 0;
    MINIRT_TRITON_RETURN_IF_ERROR(
        TRITONBACKEND_InputProperties(input, &name, &type, &shape, &rank, &byte_size, &buffer_count));
    if (from_triton(type) != tc.dtype)
      return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                        "input '" + tc.name + "' is " + TRITONSERVER_DataTypeString(type) + " but the model takes " +
                            TRITONSERVER_DataTypeString(to_triton(tc.dtype)));
    size_t want_rank = tc.dims.size() + (batched ? 1 : 0);
    if (rank != want_rank)
      return make_error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + tc.name + "' has shape " + shape_text(shape, rank) +
                                                            " but the model takes " + std::to_string(want_rank) +
                                                            " dimensions (" + (batched ? "[batch]+" : "") +
                                                            minirt::triton::dims_str(tc.dims) + ")");
    for (size_t d = 0; d < tc.dims.size(); ++d) {
      int64_t got = shape[d + (batched ? 1 : 0)];
      if (got < 0 || (tc.dims[d] >= 0 && got != tc.dims[d]))
        return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                          "input '" + tc.name + "' has shape " + shape_text(shape, rank) + " but the model takes " +
                              (batched ? "[batch]+" : "") + minirt::triton::dims_str(tc.dims));
    }
    InputView& v = p.inputs[i];
    v.shape.assign(shape, shape + rank);
    if (batched) {
      if (shape[0] < 1 || shape[0] > config.max_batch_size)
        return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                          "input '" + tc.name + "' has batch " + std::to_string(shape[0]) +
                              " but the model's max_batch_size is " + std::to_string(config.max_batch_size));
      if (i == 0)
        p.batch = shape[0];
      else if (shape[0] != p.batch)
        return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                          "input '" + tc.name + "' has batch " + std::to_string(shape[0]) + " but input '" +
                              config.inputs[0].name + "' has " + std::to_string(p.batch));
    }
    uint64_t numel = 1;
    bool overflow = false;
    for (int64_t d : v.shape) overflow |= __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel);
    uint64_t want = 0;
    overflow |= __builtin_mul_overflow(numel, static_cast<uint64_t>(minirt::dtype_size(tc.dtype)), &want);
    if (overflow)
      return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                        "input '" + tc.name + "' has shape " + shape_text(shape, rank) + ", too large to hold");
    size_t want_bytes = static_cast<size_t>(want);
    if (byte_size != want_bytes)
      return make_error(TRITONSERVER_ERROR_INVALID_ARG, "input '" + tc.name + "' holds " + std::to_string(byte_size) +
                                                            " bytes but shape " + shape_text(shape, rank) + " of " +
                                                            TRITONSERVER_DataTypeString(type) + " needs " +
                                                            std::to_string(want_bytes));
    for (uint32_t b = 0; b < buffer_count; ++b) {
      const void* data = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType mem = TRITONSERVER_MEMORY_CPU;
      int64_t mem_id = 0;
      MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &data, &size, &mem, &mem_id));
      if (mem == TRITONSERVER_MEMORY_GPU && size) {
        if (!runs_on_gpu(session))
          return make_error(TRITONSERVER_ERROR_UNSUPPORTED,
                            "input '" + tc.name + "' is in GPU memory (device " + std::to_string(mem_id) +
                                ") but this instance runs on the CPU (" + session.device_reason() +
                                "); send it in CPU memory, or serve the model from a KIND_GPU instance");
        std::vector<unsigned char>& copy = p.host_copies.emplace_back(static_cast<size_t>(size));
        try {
          session.copy_from_device(copy.data(), data, copy.size());
        } catch (const std::exception& e) {
          return make_error(TRITONSERVER_ERROR_INTERNAL, "input '" + tc.name + "' in GPU memory (device " +
                                                             std::to_string(mem_id) +
                                                             ") could not be copied to the host: " + e.what());
        }
        data = copy.data();
      }
      if (size) v.buffers.emplace_back(data, static_cast<size_t>(size));
    }
    v.bytes = want_bytes;
  }
  return nullptr;
}

// Whether two requests can share one run: the same shapes past the batch.
bool same_item_shapes(const Pending& a, const Pending& b) {
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const auto& x = a.inputs[i].shape;
    const auto& y = b.inputs[i].shape;
    if (x.size() != y.size() || !std::equal(x.begin() + 1, x.end(), y.begin() + 1)) return false;
  }
  return true;
}

void copy_input(const InputView& v, unsigned char* dst) {
  for (const auto& [data, size] : v.buffers) {
    std::memcpy(dst, data, size);
    dst += size;
  }
}

// Writes the outputs one request asked for, taking its rows [row, row+batch)
// of batched outputs.
TRITONSERVER_Error* write_outputs(InstanceState& st, const std::vector<minirt::Tensor>& outs, Pending& p, int64_t row,
                                  int64_t total_batch) {
  const ModelConfig& config = st.model->config;
  const bool batched = config.max_batch_size > 0;
  const auto& model_outputs = st.model->model->outputs();
  uint32_t count = 0;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(p.request, &count));
  for (uint32_t k = 0; k < count; ++k) {
    const char* name = nullptr;
    MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(p.request, k, &name));
    size_t j = 0;
    while (j < model_outputs.size() && model_outputs[j].name != name) ++j;
    if (j == model_outputs.size() || j >= outs.size())
      return make_error(TRITONSERVER_ERROR_INVALID_ARG, std::string("the model has no output '") + name + "'");
    const minirt::Tensor& t = outs[j];
    std::vector<int64_t> shape = t.shape();
    size_t bytes = t.nbytes();
    const unsigned char* src = static_cast<const unsigned char*>(t.raw());
    if (batched) {
      if (shape.empty() || shape[0] != total_batch)
        return make_error(TRITONSERVER_ERROR_INTERNAL, std::string("output '") + name + "' has shape " +
                                                           minirt::shape_str(shape) + ", not a batch of " +
                                                           std::to_string(total_batch));
      size_t row_bytes = total_batch ? bytes / static_cast<size_t>(total_batch) : 0;
      src += row_bytes * static_cast<size_t>(row);
      bytes = row_bytes * static_cast<size_t>(p.batch);
      shape[0] = p.batch;
    }
    TRITONBACKEND_Output* output = nullptr;
    MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(p.response, &output, name, to_triton(t.dtype()),
                                                               shape.data(), static_cast<uint32_t>(shape.size())));
    void* dst = nullptr;
    TRITONSERVER_MemoryType mem = TRITONSERVER_MEMORY_CPU;
    int64_t mem_id = 0;
    MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &dst, bytes, &mem, &mem_id));
    if (!bytes) continue;
    if (mem != TRITONSERVER_MEMORY_GPU) {
      std::memcpy(dst, src, bytes);
      continue;
    }
    // Asked for in GPU memory (the client's CUDA shared memory): through the instance's GPU.
    if (!runs_on_gpu(*st.session))
      return make_error(TRITONSERVER_ERROR_UNSUPPORTED,
                        std::string("output '") + name + "' was asked for in GPU memory (device " +
                            std::to_string(mem_id) + ") but this instance runs on the CPU (" +
                            st.session->device_reason() +
                            "); ask for it in CPU memory, or serve the model from a "
                            "KIND_GPU instance");
    try {
      st.session->copy_to_device(dst, src, bytes);
    } catch (const std::exception& e) {
      return make_error(TRITONSERVER_ERROR_INTERNAL, std::string("output '") + name +
                                                         "' could not be copied into GPU memory (device " +
                                                         std::to_string(mem_id) + "): " + e.what());
    }
  }
  return nullptr;
}

// Runs `group` (valid requests with the same item shapes) as one combined
// batch and writes each request's outputs. A batch whose size is not a power
// of two runs as several runs of 2^k rows (13 = 8 + 4 + 1): a session plans
// once per input shape and keeps its last 8 plans, so the sizes the dynamic
// batcher forms would otherwise plan again and again; this way an instance
// plans at most one batch size per power of two (5 up to max_batch_size 16).
void run_group(TRITONBACKEND_ModelInstance* instance, InstanceState& st, std::vector<Pending*>& group,
               uint64_t exec_start) {
  const ModelConfig& config = st.model->config;
  const bool batched = config.max_batch_size > 0;
  const size_t n_in = config.inputs.size();
  int64_t total = 0;
  for (Pending* p : group) total += p->batch;
  std::vector<const unsigned char*> base(n_in);
  std::vector<std::vector<int64_t>> shapes(n_in);
  std::vector<size_t> row_bytes(n_in, 0);
  if (st.staging.size() < n_in) st.staging.resize(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    shapes[i] = group[0]->inputs[i].shape;
    if (batched) shapes[i][0] = total;
    const InputView& first = group[0]->inputs[i];
    size_t bytes = 0;
    for (Pending* p : group) bytes += p->inputs[i].bytes;
    if (total > 0) row_bytes[i] = bytes / static_cast<size_t>(total);
    if (group.size() == 1 && first.buffers.size() == 1) {
      base[i] = static_cast<const unsigned char*>(first.buffers[0].first);  // one piece: no copy
      continue;
    }
    std::vector<unsigned char>& buf = st.staging[i];
    if (buf.size() < bytes) buf.resize(bytes);
    unsigned char* dst = buf.data();
    for (Pending* p : group) {
      copy_input(p->inputs[i], dst);
      dst += p->inputs[i].bytes;
    }
    base[i] = buf.data();
  }

  // Rows [row0, row0 + rows) of the combined batch as one minirt run.
  auto run_rows = [&](int64_t row0, int64_t rows) {
    minirt::NamedTensors named;
    named.reserve(n_in);
    for (size_t i = 0; i < n_in; ++i) {
      std::vector<int64_t> shape = shapes[i];
      const unsigned char* p = base[i];
      if (batched) {
        shape[0] = rows;
        p += row_bytes[i] * static_cast<size_t>(row0);
      }
      named.emplace_back(config.inputs[i].name,
                         minirt::Tensor::wrap(config.inputs[i].dtype, shape, const_cast<unsigned char*>(p)));
    }
    st.session->run(named, st.outputs);
  };

  const std::vector<minirt::Tensor>* outputs = &st.outputs;
  uint64_t compute_start = now_ns();
  std::string failure;
  TRITONSERVER_Error_Code failure_code = TRITONSERVER_ERROR_INTERNAL;
  try {
    if (!batched || (total & (total - 1)) == 0) {
      run_rows(0, total);
    } else {
      int64_t chunk = 1;
      while (chunk * 2 <= total) chunk *= 2;
      int64_t row0 = 0;
      for (; chunk > 0; chunk /= 2) {
        if (total - row0 < chunk) continue;
        run_rows(row0, chunk);
        if (st.gathered.size() < st.outputs.size()) st.gathered.resize(st.outputs.size());
        st.gathered_tensors.resize(st.outputs.size());
        for (size_t j = 0; j < st.outputs.size(); ++j) {
          const minirt::Tensor& t = st.outputs[j];
          if (t.shape().empty() || t.shape()[0] != chunk)
            throw std::runtime_error("output '" + st.model->model->outputs()[j].name + "' has shape " +
                                     minirt::shape_str(t.shape()) + ", not a batch of " + std::to_string(chunk));
          size_t rb = t.nbytes() / static_cast<size_t>(chunk);
          std::vector<unsigned char>& g = st.gathered[j];
          if (g.size() < rb * static_cast<size_t>(total)) g.resize(rb * static_cast<size_t>(total));
          if (rb) std::memcpy(g.data() + rb * static_cast<size_t>(row0), t.raw(), t.nbytes());
          if (row0 == 0) {
            std::vector<int64_t> shape = t.shape();
            shape[0] = total;
            st.gathered_tensors[j] = minirt::Tensor::wrap(t.dtype(), shape, g.data());
          }
        }
        row0 += chunk;
      }
      outputs = &st.gathered_tensors;
    }
  } catch (const minirt::Error& e) {
    failure = "minirt: " + minirt::triton::with_parameter_names(e.what());
    failure_code = triton_code(e.code());
  } catch (const std::exception& e) {
    failure = std::string("minirt: ") + e.what();
  }
  uint64_t compute_end = now_ns();
  int64_t row = 0;
  for (Pending* p : group) {
    p->compute_start = compute_start;
    p->compute_end = compute_end;
    if (!failure.empty())
      p->error = make_error(failure_code, failure);
    else if (p->response)
      p->error = write_outputs(st, *outputs, *p, row, total);
    row += p->batch;
  }
  if (failure.empty()) {
    TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportBatchStatistics(
        instance, static_cast<uint64_t>(batched ? total : 1), exec_start, compute_start, compute_end, now_ns());
    if (e) {
      log(TRITONSERVER_LOG_WARN, "minirt: could not report batch statistics: " + error_text(e));
      TRITONSERVER_ErrorDelete(e);
    }
  }
}

// One run of zeros at batch 1 when every dimension past the batch is known,
// so that planning and choosing algorithms happen at load, not in the first
// request, and the log says what the plan holds. A model that cannot run on
// zeros is logged and left to its first request.
void warm_up(const ModelState& ms, InstanceState& st) {
  const ModelConfig& config = ms.config;
  std::vector<minirt::Tensor> keep;
  minirt::NamedTensors named;
  std::string shapes;
  for (const TensorConfig& tc : config.inputs) {
    std::vector<int64_t> shape;
    if (config.max_batch_size > 0) shape.push_back(1);
    for (int64_t d : tc.dims) {
      if (d < 0) return;  // a size only requests know
      shape.push_back(d);
    }
    if (minirt::dtype_size(tc.dtype) == 0) return;
    keep.push_back(minirt::Tensor::zeros(tc.dtype, shape));
    named.emplace_back(tc.name, keep.back());
    shapes += (shapes.empty() ? "" : ", ") + tc.name + " " + minirt::shape_str(shape);
  }
  const std::string who = "minirt: model '" + ms.name + "' instance '" + st.name + "'";
  auto t0 = std::chrono::steady_clock::now();
  try {
    st.session->run(named, st.outputs);
  } catch (const std::exception& e) {
    log(TRITONSERVER_LOG_WARN, who + ": the warm-up run on zeros failed (" + e.what() +
                                   "); the first request plans instead (parameter warmup: false skips it)");
    return;
  }
  double ms_taken = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  minirt::TuningReport t = st.session->tuning_report();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%.1f ms, arena %.2f MiB; convolutions: %d, %d measured, %d from cache, %d heuristic, %d fixed, %d "
                "tuning in the background",
                ms_taken, static_cast<double>(st.session->arena_bytes()) / (1 << 20), t.nodes, t.measured, t.from_cache,
                t.heuristic, t.fixed, t.pending);
  std::string placement = st.session->placement();
  log(TRITONSERVER_LOG_INFO, who + ": warm-up run (" + shapes + ") planned and ran in " + buf +
                                 (t.cache_path.empty() ? std::string() : " (algorithm cache " + t.cache_path + ")") +
                                 (placement.empty() ? std::string() : "; " + placement));
  for (const std::string& note : t.log) log(TRITONSERVER_LOG_WARN, who + ": tuning: " + note);
}

// An entry point's work, with any exception turned into an error for Triton
// (none may cross the C API).
template <typename F>
TRITONSERVER_Error* guarded(F&& work) {
  try {
    return work();
  } catch (const std::exception& e) {
    return make_error(TRITONSERVER_ERROR_INTERNAL, std::string("minirt backend: ") + e.what());
  }
}

const char* kind_name(TRITONSERVER_InstanceGroupKind k) {
  switch (k) {
    case TRITONSERVER_INSTANCEGROUPKIND_CPU:
      return "KIND_CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU:
      return "KIND_GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL:
      return "KIND_MODEL";
    default:
      return "KIND_AUTO";
  }
}

std::string tensor_list(const std::vector<TensorConfig>& ts, bool batched) {
  std::string s;
  for (const TensorConfig& t : ts)
    s += (s.empty() ? "" : ", ") + t.name + " " + minirt::triton::config_type_name(t.dtype) + " " +
         (batched ? "[batch]+" : "") + minirt::triton::dims_str(t.dims);
  return s;
}

}  // namespace

extern "C" {

static TRITONSERVER_Error* initialize_backend(TRITONBACKEND_Backend* backend) {
  uint32_t major = 0, minor = 0;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != TRITONBACKEND_API_VERSION_MAJOR || minor < TRITONBACKEND_API_VERSION_MINOR)
    return make_error(TRITONSERVER_ERROR_UNSUPPORTED, "the minirt backend was built for Triton's backend API " +
                                                          std::to_string(TRITONBACKEND_API_VERSION_MAJOR) + "." +
                                                          std::to_string(TRITONBACKEND_API_VERSION_MINOR) +
                                                          " or a later minor version; this server speaks " +
                                                          std::to_string(major) + "." + std::to_string(minor));
  auto state = std::make_unique<BackendState>();
  TRITONSERVER_Message* message = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendConfig(backend, &message));
  minirt::json::Value config;
  MINIRT_TRITON_RETURN_IF_ERROR(message_json(message, false, &config));
  // --backend-config=default-max-batch-size=N (Triton's own, for every backend)
  // and --backend-config=minirt,default-max-batch-size=N arrive here.
  if (const minirt::json::Value* cmd = config.find("cmdline")) {
    if (const minirt::json::Value* v = cmd->find("default-max-batch-size")) {
      try {
        state->default_max_batch_size = std::max<int64_t>(0, v->as_int());
      } catch (const std::exception&) {
        return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                          "minirt backend: default-max-batch-size '" + v->text() + "' is not a whole number");
      }
    }
  }
  log(TRITONSERVER_LOG_INFO, "minirt backend: Triton backend API " + std::to_string(major) + "." +
                                 std::to_string(minor) + ", default max_batch_size " +
                                 std::to_string(state->default_max_batch_size));
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendSetState(backend, state.release()));
  return nullptr;
}

TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  return guarded([&] { return initialize_backend(backend); });
}

TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend) {
  void* vstate = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendState(backend, &vstate));
  delete static_cast<BackendState*>(vstate);
  return nullptr;
}

static TRITONSERVER_Error* initialize_model(TRITONBACKEND_Model* model) {
  auto state = std::make_unique<ModelState>();
  const char* name = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  state->name = name;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(model, &state->version));
  TRITONBACKEND_Backend* backend = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelBackend(model, &backend));
  void* vbackend = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_BackendState(backend, &vbackend));
  const auto* backend_state = static_cast<const BackendState*>(vbackend);

  TRITONBACKEND_ArtifactType artifact;
  const char* location = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelRepository(model, &artifact, &location));
  if (artifact != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    return make_error(
        TRITONSERVER_ERROR_UNSUPPORTED,
        "model '" + state->name + "': the minirt backend reads models from a file system repository only");
  TRITONSERVER_Message* message = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(model, 1, &message));
  minirt::json::Value config;
  MINIRT_TRITON_RETURN_IF_ERROR(message_json(message, true, &config));

  std::string file = "model.onnx";
  if (const minirt::json::Value* f = config.find("default_model_filename"); f && f->is_string() && !f->text().empty())
    file = f->text();
  state->path = (std::filesystem::path(location) / std::to_string(state->version) / file).string();
  try {
    state->model = minirt::Model::load(state->path);
  } catch (const std::exception& e) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG, "model '" + state->name + "' version " +
                                                          std::to_string(state->version) +
                                                          ": minirt could not load it: " + e.what());
  }

  bool auto_complete = false;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelAutoCompleteConfig(model, &auto_complete));
  if (auto_complete && minirt::triton::autocomplete(
                           config, *state->model, {.default_max_batch_size = backend_state->default_max_batch_size})) {
    std::string text = config.dump();
    TRITONSERVER_Message* updated = nullptr;
    MINIRT_TRITON_RETURN_IF_ERROR(TRITONSERVER_MessageNewFromSerializedJson(&updated, text.data(), text.size()));
    TRITONSERVER_Error* e = TRITONBACKEND_ModelSetConfig(model, 1, updated);
    TRITONSERVER_MessageDelete(updated);
    if (e) return e;
  }
  try {
    state->config = minirt::triton::read_config(config, *state->model, state->name);
  } catch (const ConfigError& e) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG, e.what());
  }
  const ModelConfig& mc = state->config;
  log(TRITONSERVER_LOG_INFO, "minirt: model '" + state->name + "' version " + std::to_string(state->version) +
                                 " from " + state->path + (auto_complete ? " (configuration auto-completed)" : "") +
                                 ": inputs " + tensor_list(mc.inputs, mc.max_batch_size > 0) + "; outputs " +
                                 tensor_list(mc.outputs, mc.max_batch_size > 0) + "; max_batch_size " +
                                 std::to_string(mc.max_batch_size) + (mc.dynamic_batching ? ", dynamic batching" : ""));
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelSetState(model, state.release()));
  return nullptr;
}

TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  return guarded([&] { return initialize_model(model); });
}

TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* vstate = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &vstate));
  delete static_cast<ModelState*>(vstate);
  return nullptr;
}

static TRITONSERVER_Error* initialize_instance(TRITONBACKEND_ModelInstance* instance) {
  TRITONBACKEND_Model* model = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* vmodel = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &vmodel));
  auto* ms = static_cast<ModelState*>(vmodel);
  auto state = std::make_unique<InstanceState>();
  state->model = ms;
  const char* name = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  state->name = name;
  TRITONSERVER_InstanceGroupKind kind;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceKind(instance, &kind));
  int32_t device_id = 0;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &device_id));

  // The instance groups are final now (Triton fills them in after the model
  // initializes): count the CPU instances the cores are shared among.
  ModelConfig config = ms->config;
  {
    TRITONSERVER_Message* message = nullptr;
    MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(model, 1, &message));
    minirt::json::Value json;
    MINIRT_TRITON_RETURN_IF_ERROR(message_json(message, true, &json));
    try {
      config.cpu_instances = minirt::triton::read_config(json, *ms->model, ms->name).cpu_instances;
    } catch (const ConfigError& e) {
      return make_error(TRITONSERVER_ERROR_INVALID_ARG, e.what());
    }
  }
  minirt::triton::InstanceKind ik = minirt::triton::instance_kind_from_name(kind_name(kind));
  minirt::SessionOptions options;
  try {
    options = minirt::triton::instance_options(config, ik, device_id, minirt::usable_cores());
    state->session = std::make_unique<minirt::Session>(ms->model, options);
  } catch (const std::exception& e) {
    std::string where =
        "model '" + ms->name + "' instance '" + state->name + "' (" + kind_name(kind) +
        (kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? " device " + std::to_string(device_id) : std::string()) + ")";
    const std::string why = minirt::triton::with_parameter_names(e.what());
    log(TRITONSERVER_LOG_ERROR, "minirt: " + where + ": " + why);
    return make_error(TRITONSERVER_ERROR_UNAVAILABLE, where + ": " + why);
  }
  const minirt::Session& s = *state->session;
  bool fell_back = kind == TRITONSERVER_INSTANCEGROUPKIND_GPU && s.device() != minirt::Device::kCuda;
  log(fell_back ? TRITONSERVER_LOG_WARN : TRITONSERVER_LOG_INFO,
      "minirt: model '" + ms->name + "' instance '" + state->name + "' (" + kind_name(kind) +
          (kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? " device " + std::to_string(device_id) : std::string()) +
          "): " + s.device_reason() + "; " + std::to_string(s.threads()) + " threads" +
          (s.math_reason().empty() ? std::string() : "; cpu math: " + s.math_reason()));
  if (config.parameters.warmup) warm_up(*ms, *state);
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceSetState(instance, state.release()));
  return nullptr;
}

TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  return guarded([&] { return initialize_instance(instance); });
}

TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* vstate = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &vstate));
  delete static_cast<InstanceState*>(vstate);
  return nullptr;
}

TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                                           TRITONBACKEND_Request** requests,
                                                                           const uint32_t request_count) {
  // Until a request is touched, an error returned here makes Triton answer
  // all of them; after that, every request must be answered and released here.
  for (uint32_t r = 0; r < request_count; ++r)
    if (requests[r] == nullptr)
      return make_error(TRITONSERVER_ERROR_INTERNAL, "minirt backend: request " + std::to_string(r) + " of " +
                                                         std::to_string(request_count) + " is null");
  void* vstate = nullptr;
  MINIRT_TRITON_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &vstate));
  auto& st = *static_cast<InstanceState*>(vstate);
  const uint64_t exec_start = now_ns();

  std::vector<Pending> pending(request_count);
  for (uint32_t r = 0; r < request_count; ++r) {
    Pending& p = pending[r];
    p.request = requests[r];
    if (TRITONSERVER_Error* e = TRITONBACKEND_ResponseNew(&p.response, p.request)) {
      log(TRITONSERVER_LOG_ERROR, "minirt: could not make a response: " + error_text(e));
      TRITONSERVER_ErrorDelete(e);
      p.response = nullptr;
    }
    p.error = read_request(st.model->config, *st.session, p);
    if (p.error) {
      const char* id = "";
      if (TRITONSERVER_Error* e = TRITONBACKEND_RequestId(p.request, &id)) {
        TRITONSERVER_ErrorDelete(e);
        id = "";
      }
      std::string text = "model '" + st.model->name + "'" +
                         (id && *id ? std::string(", request '") + id + "'" : std::string()) + ": " +
                         error_text(p.error);
      TRITONSERVER_Error_Code code = TRITONSERVER_ErrorCode(p.error);
      TRITONSERVER_ErrorDelete(p.error);
      p.error = make_error(code, text);
    }
  }

  // Group the valid requests: with batching, those whose shapes agree past
  // the batch dimension run together (in arrival order); otherwise one run each.
  const bool batched = st.model->config.max_batch_size > 0;
  std::vector<bool> done(request_count, false);
  for (uint32_t r = 0; r < request_count; ++r) {
    if (done[r] || pending[r].error) continue;
    std::vector<Pending*> group{&pending[r]};
    done[r] = true;
    if (batched) {
      for (uint32_t q = r + 1; q < request_count; ++q) {
        if (done[q] || pending[q].error || !same_item_shapes(pending[r], pending[q])) continue;
        group.push_back(&pending[q]);
        done[q] = true;
      }
    }
    run_group(instance, st, group, exec_start);
  }

  const uint64_t exec_end = now_ns();
  for (Pending& p : pending) {
    // The request's statistics first: a client that has its answer and asks
    // for the statistics then finds this request counted.
    bool success = p.error == nullptr;
    uint64_t cs = p.compute_start ? p.compute_start : exec_end;
    uint64_t ce = p.compute_end ? p.compute_end : exec_end;
    TRITONSERVER_Error* e =
        TRITONBACKEND_ModelInstanceReportStatistics(instance, p.request, success, exec_start, cs, ce, exec_end);
    if (e) {
      log(TRITONSERVER_LOG_WARN, "minirt: could not report statistics: " + error_text(e));
      TRITONSERVER_ErrorDelete(e);
    }
    if (p.response) {
      e = TRITONBACKEND_ResponseSend(p.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, p.error);
      if (e) {
        log(TRITONSERVER_LOG_ERROR, "minirt: could not send a response: " + error_text(e));
        TRITONSERVER_ErrorDelete(e);
      }
    }
    if (p.error) TRITONSERVER_ErrorDelete(p.error);
    e = TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL);
    if (e) {
      log(TRITONSERVER_LOG_ERROR, "minirt: could not release a request: " + error_text(e));
      TRITONSERVER_ErrorDelete(e);
    }
  }
  return nullptr;
}

}  // extern "C"
