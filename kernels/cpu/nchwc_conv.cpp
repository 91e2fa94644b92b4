// Direct convolution kernels for the channel-blocked layout; see
// nchwc_conv.h for the tiling, blocking and threading.
//
// This file is the driver: geometry, packing, threading and the calls. The
// AVX-512 and AVX2 microkernels are one body (nchwc_conv_ukr.h) in three ISA
// files (nchwc_conv_avx512.cpp and nchwc_conv_plain_avx512.cpp,
// nchwc_conv_avx2.cpp), reached only through
// specs whose ISA the CPU has (the constructors check nchwc_*_declined), so
// this file holds no intrinsic and may be built for plain x86-64.
#include "kernels/cpu/nchwc_conv.h"

#include <minirt/error.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/cpu/bf16_values_isa.h"
#include "kernels/cpu/dw_bf16_isa.h"
#include "kernels/cpu/conv_int8_isa.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_conv_isa.h"
#include "kernels/cpu/vmath.h"

namespace minirt::cpu {

using nchwc_detail::TileGeom;

namespace {

using nchwc_tiles::DirectArgs;
using nchwc_tiles::DirectFn;
using nchwc_tiles::DwArgs;
using nchwc_tiles::DwFn;
using nchwc_tiles::Finish;
using nchwc_tiles::FinMode;
using nchwc_tiles::kDwUr;
using nchwc_tiles::kMaxNb256;
using nchwc_tiles::kMaxNb512;
using nchwc_tiles::kMaxUr;
using nchwc_tiles::kUr256;
using nchwc_tiles::kUr512;

// Depthwise: the largest padded frame of one block (its input plus the
// border the windows reach) worth copying to run every row at full window:
// L2-resident next to the weights and output.
constexpr int64_t kDwFrameBytes = 64 * 1024;
// Depthwise: the padded frames of one band of output rows (all blocks a task
// runs together), rows a large plane's frame is filled and read in: each
// row written to L2 and read from there, not from the memory the frame of
// the group before left behind.
constexpr int64_t kDwBandBytes = 192 * 1024;
// Packed weights of the groups of one chunk, which the tiles of a strip walk
// in turn: a quarter of the L2 of the smallest core we target (Zen 3:
// 512 KiB), the rest for the input rows and the output being accumulated.
constexpr int64_t kWeightBudget = 256 * 1024;
// Weights of one group that one pass over the input channels reads: a group
// deeper than this runs in passes (the output tile re-read once per pass),
// so that its weights stay in L1 (Zen 3: 32 KiB) while every tile of a
// strip reuses them, instead of streaming from L2 once per tile. 24 KiB for
// windows, 12 KiB for a flat 1x1 convolution (a GEMM over the plane). Before
// (one pass up to 256 KiB), 2 threads, AVX2 kernels: ResNet-50 42.2-42.5 ms
// a run, now 38.5-39.0 (its 1x1 layers of 512-2048 input channels and its
// stride-2 3x3 layers), ResNet-18 14.0 -> 13.4-13.6, the YOLO-like 36.5 ->
// 35.8; AVX-512: ResNet-50 29.2 -> 28.5-28.8, ResNet-18 9.8 -> 9.2-9.6.
constexpr int64_t kPassBudget = 24 * 1024;
constexpr int64_t kFlatPassBudget = 12 * 1024;
// Input one strip of output rows (or pixels) reads per pass: each group of a
// chunk walks the strip in turn, so the input is fetched from memory once
// and each group writes its own few output blocks (a tile writing all the
// blocks of a wide layer at once touches lines that, a plane apart, fall
// into the same few L1 sets).
constexpr int64_t kStripBytes = 64 * 1024;
// Packed weights from which a convolution prefetches the ones it reads next:
// larger than an L2, such weights come from memory in a model (ResNet-18's
// 45 MB do not stay in cache from one run to the next); smaller ones are more
// often still cached, where prefetching them slowed 3x3 layers by 3-6%.
constexpr int64_t kPrefetchFrom = 2 * 1024 * 1024;

int ur_max(SgemmIsa isa, int nb) { return isa == SgemmIsa::kAvx512 ? kUr512[nb - 1] : kUr256[nb - 1]; }

// The fraction of the FMA peak a tile of nb output blocks keeps, when runs of
// `run` pixels are cut into tiles of at most ur: per input channel a tile
// issues nb * t FMAs (two a cycle) and nb + t loads (two a cycle), and each
// accumulator's chain needs its previous FMA (4 cycles).
double tile_efficiency(int nb, int ur, int64_t run) {
  const double t = static_cast<double>(run) / static_cast<double>(ceil_div(std::max<int64_t>(run, 1), ur));
  const double fmas = nb * t, cycles = std::max({fmas / 2, 4.0, (nb + t) / 2});
  return fmas / 2 / cycles;
}

// A run of `count` tiles of n pixels each, back to back from output (oy, ox)
// along its row (or its column), all of which see window rows [i0, i1) and
// columns [j0, j1) inside the input.
struct Tile {
  int64_t oy, ox;
  int n;
  int64_t count;
  bool vertical;
  int64_t i0, i1, j0, j1;
};

// The taps [lo, hi) of a k-tap window over an input of n, at output o with
// stride s, padding p, dilation d, whose input o*s - p + t*d is inside [0, n).
void tap_range(int64_t o, int64_t s, int64_t p, int64_t d, int64_t k, int64_t n, int64_t* lo, int64_t* hi) {
  const int64_t base = o * s - p;  // the input of tap 0
  int64_t l = base >= 0 ? 0 : ceil_div(-base, d);
  int64_t h = base > n - 1 ? 0 : (n - 1 - base) / d + 1;
  l = std::min(l, k);
  h = std::min(h, k);
  *lo = l;
  *hi = std::max(h, l);
}

// Where the full window lies inside the input, along one axis: outputs [lo, hi)
// (an interval: the first tap's lower bound and the last one's upper bound
// both move one way with o), empty as [0, 0).
void interior(int64_t outs, int64_t s, int64_t p, int64_t d, int64_t k, int64_t n, int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  bool found = false;
  for (int64_t o = 0; o < outs; ++o) {
    int64_t a, b;
    tap_range(o, s, p, d, k, n, &a, &b);
    if (a == 0 && b == k) {
      if (!found) *lo = o;
      found = true;
      *hi = o + 1;
    }
  }
}

// q as the tiles walk it (a 1x1 stride-1 convolution without padding: one
// row of H*W pixels), and where its tiles lie.
TileGeom make_tile_geom(Geometry* q, int ur) {
  TileGeom t;
  t.ur = ur;
  t.flat = q->kh == 1 && q->kw == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 && q->pw == 0 && q->oh == q->h &&
           q->ow == q->w;
  if (t.flat) {
    q->w = q->ow = q->h * q->w;
    q->h = q->oh = 1;
  }
  t.oh = q->oh;
  t.ow = q->ow;
  interior(q->oh, q->sh, q->ph, q->dh, q->kh, q->h, &t.row_lo, &t.row_hi);
  interior(q->ow, q->sw, q->pw, q->dw, q->kw, q->w, &t.col_lo, &t.col_hi);
  // The taps of every row and column, so that walking the tiles divides nothing.
  if (!t.flat) {
    t.row_taps.resize(static_cast<size_t>(2 * t.oh));
    t.col_taps.resize(static_cast<size_t>(2 * t.ow));
    for (int64_t o = 0; o < t.oh; ++o)
      tap_range(o, q->sh, q->ph, q->dh, q->kh, q->h, &t.row_taps[2 * o], &t.row_taps[2 * o + 1]);
    for (int64_t o = 0; o < t.ow; ++o)
      tap_range(o, q->sw, q->pw, q->dw, q->kw, q->w, &t.col_taps[2 * o], &t.col_taps[2 * o + 1]);
  }
  // Flat: chunks of about one tile; else rows.
  t.units = t.flat ? std::max<int64_t>(1, ceil_div(t.ow, ur)) : t.oh;
  return t;
}

// Calls f(Tile) for runs of tiles covering spatial units [s0, s1): each
// output pixel of those units in exactly one tile. Runs of pixels are cut
// into the fewest tiles of at most ur pixels, of near-equal sizes: a run of
// tiles of s + 1 pixels, then one of tiles of s.
template <typename F>
void for_each_tile(const TileGeom& t, const Geometry& q, int64_t s0, int64_t s1, F&& f) {
  auto split = [&](int64_t a, int64_t b, auto&& emit) {
    const int64_t n = b - a;
    if (n <= 0) return;
    const int64_t nt = ceil_div(n, t.ur), sz = n / nt, big = n - sz * nt;  // big tiles of sz + 1
    if (big) emit(a, static_cast<int>(sz + 1), big);
    if (nt > big) emit(a + big * (sz + 1), static_cast<int>(sz), nt - big);
  };
  if (t.flat) {
    split(t.ow * s0 / t.units, t.ow * s1 / t.units, [&](int64_t x, int n, int64_t c) {
      f(Tile{0, x, n, c, false, 0, 1, 0, 1});
    });
    return;
  }
  auto edge_cols = [&](auto&& g) {
    for (int64_t ox = 0; ox < t.col_lo; ++ox) g(ox);
    for (int64_t ox = std::max(t.col_hi, t.col_lo); ox < t.ow; ++ox) g(ox);
  };
  // The interior of every row is cut alike.
  int64_t row_n = 0, row_sz = 0, row_big = 0, row_nt = 0;
  if (t.col_hi > t.col_lo) {
    row_n = t.col_hi - t.col_lo, row_nt = ceil_div(row_n, t.ur), row_sz = row_n / row_nt;
    row_big = row_n - row_sz * row_nt;
  }
  const int64_t* rt = t.row_taps.data();
  const int64_t* ct = t.col_taps.data();
  for (int64_t oy = s0; oy < s1; ++oy) {
    const int64_t i0 = rt[2 * oy], i1 = rt[2 * oy + 1];
    if (row_big) f(Tile{oy, t.col_lo, static_cast<int>(row_sz + 1), row_big, false, i0, i1, 0, q.kw});
    if (row_nt > row_big)
      f(Tile{oy, t.col_lo + row_big * (row_sz + 1), static_cast<int>(row_sz), row_nt - row_big, false, i0, i1, 0,
             q.kw});
    if (oy >= t.row_lo && oy < t.row_hi) continue;  // its edge columns: in the vertical tiles
    edge_cols([&](int64_t ox) { f(Tile{oy, ox, 1, 1, false, i0, i1, ct[2 * ox], ct[2 * ox + 1]}); });
  }
  const int64_t ya = std::max(s0, t.row_lo), yb = std::min(s1, t.row_hi);
  if (ya >= yb) return;
  edge_cols([&](int64_t ox) {
    const int64_t j0 = ct[2 * ox], j1 = ct[2 * ox + 1];
    split(ya, yb, [&](int64_t y, int n, int64_t c) { f(Tile{y, ox, n, c, true, 0, q.kh, j0, j1}); });
  });
}

// Deals the units of `outers` outer indices, `per` units each (unit u is
// outer u / per), to `tasks` tasks in contiguous runs of near-equal cost (a
// unit of outer o costs cost(o)), and calls seg(outer, s0, s1) for each
// maximal run of one outer index in a piece of a task. A task's thread walks
// its run in up to kPiecesPerTask pieces of at least `min_piece` units, and
// threads done early take pieces from the back of the others' runs
// (ThreadPool::parallel_ranges), so a thread slowed by another process on its
// core does not hold up the layer.
constexpr int64_t kPiecesPerTask = 8;

template <typename C, typename F>
void run_units(ThreadPool& pool, int64_t tasks, int64_t outers, int64_t per, int64_t min_piece, C&& cost, F&& seg) {
  int64_t total = 0;
  for (int64_t o = 0; o < outers; ++o) total += cost(o) * per;
  // The unit where the cumulative cost reaches `target` (to the nearest unit).
  auto unit_at = [&](int64_t target) {
    int64_t acc = 0;
    for (int64_t o = 0; o < outers; ++o) {
      const int64_t c = std::max<int64_t>(1, cost(o));
      if (acc + c * per >= target) return o * per + std::min(per, (target - acc + c / 2) / c);
      acc += c * per;
    }
    return outers * per;
  };
  auto bound = [&](int64_t t) { return unit_at(total * t / tasks); };
  auto body = [&](int64_t t, int64_t u, int64_t u1) {
    while (u < u1) {
      const int64_t outer = u / per, s0 = u % per, s1 = std::min(per, s0 + (u1 - u));
      if constexpr (std::is_invocable_v<F&, int64_t, int64_t, int64_t, int64_t>)
        seg(outer, s0, s1, t);  // with the task's index (its own scratch)
      else
        seg(outer, s0, s1);
      u += s1 - s0;
    }
  };
  const int64_t units = outers * per;
  const int64_t pieces =
      std::clamp<int64_t>(units / std::max<int64_t>(1, tasks * std::max<int64_t>(min_piece, 1)), 1, kPiecesPerTask);
  pool.parallel_ranges(tasks, bound, pieces, body);
}

// Units of at least this many output pixels per piece: a piece re-reads the
// weights of its pass (at most kWeightBudget) for its pixels, which stays
// far below the FMAs it does from 64 pixels on.
constexpr int64_t kPiecePixels = 64;

int64_t min_piece_units(const TileGeom& t) {
  const int64_t pixels_per_unit = t.flat ? std::max<int64_t>(1, t.ow / std::max<int64_t>(1, t.units)) : t.ow;
  return ceil_div(kPiecePixels, std::max<int64_t>(1, pixels_per_unit));
}

// ---------------------------------------------------------------- microkernels

Finish finish_of(const Activation& act, bool last) {
  Finish f{FinMode::kStore, 0.0f, 0.0f, false};
  if (!last) return f;
  if (act.kind == ActKind::kRelu)
    f.mode = FinMode::kRelu;
  else if (act.kind == ActKind::kClip)
    f.mode = FinMode::kClip, f.lo = act.alpha, f.hi = act.beta;
  else if (act.kind != ActKind::kNone)
    f.after = true;  // the others over the finished tile
  return f;
}

#if MINIRT_VMATH_X86

// The ISA's microkernels (nchwc_conv_avx512.cpp, nchwc_conv_plain_avx512.cpp,
// nchwc_conv_avx2.cpp).
const nchwc_tiles::Kernels& kernels_of(SgemmIsa isa) {
  return isa == SgemmIsa::kAvx512 ? nchwc_conv_kernels_avx512() : nchwc_conv_kernels_avx2();
}
using DirectTable = DirectFn[kMaxNb512][kMaxUr];
// The kernels for tiles whose pixels are xps floats apart in an input of L lanes.
const DirectTable& direct_table(SgemmIsa isa, int64_t lanes, int64_t xps) {
  if (lanes > 1) return kernels_of(isa).blocked[xps == lanes ? 1 : 0];
  const nchwc_tiles::PlainKernels& k =
      isa == SgemmIsa::kAvx512 ? nchwc_conv_plain_kernels_avx512() : nchwc_conv_plain_kernels_avx2();
  return k.plain[xps == 1 || xps == 2 ? xps : 0];
}
// The depthwise kernels for tiles whose pixels are xps floats apart (B the block).
using DwRow = DwFn[kDwUr];
const DwRow& dw_table(SgemmIsa isa, int64_t B, int64_t xps) {
  return kernels_of(isa).dw[xps == B ? 1 : xps == 2 * B ? 2 : 0];
}

#endif  // MINIRT_VMATH_X86

std::string common_declined(const NchwcConvSpec& s) {
  if (!MINIRT_VMATH_X86) return "needs an x86-64 build (AVX2 or AVX-512 kernels)";
  if (s.isa != SgemmIsa::kAvx2 && s.isa != SgemmIsa::kAvx512) return "needs isa avx2 or avx512";
  if (s.block != nchwc_block(s.isa)) return "needs block 16 with avx512, 8 with avx2";
  if (!sgemm_isa_supported(s.isa)) return std::string("needs a CPU with ") + sgemm_isa_name(s.isa);
  const Geometry& q = s.q;
  if (q.kh < 1 || q.kw < 1 || q.sh < 1 || q.sw < 1 || q.dh < 1 || q.dw < 1)
    return "needs a window, strides and dilations of at least 1";
  if (q.ph < 0 || q.pw < 0) return "needs non-negative padding";
  if (q.c < 1) return "needs at least one input channel";
  if (s.y_channels != 0 && s.y_channels < q.m) return "needs y_channels of at least the output channels";
  return {};
}

void check(const std::string& why, const char* what) {
  if (!why.empty()) throw Error(ErrorCode::kInternal, std::string(what) + " cannot run this convolution: " + why);
}

}  // namespace

std::string nchwc_direct_declined(const NchwcConvSpec& s) {
  if (s.q.groups != 1) return "needs groups == 1";
  if (!s.pre_act.none() || !s.gate.none() || !s.gate_out.none() || !s.post.none())
    return "has a residual Add, a SiLU or a second grid fused after an activation of its own, which it does not take";
  return common_declined(s);
}

std::string nchwc_depthwise_declined(const NchwcConvSpec& s) {
  if (!(s.q.groups == s.q.c && s.q.m == s.q.c)) return "needs groups == channels == filters";
  if (!s.input_blocked) return "needs a blocked input";
  // A quantized SiLU after it (EfficientNet's in QDQ form): y = act(v gate(sigmoid(v))), v = pre_act(conv).
  if (!s.gate_out.none() || !s.post.none() || (!s.pre_act.none() && s.gate.none()))
    return "takes a fused SiLU, but no residual Add after an activation of its own";
  if (!s.gate.none()) {
    if (s.gate.kind != ActKind::kQuantGrid || s.pre_act.kind != ActKind::kQuantGrid ||
        s.pre_act.gamma - s.pre_act.beta > 255)
      return "takes a fused SiLU only between quantize pairs' grids, of at most 256 codes before it";
    if (s.residual || s.x_bf16 || s.y_bf16 || s.r_bf16)
      return "takes a fused SiLU only on float values, without a residual";
  }
  if (s.x_bf16 || s.y_bf16 || s.r_bf16) {
    // bf16 values (MathMode::kBf16) are read into and written from the
    // padded frame's float rows; the math stays float32.
    const Geometry& q = s.q;
    if (s.block != 16) return "reads or writes bf16 values only with the 16-channel blocks of AVX-512";
    if (s.residual || s.r_bf16) return "reads or writes bf16 values only without a fused residual";
    if (s.y_channels != 0 && s.y_channels != q.m) return "reads or writes bf16 values only into an output of its own";
    if (q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.ph == 0 && q.pw == 0)
      return "reads or writes bf16 values only with a window (not a 1x1, stride-1 scale)";
  }
  if (s.x_u8 || s.y_u8 || s.r_u8) {
    // int8 values (nchwc_int8_values) are read into and written from the
    // padded frame's float rows; the math stays float32.
    const Geometry& q = s.q;
    if (s.block != 16) return "reads or writes int8 values only with the 16-channel blocks of AVX-512";
    if (s.residual || s.r_u8) return "reads or writes int8 values only without a fused residual";
    if (s.x_bf16 || s.y_bf16) return "reads or writes int8 values only beside float32 ones";
    if (s.y_channels != 0 && s.y_channels != q.m) return "reads or writes int8 values only into an output of its own";
    if (q.kh == 1 && q.kw == 1 && q.sh == 1 && q.sw == 1 && q.ph == 0 && q.pw == 0)
      return "reads or writes int8 values only with a window (not a 1x1, stride-1 scale)";
    if (s.x_u8 && (s.x_grid.kind != ActKind::kQuantGrid || s.x_grid.gamma - s.x_grid.beta > 255))
      return "reads an int8 value only on a known grid of at most 256 codes";
    if (s.y_u8 && (s.act.kind != ActKind::kQuantGrid || s.act.gamma - s.act.beta > 255))
      return "writes an int8 value only through a quantization grid of at most 256 codes";
  }
  return common_declined(s);
}

// ---------------------------------------------------------------- dense

NchwcDirectConv::NchwcDirectConv(const NchwcConvSpec& s, const float* w, const float* bias, int threads)
    : s_(s), q_(s.q) {
  check(nchwc_direct_declined(s), "NchwcDirectConv");
  const int64_t B = s.block;
  empty_ = q_.n == 0 || q_.m == 0 || q_.oh == 0 || q_.ow == 0;
  lanes_ = s.input_blocked ? static_cast<int>(B) : 1;
  cbs_ = s.input_blocked ? nchwc_blocks(q_.c, s.block) : q_.c;
  mb_ = nchwc_blocks(q_.m, s.block);
  // Output blocks into groups of near-equal sizes of at most NB, NB chosen
  // for the length of the runs of pixels the tiles cut.
  tg_ = make_tile_geom(&q_, 1);
  const int64_t run = tg_.flat || tg_.col_hi <= tg_.col_lo ? tg_.ow : tg_.col_hi - tg_.col_lo;
  const int64_t max_nb = std::min<int64_t>(s.isa == SgemmIsa::kAvx512 ? kMaxNb512 : kMaxNb256, mb_);
  int64_t nb_pick = 1;
  double best = 0;
  for (int64_t nb = 1; nb <= max_nb; ++nb) {
    const double e = tile_efficiency(static_cast<int>(nb), ur_max(s.isa, static_cast<int>(nb)), run);
    if (e >= best * 0.99) best = std::max(best, e), nb_pick = nb;
  }
  const int64_t ng = std::max<int64_t>(1, ceil_div(mb_, nb_pick));
  const int64_t base = mb_ / ng, extra = mb_ % ng;
  const int64_t taps = q_.kh * q_.kw;
  for (int64_t g = 0, ob = 0; g < ng && ob < mb_; ++g) {
    Group gr;
    gr.ob = ob;
    gr.nb = base + (g < extra ? 1 : 0);
    gr.w_at = static_cast<size_t>(cbs_ * taps * lanes_ * B * ob);
    groups_.push_back(gr);
    ob += gr.nb;
  }
  const int nb_main = static_cast<int>(groups_.empty() ? 1 : groups_[0].nb);
  tg_.ur = ur_max(s.isa, nb_main);
  if (tg_.flat) tg_.units = std::max<int64_t>(1, ceil_div(tg_.ow, tg_.ur));

  // Passes over the input channels, so that the weights one pass of a tile
  // reads stay in L1 (kPassBudget, kFlatPassBudget); where a group's weights
  // fit in one pass, chunks of groups whose weights stay in L2 together.
  const int64_t per_cb = taps * lanes_ * nb_main * B * static_cast<int64_t>(sizeof(float));
  const int64_t pass_budget = tg_.flat ? kFlatPassBudget : kPassBudget;
  int64_t passes = 1;
  if (cbs_ * per_cb > pass_budget) {
    passes = ceil_div(cbs_, std::max<int64_t>(1, pass_budget / per_cb));
    chunk_groups_ = 1;
  } else {
    chunk_groups_ = std::clamp<int64_t>(kWeightBudget / std::max<int64_t>(1, cbs_ * per_cb), 1,
                                        static_cast<int64_t>(groups_.size()));
  }
  chunks_ = ceil_div(static_cast<int64_t>(groups_.size()), chunk_groups_);
  chunk_groups_ = ceil_div(static_cast<int64_t>(groups_.size()), chunks_);  // even chunks
  for (int64_t p = 0; p <= passes; ++p) pass_cb_.push_back(cbs_ * p / passes);
  const int64_t units = q_.n * chunks_ * tg_.units;
  tasks_ = std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, units));

  prefetch_ = cbs_ * taps * lanes_ * mb_ * B * static_cast<int64_t>(sizeof(float)) >= kPrefetchFrom;
  if (!w) return;
  // [group][input block][kh][kw][lane of the input block][nb][B], zero past C and M.
  w_ = AlignedFloats(static_cast<size_t>(cbs_ * taps * lanes_ * mb_ * B));
  bias_ = AlignedFloats(static_cast<size_t>(mb_ * B));
  std::fill(w_.data(), w_.data() + w_.size(), 0.0f);
  std::fill(bias_.data(), bias_.data() + bias_.size(), 0.0f);
  for (const Group& g : groups_)
    for (int64_t cb = 0; cb < cbs_; ++cb)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t l = 0; l < lanes_; ++l) {
          const int64_t c = cb * lanes_ + l;
          if (c >= q_.c) continue;
          float* dst = w_.data() + g.w_at + static_cast<size_t>(((cb * taps + t) * lanes_ + l) * g.nb * B);
          for (int64_t o = 0; o < g.nb * B; ++o) {
            const int64_t m = g.ob * B + o;
            if (m < q_.m) dst[o] = w[(m * q_.c + c) * taps + t];
          }
        }
  if (bias) std::copy(bias, bias + q_.m, bias_.data());
}

