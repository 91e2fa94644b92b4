// The backend interface, in two halves: a ComputeDevice (a memory space, its
// allocator, streams, copies and timing) and a KernelProvider (which nodes it
// runs, the kernels and algorithm candidates it makes, on its device). A
// kernel is prepared once for the shapes it will see (plan time) and then run
// many times. Backends are found through runtime/backend_registry.h.
//
//   if (kernels.supports(graph, node, &why)) {
//     std::unique_ptr<Kernel> k = kernels.make_kernel(graph, node);
//     size_t ws = k->workspace_bytes();
//     k->run(args);                                    // many times
//   }
//   if (kernels.device().is_device()) kernels.device().copy_to_device(dst, src, n, stream);
#pragma once

#include "runtime/graph.h"
#include "runtime/memory_pool.h"
#include "runtime/thread_pool.h"

#include <memory>
#include <string>
#include <vector>

namespace minirt {

struct KernelArgs {
  const void* const* inputs;  // one per node input; nullptr for a skipped optional input
  void* const* outputs;       // one per node output
  void* workspace;            // workspace_bytes() bytes, 64-byte aligned
  ThreadPool* pool;
  void* stream = nullptr;  // the run's stream on a device backend
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const KernelArgs& args) = 0;
  // Scratch memory the kernel needs during run (from the arena).
  virtual size_t workspace_bytes() const { return 0; }
  // A short note for the plan report, e.g. the algorithm chosen.
  virtual std::string describe() const { return {}; }
  // Device memory the kernel holds for constants of its own making (the
  // float16 weights of --math fp16), for the plan report.
  virtual size_t own_constant_bytes() const { return 0; }
  // Whether the kernel read constant input `input` when it was made, into a
  // form of its own (packed or transformed weights), and never reads the
  // plan's tensor at run time: the planner then lets that tensor go (its
  // pointer in KernelArgs is null).
  virtual bool packs_input(size_t input) const { return false; }
  // Host memory the kernel holds in that form, for Session::weight_stats().
  virtual size_t packed_bytes() const { return 0; }
  // The precision its products run in, for the plan report: "fp32" (the
  // default), "bf16" (MathMode::kBf16's CPU convolutions), "fp16", "tf32".
  virtual const char* precision() const { return "fp32"; }
};

// The kernel of an op whose outputs' shapes follow from its inputs' values
// (OpSchema::value_sized: NonZero, NonMaxSuppression). No plan holds such a
// node: the session cuts the model at it (runtime/stages.h) and, between two
// stages, calls evaluate() on the host with the inputs' tensors (nullptr for a
// skipped optional input); it returns the outputs, sized. run() is not used.
class ValueSizedKernel : public Kernel {
 public:
  void run(const KernelArgs&) final;  // throws kInternal: evaluate() is the entry point
  virtual std::vector<Tensor> evaluate(const std::vector<const Tensor*>& inputs, ThreadPool& pool) = 0;
};

// How long the device spent on one run, by phase, as the device's own
// timers (CUDA events) measured it: copies in, kernels, copies out. A phase
// is timed from its first operation to the next operation of another phase,
// so idle gaps inside a phase (the device waiting for the host) count in it.
struct DeviceRunTimes {
  bool valid = false;  // false when the backend does not measure, or nothing ran
  double h2d_ms = 0;
  double compute_ms = 0;
  double d2h_ms = 0;
  int h2d_copies = 0, kernels = 0, d2h_copies = 0;  // operations counted in each phase
};

// One step of a profiled run as the device's own clock saw it: from just
// before its first operation to just after its last (CUDA events recorded
// around the step on its stream). start_us counts from the first step the
// device timed in the run.
struct DeviceStepTime {
  size_t step = 0;  // the step's index in the plan
  double start_us = 0;
  double duration_us = 0;
};

// One way a backend can run a node (an algorithm for a convolution), for
// the tuner to choose from.
struct AlgorithmOption {
  std::string name;      // e.g. "im2col_gemm", "winograd_f4x4", "cudnn_implicit_precomp_gemm"
  size_t workspace = 0;  // bytes of scratch it needs (Kernel::workspace_bytes of its kernel)
  std::string declined;  // non-empty: it cannot run this node, and why; such a candidate is never run
};

