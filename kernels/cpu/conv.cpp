// Conv and ConvTranspose on the CPU.
//
// Conv has six lowerings, each a named algorithm the tuner may pick or a
// caller force (make_conv_kernel); where no one chooses, fixed rules do
// (conv_heuristic_algorithm). describe() says which ran:
//   - depthwise_direct: one filter per channel (group == C == M), direct
//                    loops: on AVX-512 CPUs channel-blocked (rows of 16
//                    channels transposed into [column][channel] on the fly,
//                    one FMA per tap for 16 channels), else along the rows;
//   - gemm_1x1:      1x1, stride 1, no padding: the input already is the GEMM
//                    operand, packed straight into B panels block by block;
//   - implicit_gemm: the input copied once per run with its zero padding, and
//                    split into stride phases, so that every (channel, ky, kx)
//                    row of the unrolled matrix is a plain offset into the
//                    copy: the microkernel reads it in place, no im2col;
//   - im2col_gemm:   the patches unrolled straight into the GEMM's packed B
//                    panels, block by block; runs every Conv (the fallback);
//   - winograd_f2x2, winograd_f4x4: 3x3, stride 1, one group, constant
//                    weights: Winograd F(2x2, 3x3) / F(4x4, 3x3) on 16 / 36
//                    GEMMs (conv_winograd.h), on any CPU.
// All of them but depthwise_direct multiply with the SGEMM engine of
// sgemm.h: the weights are packed into its A panels once, when the kernel is
// made; bias and the fused activation are applied to each tile while it is
// in registers.
#include "kernels/cpu/conv_algorithms.h"
#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/conv_depthwise_avx512.h"
#include "kernels/cpu/conv_winograd.h"
#include "kernels/cpu/eigen_util.h"
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/vmath.h"
#include "runtime/ops/conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#define MINIRT_CONV_AVX512 1  // conv_depthwise_avx512.cpp is built
#else
#define MINIRT_CONV_AVX512 0
#endif

namespace minirt::cpu {

Geometry conv_geometry(const Shape& x, const Shape& y, const WindowAttrs& a, int64_t groups) {
  Geometry q{};
  bool one_d = x.size() == 3;
  q.n = x[0];
  q.c = x[1];
  q.h = one_d ? 1 : x[2];
  q.w = one_d ? x[2] : x[3];
  q.m = y[1];
  q.oh = one_d ? 1 : y[2];
  q.ow = one_d ? y[2] : y[3];
  q.kh = one_d ? 1 : a.kernel_shape[0];
  q.kw = a.kernel_shape[one_d ? 0 : 1];
  q.sh = one_d ? 1 : a.strides[0];
  q.sw = a.strides[one_d ? 0 : 1];
  q.dh = one_d ? 1 : a.dilations[0];
  q.dw = a.dilations[one_d ? 0 : 1];
  q.ph = one_d ? 0 : a.pads[0];
  q.pw = one_d ? a.pads[0] : a.pads[1];
  q.groups = groups;
  return q;
}

// Fills the phase planes of channels [p0, p1) (over all images) from x.
void fill_planes(const Geometry& q, const PhasePlanes& pp, const float* x, float* out, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const float* xc = x + p * q.h * q.w;
    float* dst = out + p * pp.channel_stride();
    for (int64_t ph = 0; ph < pp.planes(); ++ph) {
      for (int64_t r = 0; r < pp.hq; ++r, dst += pp.wq) {
        int64_t ih = pp.ry[ph] + r * q.sh - q.ph;
        if (ih < 0 || ih >= q.h) {
          std::fill(dst, dst + pp.wq, 0.0f);
          continue;
        }
        const float* xr = xc + ih * q.w;
        // Columns s with 0 <= rx + s*sw - pw < w.
        int64_t first = pp.rx[ph] - q.pw;  // input column of s = 0
        int64_t lo = first >= 0 ? 0 : std::min(pp.wq, ceil_div(-first, q.sw));
        int64_t hi = q.w - first <= 0 ? lo : std::clamp(ceil_div(q.w - first, q.sw), lo, pp.wq);
        std::fill(dst, dst + lo, 0.0f);
        if (q.sw == 1) {
          std::memcpy(dst + lo, xr + first + lo, static_cast<size_t>(hi - lo) * sizeof(float));
        } else {
          for (int64_t s = lo; s < hi; ++s) dst[s] = xr[first + s * q.sw];
        }
        std::fill(dst + hi, dst + pp.wq, 0.0f);
      }
    }
  }
}

void depthwise_scalar_activation(const Activation& act, float* p, int64_t n) { act.apply(p, n); }

