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
//
// The arenas come from the session's memory pool, which grows as larger
// inputs need it (or is preallocated), may be capped, and reports its numbers:
//
//   minirt::Session s(model, {.memory_limit = 256u << 20});   // 256 MiB at most
//   s.run(...);
//   minirt::MemoryStats m = s.memory_stats();                 // reserved, in use, peak, ...
//   s.trim();                                                 // give cached memory back
//
// Convolutions whose backend has several algorithms get one chosen when a
// plan is made (minirt/tuning.h): by default from the algorithm cache file;
// what it lacks runs the heuristic's pick at once and is measured in the
// background, between runs, and the tuned plan takes over between two runs:
//
//   minirt::Session s(model);
//   s.run(...);                       // at once: the cache's and the heuristic's picks
//   s.wait_for_tuning();              // optional: until the tuned plan has taken over
//   for (auto& w : s.tuning_report().swaps) std::cerr << minirt::to_string(w) << "\n";
//
//   minirt::Session t(model, {.tuning = minirt::TuningMode::kExhaustive,
//                             .algo_cache_path = "/tmp/algos.txt",
//                             .workspace_limit = 64u << 20});
//   t.run(...);                                               // plans, tunes
//   minirt::TuningReport r = t.tuning_report();               // each choice, counters
#pragma once

#include <minirt/error.h>
#include <minirt/export.h>
#include <minirt/tensor.h>
#include <minirt/tuning.h>
#include <minirt/weights.h>

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
  // For a model with float16 or bfloat16 inputs, outputs, weights or casts:
  // one line saying what was converted, e.g. "float16 model: 53 initializers
  // converted to float32 at load; inputs x float16->float32; outputs y
  // float32->float16; computed in float32". Empty for other models.
  std::string half_precision;
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

// Floating-point math of the matrix products and convolutions: the GPU's
// (fp32, tf32, fp16) or the CPU's (fp32, bf16).
enum class MathMode {
  kFp32,  // full fp32 (the default): cuBLAS's default math, cuDNN restricted to FMA kernels
  kTf32,  // TF32 tensor cores (Ampere and newer): faster, about 3 fewer decimal digits in products
  // float16 tensor cores for convolutions and matrix products (every GPU
  // CUDA 13 runs: Turing, cc 7.5, and newer): weights converted to float16
  // once, at plan time; each such op's input converted to float16 and its
  // output back to float32; products
  // accumulated in float32. About 3 decimal digits, and float16's range (to
  // 65504). Every other op, and the CPU, compute in float32.
  kFp16,
  // bfloat16 products with float32 accumulation on the CPU (AMX tiles; on
  // AVX512_BF16 alone where measured faster than float32): each dense
  // convolution's input and weights rounded to bfloat16 (8 bits of mantissa,
  // float32's range), float32 bias, residual and activation; values between
  // two such convolutions are stored as bfloat16. The accuracy policy keeps
  // every other op, depthwise and grouped convolutions and a model's last
  // layers in float32 (kernels/cpu/README.md, "bf16 on the CPU"). A CPU without bf16
  // instructions runs float32 and Session::math_reason() says why. On the
  // GPU, Conv, Gemm and MatMul run on bfloat16 copies of their operands on
  // tensor cores with float32 accumulation, as kFp16 does (compute
  // capability 8.0 and newer; an older GPU runs float32 and its backend
  // description says why).
  kBf16,
};

// How the session's memory pool reserves memory.
enum class MemoryPolicy {
  kGrow,         // as runs need it, in segments (the default)
  kPreallocate,  // preallocate_fraction of the free memory, once, when the session is made; never more
};

// How the CPU lays out activations (4-D float tensors) between kernels.
enum class CpuLayout {
  kAuto,  // channel-blocked (NCHW16c on AVX-512, NCHW8c on AVX2) where the kernels can, reordered at the seams
  kNchw,  // plain NCHW everywhere (for comparison)
};

