// The CUDA backend: device memory for the session's pool (cudaMalloc and
// cudaFree), one stream per run context with its own cuDNN and cuBLAS
// handles, copies through pinned staging buffers, weights uploaded once,
// each run's phases timed with CUDA events; and create_backend, which the
// module's table (module_table.cpp, runtime/gpu/module_api.h) calls.
#include <minirt/error.h>
#include <minirt/minirt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "kernels/cuda/common.h"
#include "kernels/cuda/module_table.h"
#include "kernels/cuda/registry.h"
#include "kernels/cuda/support.h"

namespace minirt::cuda {

namespace {

// Part `index` of a "9.19.0" version string, at compile time.
constexpr int version_part(const char* s, int index) {
  int part = 0, value = 0;
  for (; *s; ++s) {
    if (*s == '.') {
      if (part == index) return value;
      ++part;
      value = 0;
    } else {
      value = value * 10 + (*s - '0');
    }
  }
  return part == index ? value : -1;
}

#ifdef MINIRT_EXPECT_CUDNN
// The gate judges the installed cuDNN against the version in the build facts
// (runtime/gpu/gpu_gate.cmake); the module must be compiled against that one.
static_assert(version_part(MINIRT_EXPECT_CUDNN, 0) == CUDNN_MAJOR &&
                  version_part(MINIRT_EXPECT_CUDNN, 1) == CUDNN_MINOR,
              "cuDNN's headers seen by the GPU module are not the ones MINIRT_CUDNN_INCLUDE_DIR names");
#endif

constexpr size_t kStagingChunk = size_t{8} << 20;  // bytes per staged piece of a copy
constexpr size_t kStagingBuffers = 4;              // pieces in flight per stream
constexpr size_t kStagingGranule = size_t{1} << 20;

class CudaAllocator final : public RawAllocator {
 public:
  explicit CudaAllocator(int device) : device_(device) {}
  void* allocate(size_t bytes) override {
    if (cudaSetDevice(device_) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }
  void deallocate(void* p, size_t) override {
    cudaSetDevice(device_);
    cudaFree(p);
    cudaGetLastError();
  }
  size_t free_memory() const override {
    size_t free = 0, total = 0;
    if (cudaSetDevice(device_) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return free;
  }
  std::string name() const override { return "cuda:" + std::to_string(device_) + " memory"; }

 private:
  int device_;
};

bool is_pinned(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

std::string version3(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// The GPU as a memory space: the CUDA context and the plan-time cuDNN and
// cuBLAS handles (DeviceContext), device memory, streams with their own
// handles and pinned staging, copies, constant uploads and the timing of a run.
class CudaDevice final : public ComputeDevice {
 public:
  // `math`: kMinirtCudaMathFp32, kMinirtCudaMathTf32, kMinirtCudaMathFp16 or
  // kMinirtCudaMathBf16 (bfloat16 tensor cores: compute capability 8.0 and
  // newer; an older GPU runs float32 and its description says why).
  CudaDevice(int device, int math) {
    ctx_.device = device;
    ctx_.tf32 = math == kMinirtCudaMathTf32;
    ctx_.fp16 = math == kMinirtCudaMathFp16;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw Error(ErrorCode::kDeviceUnavailable,
                  "the CUDA runtime cannot use the driver: cudaGetDeviceCount: " + cuda_error_text(e));
    }
    if (device < 0 || device >= count)
      throw Error(ErrorCode::kDeviceUnavailable,
                  "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " visible)");
    check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
    check_cuda(cudaFree(nullptr), "creating the CUDA context");
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    ctx_.cc_major = prop.major;
    ctx_.cc_minor = prop.minor;
    ctx_.bf16 = math == kMinirtCudaMathBf16 && prop.major >= 8;
    const bool bf16_declined = math == kMinirtCudaMathBf16 && !ctx_.bf16;
    const char* math_text = ctx_.bf16 ? "bf16" : ctx_.fp16 ? "fp16" : ctx_.tf32 ? "tf32" : "fp32";
    int driver = 0;
    check_cuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    check_cudnn(cudnnCreate(&ctx_.plan_dnn), "cudnnCreate");
    check_cublas(cublasCreate(&ctx_.plan_blas), "cublasCreate");
    size_t dv = cudnnGetVersion();
    int bmaj = 0, bmin = 0, bpat = 0;
    cublasGetProperty(MAJOR_VERSION, &bmaj);
    cublasGetProperty(MINOR_VERSION, &bmin);
    cublasGetProperty(PATCH_LEVEL, &bpat);
    char name[sizeof prop.name + 1] = {0};
    std::memcpy(name, prop.name, sizeof prop.name);
    description_ =
        std::string(name) + " (cc " + std::to_string(prop.major) + "." + std::to_string(prop.minor) +
        "), driver CUDA " + std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10) + ", cuDNN " +
        version3(static_cast<int>(dv / 10000), static_cast<int>((dv % 10000) / 100), static_cast<int>(dv % 100)) +
        ", cuBLAS " + version3(bmaj, bmin, bpat) +
        (ctx_.tf32   ? ", TF32 math"
         : ctx_.fp16 ? ", FP16 math (convolutions and products)"
         : ctx_.bf16 ? ", BF16 math (convolutions and products)"
         : bf16_declined
             ? ", FP32 math (BF16 asked: bfloat16 tensor cores need compute capability 8.0, Ampere, or newer)"
             : "");
    allocator_ = std::make_shared<CudaAllocator>(device);
    tuning_context_ =
        std::string("cuda | ") + name + " cc " + std::to_string(prop.major) + "." + std::to_string(prop.minor) +
        " | minirt " MINIRT_VERSION_STRING " | cudnn " +
        version3(static_cast<int>(dv / 10000), static_cast<int>((dv % 10000) / 100), static_cast<int>(dv % 100)) +
        " | cublas " + version3(bmaj, bmin, bpat) + " | driver cuda " + std::to_string(driver / 1000) + "." +
        std::to_string((driver % 1000) / 10) + " | " + math_text;
  }

  ~CudaDevice() override {
    cudaSetDevice(ctx_.device);
    if (ctx_.plan_dnn) cudnnDestroy(ctx_.plan_dnn);
    if (ctx_.plan_blas) cublasDestroy(ctx_.plan_blas);
    cudaGetLastError();
  }

  const std::string& description() const { return description_; }
  // The device and every version a convolution's speed or result depends on.
  const std::string& tuning_context() const { return tuning_context_; }
  const DeviceContext& context() const { return ctx_; }

  bool is_device() const override { return true; }
  std::shared_ptr<RawAllocator> allocator() const override { return allocator_; }

  void* create_stream() const override {
    auto s = std::make_unique<StreamState>();
    s->device = ctx_.device;
    check_cuda(cudaSetDevice(ctx_.device), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    StreamState* raw = s.get();
    try {
      check_cudnn(cudnnCreate(&raw->dnn), "cudnnCreate");
      check_cudnn(cudnnSetStream(raw->dnn, raw->stream), "cudnnSetStream");
      check_cublas(cublasCreate(&raw->blas), "cublasCreate");
      check_cublas(cublasSetStream(raw->blas, raw->stream), "cublasSetStream");
      check_cublas(cublasSetMathMode(raw->blas, ctx_.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                   "cublasSetMathMode");
      raw->staging.resize(kStagingBuffers);
      for (auto& b : raw->staging)
        check_cuda(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    } catch (...) {
      destroy_stream(raw);
      s.release();
      throw;
    }
    return s.release();
  }

  void destroy_stream(void* stream) const override {
    auto* s = static_cast<StreamState*>(stream);
    if (!s) return;
    cudaSetDevice(s->device);
    if (s->stream) cudaStreamSynchronize(s->stream);
    if (s->dnn) cudnnDestroy(s->dnn);
    if (s->blas) cublasDestroy(s->blas);
    for (auto& b : s->staging) {
      if (b.done) cudaEventDestroy(b.done);
      if (b.host) cudaFreeHost(b.host);
    }
    for (cudaEvent_t e : s->event_pool) cudaEventDestroy(e);
    for (cudaEvent_t e : s->step_event_pool) cudaEventDestroy(e);
    if (s->stream) cudaStreamDestroy(s->stream);
    cudaGetLastError();
    delete s;
  }

  void synchronize(void* stream) const override {
    check_cuda(cudaStreamSynchronize(state(stream).stream), "cudaStreamSynchronize");
  }

  // Host to device. Pinned sources are copied directly (and waited for, since
  // the caller may reuse `src` when this returns); pageable ones go through
  // the staging ring in pieces, so the host copies piece i+1 while the DMA
  // engine moves piece i. Returns once every byte has left `src`.
  void copy_to_device(void* dst, const void* src, size_t bytes, void* stream) const override {
    StreamState& s = state(stream);
    s.enter(Phase::kH2D);
    if (!bytes) return;
    if (is_pinned(src)) {
      check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.stream),
                 "cudaMemcpyAsync (host to device)");
      check_cuda(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
      return;
    }
    const char* from = static_cast<const char*>(src);
    char* to = static_cast<char*>(dst);
    for (size_t off = 0; off < bytes; off += kStagingChunk) {
      size_t n = std::min(kStagingChunk, bytes - off);
      StreamState::Staging& b = acquire(s, n);
      std::memcpy(b.host, from + off, n);
      check_cuda(cudaMemcpyAsync(to + off, b.host, n, cudaMemcpyHostToDevice, s.stream),
                 "cudaMemcpyAsync (host to device)");
      check_cuda(cudaEventRecord(b.done, s.stream), "cudaEventRecord");
      b.pending = true;
    }
  }

  // Device to host: each piece lands in a staging buffer and is copied out
  // once its event completes, while later pieces are already under way.
  void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) const override {
    StreamState& s = state(stream);
    s.enter(Phase::kD2H);
    if (!bytes) return;
    if (is_pinned(dst)) {
      check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s.stream),
                 "cudaMemcpyAsync (device to host)");
      check_cuda(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
      return;
    }
    char* to = static_cast<char*>(dst);
    const char* from = static_cast<const char*>(src);
    // Pieces in flight, oldest first: (buffer, destination, size).
    struct Piece {
      StreamState::Staging* b;
      char* out;
      size_t n;
    };
    Piece flight[kStagingBuffers];
    size_t head = 0, count = 0;
    auto finish_oldest = [&]() {
      Piece& p = flight[head];
      check_cuda(cudaEventSynchronize(p.b->done), "cudaEventSynchronize (device to host)");
      p.b->pending = false;
      std::memcpy(p.out, p.b->host, p.n);
      head = (head + 1) % kStagingBuffers;
      --count;
    };
    for (size_t off = 0; off < bytes; off += kStagingChunk) {
      size_t n = std::min(kStagingChunk, bytes - off);
      if (count == kStagingBuffers) finish_oldest();
      StreamState::Staging& b = acquire(s, n);
      check_cuda(cudaMemcpyAsync(b.host, from + off, n, cudaMemcpyDeviceToHost, s.stream),
                 "cudaMemcpyAsync (device to host)");
      check_cuda(cudaEventRecord(b.done, s.stream), "cudaEventRecord");
      b.pending = true;
      flight[(head + count) % kStagingBuffers] = {&b, to + off, n};
      ++count;
    }
    while (count) finish_oldest();
  }

  std::shared_ptr<void> upload(const Tensor& t) const override {
    size_t bytes = t.nbytes();
    check_cuda(cudaSetDevice(ctx_.device), "cudaSetDevice");
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw Error(ErrorCode::kOutOfMemory,
                  "cuda:" + std::to_string(ctx_.device) + " memory: cannot allocate " + std::to_string(bytes) +
                      " bytes for a constant (weights) of shape " + shape_str(t.shape()) + " (" + allocator_->name() +
                      " free: " + format_bytes(allocator_->free_memory()) + "): " + cuda_error_text(e));
    }
    int dev = ctx_.device;
    std::shared_ptr<void> owned(p, [dev](void* q) {
      cudaSetDevice(dev);
      cudaFree(q);
      cudaGetLastError();
    });
    if (bytes) {
      check_cuda(cudaMemcpy(p, t.raw(), bytes, cudaMemcpyHostToDevice), "uploading a constant (cudaMemcpy)");
      // From pageable memory cudaMemcpy may return before the DMA lands, and
      // the runs' streams do not wait for the default stream: wait here.
      check_cuda(cudaStreamSynchronize(nullptr), "uploading a constant (cudaStreamSynchronize)");
    }
    return owned;
  }

  void begin_run(void* stream) const override {
    StreamState& s = state(stream);
    check_cuda(cudaSetDevice(s.device), "cudaSetDevice");
    s.marks.clear();
    s.step_marks.clear();
    s.step_events_used = 0;
    s.step_timing = true;
    s.current = Phase::kNone;
    s.counts[0] = s.counts[1] = s.counts[2] = 0;
    s.timing = true;
  }

  void end_run(void* stream) const override {
    StreamState& s = state(stream);
    DeviceRunTimes t;
    t.h2d_copies = s.counts[0];
    t.kernels = s.counts[1];
    t.d2h_copies = s.counts[2];
    if (s.timing && !s.marks.empty()) s.enter(Phase::kNone);  // closes the last phase
    check_cuda(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize (end of run)");
    if (s.timing && s.marks.size() >= 2) {
      t.valid = true;
      for (size_t i = 0; i + 1 < s.marks.size(); ++i) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, s.marks[i].event, s.marks[i + 1].event) != cudaSuccess) {
          cudaGetLastError();
          t.valid = false;
          break;
        }
        switch (s.marks[i].phase) {
          case Phase::kH2D:
            t.h2d_ms += ms;
            break;
          case Phase::kCompute:
            t.compute_ms += ms;
            break;
          case Phase::kD2H:
            t.d2h_ms += ms;
            break;
          case Phase::kNone:
            break;
        }
      }
    }
    s.timing = false;
    s.last = t;
    s.read_step_marks();
  }

