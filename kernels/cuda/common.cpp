#include "kernels/cuda/common.h"

#include <minirt/error.h>

namespace minirt::cuda {

std::string cuda_error_text(cudaError_t e) {
  return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ", " + std::to_string(static_cast<int>(e)) +
         ")";
}

std::string cudnn_error_text(cudnnStatus_t s) {
  return std::string(cudnnGetErrorString(s)) + " (" + std::to_string(static_cast<int>(s)) + ")";
}

std::string cublas_error_text(cublasStatus_t s) {
  return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s);
}

void check_cuda(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clears a non-sticky error so later calls do not report it again
  ErrorCode code = e == cudaErrorMemoryAllocation ? ErrorCode::kOutOfMemory : ErrorCode::kInternal;
  throw Error(code, what + ": " + cuda_error_text(e));
}

void check_cudnn(cudnnStatus_t s, const std::string& what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  // 4003/4004: host or device allocation failed inside cuDNN.
  int v = static_cast<int>(s);
  ErrorCode code = v == 4003 || v == 4004 ? ErrorCode::kOutOfMemory : ErrorCode::kInternal;
  throw Error(code, what + ": cuDNN: " + cudnn_error_text(s));
}

void check_cublas(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  ErrorCode code = s == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::kOutOfMemory : ErrorCode::kInternal;
  throw Error(code, what + ": cuBLAS: " + cublas_error_text(s));
}

void StreamState::enter(Phase p) {
  int k = static_cast<int>(p);
  if (k >= 0 && k < 3) ++counts[k];
  if (!timing || p == current) return;
  if (event_pool.size() <= marks.size()) {
    cudaEvent_t e = nullptr;
    // An event belongs to the current device; it must be the stream's.
    if (cudaSetDevice(device) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess) {  // a report, never a failure
      cudaGetLastError();
      timing = false;
      return;
    }
    event_pool.push_back(e);
  }
  cudaEvent_t e = event_pool[marks.size()];
  if (cudaEventRecord(e, stream) != cudaSuccess) {
    cudaGetLastError();
    timing = false;
    return;
  }
  marks.push_back({p, e});
  current = p;
}

cudaEvent_t StreamState::record_step_event(size_t ahead) {
  if (!step_timing) return nullptr;
  // Made before the first is recorded: creating the end event between a
  // step's kernels and its end mark would count in the step's time.
  while (step_event_pool.size() < step_events_used + ahead) {
    cudaEvent_t e = nullptr;
    // An event belongs to the current device; it must be the stream's.
    if (cudaSetDevice(device) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess) {  // a report, never a failure
      cudaGetLastError();
      step_timing = false;
      return nullptr;
    }
    step_event_pool.push_back(e);
  }
  cudaEvent_t e = step_event_pool[step_events_used];
  if (cudaEventRecord(e, stream) != cudaSuccess) {
    cudaGetLastError();
    step_timing = false;
    return nullptr;
  }
  ++step_events_used;
  return e;
}

void StreamState::read_step_marks() {
  last_steps.clear();
  if (step_timing && !step_marks.empty()) {
    const cudaEvent_t origin = step_marks.front().begin;
    for (const StepMark& m : step_marks) {
      float start_ms = 0, ms = 0;
      if (!m.end || cudaEventElapsedTime(&start_ms, origin, m.begin) != cudaSuccess ||
          cudaEventElapsedTime(&ms, m.begin, m.end) != cudaSuccess) {
        cudaGetLastError();
        last_steps.clear();
        break;
      }
      last_steps.push_back({m.step, start_ms * 1000.0, ms * 1000.0});
    }
  }
  step_marks.clear();
  step_events_used = 0;
  step_timing = true;
}

void CudaKernel::run(const KernelArgs& args) {
  auto* s = static_cast<StreamState*>(args.stream);
  if (!s) throw Error(ErrorCode::kInternal, where_ + ": a GPU kernel was run without its stream");
  s->enter(Phase::kCompute);
  launch(args, *s);
}

void CudaKernel::check_launch(const char* what) const {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(ErrorCode::kInternal, where_ + ": launching " + what + ": " + cuda_error_text(e));
}

DeviceBuffer::DeviceBuffer(int device, size_t bytes, const std::string& what) : device_(device) {
  check_cuda(cudaSetDevice(device), what + ": cudaSetDevice");
  check_cuda(cudaMalloc(&p_, bytes ? bytes : 1), what + ": cudaMalloc(" + std::to_string(bytes) + " bytes)");
}

DeviceBuffer::~DeviceBuffer() {
  if (!p_) return;
  cudaSetDevice(device_);
  cudaFree(p_);  // errors ignored: at process exit the runtime may already be gone
  cudaGetLastError();
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) {
      cudaSetDevice(device_);
      cudaFree(p_);
      cudaGetLastError();
    }
    device_ = o.device_;
    p_ = o.p_;
    o.p_ = nullptr;
  }
  return *this;
}

void DeviceBuffer::upload(const void* src, size_t bytes, const std::string& what) {
  if (!bytes) return;
  check_cuda(cudaMemcpy(p_, src, bytes, cudaMemcpyHostToDevice), what + ": cudaMemcpy to the device");
  // From pageable memory cudaMemcpy may return before the DMA lands; the
  // run's streams do not wait for the default stream, so wait here.
  check_cuda(cudaStreamSynchronize(nullptr), what + ": cudaStreamSynchronize");
}

std::vector<int> to_int(const Shape& s) {
  std::vector<int> out;
  for (int64_t d : s) out.push_back(static_cast<int>(d));
  return out;
}

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> st(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * dims[i + 1];
  return st;
}

TensorDesc::TensorDesc() { check_cudnn(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor"); }

TensorDesc::~TensorDesc() {
  if (d) cudnnDestroyTensorDescriptor(d);
}

void TensorDesc::set(const std::vector<int>& dims, const std::string& what, cudnnDataType_t type) {
  std::vector<int> st = packed_strides(dims);
  check_cudnn(cudnnSetTensorNdDescriptor(d, type, static_cast<int>(dims.size()), dims.data(), st.data()),
              what + ": cudnnSetTensorNdDescriptor");
}

}  // namespace minirt::cuda