struct SessionOptions {
  Device device = Device::kAuto;
  // Intra-op threads; 0 means every core this process may use (its CPU
  // affinity and cgroup CPU quota, not the machine's count). More than
  // max_threads() is refused with kInvalidArgument; when the system will not
  // start the threads (ulimit -u, pids.max) the session is not made and
  // kResourceExhausted says how many ran.
  int threads = 0;
  bool profile = false;  // record per-step timings of every run
  bool optimize = true;  // run the graph passes (folding, fusion)
  // Activation memory (arenas of all concurrent runs) each of the session's
  // pools may reserve, in bytes: the host's, and each device's on its own;
  // 0 means no limit. A run that would need more fails
  // with kOutOfMemory, saying what it asked for, what the pool holds and what
  // to change, and the session stays usable for smaller inputs.
  size_t memory_limit = 0;
  MemoryPolicy memory_policy = MemoryPolicy::kGrow;
  // With kPreallocate: the fraction of free memory to reserve, in (0, 1]
  // (at most memory_limit when that is set). Ignored with kGrow.
  double preallocate_fraction = 0;
  // The math of convolutions and matrix products: fp32, tf32 or fp16 on
  // the GPU, fp32 or bf16 on the CPU (the CPU runs tf32 and fp16 as fp32).
  MathMode math = MathMode::kFp32;
  // The CUDA device ordinal for kCuda and kAuto (0: the first GPU, as
  // CUDA_VISIBLE_DEVICES orders them).
  int device_id = 0;
  // How convolution algorithms are chosen (see minirt/tuning.h).
  TuningMode tuning = TuningMode::kCached;
  std::string tuning_algorithm;  // with kFixed: the algorithm, e.g. "winograd_f4x4"
  // The algorithm cache file; empty: $MINIRT_ALGO_CACHE, else
  // $XDG_CACHE_HOME/minirt/algo_cache.txt, else ~/.cache/minirt/algo_cache.txt.
  std::string algo_cache_path;
  // With kCached and kExhaustive: write what was measured to the cache file
  // (false: measure, use, and leave the file alone, as a profiler does).
  bool algo_cache_write = true;
  // With kCached: where what the cache lacks is measured. true (the
  // default): the first run of each input signature starts at once with the
  // heuristic's picks for those choices (pending in tuning_report()); a
  // thread of the lowest priority measures them between runs, never during
  // one (when runs leave no gap it may hold the next one back for one timed
  // kernel, within 10% of its tuning time), makes the tuned plan, and that
  // plan takes over between two runs, the cache written
  // (TuningReport::swaps; wait_for_tuning, pause_tuning). Outputs may then
  // differ in their last bits, as between any two algorithms. false: the
  // first run measures before its first step. A session that places nodes
  // on a GPU measures in the first run either way.
  bool tune_in_background = true;
  // Timed runs per candidate when measuring, after one warm-up; 0 (the
  // default): at least 9, then more until about 20 ms per candidate.
  int tuning_repeats = 0;
  // Scratch memory one algorithm may need, in bytes; 0 means no limit.
  // Candidates that need more are not used (and reported as such).
  size_t workspace_limit = 0;
  // The CPU's activation layout; kAuto needs `optimize` and applies to
  // plans whose every node runs on the CPU (when a GPU takes some, the nodes
  // left on the CPU run plain).
  CpuLayout layout = CpuLayout::kAuto;
  // The most seconds one run() may take, from its call (planning included)
  // to its last step; 0 means no limit. Checked before each step: a run past
  // it stops there with kDeadlineExceeded and the session stays usable (a
  // step already started, one kernel, finishes first). When choosing
  // algorithms would overrun it, the rest of that plan takes the heuristic's
  // picks instead of measuring (and caches nothing for them).
  double run_timeout_seconds = 0;
};

// The cores this process may use: its CPU affinity and cgroup CPU quota.
MINIRT_API int usable_cores();
// The most intra-op threads a session accepts: 4 x usable_cores(), at least
// 8, at most 1024.
MINIRT_API int max_threads();

// One op minirt runs: the default-domain opset versions at which ONNX
// defined or changed it (a model uses the newest at or below the opset it
// imports) and, where the op's meaning changed over those versions or minirt
// runs only part of it, what minirt implements.
struct OpSupport {
  std::string op;
  std::vector<int> versions;
  std::string notes;
};
// Every op Model::load accepts, by name.
MINIRT_API std::vector<OpSupport> supported_ops();

// The numbers of a session's memory pool, in bytes.
struct MemoryStats {
  size_t reserved_bytes = 0;            // taken from the system, in all segments
  size_t in_use_bytes = 0;              // arenas held by runs (idle runs keep theirs for the next)
  size_t peak_in_use_bytes = 0;         // the most in_use_bytes has been
  size_t largest_free_block_bytes = 0;  // the largest arena that fits without reserving more
  size_t segments = 0;                  // separate reservations
  // 1 - largest free block / (reserved - in use); 0 when nothing is free. 0
  // means all free memory is one block; near 1, it is scattered in pieces.
  double fragmentation = 0;
  uint64_t allocations = 0;  // arenas handed out
  uint64_t frees = 0;        // arenas given back
  size_t limit_bytes = 0;    // the cap in effect (the preallocation with kPreallocate); 0: none
};

// The memory pool of one device the session may place nodes on.
struct DeviceMemoryStats {
  std::string device;  // the backend's name, as in the placement line
  MemoryStats stats;
};

// One device's share of the last finished run, timed by the device itself
// (CUDA events): copies in, kernels, copies out.
struct DeviceTimes {
  std::string device;  // the backend's name, as in the placement line
  bool valid = false;  // false when the device does not time itself
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
  int h2d_copies = 0, kernels = 0, d2h_copies = 0;  // operations counted in each phase
};

