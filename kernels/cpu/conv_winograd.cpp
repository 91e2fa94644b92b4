// Winograd F(2x2, 3x3) and F(4x4, 3x3) (see conv_winograd.h).
//
// Per run: the input is split once into stride-m phase planes of the padded
// input (conv_common.h), so that patch element (r, s) of tiles t, t + 1, ...
// is a run of consecutive floats. Each unit (a block of tiles of one image,
// and a part of the filters) then
//   1. transforms its tiles' patches, 8 tiles at a time, into V[xi]
//      (channels x tiles), written straight in the SGEMM's B panel layout;
//   2. runs (m+2)^2 GEMMs M[xi] = U[xi] V[xi] on packed A panels of the
//      transformed filters (kept from plan time);
//   3. transforms M back, 8 tiles at a time, adds the bias, applies the
//      activation and stores the m x m outputs of each tile (edges clipped).
// The transforms work on local arrays of [element][8 tiles] with fixed
// inner loops, which the compiler turns into vector code for whatever the
// file is built for (AVX2 here); no intrinsics, so every CPU runs it.
//
// Matrices (Lavin & Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016): F(2, 3) on the points 0, 1, -1, inf; F(4, 3) on 0, 1,
// -1, 2, -2, inf. The filter transform runs in double, once.
#include "kernels/cpu/conv_winograd.h"
#include "kernels/cpu/vmath.h"

#include <algorithm>
#include <cstring>