std::string NchwcDirectConv::describe() const {
  std::string s = std::string("nchwc_direct isa=") + sgemm_isa_name(s_.isa) +
                  " nb=" + std::to_string(groups_.empty() ? 0 : groups_[0].nb) + " ur=" + std::to_string(tg_.ur);
  if (pass_cb_.size() > 2) s += " passes=" + std::to_string(pass_cb_.size() - 1);
  if (chunks_ > 1) s += " chunks=" + std::to_string(chunks_);
  if (tg_.flat) s += " flat";
  if (prefetch_) s += " prefetch";
  if (!s_.input_blocked) s += " plain-input";
  return s;
}

void NchwcDirectConv::segment(const float* x, const float* r, float* y, int64_t yob0, int64_t chunk, int64_t s0,
                              int64_t s1) const {
#if MINIRT_VMATH_X86
  const Geometry& q = q_;
  const int64_t B = s_.block, L = lanes_, plane = q.oh * q.ow, taps = q.kh * q.kw;
  // Horizontal tiles read pixels sw * L floats apart, vertical ones a row or more.
  const DirectTable& row_table = direct_table(s_.isa, L, q.sw * L);
  const DirectTable& any_table = direct_table(s_.isa, L, 0);
  const size_t g0 = static_cast<size_t>(chunk * chunk_groups_);
  const size_t g1 = std::min(groups_.size(), g0 + static_cast<size_t>(chunk_groups_));
  DirectArgs a{};
  a.xcb = q.h * q.w * L;
  a.xdi = q.dh * q.w * L;
  a.xdj = q.dw * L;
  a.kh = q.kh;
  a.kw = q.kw;
  a.yob = plane * B;
  a.act = &s_.act;
  const size_t passes = pass_cb_.size() - 1;
  // The packed weights of (pass p, group gi): where they start, how many floats.
  auto region = [&](size_t p, size_t gi, int64_t* n) {
    const Group& g = groups_[gi];
    const int64_t wtap = L * g.nb * B;
    *n = (pass_cb_[p + 1] - pass_cb_[p]) * taps * wtap;
    return w_.data() + g.w_at + pass_cb_[p] * taps * wtap;
  };
  for (size_t pass = 0; pass < passes; ++pass) {
    const int64_t cb0 = pass_cb_[pass];
    a.ncb = pass_cb_[pass + 1] - cb0;
    a.first = pass == 0;
    a.fin = finish_of(s_.act, pass + 1 == passes);
    a.tail = pass + 1 == passes && L > 1 && q.c % L ? q.c % L : 0;
    // Strips of units whose input (for this pass) stays in cache while each
    // group of the chunk walks them in turn.
    const int64_t unit_bytes = (tg_.flat ? tg_.ur : q.sh * q.w) * a.ncb * L * static_cast<int64_t>(sizeof(float));
    const int64_t strips = ceil_div(s1 - s0, std::max<int64_t>(1, kStripBytes / std::max<int64_t>(1, unit_bytes)));
    for (int64_t st = 0; st < strips; ++st) {
      const int64_t u0 = s0 + (s1 - s0) * st / strips, u1 = s0 + (s1 - s0) * (st + 1) / strips;
      // Pixels this strip covers, for spreading the prefetches below.
      const int64_t pixels = tg_.flat ? tg_.ow * u1 / tg_.units - tg_.ow * u0 / tg_.units : (u1 - u0) * tg_.ow;
      for (size_t gi = g0; gi < g1; ++gi) {
        const Group& g = groups_[gi];
        const int64_t wtap = L * g.nb * B;
        const float* wg = w_.data() + g.w_at + cb0 * taps * wtap;
        const DirectFn* row_fns = row_table[g.nb - 1];
        const DirectFn* any_fns = any_table[g.nb - 1];
        a.bias = bias_.data() + g.ob * B;
        // While this group's tiles run, the weights that the next step reads
        // for the first time (the next group's in the first strip, the next
        // pass's after the last, the next chunk's after this chunk's last)
        // are prefetched into L2, spread over the taps the tiles walk: a
        // model's weights come from memory (ResNet-18's 45 MB), and each
        // pass's first tile would wait on them (ResNet-18's 3x3 layers on 7x7
        // planes ran 30% slower than with the weights in cache).
        int64_t pf_floats = 0;
        const float* pf = nullptr;
        const bool last_of_pass = st + 1 == strips && gi + 1 == g1;
        if (st == 0 && gi + 1 < g1)
          pf = region(pass, gi + 1, &pf_floats);
        else if (last_of_pass && pass + 1 < passes)
          pf = region(pass + 1, g0, &pf_floats);
        else if (last_of_pass && g1 < groups_.size())
          pf = region(0, g1, &pf_floats);
        const int64_t pf_lines = pf && prefetch_ ? ceil_div(pf_floats, 16) : 0;
        int64_t done = 0, issued = 0;
        for_each_tile(tg_, q, u0, u1, [&](const Tile& t) {
          const int64_t ih = t.oy * q.sh - q.ph + t.i0 * q.dh, iw = t.ox * q.sw - q.pw + t.j0 * q.dw;
          const int64_t pix = (t.oy * q.ow + t.ox) * B;
          a.x = x + cb0 * a.xcb + (ih * q.w + iw) * L;
          a.xps = t.vertical ? q.sh * q.w * L : q.sw * L;
          a.yps = t.vertical ? q.ow * B : B;
          a.ni = t.i1 - t.i0;
          a.nj = t.j1 - t.j0;
          a.count = t.count;
          a.w = wg + (t.i0 * q.kw + t.j0) * wtap;
          a.r = r ? r + g.ob * a.yob + pix : nullptr;
          a.y = y + (yob0 + g.ob) * a.yob + pix;
          // This call's share of the prefetches, by the pixels it computes.
          done += t.n * t.count;
          const int64_t want = pf_lines * done / std::max<int64_t>(1, pixels);
          a.pf = reinterpret_cast<const char*>(pf) + issued * 64;
          a.pf_lines = want - issued;
          issued = want;
          (t.vertical ? any_fns : row_fns)[t.n - 1](a);
        });
      }
    }
  }
#else
  (void)x, (void)r, (void)y, (void)yob0, (void)chunk, (void)s0, (void)s1;
#endif
}