namespace {

PhasePlanes phase_planes(const Geometry& q, std::vector<int64_t>* koff) {
  PhasePlanes pp;
  int64_t hp = (q.oh - 1) * q.sh + (q.kh - 1) * q.dh + 1;  // padded extent the output reads
  int64_t wp = (q.ow - 1) * q.sw + (q.kw - 1) * q.dw + 1;
  pp.hq = ceil_div(hp, q.sh);
  pp.wq = ceil_div(wp, q.sw);
  // The phases in use, and each tap's plane.
  std::vector<int64_t> plane_of(static_cast<size_t>(q.kh * q.kw));
  for (int64_t i = 0; i < q.kh; ++i)
    for (int64_t j = 0; j < q.kw; ++j) {
      int64_t ry = (i * q.dh) % q.sh, rx = (j * q.dw) % q.sw, p = 0;
      while (p < pp.planes() && !(pp.ry[p] == ry && pp.rx[p] == rx)) ++p;
      if (p == pp.planes()) {
        pp.ry.push_back(ry);
        pp.rx.push_back(rx);
      }
      plane_of[i * q.kw + j] = p;
    }
  int64_t cg = q.c / q.groups;
  koff->resize(static_cast<size_t>(cg * q.kh * q.kw));
  for (int64_t ci = 0, k = 0; ci < cg; ++ci)
    for (int64_t i = 0; i < q.kh; ++i)
      for (int64_t j = 0; j < q.kw; ++j, ++k)
        (*koff)[k] = ci * pp.channel_stride() + plane_of[i * q.kw + j] * pp.hq * pp.wq + (i * q.dh) / q.sh * pp.wq +
                     (j * q.dw) / q.sw;
  return pp;
}

// The fixed rules' thresholds, from ConvAlgo/* in bench/kernels_bench.cpp
// (ResNet-18/50, MobileNetV2, SqueezeNet layers) on an AVX2 EPYC, 1 and 2
// threads.
// Winograd: fewer channels than this leave too little GEMM to pay for the
// transforms.
constexpr int64_t kMinWinogradChannels = 16;
// F(4x4) needs a plane of at least this many outputs: on smaller ones its
// few tiles per image are too narrow a GEMM for 36 transformed filters (4x
// the weights) to stream past, and the edge tiles waste more; F(2x2) takes
// them down to 7x7 (ResNet's 14x14 and 7x7 layers: F2 3.7 and 5.6 ms, F4 5.7
// and 7.0, im2col 7.1 and 7.0; its 56x56 and 28x28 ones: F4 3.1 and 2.6 ms,
// F2 4.9 and 4.2, im2col 8.9 and 7.8).
constexpr int64_t kMinWinograd4Outputs = 400, kMinWinograd2Outputs = 49;
// implicit_gemm, on AVX-512 only (where it was measured to win): output rows
// at least this long (strided: the second). On AVX2 im2col_gemm beat it on
// every measured layer (stems, strided 3x3, 3x3 stride 1) by 1.1 to 3x.
constexpr int64_t kMinImplicitRow = 12, kMinImplicitRowStrided = 32;

// The Conv lowerings, in the order algorithms() lists them.
enum class Algo { kIm2col, kImplicit, kGemm1x1, kDepthwise, kWinograd2, kWinograd4 };
constexpr Algo kAlgos[] = {Algo::kIm2col,    Algo::kImplicit,  Algo::kGemm1x1,
                           Algo::kDepthwise, Algo::kWinograd2, Algo::kWinograd4};

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::kIm2col:
      return "im2col_gemm";
    case Algo::kImplicit:
      return "implicit_gemm";
    case Algo::kGemm1x1:
      return "gemm_1x1";
    case Algo::kDepthwise:
      return "depthwise_direct";
    case Algo::kWinograd2:
      return "winograd_f2x2";
    case Algo::kWinograd4:
      return "winograd_f4x4";
  }
  return "?";
}

bool algo_named(const std::string& name, Algo* out) {
  for (Algo a : kAlgos)
    if (name == algo_name(a)) {
      *out = a;
      return true;
    }
  return false;
}

// What the rules read about a Conv node.
struct ConvShape {
  Geometry q;
  bool two_d = false;
  bool const_weights = false;
};

ConvShape conv_shape(const Graph& g, const Node& n) {
  const auto& a = n.attrs_as<ConvAttrs>();
  ConvShape s;
  s.q = conv_geometry(in_shape(g, n, 0), out_shape(g, n, 0), a, a.group);
  s.two_d = in_shape(g, n, 0).size() == 4;
  s.const_weights = in_const(g, n, 1) != nullptr;
  return s;
}

bool is_pointwise(const Geometry& q) {
  return q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.ph == 0 && q.pw == 0 && q.oh == q.h && q.ow == q.w;
}

// Why lowering `a` cannot run this convolution; empty when it can.
std::string declined(const ConvShape& s, Algo a) {
  const Geometry& q = s.q;
  switch (a) {
    case Algo::kIm2col:
    case Algo::kImplicit:
      return {};  // any window, stride, dilation, padding, groups
    case Algo::kGemm1x1:
      return is_pointwise(q) ? "" : "1x1 stride 1 without padding only";
    case Algo::kDepthwise:
      return q.groups == q.c && q.m == q.c ? "" : "needs group == channels == filters";
    case Algo::kWinograd2:
    case Algo::kWinograd4:
      if (!s.two_d || q.kh != 3 || q.kw != 3 || q.sh != 1 || q.sw != 1 || q.dh != 1 || q.dw != 1)
        return "needs a 3x3 window at stride 1 and dilation 1";
      if (q.groups != 1) return "needs one group";
      // (They are transformed once, when the kernel is made.)
      if (!s.const_weights) return "needs constant weights";
      return {};
  }
  return "unknown algorithm";
}

