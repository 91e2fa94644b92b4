// The ops that go through cuDNN: Conv (with bias and ReLU fused by
// cudnnConvolutionBiasActivationForward, other activations after it),
// MaxPool/AveragePool (cuDNN where its symmetric padding fits, the module's
// own kernel otherwise), the global pools, Softmax/LogSoftmax, LRN,
// BatchNormalization (inference) and the activations cuDNN has.
//
// Convolutions: 1-D is run as 2-D with a height of 1. Asymmetric padding is
// split into the symmetric part cuDNN takes and the rest, which an explicit
// zero pad of the input into the kernel's workspace supplies. Without a
// tuner the algorithm comes from cuDNN's heuristics (choose_conv_algorithm,
// cudnnGetConvolutionForwardAlgorithm_v7); with one (runtime/tuner.h) the
// candidates are cuDNN's forward algorithms under each math type the math
// mode allows, named like "cudnn_implicit_precomp_gemm" (FMA math) and
// "cudnn_winograd_nonfused+tensor_op" (tensor cores: TF32 under --math tf32,
// float16 under --math fp16, bfloat16 under --math bf16),
// timed by cudnnFindConvolutionForwardAlgorithmEx (each timing credited to
// the variant cuDNN reports it ran, conv_candidates.h timed_candidate).
//
// Under --math fp16 (DeviceContext::fp16) a convolution runs in float16 on
// tensor cores: the weights are converted once, when the kernel is made; each
// run converts the (padded) input to float16 in the workspace, convolves with
// float32 accumulation (cuDNN's pseudo-half configuration: float16 tensors,
// a float32 convolution descriptor), then adds the bias and applies the
// activation in float32. The output is not float32: cuDNN writes y as
// float16, so each sum is rounded to float16 (11 significant bits) before
// the bias, and a sum beyond float16's range (|y| >= 65520, past the largest
// float16 65504 by half a step) becomes +-inf, which the bias and
// activation keep; the conversion back to float32 is exact. (The Gemm and
// MatMul of --math fp16 write float32.) The CPU's emulation of this is
// tests/gpu/fp16_emulation.h. --math bf16 (DeviceContext::bf16, compute
// capability 8.0 and newer) is the same with bfloat16 tensors
// (CUDNN_DATA_BFLOAT16, float32 descriptor): float32's range, 8 bits of
// mantissa, its output rounded to bfloat16.
#include <minirt/error.h>
#include <minirt/half.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "kernels/cuda/common.h"
#include "kernels/cuda/conv_candidates.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/linalg.h"

namespace minirt::cuda {

namespace {

constexpr size_t kMaxConvWorkspace = size_t{512} << 20;  // an algorithm needing more is passed over
constexpr size_t kAlign = 256;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Pads `dims` with trailing 1s to at least `rank` entries (cuDNN wants 4-D or more).
std::vector<int> at_least(std::vector<int> dims, size_t rank) {
  while (dims.size() < rank) dims.push_back(1);
  return dims;
}

struct ConvChoice {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t workspace = 0;
};

// The one place a convolution's algorithm is chosen: cuDNN's heuristics, in
// their order, skipping what fails, needs more than kMaxConvWorkspace, or
// (in fp32 mode) would use tensor cores. Leaves the choice's math type set on
// `conv`. With the tuner (measuring, the algorithm cache) the session picks
// the algorithm instead (make_kernel_with); this is the heuristic's pick.
ConvChoice choose_conv_algorithm(const DeviceContext& ctx, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                                 cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
                                 const std::string& where) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  cudnnHandle_t h = ctx.plan_dnn;
  // The heuristics' question: 16-bit data asks for tensor cores outright;
  // TF32 is what DEFAULT_MATH permits on float32 data.
  const cudnnMathType_t asked = ctx.narrow16() ? CUDNN_TENSOR_OP_MATH : ctx.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  check_cudnn(cudnnSetConvolutionMathType(conv, asked), where + "cudnnSetConvolutionMathType");
  int max = 0;
  check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max),
              where + "cudnnGetConvolutionForwardAlgorithmMaxCount");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
  int got = 0;
  check_cudnn(
      cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, conv, y, static_cast<int>(perf.size()), &got, perf.data()),
      where + "cudnnGetConvolutionForwardAlgorithm_v7");
  for (int i = 0; i < got; ++i) {
    const auto& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (!ctx.tensor_cores() && is_tensor_op(p.mathType)) continue;
    // Under TF32 or fp16 the math the candidate's name stands for
    // (+tensor_op or not), so that running the name later (from the cache)
    // runs the same.
    cudnnMathType_t math =
        ctx.tensor_cores() && may_use_tensor_cores(p.mathType, ctx.narrow16()) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    if (cudnnSetConvolutionMathType(conv, math) != CUDNN_STATUS_SUCCESS) continue;
    size_t ws = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, x, w, conv, y, p.algo, &ws) != CUDNN_STATUS_SUCCESS) continue;
    if (ws > kMaxConvWorkspace) continue;
    return {p.algo, math, ws};
  }
  // Nothing usable in the list: implicit GEMM needs no workspace and takes every shape.
  ConvChoice c;
  c.math = ctx.tensor_cores() ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
  check_cudnn(cudnnSetConvolutionMathType(conv, c.math), where + "cudnnSetConvolutionMathType");
  check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(h, x, w, conv, y, c.algo, &c.workspace),
              where + "cudnnGetConvolutionForwardWorkspaceSize");
  return c;
}