void NchwcDirectConv::run(const float* x, const float* r, float* y, int64_t y_channel_offset, float*,
                          ThreadPool& pool) const {
  if (empty_) return;
  const int64_t B = s_.block, plane = q_.oh * q_.ow;
  const int64_t x_img = cbs_ * q_.h * q_.w * lanes_;
  const int64_t y_img = nchwc_blocks(s_.y_channels ? s_.y_channels : q_.m, s_.block) * plane * B;
  const int64_t r_img = mb_ * plane * B;
  const int64_t yob0 = y_channel_offset / B;
  const bool res = s_.residual && r;
  // A unit costs its chunk's output blocks (the last chunk may have fewer groups).
  auto cost = [&](int64_t outer) {
    const size_t g0 = static_cast<size_t>(outer % chunks_ * chunk_groups_);
    const size_t g1 = std::min(groups_.size(), g0 + static_cast<size_t>(chunk_groups_));
    return groups_[g1 - 1].ob + groups_[g1 - 1].nb - groups_[g0].ob;
  };
  run_units(pool, tasks_, q_.n * chunks_, tg_.units, min_piece_units(tg_), cost,
            [&](int64_t outer, int64_t s0, int64_t s1) {
              const int64_t img = outer / chunks_, chunk = outer % chunks_;
              segment(x + img * x_img, res ? r + img * r_img : nullptr, y + img * y_img, yob0, chunk, s0, s1);
            });
}