// The fixed rules: the measured winner where the benchmarks cover a case.
Algo heuristic(const ConvShape& s, SgemmIsa isa) {
  const Geometry& q = s.q;
  if (declined(s, Algo::kDepthwise).empty()) return Algo::kDepthwise;
  if (is_pointwise(q)) return Algo::kGemm1x1;
  const int64_t cols = q.oh * q.ow;
  if (declined(s, Algo::kWinograd4).empty() && q.c >= kMinWinogradChannels && q.m >= kMinWinogradChannels) {
    if (cols >= kMinWinograd4Outputs) return Algo::kWinograd4;
    if (cols >= kMinWinograd2Outputs) return Algo::kWinograd2;
  }
  if (isa == SgemmIsa::kAvx512 && q.kh * q.kw > 1 && q.ow >= (q.sw == 1 ? kMinImplicitRow : kMinImplicitRowStrided))
    return Algo::kImplicit;
  return Algo::kIm2col;
}

// The rules' pick. (One lowering for a whole model is TuningMode::kFixed,
// runmodel --tune ALGO: it goes through the tuner and its report.)
Algo default_algo(const ConvShape& s) { return heuristic(s, sgemm_default_isa()); }

class ConvKernel final : public Kernel {
 public:
  // `algo` must accept the node (declined() empty). plan_only: the split and
  // the workspace only, the weights neither read nor packed (for sizing).
  ConvKernel(const Graph& g, const Node& n, int threads, Algo algo, bool plan_only = false)
      : isa_(sgemm_default_isa()), algo_(algo) {
    const auto& a = n.attrs_as<ConvAttrs>();
    q_ = conv_geometry(in_shape(g, n, 0), out_shape(g, n, 0), a, a.group);
    act_ = a.act;
    has_bias_ = n.input(2) >= 0;
    // A fused residual (input 3): the lowering computes the convolution and
    // bias, then one pass adds the residual and applies the activation.
    residual_ = n.input(3) >= 0;
    if (residual_) {
      post_act_ = act_;
      act_ = Activation{};
    }
    const Tensor* wc = in_const(g, n, 1);
    const_w_ = wc != nullptr;
    cg_ = q_.c / q_.groups;
    mg_ = q_.m / q_.groups;
    k_ = cg_ * q_.kh * q_.kw;
    cols_ = q_.oh * q_.ow;
    // An empty batch (N = 0) has nothing to compute.
    empty_ = q_.n == 0 || q_.m == 0 || cols_ == 0;
    if (algo_ == Algo::kDepthwise) {
      plan_depthwise(threads);
      return;
    }
    if (empty_) return;
    if (algo_ == Algo::kWinograd2 || algo_ == Algo::kWinograd4) {
      winograd_ = std::make_unique<WinogradConv>(q_, algo_ == Algo::kWinograd2 ? 2 : 4, isa_, threads,
                                                 plan_only ? nullptr : wc->data<float>());
      ws_floats_ = winograd_->workspace_floats();
      return;
    }

    a_group_ = static_cast<int64_t>(sgemm_packed_a_floats(isa_, mg_, k_));
    if (!const_w_) a_group_ = (a_group_ + 15) / 16 * 16;  // packed per run, into the workspace
    if (const_w_ && !plan_only) {
      const float* wp = wc->data<float>();
      packed_w_ = AlignedFloats(static_cast<size_t>(a_group_ * q_.groups));
      for (int64_t gi = 0; gi < q_.groups; ++gi)
        sgemm_pack_a(isa_, wp + gi * mg_ * k_, k_, 1, mg_, k_, packed_w_.data() + gi * a_group_);
    }

    int64_t row_w = 0;
    bool packs_b = false;
    if (algo_ == Algo::kGemm1x1) {
      packs_b = true;
    } else if (algo_ == Algo::kImplicit) {
      pp_ = phase_planes(q_, &koff_);
      row_w = q_.ow;
    } else {
      im2col_ = Im2colGeom{cg_, q_.h, q_.w, q_.oh, q_.ow, q_.kh, q_.kw, q_.sh, q_.sw, q_.dh, q_.dw, q_.ph, q_.pw};
      packs_b = true;
    }
    split_ = sgemm_split(isa_, q_.n * q_.groups, mg_, cols_, k_, threads, row_w, packs_b);
    // Workspace: [packed weights when they are not constant][phase planes][per-task B blocks].
    size_t off = const_w_ ? 0 : static_cast<size_t>(a_group_ * q_.groups);
    planes_at_ = off;
    if (algo_ == Algo::kImplicit) off += static_cast<size_t>((q_.n * q_.c * pp_.channel_stride() + 15) / 16 * 16);
    scratch_at_ = off;
    off += sgemm_workspace_bytes(split_, isa_, k_, cols_, packs_b) / sizeof(float);
    ws_floats_ = off;
  }

  size_t workspace_bytes() const override {
    if (empty_ || (algo_ == Algo::kDepthwise && !dw_blocked_)) return 0;
    return ws_floats_ * sizeof(float);
  }

  // The weights, where they are constant, packed as SGEMM panels or
  // Winograd-transformed; the bias is read at run time.
  bool packs_input(size_t input) const override { return input == 1 && (!packed_w_.empty() || winograd_); }
  size_t packed_bytes() const override {
    return packed_w_.size() * sizeof(float) + (winograd_ ? winograd_->weight_bytes() : 0);
  }