// What a ConvKernel is made for: running, or only the tuner's questions
// (its candidates, the heuristic's pick, Find's timings on buffers of its
// own), which need no float16 copy of the weights.
enum class ConvUse { kRun, kQuery };

class ConvKernel final : public CudaKernel {
 public:
  // `algorithm`: a candidate name to run with, or empty for cuDNN's heuristic pick.
  ConvKernel(const DeviceContext& ctx, const Graph& g, const Node& n, const std::string& algorithm = {},
             ConvUse use = ConvUse::kRun)
      : CudaKernel(node_context(g, n)) {
    const auto& a = n.attrs_as<ConvAttrs>();
    const std::string& w = where();
    Shape x = in_shape(g, n, 0), f = in_shape(g, n, 1), y = out_shape(g, n, 0);
    int sp = static_cast<int>(a.spatial());
    std::vector<int64_t> pb(sp), pe(sp), st(a.strides), dl(a.dilations);
    for (int i = 0; i < sp; ++i) {
      pb[i] = a.pad_begin(i);
      pe[i] = a.pad_end(i);
    }
    if (sp == 1) {  // 1-D as 2-D with a height of 1
      x.insert(x.begin() + 2, 1);
      f.insert(f.begin() + 2, 1);
      y.insert(y.begin() + 2, 1);
      pb.insert(pb.begin(), 0);
      pe.insert(pe.begin(), 0);
      st.insert(st.begin(), 1);
      dl.insert(dl.begin(), 1);
      sp = 2;
    }
    // cuDNN pads symmetrically; what one side has beyond the other is added
    // by an explicit pad of the input into the workspace.
    std::vector<int> sym(sp), stride(sp), dil(sp);
    Shape xp = x;
    for (int i = 0; i < sp; ++i) {
      int64_t m = std::min(pb[i], pe[i]);
      sym[i] = static_cast<int>(m);
      stride[i] = static_cast<int>(st[i]);
      dil[i] = static_cast<int>(dl[i]);
      extra_begin_.push_back(pb[i] - m);
      xp[2 + i] = x[2 + i] + (pb[i] - m) + (pe[i] - m);
      if (pb[i] != pe[i]) explicit_pad_ = true;
    }
    if (explicit_pad_) {
      pad_.rank = static_cast<int>(x.size());
      pad_.mode = PadModeGpu::kConstant;
      int64_t in_stride = 1;
      for (int d = pad_.rank - 1; d >= 0; --d) {
        pad_.in_shape[d] = x[d];
        pad_.out_shape[d] = xp[d];
        pad_.in_stride[d] = in_stride;
        in_stride *= x[d];
        pad_.begin[d] = d >= 2 ? extra_begin_[d - 2] : 0;
      }
      pad_.count = shape_numel(xp);
      pad_bytes_ = align_up(static_cast<size_t>(pad_.count) * sizeof(float));
    }
    half_ = ctx.narrow16();
    bf16_ = ctx.bf16;
    const cudnnDataType_t data = !half_ ? CUDNN_DATA_FLOAT : bf16_ ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    xd_.set(to_int(xp), w, data);
    yd_.set(to_int(y), w, data);
    check_cudnn(cudnnCreateFilterDescriptor(&fd_), w + "cudnnCreateFilterDescriptor");
    std::vector<int> fdims = to_int(f);
    check_cudnn(cudnnSetFilterNdDescriptor(fd_, data, CUDNN_TENSOR_NCHW, static_cast<int>(fdims.size()), fdims.data()),
                w + "cudnnSetFilterNdDescriptor");
    if (half_) {
      // 16-bit copies in the workspace: the input, the output, and the
      // weights when they are computed at run time; constant weights are
      // converted here, once.
      xh_bytes_ = align_up(static_cast<size_t>(shape_numel(xp)) * 2);
      yh_bytes_ = align_up(static_cast<size_t>(shape_numel(y)) * 2);
      const size_t wcount = static_cast<size_t>(shape_numel(f));
      const Tensor* wt = in_const(g, n, 1);
      if (!wt) {
        wh_bytes_ = align_up(wcount * 2);
      } else if (use == ConvUse::kRun) {  // a query kernel never runs: no copy
        std::vector<uint16_t> wh(wcount);
        if (bf16_)
          float_to_bfloat16(wt->data<float>(), wh.data(), wcount);
        else
          float_to_half(wt->data<float>(), wh.data(), wcount);
        const std::string what = w + "the " + ctx.name16() + " weights";
        w_half_ = DeviceBuffer(ctx.device, wcount * 2, what);
        w_half_.upload(wh.data(), wcount * 2, what);
      }
    }
    extra_bytes_ = pad_bytes_ + xh_bytes_ + yh_bytes_ + wh_bytes_;
    check_cudnn(cudnnCreateConvolutionDescriptor(&cd_), w + "cudnnCreateConvolutionDescriptor");
    check_cudnn(cudnnSetConvolutionNdDescriptor(cd_, sp, sym.data(), stride.data(), dil.data(), CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT),
                w + "cudnnSetConvolutionNdDescriptor");
    check_cudnn(cudnnSetConvolutionGroupCount(cd_, static_cast<int>(a.group)), w + "cudnnSetConvolutionGroupCount");
    // cuDNN's idea of the output shape must be the schema's.
    std::vector<int> want = to_int(y), got(want.size());
    check_cudnn(cudnnGetConvolutionNdForwardOutputDim(cd_, xd_.d, fd_, static_cast<int>(got.size()), got.data()),
                w + "cudnnGetConvolutionNdForwardOutputDim");
    if (got != want)
      throw Error(ErrorCode::kInternal, w + "cuDNN computes another output shape than the schema (" +
                                            shape_str(Shape(got.begin(), got.end())) + " vs " + shape_str(y) + ")");
    if (algorithm.empty()) {
      choice_ = choose_conv_algorithm(ctx, xd_.d, fd_, cd_, yd_.d, w);
    } else {
      if (!parse_candidate(ctx.tensor_cores(), algorithm, &choice_.algo, &choice_.math))
        throw Error(ErrorCode::kInvalidArgument, w + "'" + algorithm + "' is not a cuDNN candidate in this math mode");
      std::lock_guard<std::mutex> lock(ctx.mu);
      check_cudnn(cudnnSetConvolutionMathType(cd_, choice_.math), w + "cudnnSetConvolutionMathType");
      check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(ctx.plan_dnn, xd_.d, fd_, cd_, yd_.d, choice_.algo,
                                                          &choice_.workspace),
                  w + "algorithm " + algorithm + ": cudnnGetConvolutionForwardWorkspaceSize");
    }
    xp_ = xp;
    wshape_ = f;
    yshape_ = y;

