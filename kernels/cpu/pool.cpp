// MaxPool, AveragePool and the global pools on the CPU, for 1-D and 2-D
// windows (1-D runs as 2-D with height 1). Parallel over (image, channel)
// planes.
//
// Each output row is cut into the columns whose windows lie inside the
// input's width (the interior) and the rest. The interior is computed tap by
// tap over whole rows, loops the compiler vectorizes (strides 1 and 2 are
// compiled as constants); the border keeps the per-element bounds checks.
#include "kernels/cpu/registry.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/ops/conv.h"

#include <algorithm>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_POOL_AVX512 1
#else
#define MINIRT_POOL_AVX512 0
#endif

namespace minirt::cpu {

namespace {

#if MINIRT_POOL_AVX512
constexpr int64_t kMaxRowAvx512 = 4096;  // padded input columns one row pass may span

// One output row of MaxPool, strides 1 and 2: first the maximum over the
// window's rows, column by column, of the padded input row (padding columns
// are the lowest float, so they never win), then the maximum over each
// window's columns, 16 outputs per zmm. `rows` point at input column 0 of the
// rows inside the input; `ncols` = (ow - 1) * sw + (kw - 1) * dw + 1 <=
// kMaxRowAvx512. Maxima are taken as v > m ? v : m, so a NaN input never
// wins, exactly as the per-element loop. Only called when the CPU has AVX-512.
__attribute__((target("avx512f"))) void max_row_avx512(const float* const* rows, int64_t nrows, int64_t w, int64_t pw,
                                                       int64_t ncols, int64_t ow, int64_t kw, int64_t sw, int64_t dw,
                                                       float* y) {
  alignas(64) float tmp[kMaxRowAvx512 + 64];
  const __m512 low = _mm512_set1_ps(std::numeric_limits<float>::lowest());
  for (int64_t t = 0; t < ncols; t += 16) {
    // Lanes of padded columns [t, t + 16) that are input columns [0, w).
    int64_t lo = std::clamp<int64_t>(pw - t, 0, 16), hi = std::clamp<int64_t>(pw + w - t, 0, 16);
    __mmask16 m = static_cast<__mmask16>(lo < hi ? ((1u << hi) - 1) & ~((1u << lo) - 1) : 0u);
    __m512 v = low;
    for (int64_t r = 0; r < nrows; ++r) v = _mm512_max_ps(_mm512_mask_loadu_ps(low, m, rows[r] + t - pw), v);
    _mm512_store_ps(tmp + t, v);
  }
  _mm512_store_ps(tmp + (ncols + 15) / 16 * 16, low);
  _mm512_store_ps(tmp + (ncols + 15) / 16 * 16 + 16, low);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (int64_t o = 0; o < ow; o += 16) {
    int n = static_cast<int>(std::min<int64_t>(16, ow - o));
    __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    const float* b = tmp + o * sw;
    __m512 h0 = low, h1 = low;
    for (int64_t j = 0; j < kw; ++j, b += dw) {
      h0 = _mm512_max_ps(_mm512_loadu_ps(b), h0);
      if (sw == 2) h1 = _mm512_max_ps(_mm512_loadu_ps(b + 16), h1);
    }
    __m512 out = sw == 2 ? _mm512_permutex2var_ps(h0, even, h1) : h0;
    _mm512_mask_storeu_ps(y + o, m, out);
  }
}
#endif

struct PoolGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, peh, pew;
};

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const Graph& g, const Node& n, int) : a_(n.attrs_as<PoolAttrs>()) {
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    bool one_d = x.size() == 3;
    q_.planes = x[0] * x[1];
    q_.h = one_d ? 1 : x[2];
    q_.w = x.back();
    q_.oh = one_d ? 1 : y[2];
    q_.ow = y.back();
    size_t wi = one_d ? 0 : 1;
    q_.kh = one_d ? 1 : a_.kernel_shape[0];
    q_.kw = a_.kernel_shape[wi];
    q_.sh = one_d ? 1 : a_.strides[0];
    q_.sw = a_.strides[wi];
    q_.dh = one_d ? 1 : a_.dilations[0];
    q_.dw = a_.dilations[wi];
    int64_t sp = a_.spatial();
    q_.ph = one_d ? 0 : a_.pads[0];
    q_.peh = one_d ? 0 : a_.pads[sp];
    q_.pw = a_.pads[wi];
    q_.pew = a_.pads[sp + wi];
#if MINIRT_POOL_AVX512
    row_cols_ = (q_.ow - 1) * q_.sw + (q_.kw - 1) * q_.dw + 1;
    row_avx512_ = a_.kind == PoolKind::kMax && sgemm_best_isa() == SgemmIsa::kAvx512 && (q_.sw == 1 || q_.sw == 2) &&
                  q_.kh <= 64 && q_.ow > 0 && row_cols_ <= kMaxRowAvx512;
#endif
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    const PoolGeom& q = q_;
    // Interior columns: every tap of the window inside the input's width.
    int64_t ow_lo = std::min(q.ow, (q.pw + q.sw - 1) / q.sw);
    int64_t last = q.w - 1 - (q.kw - 1) * q.dw + q.pw;  // largest ow * sw allowed
    int64_t ow_hi = last < 0 ? ow_lo : std::clamp(last / q.sw + 1, ow_lo, q.ow);
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * q.h * q.w;
        float* yp = y + p * q.oh * q.ow;
        for (int64_t oh = 0; oh < q.oh; ++oh) {
          float* yr = yp + oh * q.ow;
#if MINIRT_POOL_AVX512
          if (row_avx512_) {
            const float* rows[64];
            int64_t nrows = 0;
            for (int64_t i = 0; i < q.kh; ++i) {
              int64_t ih = oh * q.sh - q.ph + i * q.dh;
              if (ih >= 0 && ih < q.h) rows[nrows++] = xp + ih * q.w;
            }
            max_row_avx512(rows, nrows, q.w, q.pw, row_cols_, q.ow, q.kw, q.sw, q.dw, yr);
            continue;
          }
#endif
          for (int64_t ow = 0; ow < ow_lo; ++ow) yr[ow] = window(xp, oh, ow);
          interior(xp, oh, yr, ow_lo, ow_hi);
          for (int64_t ow = ow_hi; ow < q.ow; ++ow) yr[ow] = window(xp, oh, ow);
        }
      }
    };
    args.pool->parallel_for(q.planes, body);
  }

 private:
  // One output of a window that may reach into the padding.
  float window(const float* xp, int64_t oh, int64_t ow) const {
    const PoolGeom& q = q_;
    bool is_max = a_.kind == PoolKind::kMax;
    int64_t hs = oh * q.sh - q.ph, ws = ow * q.sw - q.pw;
    // A window that holds only padding gives the lowest float, as in
    // onnxruntime (not -inf).
    float acc = is_max ? std::numeric_limits<float>::lowest() : 0.0f;
    int64_t inside = 0, padded = 0;
    for (int64_t i = 0; i < q.kh; ++i) {
      int64_t ih = hs + i * q.dh;
      bool h_in = ih >= 0 && ih < q.h;
      bool h_pad = ih >= -q.ph && ih < q.h + q.peh;
      for (int64_t j = 0; j < q.kw; ++j) {
        int64_t iw = ws + j * q.dw;
        bool w_in = iw >= 0 && iw < q.w;
        if (h_pad && iw >= -q.pw && iw < q.w + q.pew) ++padded;
        if (!h_in || !w_in) continue;
        float v = xp[ih * q.w + iw];
        if (is_max) acc = v > acc ? v : acc;
        else acc += v;
        ++inside;
      }
    }
    if (!is_max) {
      int64_t div = a_.count_include_pad ? padded : inside;
      acc = div > 0 ? acc / static_cast<float>(div) : 0.0f;
    }
    return acc;
  }

  // Outputs [ow0, ow1) of row oh, whose windows are inside the width: one
  // pass over the run per window row, each output combining that row's taps
  // in order (the same (i, j) order as window()). Strides 1 and 2 and widths
  // 2 and 3 are compiled as constants, so the passes vectorize.
  void interior(const float* xp, int64_t oh, float* yr, int64_t ow0, int64_t ow1) const {
    const PoolGeom& q = q_;
    if (ow0 >= ow1) return;
    bool is_max = a_.kind == PoolKind::kMax;
    int64_t hs = oh * q.sh - q.ph;
    std::fill(yr + ow0, yr + ow1, is_max ? std::numeric_limits<float>::lowest() : 0.0f);
    int64_t rows_in = 0, rows_pad = 0;
    for (int64_t i = 0; i < q.kh; ++i) {
      int64_t ih = hs + i * q.dh;
      if (ih >= -q.ph && ih < q.h + q.peh) ++rows_pad;
      if (ih < 0 || ih >= q.h) continue;
      ++rows_in;
      const float* src = xp + ih * q.w - q.pw;  // output ow, tap j reads src[ow * sw + j * dw]
      if (q.sw == 2 && q.kw == 3) row_pass<2, 3>(src, yr, ow0, ow1, is_max);
      else if (q.sw == 2 && q.kw == 2) row_pass<2, 2>(src, yr, ow0, ow1, is_max);
      else if (q.sw == 1 && q.kw == 3) row_pass<1, 3>(src, yr, ow0, ow1, is_max);
      else if (q.sw == 1 && q.kw == 2) row_pass<1, 2>(src, yr, ow0, ow1, is_max);
      else if (q.sw == 2) row_pass<2, 0>(src, yr, ow0, ow1, is_max);
      else if (q.sw == 1) row_pass<1, 0>(src, yr, ow0, ow1, is_max);
      else row_pass<0, 0>(src, yr, ow0, ow1, is_max);
    }
    if (!is_max) {
      int64_t div = (a_.count_include_pad ? rows_pad : rows_in) * q.kw;
      for (int64_t ow = ow0; ow < ow1; ++ow) yr[ow] = div > 0 ? yr[ow] / static_cast<float>(div) : 0.0f;
    }
  }

  // One window row into y[ow0, ow1): S is the stride and KW the window width
  // as constants, or 0 to read them at run time.
  template <int S, int KW>
  void row_pass(const float* src, float* y, int64_t ow0, int64_t ow1, bool is_max) const {
    const int64_t st = S ? S : q_.sw, kw = KW ? KW : q_.kw, dw = q_.dw;
    if (KW == 0) {  // tap by tap
      for (int64_t j = 0; j < kw; ++j) {
        const float* s = src + j * dw;
        if (is_max)
          for (int64_t ow = ow0; ow < ow1; ++ow) {
            float v = s[ow * st];
            y[ow] = v > y[ow] ? v : y[ow];
          }
        else
          for (int64_t ow = ow0; ow < ow1; ++ow) y[ow] += s[ow * st];
      }
      return;
    }
    if (is_max) {
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        float m = y[ow];
        for (int64_t j = 0; j < KW; ++j) {
          float v = src[ow * st + j * dw];
          m = v > m ? v : m;
        }
        y[ow] = m;
      }
    } else {
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        float a = y[ow];
        for (int64_t j = 0; j < KW; ++j) a += src[ow * st + j * dw];
        y[ow] = a;
      }
    }
  }

  PoolAttrs a_;
  PoolGeom q_{};
  // MaxPool rows with the AVX-512 pass: strides 1 and 2, the padded row in
  // its buffer, at most 64 window rows.
  int64_t row_cols_ = 0;
  bool row_avx512_ = false;
};