  std::string describe() const override {
    std::string s = std::string("algo=") + algo_name(algo_);
    if (algo_ == Algo::kDepthwise)
      return s + (dw_blocked_ ? " isa=avx512 channel-blocked" : depthwise_avx512() ? " isa=avx512" : "");
    return s + " isa=" + sgemm_isa_name(isa_);
  }

  void run(const KernelArgs& args) override {
    if (empty_) return;
    run_conv(args);
    if (residual_) {
      const float* r = static_cast<const float*>(args.inputs[3]);
      float* y = static_cast<float*>(args.outputs[0]);
      const Activation act = post_act_;
      auto body = [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] += r[i];
        apply_activation(act, y + b, e - b);
      };
      args.pool->parallel_for(q_.n * q_.m * cols_, body, 16384);
    }
  }

 private:
  void run_conv(const KernelArgs& args) {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    if (algo_ == Algo::kDepthwise) {
#if MINIRT_CONV_AVX512
      if (dw_blocked_) {
        float* ws = static_cast<float*>(args.workspace);
        const int64_t per_img = ceil_div(q_.c, 16);
        auto body = [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) {
            float* buf = ws + static_cast<size_t>(t) * dw_task_floats_;
            for (int64_t u = dw_blocks_ * t / dw_tasks_; u < dw_blocks_ * (t + 1) / dw_tasks_; ++u) {
              int64_t img = u / per_img, c0 = (u % per_img) * 16;
              depthwise_block_avx512(q_, x + img * q_.c * q_.h * q_.w, w, b, act_, y + img * q_.c * q_.oh * q_.ow, c0,
                                     std::min<int64_t>(16, q_.c - c0), dw_ring_, dw_wp_, buf);
            }
          }
        };
        args.pool->parallel_for(dw_tasks_, body);
        return;
      }
#endif
      return depthwise(x, w, b, y, *args.pool);
    }
    if (winograd_) return winograd_->run(x, b, act_, y, static_cast<float*>(args.workspace), *args.pool);
    float* ws = static_cast<float*>(args.workspace);
    ThreadPool& pool = *args.pool;
    const float* a = packed_w_.data();
    if (!const_w_) {
      for (int64_t gi = 0; gi < q_.groups; ++gi)
        sgemm_pack_a_parallel(pool, isa_, w + gi * mg_ * k_, k_, 1, mg_, k_, ws + gi * a_group_);
      a = ws;
    }
    const float* planes = nullptr;
    if (algo_ == Algo::kImplicit) {
      float* pl = ws + planes_at_;
      auto fill = [&](int64_t p0, int64_t p1) { fill_planes(q_, pp_, x, pl, p0, p1); };
      pool.parallel_for(q_.n * q_.c, fill, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, pp_.channel_stride())));
      planes = pl;
    }
    float* scratch = ws + scratch_at_;
    auto make = [&](int64_t batch, SgemmArgs& gm) {
      int64_t gi = batch % q_.groups, img = batch / q_.groups;
      int64_t ch = img * q_.c + gi * cg_;  // first input channel of this image and group
      gm.isa = isa_;
      gm.m = mg_;
      gm.n = cols_;
      gm.k = k_;
      gm.a = a + gi * a_group_;
      switch (algo_) {
        case Algo::kGemm1x1:
          gm.b = SgemmB::matrix(x + ch * cols_, cols_, 1);
          break;
        case Algo::kImplicit:
          gm.b = SgemmB::indirect(planes + ch * pp_.channel_stride(), koff_.data(), q_.ow, pp_.wq);
          break;
        default:
          gm.b = SgemmB::im2col(x + ch * q_.h * q_.w, &im2col_);
          break;
      }
      gm.c = y + (img * q_.m + gi * mg_) * cols_;
      gm.ldc = cols_;
      gm.ep.row_bias = b ? b + gi * mg_ : nullptr;
      gm.ep.act = act_;
    };
    sgemm_run_batch(pool, split_, isa_, mg_, cols_, k_, scratch, make);
  }

  bool depthwise_avx512() const {
    return MINIRT_CONV_AVX512 && isa_ == SgemmIsa::kAvx512 && (q_.sw == 1 || q_.sw == 2) && q_.kh <= 16 && q_.kw <= 16;
  }

  // The channel-blocked depthwise: a ring of transposed input rows per task.
  void plan_depthwise(int threads) {
    dw_ring_ = (q_.kh - 1) * q_.dh + 1;
    dw_wp_ = ceil_div((q_.ow - 1) * q_.sw + (q_.kw - 1) * q_.dw + 1, 16) * 16;
    dw_blocks_ = q_.n * ceil_div(q_.c, 16);
    bool fits = dw_ring_ <= 64 && q_.kh <= 64 && q_.kh * q_.kw <= 64 && dw_ring_ * dw_wp_ * 16 <= 64 * 1024;
    dw_blocked_ = MINIRT_CONV_AVX512 && isa_ == SgemmIsa::kAvx512 && fits && !empty_;
    if (!dw_blocked_) return;
    dw_tasks_ = std::max<int64_t>(1, std::min<int64_t>(threads, dw_blocks_));
    // [ring rows][output row][a zero row]
    dw_task_floats_ = static_cast<size_t>((dw_ring_ * dw_wp_ + ceil_div(q_.ow, 16) * 16 + dw_wp_) * 16);
    ws_floats_ = dw_task_floats_ * static_cast<size_t>(dw_tasks_);
  }

  void depthwise(const float* x, const float* w, const float* b, float* y, ThreadPool& pool) const {
    const Geometry& q = q_;
    const bool simd = depthwise_avx512();
    (void)simd;
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t c = p % q.c;
        const float* xp = x + p * q.h * q.w;
        const float* wc = w + c * q.kh * q.kw;
        float* yp = y + p * q.oh * q.ow;
        float bias = b ? b[c] : 0.0f;
#if MINIRT_CONV_AVX512
        if (simd) {
          depthwise_plane_avx512(q, xp, wc, bias, act_, yp);
          continue;
        }
#endif
        for (int64_t oh = 0; oh < q.oh; ++oh) {
          float* yr = yp + oh * q.ow;
          std::fill(yr, yr + q.ow, bias);
          for (int64_t i = 0; i < q.kh; ++i) {
            int64_t ih = oh * q.sh - q.ph + i * q.dh;
            if (ih < 0 || ih >= q.h) continue;
            const float* xr = xp + ih * q.w;
            for (int64_t j = 0; j < q.kw; ++j) {
              float wv = wc[i * q.kw + j];
              int64_t off = j * q.dw - q.pw;  // iw = ow * sw + off
              // Valid ow: 0 <= ow*sw + off < w.
              int64_t lo = off >= 0 ? 0 : (-off + q.sw - 1) / q.sw;
              int64_t hi = q.w - off <= 0 ? 0 : std::min(q.ow, (q.w - off + q.sw - 1) / q.sw);
              if (q.sw == 1) {
                const float* xs = xr + off;
                for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xs[ow];
              } else {
                for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * q.sw + off];
              }
            }
          }
          act_.apply(yr, q.ow);
        }
      }
    };
    pool.parallel_for(q.n * q.c, body);
  }

  Geometry q_;
  SgemmIsa isa_;
  Algo algo_;
  Activation act_;
  bool has_bias_ = false;
  bool residual_ = false;
  Activation post_act_;  // with a residual: applied after adding it
  bool const_w_ = false;
  bool empty_ = false;
  int64_t cg_ = 0, mg_ = 0, k_ = 0, cols_ = 0;
  AlignedFloats packed_w_;     // A panels per group, when the weights are constant
  int64_t a_group_ = 0;        // floats of packed A per group
  std::vector<int64_t> koff_;  // implicit_gemm: offset of each K row in the phase planes
  PhasePlanes pp_;             // implicit_gemm
  Im2colGeom im2col_{};        // im2col_gemm
  SgemmSplit split_;
  size_t planes_at_ = 0, scratch_at_ = 0, ws_floats_ = 0;  // workspace layout, in floats
  std::unique_ptr<WinogradConv> winograd_;                 // winograd_f2x2, winograd_f4x4
  // depthwise, channel-blocked: ring rows, padded row width, (image, block)
  // units, tasks, each task's buffer in floats.
  bool dw_blocked_ = false;
  int64_t dw_ring_ = 0, dw_wp_ = 0, dw_blocks_ = 0, dw_tasks_ = 1;
  size_t dw_task_floats_ = 0;
};