    has_bias_ = n.input(2) >= 0;
    act_ = ActParams{a.act.kind, a.act.alpha, a.act.beta, a.act.gamma};
    channels_ = y[1];
    outer_ = y[0];
    inner_ = 1;
    for (size_t i = 2; i < y.size(); ++i) inner_ *= y[i];
    if (has_bias_) {
      std::vector<int> bdims(y.size(), 1);
      bdims[1] = static_cast<int>(channels_);
      bd_.set(bdims, w);
    }
    fused_ = has_bias_ && a.act.kind == ActKind::kRelu && !half_;
    if (fused_) {
      check_cudnn(cudnnCreateActivationDescriptor(&ad_), w + "cudnnCreateActivationDescriptor");
      check_cudnn(cudnnSetActivationDescriptor(ad_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
                  w + "cudnnSetActivationDescriptor");
    }
  }

  ~ConvKernel() override {
    if (fd_) cudnnDestroyFilterDescriptor(fd_);
    if (cd_) cudnnDestroyConvolutionDescriptor(cd_);
    if (ad_) cudnnDestroyActivationDescriptor(ad_);
  }

  size_t workspace_bytes() const override { return extra_bytes_ + choice_.workspace; }
  size_t own_constant_bytes() const override {
    return w_half_.get() ? static_cast<size_t>(shape_numel(wshape_)) * 2 : 0;
  }

  std::string chosen() const { return candidate_name(choice_.algo, choice_.math); }

