// What the GPU module's files share: error checks that turn CUDA, cuDNN and
// cuBLAS status codes into minirt::Error with the call and the node, the
// per-stream state (the stream, its cuDNN and cuBLAS handles, pinned staging
// buffers and the run's timing events), the base class of every GPU kernel,
// and the device context kernels are made with.
//
//   class MyKernel final : public CudaKernel {
//     void launch(const KernelArgs& args, StreamState& s) override {
//       launch_activation(in<float>(args, 0), out<float>(args, 0), n_, act_, s.stream);
//     }
//   };
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/node_values.h"  // in_shape, out_shape, in_dtype, in_const, strides_of (shared with the CPU)

namespace minirt::cuda {

// "cudaMalloc(4096 bytes): out of memory (cudaErrorMemoryAllocation, 2)".
std::string cuda_error_text(cudaError_t e);
std::string cudnn_error_text(cudnnStatus_t s);
std::string cublas_error_text(cublasStatus_t s);

// Throw minirt::Error(kInternal) naming `what` (the call, and the node when
// there is one). Out-of-memory codes throw kOutOfMemory.
void check_cuda(cudaError_t e, const std::string& what);
void check_cudnn(cudnnStatus_t s, const std::string& what);
void check_cublas(cublasStatus_t s, const std::string& what);

// The device and library facts kernels are made with. One per backend.
struct DeviceContext {
  int device = 0;
  bool tf32 = false;  // --math tf32: TF32 tensor cores in cuDNN and cuBLAS
  bool fp16 = false;  // --math fp16: convolutions and products in float16 on tensor cores
  bool bf16 = false;  // --math bf16: the same in bfloat16 (compute capability 8.0 and newer)
  // Whether convolutions' and products' operands are converted to a 16-bit
  // type (float16 or bfloat16; accumulation stays float32), and its name.
  bool narrow16() const { return fp16 || bf16; }
  const char* name16() const { return bf16 ? "bfloat16" : "float16"; }
  // Whether tensor-core candidates (the "+tensor_op" ones) may run.
  bool tensor_cores() const { return tf32 || narrow16(); }
  int cc_major = 0, cc_minor = 0;
  // For plan-time queries (algorithm choice), under mu; runs use the stream's own handles.
  mutable std::mutex mu;
  cudnnHandle_t plan_dnn = nullptr;
  cublasHandle_t plan_blas = nullptr;
};

enum class Phase : int { kNone = -1, kH2D = 0, kCompute = 1, kD2H = 2 };

// Everything one run context's stream owns. CudaDevice::create_stream() returns
// a pointer to one of these; kernels find it in KernelArgs::stream.
struct StreamState {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t dnn = nullptr;
  cublasHandle_t blas = nullptr;

  // Pinned staging for copies from and to pageable host memory: a ring of
  // buffers, each with the event of the last copy that used it.
  struct Staging {
    void* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
    bool pending = false;  // a copy from/to it may still be in flight
  };
  std::vector<Staging> staging;
  size_t next_staging = 0;

  // Timing of the current run: a phase starts with an event recorded before
  // its first operation and ends with the start of the next phase.
  struct Mark {
    Phase phase;
    cudaEvent_t event;
  };
  std::vector<cudaEvent_t> event_pool;
  std::vector<Mark> marks;
  Phase current = Phase::kNone;
  bool timing = false;
  int counts[3] = {0, 0, 0};
  DeviceRunTimes last;

  // Records a phase change before an operation of `p` (when timing).
  void enter(Phase p);

  // Per-step timing when the session profiles: an event pair around each
  // step (step_begun/step_ended), read in end_run() into last_steps.
  struct StepMark {
    size_t step;
    cudaEvent_t begin, end;
  };
  std::vector<cudaEvent_t> step_event_pool;  // timing events, reused run after run
  size_t step_events_used = 0;               // of the pool, in this run
  std::vector<StepMark> step_marks;
  bool step_timing = true;  // false once an event failed in this run: the host's times stand
  std::vector<DeviceStepTime> last_steps;

  // Records the next timing event of the step pool on the stream, with at
  // least `ahead` events (this one included) made beforehand; nullptr (and
  // step timing off for this run) when an event cannot be made or recorded.
  cudaEvent_t record_step_event(size_t ahead = 1);
  // After the stream has finished: the marks' times into last_steps.
  void read_step_marks();
};

// Base of every GPU kernel: makes the stream the kernel's device is current
// on, marks the compute phase, and hands the stream's state to launch().
class CudaKernel : public Kernel {
 public:
  explicit CudaKernel(std::string where) : where_(std::move(where)) {}
  void run(const KernelArgs& args) final;
  virtual void launch(const KernelArgs& args, StreamState& s) = 0;

 protected:
  template <typename T>
  static const T* in(const KernelArgs& a, size_t i) {
    return static_cast<const T*>(a.inputs[i]);
  }
  template <typename T>
  static T* out(const KernelArgs& a, size_t i) {
    return static_cast<T*>(a.outputs[i]);
  }
  // "resnet50.onnx: node 'conv1' (Conv)": for error messages.
  const std::string& where() const { return where_; }
  // Throws when a launch failed (a bad configuration shows at once).
  void check_launch(const char* what) const;

 private:
  std::string where_;
};

// Device memory owned by a kernel (tables, constants made at plan time).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, size_t bytes, const std::string& what);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  void* get() const { return p_; }
  // Copies `bytes` from host memory, synchronously (plan time).
  void upload(const void* src, size_t bytes, const std::string& what);

 private:
  int device_ = 0;
  void* p_ = nullptr;
};

// Shapes as cuDNN wants them (int), with the checks supports() already made.
std::vector<int> to_int(const Shape& s);
// Row-major strides of an int shape.
std::vector<int> packed_strides(const std::vector<int>& dims);

// cuDNN descriptors with RAII.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // A packed tensor of these dims (at least 4 of them; pad with 1s first),
  // float unless said otherwise.
  void set(const std::vector<int>& dims, const std::string& what, cudnnDataType_t type = CUDNN_DATA_FLOAT);
};

// The kernels of each file are made through the tables of registry.h.
// Convolution algorithm choice (dnn_ops.cpp): cuDNN's candidates, its
// heuristic pick, a kernel with a named candidate, and cuDNN's timing of them.
std::vector<AlgorithmOption> conv_algorithms(const DeviceContext& ctx, const Graph& g, const Node& n);
std::string conv_heuristic(const DeviceContext& ctx, const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_conv_kernel_with(const DeviceContext& ctx, const Graph& g, const Node& n,
                                              const std::string& algorithm);
std::vector<double> conv_measure(const DeviceContext& ctx, const Graph& g, const Node& n,
                                 const std::vector<AlgorithmOption>& candidates, size_t workspace_limit);

}  // namespace minirt::cuda
