// MaxPool, AveragePool and the global pools on the CPU, for 1-D and 2-D
// windows (1-D runs as 2-D with height 1), LpPool (2-D, plain layout, each
// window read tap by tap), and the pooling engines the
// channel-blocked kernels share (nchwc_ops.h: pixels of `lanes` floats; the
// plain layout is lanes = 1).
//
//   PoolEngine e(window, planes, /*lanes=*/1, threads);   // plan time
//   e.run(x, y, workspace, pool);                          // workspace_bytes() of scratch
//
// Windowed pools are separable: a band of output rows is first reduced over
// the window's rows, straight from the input rows into rows padded on both
// sides (whole rows at a time), then along each row over the window's
// columns, every sw-th column going to the output; a k x k window costs
// about 2k taps per output rather than k^2, and an average divides the
// separable sum by its count once. Long max windows on pixels of one float
// (the SPP block's 9 and 13) copy the rows into padded tiles instead and
// double spans in place (max over 2m taps = max of two m-spans, the last
// step overlapping): about log2(k) + 1 passes per axis, each one long run.
// The primitives are vectorized for AVX-512 or AVX2 (chosen at plan time
// from the ISA kernels are made for; pool_avx512.cpp, pool_avx2.cpp) with a
// portable fallback. Work is cut into (plane, band) units, small planes
// stacked several to a unit, dealt to one task per workspace slice.
#include "kernels/cpu/nchwc_ops.h"
#include "kernels/cpu/pool_isa.h"
#include "kernels/cpu/pool_scalar.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#define MINIRT_POOL_X86 1
#else
#define MINIRT_POOL_X86 0
#endif

namespace minirt::cpu {

namespace {

constexpr int64_t kTileFloats = 16384;   // a band's padded tile, at most (64 KiB: in L2 across its passes)
constexpr int64_t kGrainFloats = 16384;  // floats read and written per task, at least
// Max windows of this many taps or more along an axis double their spans;
// shorter ones (and every sum) read each tap. Pixels of one float double
// from the SPP block's 9 and 13; whole-vector pixels read every tap up to
// 13 faster than they copy the tile the doubling needs (measured on Zen 5,
// bench/kernels_bench_data.cpp's SppMaxPool and NchwcSppMaxPool).
constexpr int64_t kDoubleFrom = 8;
constexpr int64_t kDoubleFromVector = 16;

size_t round16(int64_t n) { return static_cast<size_t>((n + 15) / 16 * 16); }

// ---------------------------------------------------------------- primitives
//
// PixelOps (pool_isa.h): the portable forms here, the AVX-512 and AVX2 ones
// in their ISA files (pool_avx512.cpp, pool_avx2.cpp).

struct MaxOp {
  static float s(float a, float b) { return a > b ? a : b; }
};

template <class Op>
void pair_row_generic(float* dst, const float* a, const float* b, int64_t npix, int64_t lanes, int64_t sa) {
  if (sa == lanes) {
    for (int64_t i = 0, n = npix * lanes; i < n; ++i) dst[i] = Op::s(a[i], b[i]);
    return;
  }
  for (int64_t p = 0; p < npix; ++p)
    for (int64_t l = 0; l < lanes; ++l) dst[p * lanes + l] = Op::s(a[p * sa + l], b[p * sa + l]);
}

template <class Op>
void pair_generic(float* dst, int64_t ldd, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t rows,
                  int64_t npix, int64_t lanes, int64_t sa) {
  merge_rows(rows, npix, lanes, sa, ldd, lda, ldb);
  for (int64_t r = 0; r < rows; ++r) pair_row_generic<Op>(dst + r * ldd, a + r * lda, b + r * ldb, npix, lanes, sa);
}

void pad_rows_generic(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t rows, int64_t left, int64_t mid,
                      int64_t right, int64_t lanes, float fill, bool floor) {
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dst + r * ldd;
    const float* s = src + r * lds;
    std::fill_n(d, left * lanes, fill);
    d += left * lanes;
    for (int64_t i = 0; i < mid * lanes; ++i) d[i] = !floor || s[i] > kLowest ? s[i] : kLowest;
    std::fill_n(d + mid * lanes, right * lanes, fill);
  }
}

void vert_generic(float* dst, int64_t ldd, const float* x, int64_t ldx, int64_t h, int64_t first, int64_t sh,
                  int64_t kh, int64_t dh, int64_t rows, int64_t left, int64_t mid, int64_t right, int64_t lanes,
                  float fill, bool is_max) {
  for (int64_t r = 0; r < rows; ++r) {
    float* d = dst + r * ldd;
    int64_t start = first + r * sh, t0, t1;
    taps_inside(start, kh, dh, h, t0, t1);
    std::fill_n(d, left * lanes, fill);
    d += left * lanes;
    for (int64_t i = 0; i < mid * lanes; ++i) {
      float acc = is_max ? kLowest : 0.0f;
      for (int64_t t = t0; t < t1; ++t) {
        float v = x[((start + t * dh) * ldx) + i];
        acc = is_max ? (v > acc ? v : acc) : acc + v;
      }
      d[i] = acc;
    }
    std::fill_n(d + mid * lanes, right * lanes, fill);
  }
}

void hwin_generic(float* dst, int64_t ldd, const float* v, int64_t ldv, int64_t rows, int64_t npix, int64_t lanes,
                  int64_t sa, int64_t k, int64_t step, bool is_max, const float* q, int64_t ldq) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < npix; ++p)
      for (int64_t l = 0; l < lanes; ++l) {
        const float* s = v + r * ldv + p * sa + l;
        float acc = s[0];
        for (int64_t t = 1; t < k; ++t) acc = is_max ? (s[t * step] > acc ? s[t * step] : acc) : acc + s[t * step];
        dst[r * ldd + p * lanes + l] = q ? acc / q[r * ldq + p] : acc;
      }
}