  // Every (algorithm, math type) pair with its workspace, or why cuDNN
  // refuses it for this convolution.
  std::vector<AlgorithmOption> candidates(const DeviceContext& ctx) const {
    std::vector<AlgorithmOption> out;
    std::lock_guard<std::mutex> lock(ctx.mu);
    for (cudnnMathType_t math : allowed_math(ctx.tensor_cores())) {
      for (cudnnConvolutionFwdAlgo_t algo : kAllFwdAlgos) {
        AlgorithmOption o;
        o.name = candidate_name(algo, math);
        size_t ws = 0;
        cudnnStatus_t st = cudnnSetConvolutionMathType(cd_, math);
        if (st == CUDNN_STATUS_SUCCESS)
          st = cudnnGetConvolutionForwardWorkspaceSize(ctx.plan_dnn, xd_.d, fd_, cd_, yd_.d, algo, &ws);
        if (st != CUDNN_STATUS_SUCCESS)
          o.declined = "cuDNN does not take this shape: " + cudnn_error_text(st);
        else
          o.workspace = extra_bytes_ + ws;
        out.push_back(std::move(o));
      }
    }
    cudnnSetConvolutionMathType(cd_, choice_.math);
    return out;
  }

  // cuDNN's own timing of the candidates (median of three Find calls per
  // math type) on scratch device buffers of the real shapes. Each result is
  // the (algorithm, math type) variant cuDNN ran and times only the
  // candidate of that variant in that pass (timed_candidate): a
  // DEFAULT_MATH variant, which Find returns beside the tensor-op one and
  // which may run TF32, times neither the "+tensor_op" candidate nor the
  // FMA one.
  std::vector<double> measure(const DeviceContext& ctx, const std::vector<AlgorithmOption>& cands,
                              size_t workspace_limit) const {
    size_t ws = 0;
    for (const auto& c : cands)
      if (c.declined.empty() && (workspace_limit == 0 || c.workspace <= workspace_limit))
        ws = std::max(ws, c.workspace > extra_bytes_ ? c.workspace - extra_bytes_ : size_t{0});
    const size_t elem = half_ ? 2 : sizeof(float);  // the tensors as cuDNN sees them
    const size_t xbytes = static_cast<size_t>(shape_numel(xp_)) * elem;
    const size_t wbytes = static_cast<size_t>(shape_numel(wshape_)) * elem;
    DeviceBuffer xb(ctx.device, xbytes, where() + "the tuning input");
    DeviceBuffer wb(ctx.device, wbytes, where() + "the tuning weights");
    DeviceBuffer yb(ctx.device, static_cast<size_t>(shape_numel(yshape_)) * elem, where() + "the tuning output");
    DeviceBuffer wsb(ctx.device, ws, where() + "the tuning workspace");
    // Small non-zero values (0x3c3c3c3c is about 0.0115 in float32, 0x3c3c
    // about 1.06 in float16): no algorithm has a shortcut for them.
    check_cuda(cudaMemset(xb.get(), 0x3c, xbytes), where() + "cudaMemset");
    check_cuda(cudaMemset(wb.get(), 0x3c, wbytes), where() + "cudaMemset");
    std::lock_guard<std::mutex> lock(ctx.mu);
    int max = 0;
    check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.plan_dnn, &max),
                where() + "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
    std::vector<FindResult> results;
    for (cudnnMathType_t math : allowed_math(ctx.tensor_cores())) {
      for (int rep = 0; rep < 3; ++rep) {
        check_cudnn(cudnnSetConvolutionMathType(cd_, math), where() + "cudnnSetConvolutionMathType");
        int got = 0;
        check_cudnn(
            cudnnFindConvolutionForwardAlgorithmEx(ctx.plan_dnn, xd_.d, xb.get(), fd_, wb.get(), cd_, yd_.d, yb.get(),
                                                   static_cast<int>(perf.size()), &got, perf.data(), wsb.get(), ws),
            where() + "cudnnFindConvolutionForwardAlgorithmEx");
        for (int i = 0; i < got; ++i) {
          const auto& p = perf[static_cast<size_t>(i)];
          if (p.status != CUDNN_STATUS_SUCCESS || p.memory > ws) continue;
          results.push_back({math, p.algo, p.mathType, static_cast<double>(p.time)});
        }
      }
    }
    cudnnSetConvolutionMathType(cd_, choice_.math);
    std::vector<std::string> names;
    names.reserve(cands.size());
    for (const auto& c : cands) names.push_back(c.name);
    return candidate_medians(names, results);
  }

  std::string describe() const override {
    std::string s = std::string("cuDNN ") + algo_name(choice_.algo) + ", " + math_name(choice_.math);
    if (half_) s += bf16_ ? ", bfloat16 data (float32 accumulation)" : ", float16 data (float32 accumulation)";
    if (fused_ && fused_ok_.load())
      s += ", bias+ReLU fused";
    else if (has_bias_ || act_.kind != ActKind::kNone)
      s += ", bias/activation after";
    if (explicit_pad_) s += ", asymmetric padding applied to the input";
    return s;
  }

  void launch(const KernelArgs& args, StreamState& s) override {
    const float* x = in<float>(args, 0);
    const float* f = in<float>(args, 1);
    const float* b = has_bias_ ? in<float>(args, 2) : nullptr;
    float* y = out<float>(args, 0);
    char* ws = static_cast<char*>(args.workspace);
    if (explicit_pad_) {
      launch_pad(x, ws, pad_, sizeof(float), s.stream);
      check_launch("the input pad");
      x = reinterpret_cast<const float*>(ws);
    }
    void* cws = choice_.workspace ? ws + extra_bytes_ : nullptr;
    const float one = 1.0f, zero = 0.0f;
    if (half_) {
      char* xh = ws + pad_bytes_;
      char* yh = xh + xh_bytes_;
      const void* fh = w_half_.get();
      if (!fh) {
        char* wh = yh + yh_bytes_;
        launch_to_16(bf16_, f, wh, shape_numel(wshape_), s.stream);
        check_launch("the weights' conversion to 16 bits");
        fh = wh;
      }
      launch_to_16(bf16_, x, xh, shape_numel(xp_), s.stream);
      check_launch("the input's conversion to 16 bits");
      check_cudnn(cudnnConvolutionForward(s.dnn, &one, xd_.d, xh, fd_, fh, cd_, choice_.algo, cws, choice_.workspace,
                                          &zero, yd_.d, yh),
                  where() + (bf16_ ? "cudnnConvolutionForward (bfloat16)" : "cudnnConvolutionForward (float16)"));
      launch_from_16(bf16_, yh, y, shape_numel(yshape_), s.stream);
      check_launch("the output's conversion from 16 bits");
      if (has_bias_ || act_.kind != ActKind::kNone) {
        launch_bias_act(y, b, outer_, channels_, inner_, act_, s.stream);
        check_launch("the bias and activation");
      }
      return;
    }
    if (fused_ && fused_ok_.load()) {
      // y = ReLU(conv(x) + 0 * y + bias): z is y itself, with weight 0.
      cudnnStatus_t st =
          cudnnConvolutionBiasActivationForward(s.dnn, &one, xd_.d, x, fd_, f, cd_, choice_.algo, cws,
                                                choice_.workspace, &zero, yd_.d, y, bd_.d, b, ad_, yd_.d, y);
      if (st == CUDNN_STATUS_SUCCESS) return;
      // A configuration the fused call does not take (the NOT_SUPPORTED and
      // BAD_PARAM families, 3xxx and 2xxx) runs unfused from now on.
      int v = static_cast<int>(st);
      if (v < 2000 || v >= 4000) check_cudnn(st, where() + "cudnnConvolutionBiasActivationForward");
      fused_ok_.store(false);
    }
    check_cudnn(cudnnConvolutionForward(s.dnn, &one, xd_.d, x, fd_, f, cd_, choice_.algo, cws, choice_.workspace, &zero,
                                        yd_.d, y),
                where() + "cudnnConvolutionForward");
    if (has_bias_ || act_.kind != ActKind::kNone) {
      launch_bias_act(y, b, outer_, channels_, inner_, act_, s.stream);
      check_launch("the bias and activation");
    }
  }

 private:
  TensorDesc xd_, yd_, bd_;
  cudnnFilterDescriptor_t fd_ = nullptr;
  cudnnConvolutionDescriptor_t cd_ = nullptr;
  cudnnActivationDescriptor_t ad_ = nullptr;
  ConvChoice choice_;
  bool has_bias_ = false, fused_ = false, explicit_pad_ = false;
  std::atomic<bool> fused_ok_{true};
  ActParams act_;
  int64_t outer_ = 1, channels_ = 1, inner_ = 1;
  std::vector<int64_t> extra_begin_;
  PadArgs pad_;
  size_t pad_bytes_ = 0;
  // --math fp16: float16 copies of the input, output and (computed) weights
  // in the workspace after the pad; the constant weights' own buffer.
  bool half_ = false;
  bool bf16_ = false;  // the 16-bit type is bfloat16 (--math bf16), else float16
  size_t xh_bytes_ = 0, yh_bytes_ = 0, wh_bytes_ = 0;
  size_t extra_bytes_ = 0;  // the workspace before cuDNN's: pad and float16 copies
  DeviceBuffer w_half_;
  Shape xp_, wshape_, yshape_;  // the padded input, filter and output, for tuning buffers
};