namespace minirt::cpu {

namespace {

constexpr int kLanes = 8;  // tiles per transform step: one AVX2 vector

// G, the filter transform, (m + 2) x 3.
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};

// B^T applied along one axis of 8 tiles: out(i, j, value) receives
// sum_r B^T[i][r] in(r, j). Grouped as the products share terms (float
// addition does not reassociate by itself).
template <int M, typename In, typename Out>
inline void input_1d(In in, Out out) {
  for (int j = 0; j < kLanes; ++j) {
    if constexpr (M == 2) {
      // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
      const float d0 = in(0, j), d1 = in(1, j), d2 = in(2, j), d3 = in(3, j);
      out(0, j, d0 - d2);
      out(1, j, d1 + d2);
      out(2, j, d2 - d1);
      out(3, j, d1 - d3);
    } else {
      // B^T = [4  0 -5  0 1 0;  0 -4 -4  1 1 0;  0  4 -4 -1 1 0;
      //        0 -2 -1  2 1 0;  0  2 -1 -2 1 0;  0  4  0 -5 0 1]
      const float d0 = in(0, j), d1 = in(1, j), d2 = in(2, j), d3 = in(3, j), d4 = in(4, j), d5 = in(5, j);
      const float a = d4 - 4.0f * d2, b = d3 - 4.0f * d1;  // rows 1, 2
      const float c = d4 - d2, e = 2.0f * (d3 - d1);       // rows 3, 4
      out(0, j, 4.0f * d0 - 5.0f * d2 + d4);
      out(1, j, a + b);
      out(2, j, a - b);
      out(3, j, c + e);
      out(4, j, c - e);
      out(5, j, 4.0f * d1 - 5.0f * d3 + d5);
    }
  }
}

// A^T applied along one axis of 8 tiles: m outputs from m + 2 inputs.
template <int M, typename In, typename Out>
inline void output_1d(In in, Out out) {
  for (int j = 0; j < kLanes; ++j) {
    if constexpr (M == 2) {
      // A^T = [1 1 1 0; 0 1 -1 -1]
      const float m0 = in(0, j), m1 = in(1, j), m2 = in(2, j), m3 = in(3, j);
      out(0, j, m0 + m1 + m2);
      out(1, j, m1 - m2 - m3);
    } else {
      // A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
      const float m0 = in(0, j), m1 = in(1, j), m2 = in(2, j), m3 = in(3, j), m4 = in(4, j), m5 = in(5, j);
      const float a = m1 + m2, b = m1 - m2, c = m3 + m4, d = m3 - m4;
      out(0, j, m0 + a + c);
      out(1, j, b + 2.0f * d);
      out(2, j, a + 4.0f * c);
      out(3, j, b + 8.0f * d + m5);
    }
  }
}

// B^T d B of 8 consecutive tiles of one channel: patch element e = (r, s)
// of the first tile is src[off[e]]. Writes element xi of the 8 tiles to
// dst + xi * xstride (8 consecutive floats of a B panel).
template <int M>
inline void input_chunk(const float* src, const int64_t* off, float* dst, int64_t xstride) {
  constexpr int R = M + 2;
  float d[R][R][kLanes], t[R][R][kLanes], v[R][R][kLanes];
  for (int e = 0; e < R * R; ++e) {
    const float* p = src + off[e];
    for (int j = 0; j < kLanes; ++j) d[e / R][e % R][j] = p[j];
  }
  for (int s = 0; s < R; ++s)
    input_1d<M>([&](int r, int j) { return d[r][s][j]; }, [&](int i, int j, float x) { t[i][s][j] = x; });
  for (int i = 0; i < R; ++i)
    input_1d<M>([&](int s, int j) { return t[i][s][j]; }, [&](int k, int j, float x) { v[i][k][j] = x; });
  for (int e = 0; e < R * R; ++e) {
    float* p = dst + e * xstride;
    for (int j = 0; j < kLanes; ++j) p[j] = v[e / R][e % R][j];
  }
}

// A^T M A + bias, through the activation, of 8 consecutive tiles of one
// filter: element xi of the first tile is src[xi * xstride].
template <int M>
inline void output_chunk(const float* src, int64_t xstride, float bias, const Activation& act,
                         float out[M][M][kLanes]) {
  constexpr int R = M + 2;
  float mm[R][R][kLanes], t[M][R][kLanes];
  for (int e = 0; e < R * R; ++e) {
    const float* p = src + e * xstride;
    for (int j = 0; j < kLanes; ++j) mm[e / R][e % R][j] = p[j];
  }
  for (int s = 0; s < R; ++s)
    output_1d<M>([&](int r, int j) { return mm[r][s][j]; }, [&](int i, int j, float x) { t[i][s][j] = x; });
  for (int i = 0; i < M; ++i)
    output_1d<M>([&](int s, int j) { return t[i][s][j]; }, [&](int k, int j, float x) { out[i][k][j] = x + bias; });
  float* o = &out[0][0][0];
  constexpr int n = M * M * kLanes;
  // As Activation::apply (NaN kept by Clip, zeroed by Relu), in vector form.
  if (act.kind == ActKind::kRelu) {
    for (int i = 0; i < n; ++i) o[i] = o[i] > 0 ? o[i] : 0.0f;
  } else if (act.kind == ActKind::kClip) {
    for (int i = 0; i < n; ++i) o[i] = std::min(std::max(o[i], act.alpha), act.beta);
  } else if (!act.none()) {
    apply_activation(act, o, n);  // vmath.h: vectorized
  }
}

// U = G g G^T of every filter o and channel ci (w: [m][c][3][3]), one row i
// of points at a time: t = (G g)[i] in double for every filter (3 m c
// doubles), then each point (i, k) as m x c floats ([o][ci]), handed to
// pack(i * R + k, u) before the next is made. So the transform never holds
// all R * R points beside their packed copy (a 512-channel F(4x4) layer's
// would be 36 MB).
template <int R, typename Pack>
void transform_filters(const double (&gm)[R][3], const float* w, int64_t m, int64_t c, Pack pack) {
  const int64_t filters = m * c;
  std::vector<double> t(static_cast<size_t>(3 * filters));
  std::vector<float> u(static_cast<size_t>(filters));
  for (int i = 0; i < R; ++i) {
    for (int64_t f = 0; f < filters; ++f) {
      const float* g = w + f * 9;
      for (int j = 0; j < 3; ++j)
        t[static_cast<size_t>(f * 3 + j)] = gm[i][0] * g[j] + gm[i][1] * g[3 + j] + gm[i][2] * g[6 + j];
    }
    for (int k = 0; k < R; ++k) {
      for (int64_t f = 0; f < filters; ++f) {
        const double* tf = t.data() + f * 3;
        u[static_cast<size_t>(f)] = static_cast<float>(tf[0] * gm[k][0] + tf[1] * gm[k][1] + tf[2] * gm[k][2]);
      }
      pack(i * R + k, u.data());
    }
  }
}

size_t round16(size_t n) { return (n + 15) / 16 * 16; }
int64_t round_up(int64_t n, int64_t to) { return ceil_div(n, to) * to; }

}  // namespace