const PixelOps& pixel_ops(SgemmIsa isa) {
  static const PixelOps generic{pair_generic<MaxOp>, pad_rows_generic,   vert_generic,
                                hwin_generic,        reduce_max_generic, reduce_mean_generic};
#if MINIRT_POOL_X86
  if (isa == SgemmIsa::kAvx512) return pool_pixel_ops_avx512();
  if (isa == SgemmIsa::kAvx2) return pool_pixel_ops_avx2();
#endif
  return generic;
}

// One contiguous run, in place.
void flat(PixelOps::Pair op, float* dst, const float* a, const float* b, int64_t n) {
  op(dst, 0, a, 0, b, 0, 1, n, 1, 1);
}

// In place over a[0, n): a[i] becomes the max of a[i + t * step] for t < m,
// the largest power of two m <= k, by doubling spans; returns m. The caller
// finishes a k-tap window with max(a[i], a[i + (k - m) * step]) (spans
// overlap when k is not a power of two; max does not mind).
int64_t double_max(const PixelOps& ops, float* a, int64_t n, int64_t k, int64_t step) {
  int64_t m = 1;
  for (; 2 * m <= k; m *= 2) flat(ops.max2, a, a, a + m * step, n - (2 * m - 1) * step);
  return m;
}

// How many of the k taps starting at `start` (step d) fall in [lo, hi).
int64_t taps_in(int64_t start, int64_t k, int64_t d, int64_t lo, int64_t hi) {
  int64_t c = 0;
  for (int64_t t = 0; t < k; ++t) c += start + t * d >= lo && start + t * d < hi;
  return c;
}

}  // namespace

// ---------------------------------------------------------------- PoolEngine