// Windows as cuDNN takes them: symmetric padding smaller than the window, no
// dilation, and an output that floor rounding gives (no ceil_mode overhang).
bool pool_fits_cudnn(const PoolAttrs& a, const Shape& x, const Shape& y) {
  for (int64_t i = 0; i < a.spatial(); ++i) {
    int64_t k = a.kernel_shape[i], p = a.pad_begin(i);
    if (a.dilations[i] != 1 || p != a.pad_end(i) || p >= k) return false;
    if ((x[2 + i] + 2 * p - k) / a.strides[i] + 1 != y[2 + i]) return false;
  }
  return true;
}

class PoolKernel final : public CudaKernel {
 public:
  PoolKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    const auto& a = n.attrs_as<PoolAttrs>();
    const std::string& w = where();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    int sp = static_cast<int>(a.spatial());
    cudnn_ = pool_fits_cudnn(a, x, y);
    if (cudnn_) {
      std::vector<int> win, pad, stride, xs = to_int(x), ys = to_int(y);
      for (int i = 0; i < sp; ++i) {
        win.push_back(static_cast<int>(a.kernel_shape[i]));
        pad.push_back(static_cast<int>(a.pad_begin(i)));
        stride.push_back(static_cast<int>(a.strides[i]));
      }
      if (sp == 1) {  // 1-D as 2-D with a height of 1
        win.insert(win.begin(), 1);
        pad.insert(pad.begin(), 0);
        stride.insert(stride.begin(), 1);
        xs.insert(xs.begin() + 2, 1);
        ys.insert(ys.begin() + 2, 1);
      }
      xd_.set(xs, w);
      yd_.set(ys, w);
      cudnnPoolingMode_t mode = a.kind == PoolKind::kMax ? CUDNN_POOLING_MAX_DETERMINISTIC
                                : a.count_include_pad    ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                         : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
      check_cudnn(cudnnCreatePoolingDescriptor(&pd_), w + "cudnnCreatePoolingDescriptor");
      check_cudnn(cudnnSetPoolingNdDescriptor(pd_, mode, CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(win.size()),
                                              win.data(), pad.data(), stride.data()),
                  w + "cudnnSetPoolingNdDescriptor");
      return;
    }
    // The module's own kernel: the spatial axes right-aligned in three.
    args_.max = a.kind == PoolKind::kMax;
    args_.count_include_pad = a.count_include_pad;
    args_.planes = x[0] * x[1];
    for (int i = 0; i < sp; ++i) {
      int j = 3 - sp + i;
      args_.in[j] = x[2 + i];
      args_.out[j] = y[2 + i];
      args_.kernel[j] = a.kernel_shape[i];
      args_.stride[j] = a.strides[i];
      args_.dilation[j] = a.dilations[i];
      args_.pad_begin[j] = a.pad_begin(i);
      args_.pad_end[j] = a.pad_end(i);
    }
  }
  ~PoolKernel() override {
    if (pd_) cudnnDestroyPoolingDescriptor(pd_);
  }
  std::string describe() const override { return cudnn_ ? "cuDNN pooling" : "minirt pooling kernel"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    if (cudnn_) {
      const float one = 1.0f, zero = 0.0f;
      check_cudnn(cudnnPoolingForward(s.dnn, pd_, &one, xd_.d, in<float>(args, 0), &zero, yd_.d, out<float>(args, 0)),
                  where() + "cudnnPoolingForward");
      return;
    }
    launch_pool(in<float>(args, 0), out<float>(args, 0), args_, s.stream);
    check_launch("pooling");
  }

 private:
  bool cudnn_ = false;
  TensorDesc xd_, yd_;
  cudnnPoolingDescriptor_t pd_ = nullptr;
  PoolArgs args_;
};