// What a node running in a backend's channel-blocked layout needs of one
// input's layout (runtime/passes/layout.cpp).
enum class LayoutNeed : uint8_t {
  kPlain,    // plain (constants the kernel reads itself, shape operands)
  kBlocked,  // blocked
  kEither,   // either: the kernel reads both (a stem convolution's few input channels)
};

// A memory space and what moves data in and out of it: the allocator its
// pool reserves segments from, streams (a run's ordered queue of work),
// host<->device copies, constant uploads, and the device's own timing of a
// run. The host is a device too (host_device()); its memory is the CPU's and
// none of the device-only operations is ever asked of it.
class ComputeDevice {
 public:
  virtual ~ComputeDevice() = default;
  // True when tensors in this memory cannot be read by the CPU (a GPU); the
  // planner then inserts copies at the seams and plans the device's own arena.
  virtual bool is_device() const = 0;
  // Segments of device memory, for the device arena's pool.
  virtual std::shared_ptr<RawAllocator> allocator() const = 0;
  // Copies enqueued on `stream`. copy_to_device may return before the data
  // arrives but never before `src` may be reused; copy_to_host returns when
  // the data is on the host.
  virtual void copy_to_device(void* dst, const void* src, size_t bytes, void* stream) const = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) const = 0;
  virtual void* create_stream() const = 0;
  virtual void destroy_stream(void* stream) const = 0;
  virtual void synchronize(void* stream) const = 0;
  // A device copy of a constant (weights), kept for the plan's lifetime.
  virtual std::shared_ptr<void> upload(const Tensor& t) const = 0;
  // A run on `stream` begins (before its first step) and ends (after its
  // last). end_run() waits until the device has finished the run's work on
  // the stream; run_times() then gives that run's phases. The session calls
  // these for each device stream a run uses; a run that failed midway just
  // begins again next time. A device that does not time itself returns an
  // invalid DeviceRunTimes.
  virtual void begin_run(void* stream) const = 0;
  virtual void end_run(void* stream) const = 0;
  virtual DeviceRunTimes run_times(void* stream) const = 0;
  // Profiling: the session brackets each step it runs on this device with
  // step_begun() and step_ended() (only when it profiles); after end_run(),
  // step_times() gives the bracketed steps' times on the device's clock. A
  // device whose work is done when the kernel call returns (or that does not
  // time itself) keeps these defaults, and the host's times stand.
  virtual void step_begun(void* stream, size_t step) const {}
  virtual void step_ended(void* stream, size_t step) const {}
  virtual std::vector<DeviceStepTime> step_times(void* stream) const { return {}; }
};

// The host's memory: is_device() is false, so the planner never asks it for
// copies, streams or uploads (each throws if it is, naming the call).
const ComputeDevice& host_device();