  DeviceRunTimes run_times(void* stream) const override { return state(stream).last; }

  // A step's events are recorded on its stream around its kernel: the
  // difference is the device's execution of everything the step enqueued.
  void step_begun(void* stream, size_t step) const override {
    StreamState& s = state(stream);
    if (cudaEvent_t e = s.record_step_event(2)) s.step_marks.push_back({step, e, nullptr});  // the end's made too
  }
  void step_ended(void* stream, size_t step) const override {
    StreamState& s = state(stream);
    if (s.step_marks.empty() || s.step_marks.back().step != step || s.step_marks.back().end) return;
    if (cudaEvent_t e = s.record_step_event())
      s.step_marks.back().end = e;
    else
      s.step_marks.pop_back();
  }
  std::vector<DeviceStepTime> step_times(void* stream) const override { return state(stream).last_steps; }

 private:
  static StreamState& state(void* stream) {
    if (!stream) throw Error(ErrorCode::kInternal, "cuda: a device operation was given no stream");
    return *static_cast<StreamState*>(stream);
  }

  // The next staging buffer of the ring, free and at least n bytes.
  static StreamState::Staging& acquire(StreamState& s, size_t n) {
    StreamState::Staging& b = s.staging[s.next_staging];
    s.next_staging = (s.next_staging + 1) % s.staging.size();
    if (b.pending) {
      check_cuda(cudaEventSynchronize(b.done), "cudaEventSynchronize (staging)");
      b.pending = false;
    }
    if (b.bytes < n) {
      if (b.host) check_cuda(cudaFreeHost(b.host), "cudaFreeHost");
      b.host = nullptr;
      b.bytes = 0;
      size_t want = (n + kStagingGranule - 1) / kStagingGranule * kStagingGranule;
      check_cuda(cudaHostAlloc(&b.host, want, cudaHostAllocDefault),
                 "cudaHostAlloc (pinned staging, " + std::to_string(want) + " bytes)");
      b.bytes = want;
    }
    return b;
  }

