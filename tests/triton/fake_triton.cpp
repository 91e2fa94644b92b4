// The server side of Triton's backend C API, as far as tools/triton/backend.cpp
// calls it; see fake_triton.h.
#include "tests/triton/fake_triton.h"

#include <cstring>
#include <utility>

namespace fake_triton {

std::vector<std::unique_ptr<TRITONBACKEND_Response>>& sent_responses() {
  static std::vector<std::unique_ptr<TRITONBACKEND_Response>> r;
  return r;
}

std::vector<std::string>& log_lines() {
  static std::vector<std::string> l;
  return l;
}

std::function<void*(size_t)>& gpu_allocator() {
  static std::function<void*(size_t)> a;
  return a;
}

void reset() {
  sent_responses().clear();
  log_lines().clear();
  gpu_allocator() = nullptr;
}

}  // namespace fake_triton

namespace {

TRITONSERVER_Error* fail(TRITONSERVER_Error_Code code, const std::string& m) { return new TRITONSERVER_Error{code, m}; }

// Triton's own names of its data types.
constexpr std::pair<TRITONSERVER_DataType, const char*> kTypeNames[] = {
    {TRITONSERVER_TYPE_BOOL, "BOOL"},     {TRITONSERVER_TYPE_UINT8, "UINT8"},   {TRITONSERVER_TYPE_UINT16, "UINT16"},
    {TRITONSERVER_TYPE_UINT32, "UINT32"}, {TRITONSERVER_TYPE_UINT64, "UINT64"}, {TRITONSERVER_TYPE_INT8, "INT8"},
    {TRITONSERVER_TYPE_INT16, "INT16"},   {TRITONSERVER_TYPE_INT32, "INT32"},   {TRITONSERVER_TYPE_INT64, "INT64"},
    {TRITONSERVER_TYPE_FP16, "FP16"},     {TRITONSERVER_TYPE_FP32, "FP32"},     {TRITONSERVER_TYPE_FP64, "FP64"},
    {TRITONSERVER_TYPE_BYTES, "BYTES"},   {TRITONSERVER_TYPE_BF16, "BF16"},
};

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg) { return fail(code, msg); }
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error) { delete error; }
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error) { return error->code; }
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error) { return error->message.c_str(); }

const char* TRITONSERVER_DataTypeString(TRITONSERVER_DataType t) {
  for (const auto& [type, name] : kTypeNames)
    if (type == t) return name;
  return "<invalid>";
}

TRITONSERVER_DataType TRITONSERVER_StringToDataType(const char* dtype) {
  for (const auto& [type, name] : kTypeNames)
    if (std::strcmp(name, dtype) == 0) return type;
  return TRITONSERVER_TYPE_INVALID;
}

TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char*, const int, const char* msg) {
  const char* l = level == TRITONSERVER_LOG_ERROR ? "ERROR" : level == TRITONSERVER_LOG_WARN ? "WARN" : "INFO";
  fake_triton::log_lines().push_back(std::string(l) + " " + msg);
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message** message, const char* base,
                                                              size_t byte_size) {
  *message = new TRITONSERVER_Message{std::string(base, byte_size)};
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message) {
  delete message;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message* message, const char** base,
                                                        size_t* byte_size) {
  *base = message->json.data();
  *byte_size = message->json.size();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor) {
  *major = TRITONBACKEND_API_VERSION_MAJOR;
  *minor = TRITONBACKEND_API_VERSION_MINOR;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend* backend, TRITONSERVER_Message** config) {
  *config = &backend->config;  // owned by the backend object, as Triton's is
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendSetState(TRITONBACKEND_Backend* backend, void* state) {
  backend->state = state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendState(TRITONBACKEND_Backend* backend, void** state) {
  *state = backend->state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name) {
  *name = model->name.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version) {
  *version = model->version;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelBackend(TRITONBACKEND_Model* model, TRITONBACKEND_Backend** backend) {
  *backend = model->backend;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelRepository(TRITONBACKEND_Model* model, TRITONBACKEND_ArtifactType* type,
                                                  const char** location) {
  *type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = model->repository.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model* model, const uint32_t version,
                                              TRITONSERVER_Message** config) {
  if (version != 1) return fail(TRITONSERVER_ERROR_UNSUPPORTED, "config version");
  *config = new TRITONSERVER_Message{model->set_config ? *model->set_config : model->config_json};
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model* model, bool* auto_complete) {
  *auto_complete = model->auto_complete;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model* model, const uint32_t,
                                                 TRITONSERVER_Message* config) {
  model->set_config = config->json;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state) {
  model->state = state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state) {
  *state = model->state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* instance,
                                                     TRITONBACKEND_Model** model) {
  *model = instance->model;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance* instance, const char** name) {
  *name = instance->name.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance* instance,
                                                    TRITONSERVER_InstanceGroupKind* kind) {
  *kind = instance->kind;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance* instance, int32_t* device_id) {
  *device_id = instance->device_id;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* instance, void* state) {
  instance->state = state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* instance, void** state) {
  *state = instance->state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance* instance,
                                                                TRITONBACKEND_Request* request, const bool success,
                                                                const uint64_t exec_start, const uint64_t compute_start,
                                                                const uint64_t compute_end, const uint64_t exec_end) {
  if (!(exec_start <= compute_start && compute_start <= compute_end && compute_end <= exec_end))
    return fail(TRITONSERVER_ERROR_INVALID_ARG, "timestamps out of order");
  if (request->released) return fail(TRITONSERVER_ERROR_INVALID_ARG, "statistics of a released request");
  instance->request_stats.push_back({request->id, success});
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, const uint64_t batch_size, const uint64_t exec_start,
    const uint64_t compute_start, const uint64_t compute_end, const uint64_t exec_end) {
  if (!(exec_start <= compute_start && compute_start <= compute_end && compute_end <= exec_end))
    return fail(TRITONSERVER_ERROR_INVALID_ARG, "timestamps out of order");
  instance->batch_stats.push_back({batch_size});
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestId(TRITONBACKEND_Request* request, const char** id) {
  *id = request->id.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request* request, uint32_t* count) {
  *count = static_cast<uint32_t>(request->inputs.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                               TRITONBACKEND_Input** input) {
  for (auto& i : request->inputs)
    if (i.name == name) {
      *input = &i;
      return nullptr;
    }
  return fail(TRITONSERVER_ERROR_INVALID_ARG, std::string("no input ") + name);
}

TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                  TRITONSERVER_DataType* datatype, const int64_t** shape,
                                                  uint32_t* dims_count, uint64_t* byte_size, uint32_t* buffer_count) {
  if (name) *name = input->name.c_str();
  if (datatype) *datatype = input->datatype;
  if (shape) *shape = input->shape.data();
  if (dims_count) *dims_count = static_cast<uint32_t>(input->shape.size());
  uint64_t bytes = 0;
  for (const auto& b : input->buffers) bytes += b.size();
  if (byte_size) *byte_size = bytes;
  if (buffer_count) *buffer_count = static_cast<uint32_t>(input->buffers.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, const uint32_t index, const void** buffer,
                                              uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                              int64_t* memory_type_id) {
  if (index >= input->buffers.size()) return fail(TRITONSERVER_ERROR_INVALID_ARG, "buffer index");
  *buffer = index < input->device_buffers.size() ? input->device_buffers[index] : input->buffers[index].data();
  *buffer_byte_size = input->buffers[index].size();
  *memory_type = input->memory;
  *memory_type_id = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* count) {
  *count = static_cast<uint32_t>(request->outputs.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request* request, const uint32_t index,
                                                    const char** name) {
  if (index >= request->outputs.size()) return fail(TRITONSERVER_ERROR_INVALID_ARG, "output index");
  *name = request->outputs[index].c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t) {
  ++request->released;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response, TRITONBACKEND_Request* request) {
  *response = new TRITONBACKEND_Response;
  (*response)->request = request;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response, TRITONBACKEND_Output** output,
                                                 const char* name, const TRITONSERVER_DataType datatype,
                                                 const int64_t* shape, const uint32_t dims_count) {
  response->outputs.push_back({name, datatype, std::vector<int64_t>(shape, shape + dims_count), {}});
  response->outputs.back().memory = response->request->output_memory;
  *output = &response->outputs.back();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer,
                                               const uint64_t buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                               int64_t* memory_type_id) {
  output->data.assign(buffer_byte_size, 0xAB);
  *buffer = output->data.data();
  *memory_type = TRITONSERVER_MEMORY_CPU;
  *memory_type_id = 0;
  if (output->memory == TRITONSERVER_MEMORY_GPU) {
    if (!fake_triton::gpu_allocator()) return fail(TRITONSERVER_ERROR_INTERNAL, "no GPU memory in this test");
    output->device_data = fake_triton::gpu_allocator()(buffer_byte_size);
    *buffer = output->device_data;
    *memory_type = TRITONSERVER_MEMORY_GPU;
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, const uint32_t,
                                               TRITONSERVER_Error* error) {
  if (response->sent) return fail(TRITONSERVER_ERROR_INTERNAL, "sent twice");
  response->sent = true;
  if (error) {
    response->error_code = error->code;
    response->error = error->message;  // the caller keeps and deletes the error, as with Triton
  }
  fake_triton::sent_responses().emplace_back(response);
  return nullptr;
}

}  // extern "C"