// ---------------------------------------------------------------- depthwise

NchwcDepthwiseConv::NchwcDepthwiseConv(const NchwcConvSpec& s, const float* w, const float* bias, int threads,
                                       DwBorder border)
    : s_(s), q_(s.q) {
  check(nchwc_depthwise_declined(s), "NchwcDepthwiseConv");
  const int64_t B = s.block;
  empty_ = q_.n == 0 || q_.m == 0 || q_.oh == 0 || q_.ow == 0;
  cbs_ = nchwc_blocks(q_.c, s.block);
  tg_ = make_tile_geom(&q_, kDwUr);
  const int64_t units = q_.n * cbs_ * tg_.units;
  tasks_ = std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, units));
  // The border: in a padded frame where it is more than half of a plane
  // whose frame stays in L2 (a flat 1x1 convolution has none). Measured
  // (NchwcDepthwiseBorder, AVX-512, SiLU): 7x7 with a 5x5 window (82%
  // border) 1.5x faster padded; 7x7 3x3 (49%) even; 14x14 5x5 (49%) and
  // larger planes slower padded, which computes the zero taps as well.
  bf16_io_ = s.x_bf16 || s.y_bf16;
  const bool narrow_io = bf16_io_ || s.x_u8 || s.y_u8;
  if (!empty_ && !tg_.flat) {
    frame_h_ = (q_.oh - 1) * q_.sh + (q_.kh - 1) * q_.dh + 1;
    frame_w_ = (q_.ow - 1) * q_.sw + (q_.kw - 1) * q_.dw + 1;
    frame_floats_ = frame_h_ * frame_w_ * B;
    const int64_t plane = q_.oh * q_.ow, inner = (tg_.row_hi - tg_.row_lo) * (tg_.col_hi - tg_.col_lo);
    const bool small = frame_floats_ * static_cast<int64_t>(sizeof(float)) <= kDwFrameBytes;
    padded_ = border == DwBorder::kPadded || (border == DwBorder::kAuto && small && 2 * (plane - inner) > plane);
    // bf16 values go through the frame (converted as it is filled) and, out,
    // through one float row per task (converted as it is stored).
    if (narrow_io) padded_ = true;
    if (s.y_bf16 || s.y_u8) row_floats_ = ceil_div(q_.ow, 16) * 16 * B;
    group_blocks_ = s.x_u8 || s.y_u8 ? 4 : bf16_io_ ? 2 : 1;
    // A large plane's frame in bands of output rows whose frames stay in L2,
    // each band filled from its first input row (the rows its windows share
    // with the band before are converted again).
    const int64_t window_rows = (q_.kh - 1) * q_.dh + 1;
    const int64_t row_bytes = group_blocks_ * frame_w_ * B * static_cast<int64_t>(sizeof(float));
    band_rows_ = std::clamp<int64_t>((kDwBandBytes / row_bytes - window_rows) / q_.sh + 1, 1, q_.oh);
    frame_floats_ = std::min(frame_h_, (band_rows_ - 1) * q_.sh + window_rows) * frame_w_ * B;
  }
  // bf16 in and out with an epilogue of the registers: in place, no frame
  // (dw_bf16_isa.h). Measured (NchwcDepthwiseValues, one thread): MobileNetV2's
  // 144-channel 56x56 layer 128 us on float32 values, 170 through the frame,
  // 101 in place; its 96-channel 112x112 stride-2 one 213, 235 and 101.
  if (!empty_ && s.x_bf16 && s.y_bf16 && s.isa == SgemmIsa::kAvx512 && !s.residual && s.gate.none()) {
    pairs_ = true;
    const ActKind k = s.act.kind;
    if (k == ActKind::kRelu)
      pair_act_.kind = DwBf16Act::kRelu;
    else if (k == ActKind::kClip)
      pair_act_.kind = DwBf16Act::kClip, pair_act_.lo = s.act.alpha, pair_act_.hi = s.act.beta;
    else if (k == ActKind::kLeakyRelu)
      pair_act_.kind = DwBf16Act::kLeakyRelu, pair_act_.slope = s.act.alpha;
    else if (k == ActKind::kHardSwish)
      pair_act_.kind = DwBf16Act::kHardSwish;
    else if (k != ActKind::kNone)
      pairs_ = false;  // through the frame, whose float rows the vector activations run over
    if (pairs_) padded_ = false;
  }
  codes_in_ = s.x_u8;
  codes_out_ = s.y_u8 && !s.residual && s.gate.none();
  if (!w) return;
  // [block][kh][kw][B], zero past C.
  const int64_t taps = q_.kh * q_.kw;
  w_ = AlignedFloats(static_cast<size_t>(cbs_ * taps * B));
  bias_ = AlignedFloats(static_cast<size_t>(cbs_ * B));
  std::fill(w_.data(), w_.data() + w_.size(), 0.0f);
  std::fill(bias_.data(), bias_.data() + bias_.size(), 0.0f);
  for (int64_t c = 0; c < q_.c; ++c)
    for (int64_t t = 0; t < taps; ++t) w_.data()[((c / B) * taps + t) * B + c % B] = w[c * taps + t];
  if (bias) std::copy(bias, bias + q_.c, bias_.data());
  if (codes_in_ || codes_out_) {
    const double a_in = codes_in_ ? s.x_grid.alpha : 1.0, lo_in = codes_in_ ? s.x_grid.beta : 0.0;
    const double to_out = codes_out_ ? 1.0 / s.act.alpha : 1.0, lo_out = codes_out_ ? s.act.beta : 0.0;
    frame_pad_ = codes_in_ ? static_cast<float>(-lo_in) : 0.0f;
    // The lanes past C too: zero weights and bias, so their codes are those of zero.
    for (int64_t c = 0; c < cbs_ * B; ++c) {
      float* wc = w_.data() + (c / B) * taps * B + c % B;
      double sum_w = 0.0;
      for (int64_t t = 0; t < taps; ++t) {
        sum_w += wc[t * B];
        wc[t * B] = static_cast<float>(wc[t * B] * a_in * to_out);
      }
      float& b = bias_.data()[c];
      b = static_cast<float>((b + a_in * lo_in * sum_w) * to_out - lo_out);
    }
  }
  if (pairs_) {
    // [group][kh][kw][32] and [group][32] in pair order: lane l < 16 channel
    // 32 g + 2 l, lane 16 + l channel 32 g + 2 l + 1; zero past C.
    const int64_t groups = ceil_div(q_.c, 32);
    w_pairs_ = AlignedFloats(static_cast<size_t>(groups * taps * 32));
    bias_pairs_ = AlignedFloats(static_cast<size_t>(groups * 32));
    std::fill(w_pairs_.data(), w_pairs_.data() + w_pairs_.size(), 0.0f);
    std::fill(bias_pairs_.data(), bias_pairs_.data() + bias_pairs_.size(), 0.0f);
    for (int64_t c = 0; c < q_.c; ++c) {
      const int64_t lane = (c % 32) / 2 + (c % 2) * 16, g = c / 32;
      for (int64_t t = 0; t < taps; ++t) w_pairs_.data()[(g * taps + t) * 32 + lane] = w[c * taps + t];
      if (bias) bias_pairs_.data()[g * 32 + lane] = bias[c];
    }
  }