  DeviceContext ctx_;
  std::string description_;
  std::shared_ptr<CudaAllocator> allocator_;
  std::string tuning_context_;
};

// The kernels: which nodes run on the GPU (support.cpp) and the cuDNN, cuBLAS
// and own-kernel factories, with the convolution algorithm choice.
class CudaBackend final : public KernelProvider {
 public:
  CudaBackend(int device, int math) : dev_(device, math) {}

  const std::string& description() const { return dev_.description(); }

  const char* name() const override { return "cuda"; }
  const ComputeDevice& device() const override { return dev_; }

  bool supports(const Graph& g, const Node& n, std::string* why) const override { return cuda_supports(g, n, why); }
  // Under --math fp16 and bf16 Conv's weights and Gemm's and MatMul's constant
  // operands are converted to 16 bits once, from the host's copy, when the
  // kernel is made (ConvKernel, HalfOperand); the float32 upload would go
  // unread.
  bool reads_uploaded_constant(const Graph& g, const Node& n, size_t input) const override {
    if (!dev_.context().narrow16()) return true;
    if (n.op == "Conv") return input != 1;
    if (n.op == "Gemm" || n.op == "MatMul") return input > 1;
    return true;
  }

  std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) const override {
    std::string why;
    if (!cuda_supports(g, n, &why)) node_fail(ErrorCode::kUnsupported, g, n, "not on cuda: " + why);
    check_cuda(cudaSetDevice(ctx_.device), node_context(g, n) + "cudaSetDevice");
    return make_cuda_kernel(ctx_, g, n);
  }