PoolEngine::PoolEngine(const PoolWindow& q, int64_t planes, int64_t lanes, int threads)
    : q_(q), planes_(planes), lanes_(lanes), isa_(sgemm_default_isa()) {
  if (planes_ <= 0 || q.oh <= 0 || q.ow <= 0) {
    tasks_ = 0;
    return;
  }
  wp_ = (q.ow - 1) * q.sw + (q.kw - 1) * q.dw + 1;
  const int64_t row = wp_ * lanes_;
  const int64_t halo = (q.kh - 1) * q.dh + 1;  // tile rows one output row reads
  // Output rows per band: the tile fits kTileFloats but holds at least three
  // times the rows a window spans (so that rows read twice, by two bands,
  // stay a small part), and there are bands enough for every thread when
  // the planes are few.
  double_from_ = lanes_ == 1 ? kDoubleFrom : kDoubleFromVector;
  int64_t fit = std::max<int64_t>(kTileFloats / row, 3 * halo);
  band_ = std::clamp<int64_t>((fit - halo) / q.sh + 1, 1, q.oh);
  const int64_t spread = 2 * static_cast<int64_t>(threads);  // units wanted at least
  int64_t want = (spread + planes_ - 1) / planes_;
  if (threads > 1 && want > 1) band_ = std::min(band_, std::max<int64_t>(1, (q.oh + want - 1) / want));
  bands_ = (q.oh + band_ - 1) / band_;
  const int64_t tile_rows = (band_ - 1) * q.sh + halo;
  // Whole small planes are stacked into one tile, so that each pass over
  // the stack is one long run.
  group_ = 1;
  if (bands_ == 1) {
    group_ = std::max<int64_t>(1, kTileFloats / (tile_rows * row));
    group_ = std::min(group_, threads > 1 ? std::max<int64_t>(1, planes_ / spread) : planes_);
  }
  units_ = bands_ > 1 ? planes_ * bands_ : (planes_ + group_ - 1) / group_;
  const int64_t moved = planes_ * lanes_ * (q.h * q.w + q.oh * q.ow);
  tasks_ = std::clamp<int64_t>(moved / kGrainFloats, 1, std::min<int64_t>(threads, units_));
  slice_ = round16(group_ * tile_rows * row);
  if (!q.is_max) {
    // Window positions inside the input, or inside the pads (not the
    // overhang ceil_mode adds) with count_include_pad, per axis; a window
    // with none sums only padding zeros, and 0 / inf = 0.
    auto count = [&](int64_t o, int64_t s, int64_t k, int64_t d, int64_t pb, int64_t pe, int64_t len) {
      return q.count_include_pad ? taps_in(o * s - pb, k, d, -pb, len + pe) : taps_in(o * s - pb, k, d, 0, len);
    };
    for (int64_t oh = 0; oh < q.oh; ++oh)
      for (int64_t ow = 0; ow < q.ow; ++ow) {
        int64_t n = count(oh, q.sh, q.kh, q.dh, q.ph, q.peh, q.h) * count(ow, q.sw, q.kw, q.dw, q.pw, q.pew, q.w);
        divisors_.push_back(n > 0 ? static_cast<float>(n) : kInf);
      }
  }
}

void PoolEngine::run(const float* x, float* y, float* workspace, ThreadPool& pool) const {
  if (tasks_ == 0) return;
  const int64_t in_plane = q_.h * q_.w * lanes_, out_plane = q_.oh * q_.ow * lanes_;
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* scratch = workspace + static_cast<size_t>(t) * slice_;
      for (int64_t u = units_ * t / tasks_, ue = units_ * (t + 1) / tasks_; u < ue; ++u) {
        if (bands_ > 1) {
          int64_t p = u / bands_, o0 = (u % bands_) * band_;
          band(x + p * in_plane, y + p * out_plane, 1, o0, std::min(q_.oh, o0 + band_), scratch);
        } else {
          int64_t p = u * group_;
          band(x + p * in_plane, y + p * out_plane, std::min(group_, planes_ - p), 0, q_.oh, scratch);
        }
      }
    }
  };
  pool.parallel_for(tasks_, body);
}