WinogradConv::WinogradConv(const Geometry& q, int tile, SgemmIsa isa, int threads, const float* weights)
    : q_(q), tile_(tile), xis_((tile + 2) * (tile + 2)), isa_(isa) {
  const SgemmTile st = sgemm_tile(isa);
  nr_ = st.nr;
  th_ = ceil_div(q.oh, tile);
  tw_ = ceil_div(q.ow, tile);
  wq_ = tw_ + 1;
  // One more row than the patches reach, so that a step of 8 tiles past the
  // last one mostly reads this channel's planes (what it reads is junk).
  hq_ = th_ + 2;
  tiles_ = th_ * wq_;
  pp_.hq = hq_;
  pp_.wq = wq_;
  for (int ry = 0; ry < tile; ++ry)
    for (int rx = 0; rx < tile; ++rx) {
      pp_.ry.push_back(ry);
      pp_.rx.push_back(rx);
    }
  threads = std::max(threads, 1);
  // Blocks of tiles: a block's V and M (xis * (c + m) * tb floats) about
  // 512 KiB, so they are still in L2 when the GEMMs and the output transform
  // read them; at least one B panel wide.
  int64_t tb = 131072 / (xis_ * (q.c + q.m)) / kLanes * kLanes;
  tb = std::clamp<int64_t>(tb, nr_, 512);
  tb = std::min(tb, round_up(tiles_, kLanes));
  int64_t blocks = ceil_div(tiles_, tb);
  // Few units: make their number a multiple of the threads (even work).
  if (q.n * blocks < 4 * threads && q.n * blocks >= threads) {
    while ((q.n * blocks) % threads) ++blocks;
    tb = round_up(ceil_div(tiles_, blocks), kLanes);
  }
  tb_ = tb;
  tbp_ = round_up(tb, nr_);
  blocks_ = ceil_div(tiles_, tb);
  // Fewer units than threads: the filters are cut into parts too (each part
  // repeats its block's input transform).
  const int64_t base = q.n * blocks_;
  mparts_ = base >= threads ? 1 : std::min(ceil_div(threads, base), ceil_div(q.m, st.mr));
  mpart_ = round_up(ceil_div(q.m, std::max<int64_t>(mparts_, 1)), st.mr);
  mparts_ = std::max<int64_t>(1, ceil_div(q.m, mpart_));
  units_ = base * mparts_;
  tasks_ = std::max<int64_t>(1, std::min<int64_t>(threads, units_));
  planes_floats_ = round16(static_cast<size_t>(q.n * q.c * pp_.channel_stride()) + 2 * kLanes);
  task_floats_ = round16(static_cast<size_t>(xis_ * q.c * tbp_)) + round16(static_cast<size_t>(xis_ * mpart_ * tb_));
  ws_floats_ = planes_floats_ + task_floats_ * static_cast<size_t>(tasks_);

  a_stride_ = static_cast<int64_t>(round16(sgemm_packed_a_floats(isa, mpart_, q.c)));
  if (!weights) return;
  packed_u_ = AlignedFloats(static_cast<size_t>(xis_ * mparts_ * a_stride_));
  // Point xi's m x c transformed filters, as each is made, into its row panels.
  auto pack = [&](int64_t xi, const float* u) {
    for (int64_t part = 0; part < mparts_; ++part) {
      int64_t m0 = part * mpart_, rows = std::min(mpart_, q.m - m0);
      sgemm_pack_a(isa, u + m0 * q.c, q.c, 1, rows, q.c, packed_u_.data() + (xi * mparts_ + part) * a_stride_);
    }
  };
  if (tile == 2)
    transform_filters<4>(kG2, weights, q.m, q.c, pack);
  else
    transform_filters<6>(kG4, weights, q.m, q.c, pack);
}

void WinogradConv::run(const float* x, const float* bias, const Activation& act, float* y, float* ws,
                       ThreadPool& pool) const {
  if (tile_ == 2)
    run_tiles<2>(x, bias, act, y, ws, pool);
  else
    run_tiles<4>(x, bias, act, y, ws, pool);
}