// Which nodes a backend runs and the kernels it runs them with: support with
// its reason, kernel factories, the algorithm candidates of the tuner and the
// backend's channel-blocked layout. Its tensors live in device().
class KernelProvider {
 public:
  virtual ~KernelProvider() = default;
  // The backend's name, as the placement line and the plan report say it: "cpu", "cuda".
  virtual const char* name() const = 0;
  // The memory space its kernels read and write.
  virtual const ComputeDevice& device() const = 0;
  // Whether this backend can run the node with its (concrete) input and
  // output types and shapes; when not, `why` says why in a few words.
  virtual bool supports(const Graph& g, const Node& n, std::string* why) const = 0;
  // Makes the kernel for a node whose shapes are all known. Constant inputs
  // (weights) may be read and repacked here.
  virtual std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) const = 0;
  // Whether the kernel of a node placed here reads constant input `input`
  // at run time from the copy the planner uploads into device(). A kernel
  // that keeps its own form of the constant, made from the host's copy when
  // the kernel is made (float16 weights under --math fp16), says false: the
  // constant is then not uploaded (its host pointer is passed, unread).
  virtual bool reads_uploaded_constant(const Graph& g, const Node& n, size_t input) const { return true; }

  // ---- Channel-blocked activations (a backend may have them) ----
  // The channel block B of this backend's blocked layout [N][C/B][H][W][B]
  // (Value::block), 0 when it has none.
  virtual int channel_block() const { return 0; }
  // Whether the node can run with its 4-D float outputs blocked; if so,
  // `needs` gets one entry per input slot. Inputs' layouts decided so far
  // are in their Value::block (the layout pass goes in topological order).
  virtual bool blocked_inputs(const Graph& g, const Node& n, std::vector<LayoutNeed>* needs) const { return false; }

  // ---- Algorithm choice (autotuning; runtime/tuner.h) ----
  // The algorithms this backend could run the node with; empty when it has
  // no choice to make for this node.
  virtual std::vector<AlgorithmOption> algorithms(const Graph& g, const Node& n) const { return {}; }
  // The one fixed rules pick without measuring (the `heuristic` tuning mode).
  virtual std::string heuristic_algorithm(const Graph& g, const Node& n) const { return {}; }
  // A kernel that runs the node with the named algorithm (one of algorithms()).
  virtual std::unique_ptr<Kernel> make_kernel_with(const Graph& g, const Node& n, const std::string& algorithm) const {
    return make_kernel(g, n);
  }
  // The kernel the tuner times for a candidate: by default the one
  // make_kernel_with makes. A backend whose kernels run faster inside the
  // plan than alone -- the CPU's nchwc_bf16, which reads and writes bf16
  // values between bf16 convolutions (narrow_values) -- may time the form
  // it would run there, reading and writing no more bytes than the node's
  // values as they are now.
  virtual std::unique_ptr<Kernel> make_tuning_kernel(const Graph& g, const Node& n,
                                                     const std::string& algorithm) const {
    return make_kernel_with(g, n, algorithm);
  }
  // How much slower than the measured winner the heuristic's pick may be and
  // still be kept (TunerOptions::keep_heuristic_within is `usual`): more
  // where the pick makes the steps around it faster, which no measurement
  // of the node alone shows.
  virtual double keep_heuristic_within(const Graph& g, const Node& n, double usual) const { return usual; }
  // What results and speed depend on besides the node itself, for the
  // algorithm cache's key: device identity, instruction sets, library
  // versions, math mode, e.g. "cpu | AMD EPYC 9R14 | avx512f avx2 fma | minirt 0.1.0 | eigen 3.4.0 | fp32".
  virtual std::string tuning_context() const { return name(); }
  // What math its kernels run when that is not plain float32, or why the
  // math asked for is not run: "bf16 convolutions on AMX tiles", "fp32:
  // this CPU has no AVX512_BF16 or AMX-BF16 instructions". Empty: float32 as asked.
  virtual std::string math_note() const { return {}; }
  // Called once per plan whose every node runs on this backend, after the
  // algorithms are chosen (`algorithm`: node index -> name, empty or absent
  // for the rules' pick) and before any kernel is made: the backend may store
  // values between its own kernels in a narrower form of its own (the CPU's
  // bfloat16 values between MathMode::kBf16 convolutions: Value::dtype
  // kBFloat16, Value::block 32). Returns how many values it changed.
  virtual int narrow_values(Graph&, const std::map<int, std::string>& /*algorithm*/) const { return 0; }
  // Called then too, first, with the plan's node order: the backend may fold
  // nodes into those whose chosen algorithm can take them (the CPU's residual
  // Add into an nchwc_int8 convolution, an activation step into a blocked
  // Add or Mul), marking them dead. Returns how many nodes it folded away.
  virtual int fuse_chosen(Graph&, const std::map<int, std::string>& /*algorithm*/,
                          const std::vector<int>& /*order*/) const {
    return 0;
  }
  // Times the candidates on the device with the backend's own means (cuDNN's
  // cudnnFindConvolutionForwardAlgorithmEx), within `workspace_limit` bytes
  // (0: none): the median milliseconds of each candidate, in the order given,
  // negative for one that failed or was not timed. Empty: the backend has no
  // such means and the tuner times the kernels itself (host backends).
  virtual std::vector<double> measure_algorithms(const Graph& g, const Node& n,
                                                 const std::vector<AlgorithmOption>& candidates,
                                                 size_t workspace_limit) const {
    return {};
  }
};

}  // namespace minirt