// Output rows [o0, o1) of `g` consecutive planes (g > 1 only with whole planes).
void PoolEngine::band(const float* xp, float* yp, int64_t g, int64_t o0, int64_t o1, float* scratch) const {
  const PoolWindow& q = q_;
  const PixelOps& ops = pixel_ops(isa_);
  const int64_t L = lanes_, row = wp_ * L, nb = o1 - o0;
  const int64_t in_plane = q.h * q.w * L, out_plane = q.oh * q.ow * L;
  const float fill = q.is_max ? kLowest : 0.0f;
  // Tile column j is input column j - pw: `left` columns of padding, `mid`
  // of the input, `right` of padding.
  const int64_t left = std::min(q.pw, wp_);
  const int64_t mid = std::clamp<int64_t>(wp_ - q.pw, 0, q.w);
  const int64_t right = wp_ - left - mid;
  const int64_t first = o0 * q.sh - q.ph;  // input row of the band's first window row

  // Over the window's rows: output row r of plane p into v + p * vb + r * row.
  float* v = scratch;
  int64_t vb = nb * row;
  if (q.is_max && q.sh == 1 && q.kh >= double_from_) {
    // Padded tiles of rows first ... first + rows - 1 (all padding outside
    // the input), stacked, then spans doubled in place over the stack.
    const int64_t rows = nb + (q.kh - 1) * q.dh;
    vb = rows * row;
    const int64_t top = std::clamp<int64_t>(-first, 0, rows);
    const int64_t inside =
        mid > 0 ? std::clamp<int64_t>(std::min(q.h, first + rows) - std::max<int64_t>(first, 0), 0, rows - top) : 0;
    for (int64_t p = 0; p < g; ++p) {
      float* t = v + p * vb;
      std::fill_n(t, top * row, fill);
      if (inside > 0)
        ops.pad_rows(t + top * row, row, xp + p * in_plane + (first + top) * q.w * L, q.w * L, inside, left, mid, right,
                     L, fill, true);
      std::fill_n(t + (top + inside) * row, (rows - top - inside) * row, fill);
    }
    const int64_t stack = g * vb, vstep = q.dh * row;
    int64_t m = double_max(ops, v, stack, q.kh, vstep);
    if (m < q.kh) flat(ops.max2, v, v, v + (q.kh - m) * vstep, stack - (q.kh - m) * vstep);
  } else {
    for (int64_t p = 0; p < g; ++p)
      ops.vert(v + p * vb, row, xp + p * in_plane, q.w * L, q.h, first, q.sh, q.kh, q.dh, nb, left, mid, right, L, fill,
               q.is_max);
  }

  // Over the window's columns, every sw-th column into the output rows.
  const int64_t hstep = q.dw * L, sa = q.sw * L, ldy = q.ow * L;
  float* y0 = yp + o0 * ldy;
  if (q.is_max && q.kw >= double_from_) {
    int64_t m = double_max(ops, v, (g - 1) * vb + nb * row, q.kw, hstep);
    int64_t last = (q.kw - m) * hstep;
    for (int64_t p = 0; p < g; ++p)
      ops.max2(y0 + p * out_plane, ldy, v + p * vb, row, v + p * vb + last, row, nb, q.ow, L, sa);
    return;
  }
  const float* divs = q.is_max ? nullptr : divisors_.data() + o0 * q.ow;
  for (int64_t p = 0; p < g; ++p)
    ops.hwin(y0 + p * out_plane, ldy, v + p * vb, row, nb, q.ow, L, sa, q.kw, hstep, q.is_max, divs, q.ow);
}

// ---------------------------------------------------------------- GlobalPoolEngine

GlobalPoolEngine::GlobalPoolEngine(bool is_max, int64_t planes, int64_t npix, int64_t lanes)
    : is_max_(is_max), planes_(planes), npix_(npix), lanes_(lanes), isa_(sgemm_default_isa()) {}

void GlobalPoolEngine::run(const float* x, float* y, ThreadPool& pool) const {
  if (planes_ <= 0) return;
  const PixelOps& ops = pixel_ops(isa_);
  const int64_t plane = npix_ * lanes_;
  auto body = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      if (is_max_)
        ops.reduce_max(y + p * lanes_, x + p * plane, npix_, lanes_);
      else
        ops.reduce_mean(y + p * lanes_, x + p * plane, npix_, lanes_);
    }
  };
  pool.parallel_for(planes_, body, std::max<int64_t>(1, kGrainFloats / std::max<int64_t>(plane, 1)));
}