  std::vector<AlgorithmOption> algorithms(const Graph& g, const Node& n) const override {
    if (n.op != "Conv" || !cuda_supports(g, n, nullptr)) return {};
    check_cuda(cudaSetDevice(ctx_.device), node_context(g, n) + "cudaSetDevice");
    return conv_algorithms(ctx_, g, n);
  }

  std::string heuristic_algorithm(const Graph& g, const Node& n) const override {
    if (n.op != "Conv") return {};
    check_cuda(cudaSetDevice(ctx_.device), node_context(g, n) + "cudaSetDevice");
    return conv_heuristic(ctx_, g, n);
  }

  std::unique_ptr<Kernel> make_kernel_with(const Graph& g, const Node& n, const std::string& algorithm) const override {
    if (n.op != "Conv" || algorithm.empty()) return make_kernel(g, n);
    check_cuda(cudaSetDevice(ctx_.device), node_context(g, n) + "cudaSetDevice");
    return make_conv_kernel_with(ctx_, g, n, algorithm);
  }

  std::vector<double> measure_algorithms(const Graph& g, const Node& n, const std::vector<AlgorithmOption>& candidates,
                                         size_t workspace_limit) const override {
    if (n.op != "Conv") return {};
    check_cuda(cudaSetDevice(ctx_.device), node_context(g, n) + "cudaSetDevice");
    return conv_measure(ctx_, g, n, candidates, workspace_limit);
  }