class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(const Graph& g, const Node& n, int) : is_max_(n.op == "GlobalMaxPool") {
    const Shape& x = in_shape(g, n, 0);
    planes_ = x[0] * x[1];
    size_ = shape_numel(x) / std::max<int64_t>(planes_, 1);
  }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * size_;
        // kLanes running maxima / double sums side by side (a loop the
        // compiler vectorizes), combined at the end.
        constexpr int kLanes = 16;
        const int64_t body_end = size_ / kLanes * kLanes;
        if (is_max_) {
          float m[kLanes];
          for (int j = 0; j < kLanes; ++j) m[j] = -std::numeric_limits<float>::infinity();
          for (int64_t i = 0; i < body_end; i += kLanes)
            for (int j = 0; j < kLanes; ++j) m[j] = xp[i + j] > m[j] ? xp[i + j] : m[j];
          float r = -std::numeric_limits<float>::infinity();
          for (int j = 0; j < kLanes; ++j) r = m[j] > r ? m[j] : r;
          for (int64_t i = body_end; i < size_; ++i) r = xp[i] > r ? xp[i] : r;
          y[p] = r;
        } else {
          double s[kLanes] = {};
          for (int64_t i = 0; i < body_end; i += kLanes)
            for (int j = 0; j < kLanes; ++j) s[j] += static_cast<double>(xp[i + j]);
          double r = 0;
          for (int j = 0; j < kLanes; ++j) r += s[j];
          for (int64_t i = body_end; i < size_; ++i) r += xp[i];
          y[p] = static_cast<float>(r / static_cast<double>(size_));
        }
      }
    };
    args.pool->parallel_for(planes_, body, 8);
  }

 private:
  bool is_max_;
  int64_t planes_ = 0, size_ = 0;
};

std::unique_ptr<Kernel> make_pool(const Graph& g, const Node& n, int t) { return std::make_unique<PoolKernel>(g, n, t); }
std::unique_ptr<Kernel> make_global(const Graph& g, const Node& n, int t) {
  return std::make_unique<GlobalPoolKernel>(g, n, t);
}

}  // namespace

void add_pool_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"MaxPool", make_pool});
  out.push_back({"AveragePool", make_pool});
  out.push_back({"GlobalMaxPool", make_global});
  out.push_back({"GlobalAveragePool", make_global});
}

}  // namespace minirt::cpu