// ---------------------------------------------------------------- plain kernels

PoolWindow pool_window(const PoolAttrs& a, const Shape& x, const Shape& y) {
  PoolWindow q;
  bool one_d = x.size() == 3;
  size_t wi = one_d ? 0 : 1;
  int64_t sp = a.spatial();
  q.h = one_d ? 1 : x[2];
  q.w = x.back();
  q.oh = one_d ? 1 : y[2];
  q.ow = y.back();
  q.kh = one_d ? 1 : a.kernel_shape[0];
  q.kw = a.kernel_shape[wi];
  q.sh = one_d ? 1 : a.strides[0];
  q.sw = a.strides[wi];
  q.dh = one_d ? 1 : a.dilations[0];
  q.dw = a.dilations[wi];
  q.ph = one_d ? 0 : a.pads[0];
  q.peh = one_d ? 0 : a.pads[sp];
  q.pw = a.pads[wi];
  q.pew = a.pads[sp + wi];
  q.is_max = a.kind == PoolKind::kMax;
  q.count_include_pad = a.count_include_pad;
  return q;
}

namespace {

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const Graph& g, const Node& n, int threads)
      : engine_(pool_window(n.attrs_as<PoolAttrs>(), in_shape(g, n, 0), out_shape(g, n, 0)),
                in_shape(g, n, 0)[0] * in_shape(g, n, 0)[1], 1, threads) {}
  size_t workspace_bytes() const override { return engine_.workspace_bytes(); }
  void run(const KernelArgs& args) override {
    engine_.run(static_cast<const float*>(args.inputs[0]), static_cast<float*>(args.outputs[0]),
                static_cast<float*>(args.workspace), *args.pool);
  }

 private:
  PoolEngine engine_;
};

class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(const Graph& g, const Node& n, int)
      : engine_(n.op == "GlobalMaxPool", in_shape(g, n, 0)[0] * in_shape(g, n, 0)[1],
                shape_numel(in_shape(g, n, 0)) / std::max<int64_t>(in_shape(g, n, 0)[0] * in_shape(g, n, 0)[1], 1), 1) {
  }
  void run(const KernelArgs& args) override {
    engine_.run(static_cast<const float*>(args.inputs[0]), static_cast<float*>(args.outputs[0]), *args.pool);
  }

 private:
  GlobalPoolEngine engine_;
};

// LpPool on N, C, H, W: (sum of |x|^p over the window's taps inside the
// input)^(1/p); taps in the padding add zero. p = 1 and 2 avoid pow.
class LpPoolKernel final : public Kernel {
 public:
  LpPoolKernel(const Graph& g, const Node& n, int) {
    const auto& a = n.attrs_as<LpPoolAttrs>();
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    planes_ = x[0] * x[1];
    h_ = x[2];
    w_ = x[3];
    oh_ = y[2];
    ow_ = y[3];
    kh_ = a.kernel_shape[0];
    kw_ = a.kernel_shape[1];
    sh_ = a.strides[0];
    sw_ = a.strides[1];
    dh_ = a.dilations[0];
    dw_ = a.dilations[1];
    ph_ = a.pad_begin(0);
    pw_ = a.pad_begin(1);
    p_ = a.p;
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (planes_ <= 0 || oh_ <= 0 || ow_ <= 0) return;
    const int64_t in_plane = h_ * w_, out_plane = oh_ * ow_;
    const int64_t taps = std::max<int64_t>(1, kh_ * kw_);
    const int64_t grain = std::max<int64_t>(1, kGrainFloats / std::max<int64_t>(1, out_plane * taps));
    auto body = [&](int64_t p0, int64_t p1) {
      for (int64_t c = p0; c < p1; ++c) {
        if (p_ == 1.0f)
          plane<1>(x + c * in_plane, y + c * out_plane);
        else if (p_ == 2.0f)
          plane<2>(x + c * in_plane, y + c * out_plane);
        else
          plane<0>(x + c * in_plane, y + c * out_plane);
      }
    };
    args.pool->parallel_for(planes_, body, grain);
  }