// ConvTranspose: per image and group, col = W_g^T * X_g, then col2im adds
// each column into the output window it came from.
// 2-D ConvTranspose: per image and group, one product into columns
// (cols[c, kh, kw][input pixel] = sum over input channels of w * x) on the
// SGEMM engine over the pool, the weights packed into its A panels once
// when they are constant; then each output channel's plane, in parallel,
// is the bias plus every column added into the output window it came from
// (col2im).
class ConvTransposeKernel final : public Kernel {
 public:
  ConvTransposeKernel(const Graph& g, const Node& n, int threads) : isa_(sgemm_default_isa()) {
    const auto& a = n.attrs_as<ConvAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    // Geometry of the forward conv that maps y -> x.
    q_ = conv_geometry(y, x, a, a.group);
    q_.m = x[1];
    q_.c = y[1];
    has_bias_ = n.input(2) >= 0;
    act_ = a.act;            // fused by the planner (2-D only)
    cg_ = q_.c / q_.groups;  // output channels per group
    mg_ = q_.m / q_.groups;  // input channels per group
    k_ = cg_ * q_.kh * q_.kw;
    hw_in_ = q_.oh * q_.ow;
    empty_ = q_.n == 0 || q_.c == 0 || hw_in_ == 0 || q_.h * q_.w == 0 || mg_ == 0;
    if (empty_) return;
    // A of group g: W_g transposed, element (r, c) = w[(g * mg + c) * k + r].
    a_floats_ = round_up16(sgemm_packed_a_floats(isa_, k_, mg_));
    if (const Tensor* w = in_const(g, n, 1)) {
      packed_a_ = AlignedFloats(a_floats_ * static_cast<size_t>(q_.groups));
      for (int64_t gi = 0; gi < q_.groups; ++gi)
        sgemm_pack_a(isa_, w->data<float>() + gi * mg_ * k_, 1, k_, k_, mg_, packed_a_.data() + gi * a_floats_);
    }
    split_ = sgemm_split(isa_, q_.n * q_.groups, k_, hw_in_, mg_, threads, 0, true);
    // Workspace: [columns per image and group][A per group, when W is not constant][SGEMM scratch].
    cols_floats_ = round_up16(static_cast<size_t>(q_.n * q_.groups * k_ * hw_in_));
    scratch_at_ = cols_floats_ + (packed_a_.empty() ? a_floats_ * static_cast<size_t>(q_.groups) : 0);
    ws_bytes_ = scratch_at_ * sizeof(float) + sgemm_workspace_bytes(split_, isa_, mg_, hw_in_, true);
  }
  size_t workspace_bytes() const override { return empty_ ? 0 : ws_bytes_; }
  bool packs_input(size_t input) const override { return input == 1 && !packed_a_.empty(); }
  size_t packed_bytes() const override { return packed_a_.size() * sizeof(float); }
  std::string describe() const override {
    return std::string("sgemm+col2im isa=") + sgemm_isa_name(isa_) + (act_.none() ? "" : " act=" + act_.name());
  }
  void run(const KernelArgs& args) override {
    if (empty_) {
      // No columns: the output is the bias alone (or zeros).
      fill_bias(args, 0, q_.n * q_.c);
      return;
    }
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    float* ws = static_cast<float*>(args.workspace);
    ThreadPool& pool = *args.pool;
    const float* a = packed_a_.data();
    if (packed_a_.empty()) {
      float* dst = ws + cols_floats_;
      for (int64_t gi = 0; gi < q_.groups; ++gi)
        sgemm_pack_a_parallel(pool, isa_, w + gi * mg_ * k_, 1, k_, k_, mg_, dst + gi * a_floats_);
      a = dst;
    }
    sgemm_run_batch(pool, split_, isa_, k_, hw_in_, mg_, ws + scratch_at_, [&](int64_t it, SgemmArgs& g) {
      const int64_t gi = it % q_.groups, img = it / q_.groups;
      g.isa = isa_;
      g.m = k_;
      g.n = hw_in_;
      g.k = mg_;
      g.a = a + gi * a_floats_;
      g.b = SgemmB::matrix(x + (img * q_.m + gi * mg_) * hw_in_, hw_in_, 1);
      g.c = ws + it * k_ * hw_in_;
      g.ldc = hw_in_;
    });
    // col2im: output channel planes over the pool.
    const int64_t hw_out = q_.h * q_.w;
    float* y = static_cast<float*>(args.outputs[0]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    pool.parallel_for(q_.n * q_.c, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t img = p / q_.c, ch = p % q_.c, gi = ch / cg_, c = ch % cg_;
        const float* col = ws + (img * q_.groups + gi) * k_ * hw_in_;
        float* yc = y + p * hw_out;
        std::fill(yc, yc + hw_out, b ? b[ch] : 0.0f);
        for (int64_t i = 0; i < q_.kh; ++i)
          for (int64_t j = 0; j < q_.kw; ++j) {
            const float* cr = col + ((c * q_.kh + i) * q_.kw + j) * hw_in_;
            for (int64_t oh = 0; oh < q_.oh; ++oh) {
              const int64_t ih = oh * q_.sh - q_.ph + i * q_.dh;
              if (ih < 0 || ih >= q_.h) continue;
              float* yr = yc + ih * q_.w;
              const float* crr = cr + oh * q_.ow;
              // The columns ow whose iw = ow * sw - pw + j * dw lands inside the row.
              const int64_t off = j * q_.dw - q_.pw, last = q_.w - 1 - off;
              if (last < 0) continue;
              const int64_t ow0 = off >= 0 ? 0 : (-off + q_.sw - 1) / q_.sw;
              const int64_t ow1 = std::min(q_.ow, last / q_.sw + 1);
              if (q_.sw == 1) {
                for (int64_t ow = ow0; ow < ow1; ++ow) yr[ow + off] += crr[ow];
              } else {
                for (int64_t ow = ow0; ow < ow1; ++ow) yr[ow * q_.sw + off] += crr[ow];
              }
            }
          }
        if (!act_.none()) apply_activation(act_, yc, hw_out);  // the plane is whole, and in cache
      }
    });
  }

 private:
  static size_t round_up16(size_t n) { return (n + 15) / 16 * 16; }
  // y = the bias (or 0) on planes [p0, p1) of (image, channel).
  void fill_bias(const KernelArgs& args, int64_t p0, int64_t p1) const {
    const int64_t hw_out = q_.h * q_.w;
    if (hw_out == 0) return;
    float* y = static_cast<float*>(args.outputs[0]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    for (int64_t p = p0; p < p1; ++p) {
      std::fill(y + p * hw_out, y + (p + 1) * hw_out, b ? b[p % q_.c] : 0.0f);
      if (!act_.none()) apply_activation(act_, y + p * hw_out, hw_out);
    }
  }

  SgemmIsa isa_;
  Geometry q_;
  Activation act_;
  bool has_bias_ = false, empty_ = false;
  int64_t cg_ = 0, mg_ = 0, k_ = 0, hw_in_ = 0;
  AlignedFloats packed_a_;
  size_t a_floats_ = 0, cols_floats_ = 0, scratch_at_ = 0, ws_bytes_ = 0;
  SgemmSplit split_;
};