class GlobalPoolKernel final : public CudaKernel {
 public:
  GlobalPoolKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)), max_(n.op == "GlobalMaxPool") {
    const Shape& x = in_shape(g, n, 0);
    planes_ = x[0] * x[1];
    size_ = planes_ > 0 ? shape_numel(x) / planes_ : 0;  // an empty batch: nothing to launch
  }
  void launch(const KernelArgs& args, StreamState& s) override {
    launch_global_pool(in<float>(args, 0), out<float>(args, 0), planes_, size_, max_, s.stream);
    check_launch("global pooling");
  }

 private:
  bool max_;
  int64_t planes_ = 0, size_ = 0;
};

// Softmax over [outer, len, inner] as cuDNN's channel mode on an N x C x H x 1 tensor.
class SoftmaxKernel final : public CudaKernel {
 public:
  SoftmaxKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    const auto& a = n.attrs_as<SoftmaxAttrs>();
    const Shape& x = in_shape(g, n, 0);
    size_t axis = static_cast<size_t>(a.axis);
    int64_t outer = 1, len = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= x[i];
    if (a.coerce_2d) {
      for (size_t i = axis; i < x.size(); ++i) len *= x[i];
    } else {
      len = x[axis];
      for (size_t i = axis + 1; i < x.size(); ++i) inner *= x[i];
    }
    log_ = a.log;
    std::vector<int> dims = {static_cast<int>(outer), static_cast<int>(len), static_cast<int>(inner), 1};
    d_.set(dims, where());
  }
  std::string describe() const override { return log_ ? "cuDNN log-softmax" : "cuDNN softmax (accurate)"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    const float one = 1.0f, zero = 0.0f;
    check_cudnn(
        cudnnSoftmaxForward(s.dnn, log_ ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                            d_.d, in<float>(args, 0), &zero, d_.d, out<float>(args, 0)),
        where() + "cudnnSoftmaxForward");
  }

 private:
  TensorDesc d_;
  bool log_ = false;
};

