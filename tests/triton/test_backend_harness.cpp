// tools/triton/backend.cpp driven in-process through a stand-in for Triton's
// side of the C API (fake_triton.h): what a real server never sends because
// its own checks stop it first (a truncated tensor, a ragged batch, mixed
// shapes and bad requests in one execution, GPU-memory inputs) must still be
// answered per request, and a KIND_GPU instance on a machine without a GPU
// must fail, or fall back, with the gate's sentence. The real server:
// test_triton_server.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <minirt/half.h>
#include <minirt/session.h>
#include <minirt/tensor.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "runtime/backend_registry.h"
#include "tests/triton/fake_triton.h"
#include "tests/unit/fake_device.h"
#include "tests/unit/model_builder.h"

namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string take(TRITONSERVER_Error* e) {
  if (!e) return "";
  std::string m = TRITONSERVER_ErrorMessage(e);
  TRITONSERVER_ErrorDelete(e);
  return m;
}

// y = Relu(2 * x), x [N,2,H,W] with every dimension but the channels symbolic.
std::string relu2_model() {
  minirt::testing::ModelBuilder m;
  m.input("x", minirt::DType::kFloat32, {-1, 2, -1, -1}, {"N", "", "H", "W"});
  minirt::Tensor two = minirt::Tensor::zeros(minirt::DType::kFloat32, {});
  two.data<float>()[0] = 2.0f;
  m.initializer("two", two);
  m.node("Mul", {"x", "two"}, {"x2"}, "mul");
  m.node("Relu", {"x2"}, {"y"}, "relu");
  m.output("y", minirt::DType::kFloat32, {-1, 2, -1, -1}, {"N", "", "H", "W"});
  return m.bytes();
}

class BackendHarness : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_triton::reset();
    dir_ = fs::temp_directory_path() / ("minirt-triton-harness-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    write_model("m", relu2_model());
    backend_.config.json = R"({"cmdline":{"default-max-batch-size":"8"}})";
    ASSERT_EQ(take(TRITONBACKEND_Initialize(&backend_)), "");
  }
  void TearDown() override {
    for (auto& i : instances_)
      if (i->state) take(TRITONBACKEND_ModelInstanceFinalize(i.get()));
    for (auto& m : models_)
      if (m->state) take(TRITONBACKEND_ModelFinalize(m.get()));
    take(TRITONBACKEND_Finalize(&backend_));
    fake_triton::reset();
    fs::remove_all(dir_);
  }

  void write_model(const std::string& name, const std::string& bytes) {
    fs::create_directories(dir_ / name / "1");
    std::ofstream(dir_ / name / "1" / "model.onnx", std::ios::binary) << bytes;
  }

  // Loads a model; returns the backend's error message ("" on success).
  std::string load(const std::string& name, const std::string& config, TRITONBACKEND_Model** out = nullptr) {
    auto m = std::make_unique<TRITONBACKEND_Model>();
    m->name = name;
    m->repository = (dir_ / name).string();
    m->config_json = config;
    m->backend = &backend_;
    std::string err = take(TRITONBACKEND_ModelInitialize(m.get()));
    if (out) *out = m.get();
    models_.push_back(std::move(m));
    return err;
  }

  std::string start(TRITONBACKEND_Model* model, TRITONSERVER_InstanceGroupKind kind,
                    TRITONBACKEND_ModelInstance** out = nullptr) {
    auto i = std::make_unique<TRITONBACKEND_ModelInstance>();
    i->name = model->name + "_0";
    i->kind = kind;
    i->model = model;
    std::string err = take(TRITONBACKEND_ModelInstanceInitialize(i.get()));
    if (out) *out = i.get();
    instances_.push_back(std::move(i));
    return err;
  }

  // A request for x with the given shape and values 0.25*k - 3 (k = 0, 1, ...).
  static std::unique_ptr<TRITONBACKEND_Request> request(const std::string& id, std::vector<int64_t> shape) {
    auto r = std::make_unique<TRITONBACKEND_Request>();
    r->id = id;
    r->outputs = {"y"};
    TRITONBACKEND_Input in;
    in.name = "x";
    in.shape = shape;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t k = 0; k < v.size(); ++k) v[k] = 0.25f * static_cast<float>(k) - 3.0f;
    in.buffers.emplace_back(reinterpret_cast<unsigned char*>(v.data()),
                            reinterpret_cast<unsigned char*>(v.data() + v.size()));
    r->inputs.push_back(std::move(in));
    return r;
  }

  static const TRITONBACKEND_Response* response_of(const std::string& id) {
    for (const auto& r : fake_triton::sent_responses())
      if (r->request->id == id) return r.get();
    return nullptr;
  }

  // The response carries y = relu(2x) of the request's input, shape and all.
  static void expect_answer(const std::string& id, const std::vector<int64_t>& shape) {
    const TRITONBACKEND_Response* r = response_of(id);
    ASSERT_NE(r, nullptr) << id;
    ASSERT_FALSE(r->error_code) << id << ": " << r->error;
    ASSERT_EQ(r->outputs.size(), 1u) << id;
    const TRITONBACKEND_Output& o = r->outputs[0];
    EXPECT_EQ(o.name, "y");
    EXPECT_EQ(o.datatype, TRITONSERVER_TYPE_FP32);
    EXPECT_EQ(o.shape, shape) << id;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    ASSERT_EQ(o.data.size(), static_cast<size_t>(n) * 4) << id;
    const float* y = reinterpret_cast<const float*>(o.data.data());
    for (int64_t k = 0; k < n; ++k) {
      float x = 0.25f * static_cast<float>(k) - 3.0f;
      ASSERT_EQ(y[k], std::max(0.0f, 2.0f * x)) << id << " element " << k;
    }
  }

  static std::string error_of(const std::string& id) {
    const TRITONBACKEND_Response* r = response_of(id);
    return r && r->error_code ? r->error : "(no error)";
  }

  fs::path dir_;
  TRITONBACKEND_Backend backend_;
  std::vector<std::unique_ptr<TRITONBACKEND_Model>> models_;
  std::vector<std::unique_ptr<TRITONBACKEND_ModelInstance>> instances_;
};