  // The device and every version a convolution's speed or result depends on.
  std::string tuning_context() const override { return dev_.tuning_context(); }

 private:
  CudaDevice dev_;
  const DeviceContext& ctx_ = dev_.context();  // the device's, for the kernel factories
};

void copy_text(char* dst, size_t size, const std::string& s) {
  if (!dst || !size) return;
  size_t n = std::min(size - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = 0;
}

}  // namespace

}  // namespace minirt::cuda

namespace minirt::cuda {

KernelProvider* create_backend(const MinirtCudaOptions* options, char* error, size_t error_size, char* description,
                               size_t description_size) {
  try {
    if (!options || options->abi_major != MINIRT_CUDA_ABI_MAJOR || options->size < kMinirtCudaOptionsRequiredSize) {
      copy_text(error, error_size,
                "the GPU module and the runtime that loads it disagree on the module interface; use the "
                "libminirt_cuda.so built with this minirt");
      return nullptr;
    }
    uint32_t mine[kMinirtCudaLayoutCount];
    minirt_cuda_layout(mine);
    for (int i = 0; i < kMinirtCudaLayoutCount; ++i)
      if (mine[i] != options->layout[i]) {
        copy_text(error, error_size,
                  "the GPU module was compiled from other minirt headers than the runtime that loads it (the "
                  "sizes of its shared types differ); use the libminirt_cuda.so built with this minirt");
        return nullptr;
      }
    if (options->math != kMinirtCudaMathFp32 && options->math != kMinirtCudaMathTf32 &&
        options->math != kMinirtCudaMathFp16 && options->math != kMinirtCudaMathBf16) {
      copy_text(error, error_size, ("unknown math mode " + std::to_string(options->math)).c_str());
      return nullptr;
    }
    auto b = std::make_unique<CudaBackend>(options->device, options->math);
    copy_text(description, description_size, b->description());
    return b.release();
  } catch (const std::exception& e) {
    copy_text(error, error_size, e.what());
  } catch (...) {
    copy_text(error, error_size, "an unknown exception while starting the CUDA backend");
  }
  return nullptr;
}

}  // namespace minirt::cuda