class LrnKernel final : public CudaKernel {
 public:
  LrnKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    const auto& a = n.attrs_as<LrnAttrs>();
    d_.set(to_int(in_shape(g, n, 0)), where());
    check_cudnn(cudnnCreateLRNDescriptor(&ld_), where() + "cudnnCreateLRNDescriptor");
    check_cudnn(cudnnSetLRNDescriptor(ld_, static_cast<unsigned>(a.size), a.alpha, a.beta, a.bias),
                where() + "cudnnSetLRNDescriptor");
  }
  ~LrnKernel() override {
    if (ld_) cudnnDestroyLRNDescriptor(ld_);
  }
  std::string describe() const override { return "cuDNN LRN"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    const float one = 1.0f, zero = 0.0f;
    check_cudnn(cudnnLRNCrossChannelForward(s.dnn, ld_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, d_.d, in<float>(args, 0),
                                            &zero, d_.d, out<float>(args, 0)),
                where() + "cudnnLRNCrossChannelForward");
  }

 private:
  TensorDesc d_;
  cudnnLRNDescriptor_t ld_ = nullptr;
};

class BatchNormKernel final : public CudaKernel {
 public:
  BatchNormKernel(const Graph& g, const Node& n) : CudaKernel(node_context(g, n)) {
    eps_ = n.attrs_as<BatchNormAttrs>().epsilon;
    std::vector<int> x = at_least(to_int(in_shape(g, n, 0)), 4);
    d_.set(x, where());
    std::vector<int> p(x.size(), 1);
    p[1] = x[1];
    pd_.set(p, where());
  }
  std::string describe() const override { return "cuDNN batch normalization (inference)"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    const float one = 1.0f, zero = 0.0f;
    check_cudnn(cudnnBatchNormalizationForwardInference(s.dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d_.d,
                                                        in<float>(args, 0), d_.d, out<float>(args, 0), pd_.d,
                                                        in<float>(args, 1), in<float>(args, 2), in<float>(args, 3),
                                                        in<float>(args, 4), static_cast<double>(eps_)),
                where() + "cudnnBatchNormalizationForwardInference");
  }

 private:
  TensorDesc d_, pd_;
  float eps_ = 1e-5f;
};

// Relu, Sigmoid, Tanh, Elu and Clip(0, max) through cudnnActivationForward.
bool cudnn_activation(const Activation& a, cudnnActivationMode_t* mode, double* coef) {
  *coef = 0;
  if (a.kind == ActKind::kRelu) {
    *mode = CUDNN_ACTIVATION_RELU;
  } else if (a.kind == ActKind::kSigmoid) {
    *mode = CUDNN_ACTIVATION_SIGMOID;
  } else if (a.kind == ActKind::kTanh) {
    *mode = CUDNN_ACTIVATION_TANH;
  } else if (a.kind == ActKind::kElu) {
    *mode = CUDNN_ACTIVATION_ELU;
    *coef = a.alpha;
  } else if (a.kind == ActKind::kClip && a.alpha == 0.0f && std::isfinite(a.beta) && a.beta >= 0.0f) {
    *mode = CUDNN_ACTIVATION_CLIPPED_RELU;
    *coef = a.beta;
  } else {
    return false;  // the module's elementwise kernel runs it (make_activation)
  }
  return true;
}