// 3-D convolutions (video and volumetric models), plainly: per image and
// group, the window's taps gathered into columns (im2col over three axes,
// zeros for the padding), one product with the group's weights, then bias,
// a fused residual and the fused activation. ConvTranspose runs the other
// way: one product into columns, each column added into the output window
// it came from (col2im). The tuned 2-D lowerings above take no 3-D shape, so
// the tuner has no choice to make here.
struct Geometry3 {
  int64_t n = 0, c = 0, m = 0, groups = 1;  // c: the input's channels, m: the output's
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t taps() const { return k[0] * k[1] * k[2]; }
};

// Of the forward convolution from `x` (the larger side of a ConvTranspose) to `y`.
Geometry3 geometry3(const Shape& x, const Shape& y, const WindowAttrs& a, int64_t groups) {
  Geometry3 q;
  q.n = x[0];
  q.c = x[1];
  q.m = y[1];
  q.groups = groups;
  for (int i = 0; i < 3; ++i) {
    q.in[i] = x[2 + i];
    q.out[i] = y[2 + i];
    q.k[i] = a.kernel_shape[i];
    q.s[i] = a.strides[i];
    q.d[i] = a.dilations[i];
    q.p[i] = a.pad_begin(i);
  }
  return q;
}

// Calls f(row, column, input offset) for each tap row (channel, tap) and
// output position of one group's channels inside the input; taps in the
// padding are skipped (the caller has zeroed or ignores them).
template <typename F>
void for_each_tap3(const Geometry3& q, int64_t channels, F&& f) {
  const int64_t cols = q.out_plane();
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t a = 0; a < q.k[0]; ++a)
      for (int64_t b = 0; b < q.k[1]; ++b)
        for (int64_t c = 0; c < q.k[2]; ++c) {
          const int64_t row = ((ch * q.k[0] + a) * q.k[1] + b) * q.k[2] + c;
          for (int64_t o0 = 0; o0 < q.out[0]; ++o0) {
            const int64_t i0 = o0 * q.s[0] - q.p[0] + a * q.d[0];
            if (i0 < 0 || i0 >= q.in[0]) continue;
            for (int64_t o1 = 0; o1 < q.out[1]; ++o1) {
              const int64_t i1 = o1 * q.s[1] - q.p[1] + b * q.d[1];
              if (i1 < 0 || i1 >= q.in[1]) continue;
              const int64_t base = (ch * q.in[0] + i0) * q.in[1] + i1;
              for (int64_t o2 = 0; o2 < q.out[2]; ++o2) {
                const int64_t i2 = o2 * q.s[2] - q.p[2] + c * q.d[2];
                if (i2 < 0 || i2 >= q.in[2]) continue;
                f(row * cols + (o0 * q.out[1] + o1) * q.out[2] + o2, base * q.in[2] + i2);
              }
            }
          }
        }
}