 private:
  // P is 1 or 2, or 0 for any other p.
  template <int P>
  void plane(const float* x, float* y) const {
    for (int64_t oh = 0; oh < oh_; ++oh) {
      int64_t r0 = oh * sh_ - ph_, t0, t1;
      taps_inside(r0, kh_, dh_, h_, t0, t1);
      for (int64_t ow = 0; ow < ow_; ++ow) {
        int64_t c0 = ow * sw_ - pw_, u0, u1;
        taps_inside(c0, kw_, dw_, w_, u0, u1);
        float acc = 0.0f;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t row = (r0 + t * dh_) * w_ + c0;  // c0 may be negative: index, not a pointer
          for (int64_t u = u0; u < u1; ++u) {
            float v = x[row + u * dw_];
            if constexpr (P == 1)
              acc += std::fabs(v);
            else if constexpr (P == 2)
              acc += v * v;
            else
              acc += std::pow(std::fabs(v), p_);
          }
        }
        float out;
        if constexpr (P == 1)
          out = acc;
        else if constexpr (P == 2)
          out = std::sqrt(acc);
        else
          out = std::pow(acc, 1.0f / p_);
        y[oh * ow_ + ow] = out;
      }
    }
  }

  int64_t planes_ = 0, h_ = 0, w_ = 0, oh_ = 0, ow_ = 0;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, ph_ = 0, pw_ = 0;
  float p_ = 2.0f;
};

