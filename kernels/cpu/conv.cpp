// Conv and ConvTranspose on the CPU.
//
// Conv picks one of three algorithms from the shape:
//   - depthwise: one filter per channel (group == C == M), direct loops;
//   - gemm_1x1:  1x1, stride 1, no padding: the input already is the GEMM
//                operand, no im2col;
//   - im2col_gemm: everything else, per group.
// GEMM work is cut into tiles of output columns (and rows when there are few
// columns); each task unrolls its tile's patches into its own scratch and
// multiplies with Eigen. Bias and the fused activation are applied to each
// tile while it is still in cache.
#include "kernels/cpu/eigen_util.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/conv.h"

#include <algorithm>
#include <cstring>

namespace minirt::cpu {

namespace {

// Geometry of a (1-D or) 2-D convolution; 1-D is 2-D with height 1.
struct Geometry {
  int64_t n, c, h, w;      // input
  int64_t m, oh, ow;       // output
  int64_t kh, kw, sh, sw, dh, dw, ph, pw;
  int64_t groups;
};

Geometry geometry(const Shape& x, const Shape& y, const WindowAttrs& a, int64_t groups) {
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

// Unrolls input patches for output columns [c0, c0 + cols) of one image and
// group into col (rows = cg*kh*kw, row stride = cols).
void im2col(const Geometry& q, const float* x, int64_t cg, int64_t c0, int64_t cols, float* col) {
  int64_t row = 0;
  for (int64_t c = 0; c < cg; ++c) {
    const float* xc = x + c * q.h * q.w;
    for (int64_t i = 0; i < q.kh; ++i) {
      for (int64_t j = 0; j < q.kw; ++j, ++row) {
        float* dst = col + row * cols;
        int64_t oh = c0 / q.ow, ow = c0 % q.ow;
        for (int64_t k = 0; k < cols;) {
          int64_t ih = oh * q.sh - q.ph + i * q.dh;
          int64_t run = std::min(cols - k, q.ow - ow);  // rest of this output row
          if (ih < 0 || ih >= q.h) {
            std::fill(dst + k, dst + k + run, 0.0f);
          } else {
            const float* xr = xc + ih * q.w;
            int64_t iw = ow * q.sw - q.pw + j * q.dw;
            if (q.sw == 1 && iw >= 0 && iw + run <= q.w) {
              std::memcpy(dst + k, xr + iw, static_cast<size_t>(run) * sizeof(float));
            } else {
              for (int64_t t = 0; t < run; ++t, iw += q.sw) dst[k + t] = (iw >= 0 && iw < q.w) ? xr[iw] : 0.0f;
            }
          }
          k += run;
          ow = 0;
          ++oh;
        }
      }
    }
  }
}

void bias_act(float* y, int64_t rows, int64_t cols, int64_t ld, const float* bias, const Activation& act) {
  for (int64_t r = 0; r < rows; ++r) {
    float* p = y + r * ld;
    if (bias) {
      float b = bias[r];
      for (int64_t k = 0; k < cols; ++k) p[k] += b;
    }
    act.apply(p, cols);
  }
}

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const Graph& g, const Node& n, int threads) : threads_(threads) {
    const auto& a = n.attrs_as<ConvAttrs>();
    q_ = geometry(in_shape(g, n, 0), out_shape(g, n, 0), a, a.group);
    act_ = a.act;
    has_bias_ = n.input(2) >= 0;
    cg_ = q_.c / q_.groups;
    mg_ = q_.m / q_.groups;
    k_ = cg_ * q_.kh * q_.kw;
    int64_t cols = q_.oh * q_.ow;
    // An empty batch (N = 0) has nothing to compute, and no tiles to cut.
    empty_ = q_.n == 0 || q_.m == 0 || cols == 0;
    if (q_.groups == q_.c && q_.m == q_.c) {
      algo_ = Algo::kDepthwise;
    } else if (q_.kh == 1 && q_.kw == 1 && q_.sh == 1 && q_.sw == 1 && q_.ph == 0 && q_.pw == 0 &&
               q_.oh == q_.h && q_.ow == q_.w) {
      algo_ = Algo::kGemm1x1;
    } else {
      algo_ = Algo::kIm2col;
    }
    if (algo_ == Algo::kDepthwise || empty_) return;
    // Column tiles of about 256 KiB of patches, at least 16 columns wide.
    col_tile_ = std::clamp<int64_t>((256 * 1024 / 4) / std::max<int64_t>(k_, 1), 16, 1024);
    col_tile_ = std::min(col_tile_, cols);
    col_tiles_ = (cols + col_tile_ - 1) / col_tile_;
    int64_t items = q_.n * q_.groups * col_tiles_;
    // Few columns (late layers): also split output channels.
    row_tiles_ = 1;
    if (items < threads_ && mg_ >= 32) row_tiles_ = std::min<int64_t>((threads_ + items - 1) / items, mg_ / 16);
    row_tile_ = (mg_ + row_tiles_ - 1) / row_tiles_;
    row_tiles_ = (mg_ + row_tile_ - 1) / row_tile_;
    tasks_ = std::max<int64_t>(1, std::min<int64_t>(threads_, items * row_tiles_));
  }