// The (image, group) units of a 3-D kernel cut into one task per thread
// (at most), each with its own columns in the workspace.
struct Units3 {
  int64_t units = 0, tasks = 1;
  Units3(int64_t n, int threads) : units(n), tasks(std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1))) {}
  template <typename F>
  void run(ThreadPool& pool, F&& fn) const {
    pool.parallel_ranges(
        tasks, [&](int64_t t) { return t * units / tasks; }, (units + tasks - 1) / tasks,
        [&](int64_t t, int64_t u0, int64_t u1) {
          for (int64_t u = u0; u < u1; ++u) fn(t, u);
        });
  }
};

// What the 3-D kernels share: the geometry of the forward convolution (for
// ConvTranspose, the convolution whose transpose it is), the (image, group)
// units cut into tasks, channels per group and the columns' rows, and a
// workspace of one column matrix per task.
class Conv3dBase : public Kernel {
 public:
  Conv3dBase(Geometry3 q, int threads, bool has_bias)
      : q_(q),
        units_(q_.n * q_.groups, threads),
        cg_(q_.c / q_.groups),
        mg_(q_.m / q_.groups),
        k_(cg_ * q_.taps()),
        has_bias_(has_bias) {}
  size_t workspace_bytes() const override {
    return static_cast<size_t>(units_.tasks * k_ * q_.out_plane()) * sizeof(float);
  }

 protected:
  Geometry3 q_;
  Units3 units_;
  int64_t cg_, mg_, k_;  // the forward convolution's input and output channels per group; column rows
  bool has_bias_;
};