// Pooling over up to three spatial axes, plainly: each output position
// reduces the taps of its window that fall inside the input, with the
// semantics of the 2-D kernels above (max ignores NaN and starts from the
// lowest float; the average divides by the taps inside the input, or inside
// the pads with count_include_pad, never the overhang ceil_mode adds; LpPool
// adds |x|^p, the padding adding zero). For the ranks the 2-D engines do not
// take: 3-D MaxPool and AveragePool, 1-D and 3-D LpPool.
class PoolNdKernel final : public Kernel {
 public:
  enum class Mode { kMax, kAverage, kLp };
  PoolNdKernel(const Graph& g, const Node& n, Mode mode, const WindowAttrs& a, bool count_include_pad, float p)
      : mode_(mode), count_include_pad_(count_include_pad), p_(p) {
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    const int64_t sp = a.spatial();
    planes_ = x[0] * x[1];
    // Right-aligned in three axes; the missing leading ones are unit windows.
    for (int64_t i = 0; i < sp; ++i) {
      const int64_t j = 3 - sp + i;
      in_[j] = x[2 + i];
      out_[j] = y[2 + i];
      k_[j] = a.kernel_shape[i];
      s_[j] = a.strides[i];
      d_[j] = a.dilations[i];
      pb_[j] = a.pad_begin(i);
      pe_[j] = a.pad_end(i);
    }
  }

  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    const int64_t in_plane = in_[0] * in_[1] * in_[2], out_plane = out_[0] * out_[1] * out_[2];
    if (planes_ <= 0 || out_plane <= 0) return;
    const int64_t taps = std::max<int64_t>(1, k_[0] * k_[1] * k_[2]);
    const int64_t grain = std::max<int64_t>(1, kGrainFloats / std::max<int64_t>(1, out_plane * taps));
    args.pool->parallel_for(
        planes_,
        [&](int64_t p0, int64_t p1) {
          for (int64_t c = p0; c < p1; ++c) plane(x + c * in_plane, y + c * out_plane);
        },
        grain);
  }

 private:
  void plane(const float* x, float* y) const {
    int64_t t0[3], t1[3], start[3];
    for (int64_t o0 = 0; o0 < out_[0]; ++o0) {
      axis(0, o0, start, t0, t1);
      for (int64_t o1 = 0; o1 < out_[1]; ++o1) {
        axis(1, o1, start, t0, t1);
        for (int64_t o2 = 0; o2 < out_[2]; ++o2) {
          axis(2, o2, start, t0, t1);
          float acc = mode_ == Mode::kMax ? std::numeric_limits<float>::lowest() : 0.0f;
          for (int64_t a = t0[0]; a < t1[0]; ++a) {
            const int64_t i0 = start[0] + a * d_[0];
            for (int64_t b = t0[1]; b < t1[1]; ++b) {
              const int64_t i1 = start[1] + b * d_[1];
              const float* row = x + (i0 * in_[1] + i1) * in_[2];
              for (int64_t c = t0[2]; c < t1[2]; ++c) {
                const float v = row[start[2] + c * d_[2]];
                if (mode_ == Mode::kMax)
                  acc = v > acc ? v : acc;
                else if (mode_ == Mode::kAverage)
                  acc += v;
                else if (p_ == 1.0f)
                  acc += std::fabs(v);
                else if (p_ == 2.0f)
                  acc += v * v;
                else
                  acc += std::pow(std::fabs(v), p_);
              }
            }
          }
          if (mode_ == Mode::kAverage) {
            int64_t n = 1;
            const int64_t o[3] = {o0, o1, o2};
            for (int j = 0; j < 3; ++j) {
              const int64_t first = o[j] * s_[j] - pb_[j];
              n *= count_include_pad_ ? taps_in(first, k_[j], d_[j], -pb_[j], in_[j] + pe_[j])
                                      : taps_in(first, k_[j], d_[j], 0, in_[j]);
            }
            acc = n > 0 ? acc / static_cast<float>(n) : 0.0f;
          } else if (mode_ == Mode::kLp) {
            acc = p_ == 1.0f ? acc : p_ == 2.0f ? std::sqrt(acc) : std::pow(acc, 1.0f / p_);
          }
          y[(o0 * out_[1] + o1) * out_[2] + o2] = acc;
        }
      }
    }
  }
  // Axis j at output index o: the window's first input index and its taps inside the input.
  void axis(int j, int64_t o, int64_t* start, int64_t* t0, int64_t* t1) const {
    start[j] = o * s_[j] - pb_[j];
    taps_inside(start[j], k_[j], d_[j], in_[j], t0[j], t1[j]);
  }

  Mode mode_;
  bool count_include_pad_;
  float p_;
  int64_t planes_ = 0;
  int64_t in_[3] = {1, 1, 1}, out_[3] = {1, 1, 1}, k_[3] = {1, 1, 1}, s_[3] = {1, 1, 1}, d_[3] = {1, 1, 1};
  int64_t pb_[3] = {0, 0, 0}, pe_[3] = {0, 0, 0};
};

std::unique_ptr<Kernel> make_pool(const Graph& g, const Node& n, int t) {
  const auto& a = n.attrs_as<PoolAttrs>();
  if (a.spatial() > 2)
    return std::make_unique<PoolNdKernel>(
        g, n, a.kind == PoolKind::kMax ? PoolNdKernel::Mode::kMax : PoolNdKernel::Mode::kAverage, a,
        a.count_include_pad, 0.0f);
  return std::make_unique<PoolKernel>(g, n, t);
}
std::unique_ptr<Kernel> make_lppool(const Graph& g, const Node& n, int t) {
  const auto& a = n.attrs_as<LpPoolAttrs>();
  if (a.spatial() != 2) return std::make_unique<PoolNdKernel>(g, n, PoolNdKernel::Mode::kLp, a, false, a.p);
  return std::make_unique<LpPoolKernel>(g, n, t);
}
std::unique_ptr<Kernel> make_global(const Graph& g, const Node& n, int t) {
  return std::make_unique<GlobalPoolKernel>(g, n, t);
}

}  // namespace

void add_pool_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"MaxPool", make_pool});
  out.push_back({"AveragePool", make_pool});
  out.push_back({"LpPool", make_lppool});
  out.push_back({"GlobalMaxPool", make_global});
  out.push_back({"GlobalAveragePool", make_global});
}

}  // namespace minirt::cpu