template <int M>
void WinogradConv::run_tiles(const float* x, const float* bias, const Activation& act, float* y, float* ws,
                             ThreadPool& pool) const {
  constexpr int R = M + 2;
  const Geometry& q = q_;
  Geometry qm = q;
  qm.sh = qm.sw = M;
  float* planes = ws;
  const int64_t cstride = pp_.channel_stride(), pl = hq_ * wq_;
  auto fill = [&](int64_t p0, int64_t p1) { fill_planes(qm, pp_, x, planes, p0, p1); };
  pool.parallel_for(q.n * q.c, fill, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cstride)));
  // The slack the last steps of 8 tiles may read.
  std::fill(planes + q.n * q.c * cstride, planes + planes_floats_, 0.0f);
  // Patch element (r, s) of tile t: plane (r % M, s % M), row r / M, column s / M from t.
  int64_t off[R * R];
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < R; ++s) off[r * R + s] = ((r % M) * M + s % M) * pl + (r / M) * wq_ + s / M;
  const int64_t vsize = static_cast<int64_t>(round16(static_cast<size_t>(xis_ * q.c * tbp_)));
  auto body = [&](int64_t task0, int64_t task1) {
    for (int64_t task = task0; task < task1; ++task) {
      float* v = ws + planes_floats_ + static_cast<size_t>(task) * task_floats_;
      float* mo = v + vsize;
      for (int64_t unit = units_ * task / tasks_; unit < units_ * (task + 1) / tasks_; ++unit) {
        const int64_t part = unit % mparts_, blk = (unit / mparts_) % blocks_, img = unit / mparts_ / blocks_;
        const int64_t tile0 = blk * tb_, nt = std::min(tb_, tiles_ - tile0);
        const int64_t m0 = part * mpart_, mr = std::min(mpart_, q.m - m0);
        // 1. V[xi]: channel ci is row ci of the B panels (nr columns each).
        for (int64_t ci = 0; ci < q.c; ++ci) {
          const float* src = planes + (img * q.c + ci) * cstride + tile0;
          for (int64_t tl = 0; tl < nt; tl += kLanes)
            input_chunk<M>(src + tl, off, v + (tl / nr_) * q.c * nr_ + ci * nr_ + tl % nr_, q.c * tbp_);
        }
        // 2. M[xi] = U[xi] V[xi]: mr x nt, rows tb apart.
        for (int64_t xi = 0; xi < xis_; ++xi) {
          SgemmArgs g;
          g.isa = isa_;
          g.m = mr;
          g.n = nt;
          g.k = q.c;
          g.a = packed_u_.data() + (xi * mparts_ + part) * a_stride_;
          g.b = SgemmB::prepacked(v + xi * q.c * tbp_);
          g.c = mo + xi * mr * tb_;
          g.ldc = tb_;
          sgemm_compute(g, 0, mr, 0, nt, nullptr);
        }
        // 3. The outputs; junk tiles and outputs past the edges are dropped.
        float out[M][M][kLanes];
        for (int64_t mi = 0; mi < mr; ++mi) {
          float* yp = y + ((img * q.m) + m0 + mi) * q.oh * q.ow;
          const float b = bias ? bias[m0 + mi] : 0.0f;
          for (int64_t tl = 0; tl < nt; tl += kLanes) {
            output_chunk<M>(mo + mi * tb_ + tl, mr * tb_, b, act, out);
            const int64_t cnt = std::min<int64_t>(kLanes, nt - tl);
            for (int64_t j = 0; j < cnt; ++j) {
              const int64_t t = tile0 + tl + j, ty = t / wq_, tx = t % wq_;
              if (tx >= tw_) continue;
              const int64_t rows = std::min<int64_t>(M, q.oh - ty * M), cols = std::min<int64_t>(M, q.ow - tx * M);
              for (int64_t i = 0; i < rows; ++i) {
                float* yr = yp + (ty * M + i) * q.ow + tx * M;
                for (int64_t k = 0; k < cols; ++k) yr[k] = out[i][k][j];
              }
            }
          }
        }
      }
    }
  };
  pool.parallel_for(tasks_, body);
}

}  // namespace minirt::cpu