class DnnActivationKernel final : public CudaKernel {
 public:
  DnnActivationKernel(const Graph& g, const Node& n, cudnnActivationMode_t mode, double coef)
      : CudaKernel(node_context(g, n)) {
    d_.set({1, 1, 1, static_cast<int>(shape_numel(in_shape(g, n, 0)))}, where());
    check_cudnn(cudnnCreateActivationDescriptor(&ad_), where() + "cudnnCreateActivationDescriptor");
    // NaN as the CPU treats it: Relu(NaN) is 0 (x > 0 ? x : 0), the others
    // keep it (Clip's max(lo, x) then min(hi, .), and the math of Sigmoid,
    // Tanh, Elu).
    const cudnnNanPropagation_t nan = mode == CUDNN_ACTIVATION_RELU ? CUDNN_NOT_PROPAGATE_NAN : CUDNN_PROPAGATE_NAN;
    check_cudnn(cudnnSetActivationDescriptor(ad_, mode, nan, coef), where() + "cudnnSetActivationDescriptor");
  }
  ~DnnActivationKernel() override {
    if (ad_) cudnnDestroyActivationDescriptor(ad_);
  }
  std::string describe() const override { return "cuDNN activation"; }
  void launch(const KernelArgs& args, StreamState& s) override {
    const float one = 1.0f, zero = 0.0f;
    check_cudnn(cudnnActivationForward(s.dnn, ad_, &one, d_.d, in<float>(args, 0), &zero, d_.d, out<float>(args, 0)),
                where() + "cudnnActivationForward");
  }

 private:
  TensorDesc d_;
  cudnnActivationDescriptor_t ad_ = nullptr;
};

}  // namespace

std::vector<AlgorithmOption> conv_algorithms(const DeviceContext& ctx, const Graph& g, const Node& n) {
  return ConvKernel(ctx, g, n, {}, ConvUse::kQuery).candidates(ctx);
}

std::string conv_heuristic(const DeviceContext& ctx, const Graph& g, const Node& n) {
  return ConvKernel(ctx, g, n, {}, ConvUse::kQuery).chosen();
}

std::unique_ptr<Kernel> make_conv_kernel_with(const DeviceContext& ctx, const Graph& g, const Node& n,
                                              const std::string& algorithm) {
  return std::make_unique<ConvKernel>(ctx, g, n, algorithm);
}

std::vector<double> conv_measure(const DeviceContext& ctx, const Graph& g, const Node& n,
                                 const std::vector<AlgorithmOption>& candidates, size_t workspace_limit) {
  return ConvKernel(ctx, g, n, {}, ConvUse::kQuery).measure(ctx, candidates, workspace_limit);
}

namespace {

// The op table's kDnn activations (Relu, Sigmoid, Tanh, Elu, Clip): cuDNN's activation when it has the
// function, else the module's elementwise kernel.
std::unique_ptr<Kernel> make_activation(const DeviceContext& ctx, const Graph& g, const Node& n) {
  cudnnActivationMode_t mode;
  double coef = 0;
  if (cudnn_activation(n.attrs_as<UnaryAttrs>().act, &mode, &coef))
    return std::make_unique<DnnActivationKernel>(g, n, mode, coef);
  return make_unary_kernel(ctx, g, n);
}

// The activations of the op table's kDnn rows, then the rest.
constexpr auto kDnnKernels = with_op_table_rows<ActGpu::kDnn, false, KernelEntry>(
    make_activation, {
                         {"Conv", make<ConvKernel>},
                         {"MaxPool", make<PoolKernel>},
                         {"AveragePool", make<PoolKernel>},
                         {"GlobalMaxPool", make<GlobalPoolKernel>},
                         {"GlobalAveragePool", make<GlobalPoolKernel>},
                         {"LRN", make<LrnKernel>},
                         {"BatchNormalization", make<BatchNormKernel>},
                         {"Softmax", make<SoftmaxKernel>},
                         {"LogSoftmax", make<SoftmaxKernel>},
                     });
static_assert(same_ops(kDnnKernels, kDnnSupport),
              "dnn_ops.cpp's kernel table and support.h's kDnnSupport must name the same ops");

}  // namespace

std::span<const KernelEntry> dnn_kernels() { return kDnnKernels; }

}  // namespace minirt::cuda