class Conv3dKernel final : public Conv3dBase {
 public:
  Conv3dKernel(const Graph& g, const Node& n, int threads)
      : Conv3dBase(
            geometry3(in_shape(g, n, 0), out_shape(g, n, 0), n.attrs_as<ConvAttrs>(), n.attrs_as<ConvAttrs>().group),
            threads, n.input(2) >= 0),
        residual_(n.input(3) >= 0),
        act_(n.attrs_as<ConvAttrs>().act) {}
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    const float* r = residual_ ? static_cast<const float*>(args.inputs[3]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    float* ws = static_cast<float*>(args.workspace);
    const int64_t cols = q_.out_plane(), in_plane = q_.in_plane();
    units_.run(*args.pool, [&](int64_t task, int64_t it) {
      const int64_t g = it % q_.groups, img = it / q_.groups;
      float* col = ws + task * k_ * cols;
      std::fill(col, col + k_ * cols, 0.0f);
      const float* xg = x + (img * q_.c + g * cg_) * in_plane;
      for_each_tap3(q_, cg_, [&](int64_t at, int64_t from) { col[at] = xg[from]; });
      float* yg = y + (img * q_.m + g * mg_) * cols;
      mat(yg, mg_, cols, cols).noalias() = cmat(w + g * mg_ * k_, mg_, k_, k_) * cmat(col, k_, cols, cols);
      for (int64_t o = 0; o < mg_; ++o) {
        float* yo = yg + o * cols;
        const float bias = b ? b[g * mg_ + o] : 0.0f;
        const float* ro = r ? r + (yo - y) : nullptr;
        for (int64_t i = 0; i < cols; ++i) yo[i] += bias + (ro ? ro[i] : 0.0f);
        apply_activation(act_, yo, cols);
      }
    });
  }

 private:
  bool residual_;
  Activation act_;
};

class ConvTranspose3dKernel final : public Conv3dBase {
 public:
  // The forward convolution maps y (its input) to x (its output): cg_ is
  // the output channels per group here, mg_ the input ones.
  ConvTranspose3dKernel(const Graph& g, const Node& n, int threads)
      : Conv3dBase(
            geometry3(out_shape(g, n, 0), in_shape(g, n, 0), n.attrs_as<ConvAttrs>(), n.attrs_as<ConvAttrs>().group),
            threads, n.input(2) >= 0) {}
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    float* ws = static_cast<float*>(args.workspace);
    const int64_t cols = q_.out_plane(), y_plane = q_.in_plane();
    units_.run(*args.pool, [&](int64_t task, int64_t it) {
      const int64_t g = it % q_.groups, img = it / q_.groups;
      float* col = ws + task * k_ * cols;
      const float* xg = x + (img * q_.m + g * mg_) * cols;
      mat(col, k_, cols, cols).noalias() = cmat(w + g * mg_ * k_, mg_, k_, k_).transpose() * cmat(xg, mg_, cols, cols);
      float* yg = y + (img * q_.c + g * cg_) * y_plane;
      for (int64_t c = 0; c < cg_; ++c) std::fill(yg + c * y_plane, yg + (c + 1) * y_plane, b ? b[g * cg_ + c] : 0.0f);
      for_each_tap3(q_, cg_, [&](int64_t at, int64_t to) { yg[to] += col[at]; });
    });
  }
};

std::unique_ptr<Kernel> make_conv(const Graph& g, const Node& n, int threads) {
  if (in_shape(g, n, 0).size() == 5) return std::make_unique<Conv3dKernel>(g, n, threads);
  return std::make_unique<ConvKernel>(g, n, threads, default_algo(conv_shape(g, n)));
}
std::unique_ptr<Kernel> make_conv_transpose(const Graph& g, const Node& n, int threads) {
  if (in_shape(g, n, 0).size() == 5) return std::make_unique<ConvTranspose3dKernel>(g, n, threads);
  return std::make_unique<ConvTransposeKernel>(g, n, threads);
}

// The lowering a caller named, or a sentence naming the node and op.
Algo checked_algo(const Graph& g, const Node& n, const std::string& name) {
  Algo a;
  if (!algo_named(name, &a)) {
    std::string known;
    for (Algo k : kAlgos) known += std::string(known.empty() ? "" : ", ") + algo_name(k);
    node_fail(ErrorCode::kInvalidArgument, g, n,
              "the CPU backend has no Conv algorithm named '" + name + "' (it has " + known + ")");
  }
  std::string why = declined(conv_shape(g, n), a);
  if (!why.empty())
    node_fail(ErrorCode::kInvalidArgument, g, n,
              std::string("Conv algorithm ") + algo_name(a) + " cannot run this node: " + why);
  return a;
}

}  // namespace

const std::vector<std::string>& conv_algorithm_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (Algo a : kAlgos) v.push_back(algo_name(a));
    return v;
  }();
  return names;
}

std::string conv_algorithm_declined(const Graph& g, const Node& n, const std::string& algo) {
  Algo a;
  if (!algo_named(algo, &a)) return "is not a CPU Conv algorithm";
  return declined(conv_shape(g, n), a);
}

std::string conv_heuristic_algorithm(const Graph& g, const Node& n, int threads) {
  return algo_name(default_algo(conv_shape(g, n)));
}

std::unique_ptr<Kernel> make_conv_kernel(const Graph& g, const Node& n, int threads, const std::string& algo) {
  return std::make_unique<ConvKernel>(g, n, threads, checked_algo(g, n, algo));
}

size_t conv_workspace_bytes(const Graph& g, const Node& n, int threads, const std::string& algo) {
  return ConvKernel(g, n, threads, checked_algo(g, n, algo), /*plan_only=*/true).workspace_bytes();
}

void add_conv_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Conv", make_conv});
  out.push_back({"ConvTranspose", make_conv_transpose});
}

}  // namespace minirt::cpu