// The copy steps of the last plan between host and device memory, per run:
// what crossing the seams between devices costs in transfers.
struct SeamCopies {
  int to_device = 0, to_host = 0;
  size_t bytes_to_device = 0, bytes_to_host = 0;
};

// Timing of one step of the last run, for --profile. A step on the CPU is
// timed by the host around the kernel call. A step on a GPU is timed by the
// GPU itself (device_clock: CUDA events recorded around it on its stream), so
// its duration is the device's execution, not the host's enqueue (though
// never less than the enqueue when the GPU waits on the host: a step of tiny
// kernels on an idle GPU shows their launch cost); its start is placed on the
// host's time line at the enqueue of the run's first GPU step (the stream is
// idle then, so the two clocks meet there).
struct StepTiming {
  std::string name;           // node name (or the fused nodes' names)
  std::string op;             // op type, e.g. "Conv+Relu"
  std::string shapes;         // "1x64x56x56 -> 1x64x56x56"
  std::string device;         // the backend that ran it, named as in the placement line
  bool device_clock = false;  // timed by the device (see above); false: by the host
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
  // What the CPU's convolutions compute in when SessionOptions::math asked
  // for bf16: "bf16 convolutions on AMX tiles", or "fp32 (...): <why not>"
  // on a CPU without bf16 instructions. Empty for float32 math.
  std::string math_reason() const;
  int threads() const;

  // The plan of the last run: each step with its op, device, shapes and
  // arena offsets, then the arena size. Empty before the first run. A model
  // with NonZero, Compress, Unique or NonMaxSuppression runs in plan stages
  // cut at those nodes: then each stage's plan, and the cuts between them.
  std::string plan_report() const;
  // A quantized model's last plan in one line: "int8 (N convolutions, M
  // products), K steps in float between quantize pairs" (their math: int8
  // sums, or float32 between a DequantizeLinear and a QuantizeLinear). Empty
  // before the first run, for a model with no int8 step, and for a cut model.
  std::string int8_summary() const;
  size_t arena_bytes() const;  // of the last run's plans (every stage's)
  // Number of plans made so far (one per new input signature; in a cut
  // model, one per stage and signature of that stage's inputs).
  int plans_made() const;
  // Where the last plan's nodes run when the session has a GPU: "placed N
  // nodes on <the GPU backend>, M nodes on cpu (<op>: <why not on the GPU>,
  // ...)"; empty on the CPU alone, and before the first run.
  std::string placement() const;
  // Each device's own timing of the last finished run (empty on the CPU alone).
  std::vector<DeviceTimes> device_times() const;
  // The copy steps between host and devices in the last plan (none on the CPU alone).
  SeamCopies seam_copies() const;
  // Timings of the steps of the last finished run (when options.profile is set).
  std::vector<StepTiming> last_profile() const;
  // What choosing algorithms did in all plans so far: each choice, the
  // counts measured / from cache / heuristic, the seconds, warnings.
  TuningReport tuning_report() const;
  // Background tuning (SessionOptions::tune_in_background): waits until
  // the choices every plan so far left pending are measured and the tuned
  // plans have taken over. True when nothing is left to tune; false when
  // `timeout_seconds` (< 0: no limit) passed first, or at once while tuning
  // is paused with work left.
  bool wait_for_tuning(double timeout_seconds = -1) const;
  // Pauses background tuning: nothing is measured until it is resumed (a
  // latency-critical period, a battery). Runs are unaffected.
  void pause_tuning(bool paused);

  // The host memory pool's numbers now.
  MemoryStats memory_stats() const;
  // Each device's pool (empty on the CPU alone). SessionOptions'
  // memory_limit and memory_policy apply to every pool, each on its own.
  std::vector<DeviceMemoryStats> device_memory_stats() const;
  // The host memory the weights take now: the model's, and the plans' (minirt/weights.h).
  WeightStats weight_stats() const;
  // Gives cached memory back to the system: the arenas of runs not in
  // progress (they are made again when next needed) and the pool's free
  // segments. Runs in progress are untouched. Returns the bytes given back.
  size_t trim();

  // Copies `bytes` between host memory and the memory of the GPU the
  // session runs on, for callers whose data already lives there (a serving
  // request in CUDA shared memory): device pointers are that GPU's (with
  // CUDA's unified addressing, another GPU's work as well). They return
  // when the bytes have arrived. Copies of one session take turns (one
  // stream of the session's own, made at the first copy). Throws
  // Error(kInvalidArgument) when the session runs on the CPU alone, and the
  // device's sentence when a copy fails.
  void copy_from_device(void* host_dst, const void* device_src, size_t bytes) const;
  void copy_to_device(void* device_dst, const void* host_src, size_t bytes) const;

  struct Impl;

 private:
  void run_checked(const NamedTensors& inputs, std::vector<Tensor>& outputs);
  friend struct SessionInternals;  // runtime/api/session_internal.h
  std::unique_ptr<Impl> impl_;
};

}  // namespace minirt