TEST_F(BackendHarness, AutocompletesBatchingFromTheBackendsDefault) {
  TRITONBACKEND_Model* m = nullptr;
  ASSERT_EQ(load("m", R"({"name":"m","backend":"minirt"})", &m), "");
  ASSERT_TRUE(m->set_config.has_value());
  EXPECT_THAT(*m->set_config, HasSubstr(R"("max_batch_size":8)"));
  EXPECT_THAT(*m->set_config, HasSubstr(R"("dims":[2,-1,-1])"));
  EXPECT_THAT(*m->set_config, HasSubstr(R"("dynamic_batching":{})"));
  bool logged = false;
  for (const std::string& l : fake_triton::log_lines())
    logged = logged || l.find("INFO minirt: model 'm' version 1") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(BackendHarness, AnInstanceWhoseShapesAreKnownPlansAtLoad) {
  // The configuration fixes what the model leaves open: the warm-up can run.
  TRITONBACKEND_Model* m = nullptr;
  ASSERT_EQ(load("m",
                 R"({"name":"m","max_batch_size":2,"input":[{"name":"x","data_type":"TYPE_FP32","dims":[2,3,3]}],)"
                 R"("output":[{"name":"y","data_type":"TYPE_FP32","dims":[2,3,3]}]})",
                 &m),
            "");
  ASSERT_EQ(start(m, TRITONSERVER_INSTANCEGROUPKIND_CPU), "");
  auto logged = [](const std::string& what) {
    for (const std::string& l : fake_triton::log_lines())
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(logged("INFO minirt: model 'm' instance 'm_0': warm-up run (x 1x2x3x3) planned and ran in "));
  // Sizes only requests know: no warm-up; with warmup false: none either.
  fake_triton::log_lines().clear();
  TRITONBACKEND_Model* open = nullptr;
  ASSERT_EQ(load("m", R"({"name":"m","backend":"minirt"})", &open), "");
  ASSERT_EQ(start(open, TRITONSERVER_INSTANCEGROUPKIND_CPU), "");
  EXPECT_FALSE(logged("warm-up"));
  TRITONBACKEND_Model* off = nullptr;
  ASSERT_EQ(load("m",
                 R"({"name":"m","max_batch_size":2,"input":[{"name":"x","data_type":"TYPE_FP32","dims":[2,3,3]}],)"
                 R"("output":[{"name":"y","data_type":"TYPE_FP32","dims":[2,3,3]}],)"
                 R"("parameters":{"warmup":{"string_value":"false"}}})",
                 &off),
            "");
  ASSERT_EQ(start(off, TRITONSERVER_INSTANCEGROUPKIND_CPU), "");
  EXPECT_FALSE(logged("warm-up"));
}

// A float16 model: TYPE_FP16 in the completed configuration, float16 bytes
// in and out (computed in float32 inside: y = x * w rounded once to float16).
TEST_F(BackendHarness, AFloat16ModelTakesAndAnswersFp16) {
  minirt::testing::ModelBuilder mb;
  mb.input("x", minirt::DType::kFloat16, {-1, 4}, {"N", ""});
  minirt::Tensor w32 = minirt::Tensor::zeros(minirt::DType::kFloat32, {4});
  const float wv[] = {0.5f, -1.0f, 3.0f, 0.1f};
  std::copy(wv, wv + 4, w32.data<float>());
  const minirt::Tensor w16 = minirt::from_float32(w32, minirt::DType::kFloat16);
  mb.initializer("w", w16);
  mb.node("Mul", {"x", "w"}, {"y"}, "mul");
  mb.output("y", minirt::DType::kFloat16, {-1, 4}, {"N", ""});
  write_model("h", mb.bytes());
  TRITONBACKEND_Model* m = nullptr;
  ASSERT_EQ(load("h", R"({"name":"h","backend":"minirt"})", &m), "");
  ASSERT_TRUE(m->set_config.has_value());
  EXPECT_THAT(*m->set_config, HasSubstr(R"("data_type":"TYPE_FP16")"));
  TRITONBACKEND_ModelInstance* inst = nullptr;
  ASSERT_EQ(start(m, TRITONSERVER_INSTANCEGROUPKIND_CPU, &inst), "");

  auto r = std::make_unique<TRITONBACKEND_Request>();
  r->id = "h1";
  r->outputs = {"y"};
  TRITONBACKEND_Input in;
  in.name = "x";
  in.datatype = TRITONSERVER_TYPE_FP16;
  in.shape = {2, 4};
  std::vector<uint16_t> x(8);
  for (size_t k = 0; k < x.size(); ++k) x[k] = minirt::float_to_half(0.3f * static_cast<float>(k) - 1.0f);
  in.buffers.emplace_back(reinterpret_cast<unsigned char*>(x.data()),
                          reinterpret_cast<unsigned char*>(x.data() + x.size()));
  r->inputs.push_back(std::move(in));
  TRITONBACKEND_Request* raw = r.get();
  ASSERT_EQ(take(TRITONBACKEND_ModelInstanceExecute(inst, &raw, 1)), "");
  const TRITONBACKEND_Response* resp = response_of("h1");
  ASSERT_NE(resp, nullptr);
  ASSERT_FALSE(resp->error_code) << resp->error;
  ASSERT_EQ(resp->outputs.size(), 1u);
  const TRITONBACKEND_Output& o = resp->outputs[0];
  EXPECT_EQ(o.datatype, TRITONSERVER_TYPE_FP16);
  EXPECT_EQ(o.shape, (std::vector<int64_t>{2, 4}));
  ASSERT_EQ(o.data.size(), 16u);
  const uint16_t* y = reinterpret_cast<const uint16_t*>(o.data.data());
  for (size_t k = 0; k < 8; ++k) {
    const float want = minirt::half_to_float(x[k]) * minirt::half_to_float(w16.data<uint16_t>()[k % 4]);
    EXPECT_EQ(y[k], minirt::float_to_half(want)) << k;
  }
}

TEST_F(BackendHarness, OneExecutionWithMixedRequestsAnswersEachOnItsOwn) {
  TRITONBACKEND_Model* m = nullptr;
  ASSERT_EQ(load("m", R"({"name":"m","backend":"minirt"})", &m), "");
  TRITONBACKEND_ModelInstance* inst = nullptr;
  ASSERT_EQ(start(m, TRITONSERVER_INSTANCEGROUPKIND_CPU, &inst), "");

  std::vector<std::unique_ptr<TRITONBACKEND_Request>> reqs;
  reqs.push_back(request("a", {1, 2, 3, 3}));
  reqs.push_back(request("b", {3, 2, 3, 3}));  // in two pieces, split inside a float
  {
    auto& bufs = reqs.back()->inputs[0].buffers;
    std::vector<unsigned char> all = bufs[0];
    bufs = {std::vector<unsigned char>(all.begin(), all.begin() + 101),
            std::vector<unsigned char>(all.begin() + 101, all.end())};
  }
  reqs.push_back(request("truncated", {1, 2, 3, 3}));
  reqs.back()->inputs[0].buffers[0].resize(70);
  reqs.push_back(request("other_size", {1, 2, 4, 4}));  // runs on its own
  reqs.push_back(request("int64", {1, 2, 3, 3}));
  reqs.back()->inputs[0].datatype = TRITONSERVER_TYPE_INT64;
  reqs.push_back(request("gpu", {1, 2, 3, 3}));
  reqs.back()->inputs[0].memory = TRITONSERVER_MEMORY_GPU;
  reqs.push_back(request("too_big", {9, 2, 3, 3}));
  reqs.push_back(request("missing", {1, 2, 3, 3}));
  reqs.back()->inputs.clear();
  reqs.push_back(request("rank", {2, 3, 3}));
  reqs.push_back(request("huge", {1, 2, 1, 1}));
  reqs.back()->inputs[0].shape = {1, 2, int64_t{1} << 40, int64_t{1} << 40};
  reqs.push_back(request("extra", {1, 2, 3, 3}));
  reqs.back()->inputs.push_back(reqs.back()->inputs[0]);
  reqs.back()->inputs.back().name = "z";
  reqs.push_back(request("c", {2, 2, 3, 3}));
  std::vector<TRITONBACKEND_Request*> raw;
  for (auto& r : reqs) raw.push_back(r.get());

  ASSERT_EQ(take(TRITONBACKEND_ModelInstanceExecute(inst, raw.data(), static_cast<uint32_t>(raw.size()))), "");

  for (auto& r : reqs) EXPECT_EQ(r->released, 1) << r->id;
  EXPECT_EQ(fake_triton::sent_responses().size(), reqs.size());
  expect_answer("a", {1, 2, 3, 3});
  expect_answer("b", {3, 2, 3, 3});
  expect_answer("other_size", {1, 2, 4, 4});
  expect_answer("c", {2, 2, 3, 3});
  EXPECT_THAT(
      error_of("truncated"),
      HasSubstr("model 'm', request 'truncated': input 'x' holds 70 bytes but shape [1,2,3,3] of FP32 needs 72"));
  EXPECT_THAT(error_of("int64"), HasSubstr("input 'x' is INT64 but the model takes FP32"));
  EXPECT_THAT(error_of("gpu"), HasSubstr("input 'x' is in GPU memory"));
  EXPECT_EQ(*response_of("gpu")->error_code, TRITONSERVER_ERROR_UNSUPPORTED);
  EXPECT_THAT(error_of("too_big"), HasSubstr("input 'x' has batch 9 but the model's max_batch_size is 8"));
  EXPECT_THAT(error_of("missing"), HasSubstr("input 'x' is missing from the request"));
  EXPECT_THAT(error_of("rank"),
              HasSubstr("input 'x' has shape [2,3,3] but the model takes 4 dimensions ([batch]+[2,-1,-1])"));
  EXPECT_EQ(*response_of("int64")->error_code, TRITONSERVER_ERROR_INVALID_ARG);
  EXPECT_THAT(error_of("huge"), HasSubstr("input 'x' has shape [1,2,1099511627776,1099511627776], too large to hold"));
  EXPECT_THAT(error_of("extra"), HasSubstr("the request has 2 inputs but the model takes 1"));

  // a, b and c ran as one batch of 6 (as runs of 4 and 2), other_size alone.
  std::vector<uint64_t> batches;
  for (const auto& s : inst->batch_stats) batches.push_back(s.batch_size);
  EXPECT_EQ(batches, (std::vector<uint64_t>{6, 1}));
  ASSERT_EQ(inst->request_stats.size(), reqs.size());
  std::map<std::string, bool> ok;
  for (const auto& s : inst->request_stats) ok[s.id] = s.success;
  EXPECT_TRUE(ok["a"] && ok["b"] && ok["c"] && ok["other_size"]);
  EXPECT_FALSE(ok["truncated"] || ok["int64"] || ok["gpu"] || ok["too_big"] || ok["missing"] || ok["rank"] ||
               ok["huge"] || ok["extra"]);

  // The instance goes on: the same batch of odd size again, from the plans it has.
  fake_triton::sent_responses().clear();
  std::vector<std::unique_ptr<TRITONBACKEND_Request>> again;
  for (int k = 0; k < 7; ++k) again.push_back(request("r" + std::to_string(k), {1, 2, 3, 3}));
  raw.clear();
  for (auto& r : again) raw.push_back(r.get());
  ASSERT_EQ(take(TRITONBACKEND_ModelInstanceExecute(inst, raw.data(), 7)), "");
  for (int k = 0; k < 7; ++k) expect_answer("r" + std::to_string(k), {1, 2, 3, 3});
}

TEST_F(BackendHarness, AConfigurationThatContradictsTheModelFailsTheLoad) {
  EXPECT_EQ(
      load("m", R"({"name":"m","max_batch_size":4,"input":[{"name":"x","data_type":"TYPE_FP32","dims":[3,-1,-1]}],)"
                R"("output":[{"name":"y","data_type":"TYPE_FP32","dims":[2,-1,-1]}]})"),
      "model 'm', input 'x': 'dims' [3,-1,-1] differ from the model's [2,-1,-1] at dimension 1");
  EXPECT_THAT(load("m", R"({"name":"m","parameters":{"threads":{"string_value":"many"}}})"),
              HasSubstr("parameter 'threads' must be a whole number"));
}

TEST_F(BackendHarness, HostileSettingsFailTheLoadOrTheRequestWithASentence) {
  // A thread count past the ceiling fails the load, naming the ceiling.
  EXPECT_THAT(
      load("m", R"({"name":"m","parameters":{"threads":{"string_value":"100000"}}})"),
      HasSubstr("parameter 'threads' must be a whole number from 0 to " + std::to_string(minirt::max_threads())));
  // A run past run_timeout_ms answers its request with UNAVAILABLE and the
  // sentence; the instance stays up.
  TRITONBACKEND_Model* m = nullptr;
  ASSERT_EQ(load("m",
                 R"({"name":"m","backend":"minirt","parameters":{"run_timeout_ms":{"string_value":"0.000001"},)"
                 R"("warmup":{"string_value":"false"}}})",
                 &m),
            "");
  TRITONBACKEND_ModelInstance* inst = nullptr;
  ASSERT_EQ(start(m, TRITONSERVER_INSTANCEGROUPKIND_CPU, &inst), "");
  for (int round = 0; round < 2; ++round) {
    fake_triton::sent_responses().clear();
    auto r = request("slow", {1, 2, 3, 3});
    TRITONBACKEND_Request* raw = r.get();
    ASSERT_EQ(take(TRITONBACKEND_ModelInstanceExecute(inst, &raw, 1)), "");
    ASSERT_NE(response_of("slow"), nullptr);
    EXPECT_THAT(error_of("slow"), HasSubstr("past its limit of 1e-09 s"));
    EXPECT_EQ(*response_of("slow")->error_code, TRITONSERVER_ERROR_UNAVAILABLE);
    EXPECT_EQ(r->released, 1);
  }
  // With a limit it can meet, the same request is answered.
  TRITONBACKEND_Model* m2 = nullptr;
  ASSERT_EQ(
      load("m", R"({"name":"m","backend":"minirt","parameters":{"run_timeout_ms":{"string_value":"60000"}}})", &m2),
      "");
  TRITONBACKEND_ModelInstance* inst2 = nullptr;
  ASSERT_EQ(start(m2, TRITONSERVER_INSTANCEGROUPKIND_CPU, &inst2), "");
  fake_triton::sent_responses().clear();
  auto r = request("fine", {1, 2, 3, 3});
  TRITONBACKEND_Request* raw = r.get();
  ASSERT_EQ(take(TRITONBACKEND_ModelInstanceExecute(inst2, &raw, 1)), "");
  expect_answer("fine", {1, 2, 3, 3});
}

TEST_F(BackendHarness, ADamagedOrMissingFileFailsWithMinirtsSentence) {
  std::string bytes = relu2_model();
  write_model("broken", bytes.substr(0, bytes.size() / 2));
  EXPECT_THAT(load("broken", R"({"name":"broken"})"),
              HasSubstr("model 'broken' version 1: minirt could not load it: "));
  fs::create_directories(dir_ / "empty");
  EXPECT_THAT(load("empty", R"({"name":"empty"})"), HasSubstr("1/model.onnx"));
}

TEST_F(BackendHarness, AGpuInstanceWithoutAUsableGpuFailsOrFallsBackSayingWhy) {
  TRITONBACKEND_Model* m = nullptr;
  ASSERT_EQ(load("m", R"({"name":"m","backend":"minirt"})", &m), "");
  std::string err = start(m, TRITONSERVER_INSTANCEGROUPKIND_GPU);
  if (err.empty()) {
    // A machine with a usable GPU: the instance runs there.
    bool on_gpu = false;
    for (const std::string& l : fake_triton::log_lines())
      on_gpu = on_gpu || l.find("running on cuda") != std::string::npos;
    EXPECT_TRUE(on_gpu);
    return;
  }
  // The gate's (or the module loader's) sentence, with the model and instance.
  EXPECT_THAT(err, HasSubstr("model 'm' instance 'm_0' (KIND_GPU device 0): no usable GPU backend for Device::kCuda"));
  // device auto: the CPU, with the reason at WARN level.
  TRITONBACKEND_Model* a = nullptr;
  ASSERT_EQ(load("m", R"({"name":"m","backend":"minirt","parameters":{"device":{"string_value":"auto"}}})", &a), "");
  ASSERT_EQ(start(a, TRITONSERVER_INSTANCEGROUPKIND_GPU), "");
  bool warned = false;
  for (const std::string& l : fake_triton::log_lines())
    warned =
        warned || l.rfind("WARN minirt: model 'm' instance 'm_0' (KIND_GPU device 0): running on the CPU: ", 0) == 0;
  EXPECT_TRUE(warned);
}

// A KIND_GPU instance on a GPU (the pretend one of tests/unit/fake_device.h,
// registered as the "cuda" backend: its memory is host memory XOR-encoded,
// so bytes read or written without its copies come out wrong): an input in
// GPU memory (a client's CUDA shared memory) is read through the instance's
// GPU, an output asked for in GPU memory is written there, and requests of
// both kinds share a batch with plain ones.
TEST_F(BackendHarness, TensorsInGpuMemoryGoThroughTheInstancesGpu) {
  auto gpu = std::make_shared<minirt::testing::FakeDevice>(std::set<std::string>{"Mul", "Relu"});
  gpu->named("cuda");
  minirt::BackendRegistry& registry = minirt::backend_registry();
  struct Restore {
    std::vector<minirt::BackendFactory> saved = minirt::backend_registry().candidates(minirt::Device::kCuda);
    ~Restore() {
      minirt::backend_registry().remove("cuda");
      for (auto& f : saved) minirt::backend_registry().add(f);
    }
  } restore;
  registry.add({"cuda", minirt::Device::kCuda, 100, [gpu](const minirt::BackendRequest&) {
                  minirt::OpenedBackend b;
                  b.kernels = gpu;
                  b.description = "a pretend GPU";
                  return b;
                }});
  std::vector<void*> allocated;
  fake_triton::gpu_allocator() = [&](size_t bytes) {
    allocated.push_back(gpu->allocator()->allocate(bytes));
    return allocated.back();
  };

  TRITONBACKEND_Model* m = nullptr;
  ASSERT_EQ(load("m", R"({"name":"m","backend":"minirt"})", &m), "");
  TRITONBACKEND_ModelInstance* inst = nullptr;
  ASSERT_EQ(start(m, TRITONSERVER_INSTANCEGROUPKIND_GPU, &inst), "");
  bool on_gpu = false;
  for (const std::string& l : fake_triton::log_lines())
    on_gpu = on_gpu || l.find("(KIND_GPU device 0): running on cuda") != std::string::npos;
  EXPECT_TRUE(on_gpu);

  // Puts a request's input into the pretend GPU's memory, in two pieces.
  auto to_gpu = [&](TRITONBACKEND_Request& r) {
    TRITONBACKEND_Input& in = r.inputs[0];
    std::vector<unsigned char> all = in.buffers[0];
    in.buffers = {std::vector<unsigned char>(all.begin(), all.begin() + 30),
                  std::vector<unsigned char>(all.begin() + 30, all.end())};
    for (const auto& b : in.buffers) {
      allocated.push_back(gpu->allocator()->allocate(b.size()));
      minirt::testing::xor_bytes(allocated.back(), b.data(), b.size());
      in.device_buffers.push_back(allocated.back());
    }
    in.memory = TRITONSERVER_MEMORY_GPU;
  };
  std::vector<std::unique_ptr<TRITONBACKEND_Request>> reqs;
  reqs.push_back(request("gpu_in", {1, 2, 3, 3}));
  to_gpu(*reqs.back());
  reqs.push_back(request("gpu_out", {2, 2, 3, 3}));
  reqs.back()->output_memory = TRITONSERVER_MEMORY_GPU;
  reqs.push_back(request("both", {1, 2, 3, 3}));
  to_gpu(*reqs.back());
  reqs.back()->output_memory = TRITONSERVER_MEMORY_GPU;
  reqs.push_back(request("plain", {1, 2, 3, 3}));
  std::vector<TRITONBACKEND_Request*> raw;
  for (auto& r : reqs) raw.push_back(r.get());
  ASSERT_EQ(take(TRITONBACKEND_ModelInstanceExecute(inst, raw.data(), static_cast<uint32_t>(raw.size()))), "");

  expect_answer("gpu_in", {1, 2, 3, 3});
  expect_answer("plain", {1, 2, 3, 3});
  for (const char* id : {"gpu_out", "both"}) {
    const TRITONBACKEND_Response* r = response_of(id);
    ASSERT_NE(r, nullptr) << id;
    ASSERT_FALSE(r->error_code) << id << ": " << r->error;
    const TRITONBACKEND_Output& o = r->outputs.at(0);
    ASSERT_EQ(o.memory, TRITONSERVER_MEMORY_GPU);
    ASSERT_NE(o.device_data, nullptr);
    std::vector<float> y(o.data.size() / 4);
    minirt::testing::xor_bytes(y.data(), o.device_data, o.data.size());  // what the client's GPU holds
    for (size_t k = 0; k < y.size(); ++k) {
      float x = 0.25f * static_cast<float>(k) - 3.0f;
      ASSERT_EQ(y[k], std::max(0.0f, 2.0f * x)) << id << " element " << k;
    }
  }
  std::vector<uint64_t> batches;
  for (const auto& s : inst->batch_stats) batches.push_back(s.batch_size);
  EXPECT_EQ(batches, (std::vector<uint64_t>{5}));  // one run for all four
  EXPECT_EQ(gpu->errors.load(), 0);
  EXPECT_GE(gpu->kernels_run.load(), 1);
  for (void* p : allocated) gpu->allocator()->deallocate(p, 0);
}

}  // namespace