  size_t workspace_bytes() const override {
    if (algo_ != Algo::kIm2col || empty_) return 0;
    return static_cast<size_t>(tasks_ * k_ * col_tile_) * sizeof(float);
  }

  std::string describe() const override {
    switch (algo_) {
      case Algo::kDepthwise: return "algo=depthwise";
      case Algo::kGemm1x1: return "algo=gemm_1x1";
      case Algo::kIm2col: return "algo=im2col_gemm";
    }
    return {};
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    if (empty_) return;
    if (algo_ == Algo::kDepthwise) return depthwise(x, w, b, y, *args.pool);
    float* ws = static_cast<float*>(args.workspace);
    int64_t items = q_.n * q_.groups * col_tiles_ * row_tiles_;
    int64_t per_task = (items + tasks_ - 1) / tasks_;
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        float* col = ws ? ws + t * k_ * col_tile_ : nullptr;
        int64_t last = std::min(items, (t + 1) * per_task);
        for (int64_t it = t * per_task; it < last; ++it) tile(it, x, w, b, y, col);
      }
    };
    args.pool->parallel_for(tasks_, body);
  }

 private:
  enum class Algo { kDepthwise, kGemm1x1, kIm2col };

  // One work item: image, group, column tile, row tile.
  void tile(int64_t it, const float* x, const float* w, const float* b, float* y, float* col) const {
    int64_t rt = it % row_tiles_;
    it /= row_tiles_;
    int64_t ct = it % col_tiles_;
    it /= col_tiles_;
    int64_t g = it % q_.groups;
    int64_t img = it / q_.groups;
    int64_t hw_out = q_.oh * q_.ow;
    int64_t c0 = ct * col_tile_;
    int64_t cols = std::min(col_tile_, hw_out - c0);
    int64_t r0 = rt * row_tile_;
    int64_t rows = std::min(row_tile_, mg_ - r0);
    const float* xg = x + (img * q_.c + g * cg_) * q_.h * q_.w;
    const float* wg = w + (g * mg_ + r0) * k_;
    float* yg = y + (img * q_.m + g * mg_ + r0) * hw_out + c0;
    if (algo_ == Algo::kGemm1x1) {
      mat(yg, rows, cols, hw_out).noalias() = cmat(wg, rows, k_, k_) * cmat(xg + c0, k_, cols, q_.h * q_.w);
    } else {
      im2col(q_, xg, cg_, c0, cols, col);
      mat(yg, rows, cols, hw_out).noalias() = cmat(wg, rows, k_, k_) * cmat(col, k_, cols, cols);
    }
    bias_act(yg, rows, cols, hw_out, b ? b + g * mg_ + r0 : nullptr, act_);
  }

  void depthwise(const float* x, const float* w, const float* b, float* y, ThreadPool& pool) const {
    const Geometry& q = q_;
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        int64_t c = p % q.c;
        const float* xp = x + p * q.h * q.w;
        const float* wc = w + c * q.kh * q.kw;
        float* yp = y + p * q.oh * q.ow;
        float bias = b ? b[c] : 0.0f;
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
  Activation act_;
  bool has_bias_ = false;
  bool empty_ = false;
  int threads_;
  int64_t cg_ = 0, mg_ = 0, k_ = 0;
  Algo algo_ = Algo::kIm2col;
  int64_t col_tile_ = 1, col_tiles_ = 1, row_tile_ = 1, row_tiles_ = 1, tasks_ = 1;
};

