// minirt/session.h: load an ONNX model once, run it many times.
//
//   auto model = minirt::Model::load("resnet18.onnx");        // parse + validate
//   minirt::Session session(model, {.threads = 4});
//   minirt::Tensor x = minirt::Tensor::zeros(minirt::DType::kFloat32, {1, 3, 224, 224});
//   std::vector<minirt::Tensor> y = session.run({{"input", x}});
//   std::cout << session.plan_report();                       // steps, shapes, arena
//
// A Model is immutable once loaded and may be shared by many sessions.
// A Session plans the model for the input shapes it sees (remembering a few
// plans, one per input signature) and then runs without allocating. run()
// may be called from several threads at once: each concurrent run gets its
// own arena, and the plans and weights are shared.
#pragma once

#include <minirt/error.h>
#include <minirt/export.h>
#include <minirt/tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace minirt {

// One graph input or output as declared in the file. A dimension is -1 when
// it is symbolic (its name is then in dim_params) or unknown.
struct ValueDesc {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;
  bool has_shape = false;
};

struct ModelInfo {
  std::string path;
  int64_t ir_version = 0;
  int64_t opset = 0;
  std::string producer;
  size_t node_count = 0;
};

class MINIRT_API Model {
 public:
  // Reads, parses and validates an ONNX file; throws minirt::Error naming the
  // file (and node and op where there is one) on any problem.
  static std::shared_ptr<const Model> load(const std::string& path);
  // Same, from bytes in memory; `name` stands for the file in messages.
  static std::shared_ptr<const Model> load_from_memory(const void* data, size_t size, const std::string& name);

  const std::vector<ValueDesc>& inputs() const;
  const std::vector<ValueDesc>& outputs() const;
  const ModelInfo& info() const;

  ~Model();
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  static std::shared_ptr<const Model> make(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

enum class Device { kAuto, kCpu, kCuda };
MINIRT_API const char* device_name(Device d);

struct SessionOptions {
  Device device = Device::kAuto;
  int threads = 0;        // intra-op threads; 0 means all cores
  bool profile = false;   // record per-step timings of every run
  bool optimize = true;   // run the graph passes (folding, fusion)
  // Activation memory (arenas of all concurrent runs) the session may hold,
  // in bytes; 0 means no limit. A run that would need more fails with
  // kOutOfMemory, and the session stays usable for smaller inputs.
  size_t memory_limit = 0;
};

// Timing of one step of the last run, for --profile.
struct StepTiming {
  std::string name;    // node name (or the fused nodes' names)
  std::string op;      // op type, e.g. "Conv+Relu"
  std::string shapes;  // "1x64x56x56 -> 1x64x56x56"
  double start_us = 0;
  double duration_us = 0;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class MINIRT_API Session {
 public:
  Session(std::shared_ptr<const Model> model, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the model. Every graph input must be given, by name. Returns the
  // outputs in the model's output order, each owning its memory.
  std::vector<Tensor> run(const NamedTensors& inputs);
  // Same, writing into `outputs`; tensors already there with the right dtype
  // and shape are reused, so a steady-state loop allocates nothing.
  void run(const NamedTensors& inputs, std::vector<Tensor>& outputs);

  // The device the session runs on and, in one sentence, why.
  Device device() const;
  const std::string& device_reason() const;
  int threads() const;

  // The plan of the last run: each step with its op, device, shapes and
  // arena offsets, then the arena size. Empty before the first run.
  std::string plan_report() const;
  size_t arena_bytes() const;
  // Number of plans made so far (one per new input signature).
  int plans_made() const;
  // Timings of the steps of the last finished run (when options.profile is set).
  std::vector<StepTiming> last_profile() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace minirt