#if MINIRT_VMATH_X86
  // A quantized SiLU after it: 256 codes of its grid in, one table out.
  if (!s.gate.none() && s.isa == SgemmIsa::kAvx512) {
    gate_table_ = AlignedFloats(256);
    quant_silu_table_avx512(gate_table_.data(), s_.pre_act, s_.gate, nullptr, &s_.act);
  }
#endif
}

std::string NchwcDepthwiseConv::describe() const {
  if (pairs_) return std::string("nchwc_depthwise isa=") + sgemm_isa_name(s_.isa) + " bf16 in place";
  return std::string("nchwc_depthwise isa=") + sgemm_isa_name(s_.isa) + " ur=" + std::to_string(tg_.ur) +
         (padded_ ? " border=padded" : "");
}

void NchwcDepthwiseConv::run(const float* x, const float* r, float* y, int64_t y_channel_offset, float* workspace,
                             ThreadPool& pool) const {
  if (empty_) return;
#if MINIRT_VMATH_X86
  const Geometry& q = q_;
  const int64_t B = s_.block, plane = q.oh * q.ow, taps = q.kh * q.kw;
  if (pairs_) {
    // One unit a row of one group's plane.
    const int64_t groups = ceil_div(q.c, 32);
    const DwBf16Geom g{q.h, q.w, q.oh, q.ow, q.kh, q.kw, q.sh, q.sw, q.dh, q.dw, q.ph, q.pw};
    const auto* xh = static_cast<const uint16_t*>(static_cast<const void*>(x));
    auto* yh = static_cast<uint16_t*>(static_cast<void*>(y));
    run_units(
        pool, tasks_, q.n * groups, q.oh, ceil_div(kPiecePixels, q.ow), [](int64_t) { return int64_t{1}; },
        [&](int64_t outer, int64_t s0, int64_t s1) {
          const int64_t grp = outer % groups;
          dw_bf16_rows_avx512bf16(g, xh + outer * q.h * q.w * 32, w_pairs_.data() + grp * taps * 32,
                                  bias_pairs_.data() + grp * 32, pair_act_, q.c - grp * 32, yh + outer * plane * 32, s0,
                                  s1);
        });
    return;
  }
  const int64_t x_img = cbs_ * q.h * q.w * B;
  const int64_t y_img = nchwc_blocks(s_.y_channels ? s_.y_channels : q.m, s_.block) * plane * B;
  const int64_t r_img = cbs_ * plane * B;
  const int64_t x_img16 = ceil_div(q.c, 32) * q.h * q.w * 32, y_img16 = ceil_div(q.m, 32) * plane * 32;  // bf16 values
  const int64_t x_img8 = ceil_div(q.c, 64) * q.h * q.w * 64, y_img8 = ceil_div(q.m, 64) * plane * 64;    // int8 values
  const int64_t yob0 = y_channel_offset / B;
  const bool res = s_.residual && r;
  const DwRow& row_table = dw_table(s_.isa, B, q.sw * B);
  const DwRow& any_table = dw_table(s_.isa, B, 0);
  // The epilogue: the activation, or the quantized SiLU after the store.
  const bool gated = !s_.gate.none();
  auto set_finish = [&](DwArgs& a) {
    // An int8 output's activation is its grid, which floats_to_u8_lanes_avx512
    // applies as it stores the row's codes.
    a.fin = finish_of(gated || s_.y_u8 ? Activation{} : s_.act, true);
    a.act = &s_.act;
    a.pre = gated ? &s_.pre_act : nullptr;
    a.gate = gated ? &s_.gate : nullptr;
    a.table = gate_table_.empty() ? nullptr : gate_table_.data();
  };
  if (padded_) {
    // Each output row as full-window tiles over the padded frames of a group
    // of G blocks (one block; the two of a bf16 value's 32-channel group; the
    // four of an int8 value's 64-channel group), so that each cache line of
    // a narrow value is read, and written, once: frame row fr of block b at
    // frame + (fr * G + b) * fw.
    const int64_t G = group_blocks_, ngroups = ceil_div(cbs_, G);
    const int64_t fw = frame_w_ * B;
    const int64_t c0 = std::min(q.pw, frame_w_), c1 = std::clamp(q.pw + q.w, c0, frame_w_);
    const int64_t nt = ceil_div(q.ow, tg_.ur), sz = q.ow / nt, big = q.ow - sz * nt;  // big tiles of sz + 1
    run_units(
        pool, tasks_, q.n * ngroups, tg_.units, min_piece_units(tg_), [](int64_t) { return int64_t{1}; },
        [&](int64_t outer, int64_t s0, int64_t s1, int64_t task) {
          const int64_t img = outer / ngroups, cb0 = outer % ngroups * G, nblk = std::min(G, cbs_ - cb0);
          float* frame = workspace + task * G * (frame_floats_ + row_floats_);
          float* yrows = frame + G * frame_floats_;  // y_bf16, y_u8: block b's output row at yrows + b * row_floats_
          // Block cb of a bf16 value: lanes (cb % 2) * 16 of 32-channel group
          // cb / 2; of an int8 value: lanes (cb % 4) * 16 of 64-channel group cb / 4.
          auto x_f32 = [&](int64_t cb) { return x + img * x_img + cb * q.h * q.w * B; };
          auto x_h = [&](int64_t cb) {
            return static_cast<const uint16_t*>(static_cast<const void*>(x)) + img * x_img16 +
                   (cb / 2) * q.h * q.w * 32 + (cb % 2) * 16;
          };
          auto x_u = [&](int64_t cb) {
            return static_cast<const uint8_t*>(static_cast<const void*>(x)) + img * x_img8 + (cb / 4) * q.h * q.w * 64 +
                   (cb % 4) * 16;
          };
          // The frame rows output rows [s0, s1) read, zeros outside the input,
          // each filled just before the first output row that reads it (the
          // rows just filled are in cache when the tiles read them).
          // Frame rows from `base` on: those of the band of the output row.
          int64_t filled = s0 * q.sh, base = -1;
          const float pad = frame_pad_;
          auto fill = [&](int64_t f1) {
            for (int64_t fr = filled; fr < f1; ++fr) {
              const int64_t ih = fr - q.ph;
              for (int64_t b = 0; b < nblk; ++b) {
                float* dst = frame + ((fr - base) * G + b) * fw;
                if (ih < 0 || ih >= q.h) {
                  std::fill(dst, dst + fw, pad);
                  continue;
                }
                std::fill(dst, dst + c0 * B, pad);
                if (s_.x_bf16) {
                  bf16_lanes_to_floats_avx512(x_h(cb0 + b) + ih * q.w * 32, 32, dst + c0 * B, c1 - c0);
                } else if (codes_in_) {
                  u8_lanes_to_code_floats_avx512(x_u(cb0 + b) + ih * q.w * 64, 64, dst + c0 * B, c1 - c0);
                } else {
                  const float* src = x_f32(cb0 + b) + ih * q.w * B;
                  std::copy(src, src + (c1 - c0) * B, dst + c0 * B);
                }
                std::fill(dst + c1 * B, dst + fw, pad);
              }
            }
            filled = std::max(filled, f1);
          };
          DwArgs args[4] = {};
          for (int64_t b = 0; b < nblk; ++b) {
            DwArgs& a = args[b];
            a.bias = bias_.data() + (cb0 + b) * B;
            a.w = w_.data() + (cb0 + b) * taps * B;
            a.xdi = q.dh * G * fw;
            a.xdj = q.dw * B;
            a.kw = q.kw;
            a.ni = q.kh;
            a.nj = q.kw;
            a.xps = q.sw * B;
            a.yps = B;
            set_finish(a);
          }
          for (int64_t oy = s0; oy < s1; ++oy) {
            if (const int64_t band = oy / band_rows_ * band_rows_ * q.sh; band != base) {
              base = band;
              filled = oy * q.sh;
            }
            fill(oy * q.sh + (q.kh - 1) * q.dh + 1);
            for (int64_t b = 0; b < nblk; ++b) {
              const int64_t cb = cb0 + b;
              float* yrow = yrows + b * row_floats_;
              float* yb = s_.y_bf16 || s_.y_u8 ? nullptr : y + img * y_img + (yob0 + cb) * plane * B;
              const float* rb = res ? r + img * r_img + cb * plane * B : nullptr;
              DwArgs& a = args[b];
              auto tiles = [&](int64_t ox, int64_t n, int64_t count) {
                if (count <= 0) return;
                const int64_t pix = (oy * q.ow + ox) * B;
                a.x = frame + ((oy * q.sh - base) * G + b) * fw + ox * q.sw * B;
                a.r = rb ? rb + pix : nullptr;
                a.y = yb ? yb + pix : yrow + ox * B;
                a.count = count;
                row_table[n - 1](a);
              };
              tiles(0, sz + 1, big);
              tiles(big * (sz + 1), sz, nt - big);
              if (s_.y_u8) {  // requantized into its 16 lanes of the group (act, the grid, applied here)
                uint8_t* yu =
                    static_cast<uint8_t*>(static_cast<void*>(y)) + img * y_img8 + (cb / 4) * plane * 64 + (cb % 4) * 16;
                if (codes_out_)
                  code_floats_to_u8_lanes_avx512(yrow, yu + oy * q.ow * 64, 64, q.ow, s_.act.gamma - s_.act.beta);
                else
                  floats_to_u8_lanes_avx512(yrow, yu + oy * q.ow * 64, 64, q.ow, s_.act.alpha,
                                            static_cast<int32_t>(s_.act.beta), static_cast<int32_t>(s_.act.gamma));
              }
              if (s_.y_bf16) {
                // Rounded into the group; a lone last block also zeroes its partner lanes.
                uint16_t* yh = static_cast<uint16_t*>(static_cast<void*>(y)) + img * y_img16 + (cb / 2) * plane * 32 +
                               (cb % 2) * 16;
                floats_to_bf16_lanes_avx512(yrow, yh + oy * q.ow * 32, 32, q.ow);
                if (cb + 1 == cbs_ && cb % 2 == 0)
                  for (int64_t p = 0; p < q.ow; ++p) std::fill_n(yh + (oy * q.ow + p) * 32 + 16, 16, uint16_t{0});
              }
            }
          }
        });
    return;
  }
  run_units(
      pool, tasks_, q.n * cbs_, tg_.units, min_piece_units(tg_), [](int64_t) { return int64_t{1}; },
      [&](int64_t outer, int64_t s0, int64_t s1) {
        const int64_t img = outer / cbs_, cb = outer % cbs_;
        const float* xb = x + img * x_img + cb * q.h * q.w * B;
        const float* rb = res ? r + img * r_img + cb * plane * B : nullptr;
        float* yb = y + img * y_img + (yob0 + cb) * plane * B;
        DwArgs a{};
        a.bias = bias_.data() + cb * B;
        a.xdi = q.dh * q.w * B;
        a.xdj = q.dw * B;
        a.kw = q.kw;
        set_finish(a);
        const float* wb = w_.data() + cb * taps * B;
        for_each_tile(tg_, q, s0, s1, [&](const Tile& t) {
          const int64_t ih = t.oy * q.sh - q.ph + t.i0 * q.dh, iw = t.ox * q.sw - q.pw + t.j0 * q.dw;
          const int64_t pix = (t.oy * q.ow + t.ox) * B;
          a.x = xb + (ih * q.w + iw) * B;
          a.w = wb + (t.i0 * q.kw + t.j0) * B;
          a.r = rb ? rb + pix : nullptr;
          a.y = yb + pix;
          a.xps = t.vertical ? q.sh * q.w * B : q.sw * B;
          a.yps = t.vertical ? q.ow * B : B;
          a.ni = t.i1 - t.i0;
          a.nj = t.j1 - t.j0;
          a.count = t.count;
          (t.vertical ? any_table : row_table)[t.n - 1](a);
        });
      });
#else
  (void)x, (void)r, (void)y, (void)y_channel_offset, (void)pool;
#endif
}

}  // namespace minirt::cpu