// ConvTranspose: per image and group, col = W_g^T * X_g, then col2im adds
// each column into the output window it came from.
class ConvTransposeKernel final : public Kernel {
 public:
  ConvTransposeKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<ConvAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    // Geometry of the forward conv that maps y -> x.
    q_ = geometry(y, x, a, a.group);
    q_.m = x[1];
    q_.c = y[1];
    has_bias_ = n.input(2) >= 0;
    cg_ = q_.c / q_.groups;  // output channels per group
    mg_ = q_.m / q_.groups;  // input channels per group
    k_ = cg_ * q_.kh * q_.kw;
  }
  size_t workspace_bytes() const override {
    return static_cast<size_t>(q_.n * q_.groups * k_ * q_.oh * q_.ow) * sizeof(float);
  }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* w = static_cast<const float*>(args.inputs[1]);
    const float* b = has_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    float* ws = static_cast<float*>(args.workspace);
    int64_t hw_in = q_.oh * q_.ow;  // the transposed conv's input plane
    int64_t hw_out = q_.h * q_.w;
    auto body = [&](int64_t i0, int64_t i1) {
      for (int64_t it = i0; it < i1; ++it) {
        int64_t g = it % q_.groups, img = it / q_.groups;
        float* col = ws + it * k_ * hw_in;
        const float* xg = x + (img * q_.m + g * mg_) * hw_in;
        const float* wg = w + g * mg_ * k_;  // [mg, k] row-major
        mat(col, k_, hw_in, hw_in).noalias() = cmat(wg, mg_, k_, k_).transpose() * cmat(xg, mg_, hw_in, hw_in);
        float* yg = y + (img * q_.c + g * cg_) * hw_out;
        for (int64_t c = 0; c < cg_; ++c) {
          float* yc = yg + c * hw_out;
          std::fill(yc, yc + hw_out, b ? b[g * cg_ + c] : 0.0f);
          for (int64_t i = 0; i < q_.kh; ++i)
            for (int64_t j = 0; j < q_.kw; ++j) {
              const float* cr = col + ((c * q_.kh + i) * q_.kw + j) * hw_in;
              for (int64_t oh = 0; oh < q_.oh; ++oh) {
                int64_t ih = oh * q_.sh - q_.ph + i * q_.dh;
                if (ih < 0 || ih >= q_.h) continue;
                for (int64_t ow = 0; ow < q_.ow; ++ow) {
                  int64_t iw = ow * q_.sw - q_.pw + j * q_.dw;
                  if (iw >= 0 && iw < q_.w) yc[ih * q_.w + iw] += cr[oh * q_.ow + ow];
                }
              }
            }
        }
      }
    };
    args.pool->parallel_for(q_.n * q_.groups, body);
  }

 private:
  Geometry q_;
  bool has_bias_ = false;
  int64_t cg_ = 0, mg_ = 0, k_ = 0;
};

std::unique_ptr<Kernel> make_conv(const Graph& g, const Node& n, int threads) {
  return std::make_unique<ConvKernel>(g, n, threads);
}
std::unique_ptr<Kernel> make_conv_transpose(const Graph& g, const Node& n, int threads) {
  return std::make_unique<ConvTransposeKernel>(g, n, threads);
}

}  // namespace

void add_conv_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"Conv", make_conv});
  out.push_back({"ConvTranspose", make_conv_transpose});
}

}  // namespace minirt::cpu
