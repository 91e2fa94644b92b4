// A stand-in for the Triton server side of the backend C API, for driving
// tools/triton/backend.cpp in-process: the tests build requests Triton's
// own checks would never let through (ragged batches, truncated tensors,
// GPU-memory inputs, mixed shapes in one execution) and see every response,
// release, statistic and log line. The opaque Triton types are defined here.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "triton/core/tritonbackend.h"

struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};

struct TRITONSERVER_Message {
  std::string json;
};

struct TRITONBACKEND_Backend {
  TRITONSERVER_Message config;
  void* state = nullptr;
};

struct TRITONBACKEND_Model {
  std::string name;
  uint64_t version = 1;
  std::string repository;  // the model's folder (holds VERSION/model.onnx)
  std::string config_json;
  bool auto_complete = true;
  std::optional<std::string> set_config;  // what the backend sent with ModelSetConfig
  TRITONBACKEND_Backend* backend = nullptr;
  void* state = nullptr;
};

struct FakeBatchStat {
  uint64_t batch_size;
};

struct FakeRequestStat {
  std::string id;
  bool success;
};

struct TRITONBACKEND_ModelInstance {
  std::string name;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int32_t device_id = 0;
  TRITONBACKEND_Model* model = nullptr;
  void* state = nullptr;
  std::vector<FakeBatchStat> batch_stats;
  std::vector<FakeRequestStat> request_stats;
};

struct TRITONBACKEND_Input {
  std::string name;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_FP32;
  std::vector<int64_t> shape;
  std::vector<std::vector<unsigned char>> buffers;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  // When set (one per buffer): what InputBuffer hands out instead of the
  // buffers' own bytes, buffers[i].size() bytes each (a pretend GPU's memory).
  std::vector<const void*> device_buffers;
};

struct TRITONBACKEND_Request {
  std::string id;
  std::deque<TRITONBACKEND_Input> inputs;
  std::vector<std::string> outputs;  // requested
  // Where OutputBuffer puts the outputs: CPU (a host vector) or GPU (from
  // fake_triton::gpu_allocator(), as a client's CUDA shared memory).
  TRITONSERVER_MemoryType output_memory = TRITONSERVER_MEMORY_CPU;
  int released = 0;
};

struct TRITONBACKEND_Output {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;  // the buffer in CPU memory
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  void* device_data = nullptr;  // the buffer in GPU memory (memory GPU), data.size() bytes
};

struct TRITONBACKEND_Response {
  TRITONBACKEND_Request* request = nullptr;
  std::deque<TRITONBACKEND_Output> outputs;
  bool sent = false;
  std::optional<TRITONSERVER_Error_Code> error_code;
  std::string error;
};

namespace fake_triton {

// Responses sent, in order; log lines, as "LEVEL message".
std::vector<std::unique_ptr<TRITONBACKEND_Response>>& sent_responses();
std::vector<std::string>& log_lines();
// Allocates the GPU memory of outputs asked for there (set by a test).
std::function<void*(size_t)>& gpu_allocator();
void reset();

}  // namespace fake_triton
