// Winograd F(2x2, 3x3) and F(4x4, 3x3) on the channel-blocked layout; see
// nchwc_winograd.h for the algorithm, the work split and the numerics.
//
// This file is the driver (the cost model, U, the work split, the calls).
// The AVX-512 and AVX2 kernels are one body (winograd_ukr.h) in two ISA
// files (nchwc_winograd_avx512.cpp, nchwc_winograd_avx2.cpp), reached only
// through specs whose ISA the CPU has (the constructor checks
// nchwc_winograd_declined), so this file holds no intrinsic.
//
// Matrices (Toom-Cook on the points named below; row i of B^T and G and
// column i of A^T belong to point i; "inf" is the point at infinity):
//   F(2, 3), points 0, 1, -1, inf:
//     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//     G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//     A^T = [1 1 1 0; 0 1 -1 -1]
//   F(4, 3), points 0, 1, -1, 1/2, -2, inf:
//     B^T = [1 -3/2 -2  3/2 1 0;   0 -1  1/2 5/2 1 0;   0 1 -5/2  1/2 1 0;
//            0 -2   -1  2   1 0;   0 1/2 -1 -1/2 1 0;   0 1 -3/2 -2  3/2 1]
//     G   = [1 0 0; 1/3 1/3 1/3; -1/3 1/3 -1/3; -16/15 -8/15 -4/15; 1/15 -2/15 4/15; 0 0 1]
//     A^T = [1 1 1 1 1 0; 0 1 -1 1/2 -2 0; 0 1 1 1/4 4 0; 0 1 -1 1/8 -8 1]
// The 1-D transforms below evaluate these rows with shared terms; the
// filter transform runs in double, once.
#include "kernels/cpu/nchwc_winograd.h"

#include <minirt/error.h>
#include <minirt/half.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/vmath.h"
#include "kernels/cpu/winograd_bf16_isa.h"
#include "kernels/cpu/winograd_isa.h"

namespace minirt::cpu {

namespace {

using winograd_tiles::Finish;
using winograd_tiles::GemmArgs;
using winograd_tiles::GemmFn;
using winograd_tiles::InArgs;
using winograd_tiles::InFn;
using winograd_tiles::kMaxNb256;
using winograd_tiles::kMaxNb512;
using winograd_tiles::kMaxUr;
using winograd_tiles::kUr256;
using winograd_tiles::kUr512;
using winograd_tiles::OutArgs;
using winograd_tiles::OutFn;

int ur_max(SgemmIsa isa, int nb) { return isa == SgemmIsa::kAvx512 ? kUr512[nb - 1] : kUr256[nb - 1]; }

// The cost model's machine (cycles of one core; see the constructor).
constexpr int64_t kL2Budget = 320 * 1024;  // of the smallest L2 we target (Zen 3: 512 KiB), for V and M, or U
constexpr double kL3BytesPerCycle = 16;    // what one core streams from L3 (or memory) while it computes
// A task's scratch (V and M) at most, unless groups of four register tiles
// need more (wide layers on small planes, where U is streamed once per
// group): larger groups measure within ~10% of groups a tenth their size.
constexpr int64_t kTaskScratchCap = 1024 * 1024;

// G of F(2, 3) and F(4, 3): (m + 2) x 3.
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1, 0, 0},
                              {1.0 / 3, 1.0 / 3, 1.0 / 3},
                              {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                              {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                              {1.0 / 15, -2.0 / 15, 4.0 / 15},
                              {0, 0, 1}};

// The fraction of the FMA peak a register tile of nb blocks keeps over runs
// of `run` tiles cut into register tiles of at most ur (the direct kernel's
// model): per input channel nb * t FMAs (two a cycle), nb + t loads (two a
// cycle), and each accumulator's chain waits for its previous FMA (4 cycles).
double tile_efficiency(int nb, int ur, int64_t run) {
  const double t = static_cast<double>(run) / static_cast<double>(ceil_div(std::max<int64_t>(run, 1), ur));
  const double fmas = nb * t, cycles = std::max({fmas / 2, 4.0, (nb + t) / 2});
  return fmas / 2 / cycles;
}

// The output transform's epilogue for act (winograd_isa.h, Finish).
Finish finish_of(const Activation& act) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Finish f{-inf, inf, false, false};
  if (act.kind == ActKind::kRelu)
    f.lo = 0.0f, f.nan_to_lo = true;
  else if (act.kind == ActKind::kClip)
    f.lo = act.alpha, f.hi = act.beta;
  else if (act.kind != ActKind::kNone)
    f.after = true;  // the others over the finished tile
  return f;
}

#if MINIRT_VMATH_X86

// The ISA's kernels (nchwc_winograd_avx512.cpp, nchwc_winograd_avx2.cpp) for F(m x m).
struct Kernels {
  InFn in;
  OutFn out;
  const GemmFn (*gemm)[kMaxUr];
};

Kernels kernels_of(SgemmIsa isa, int m) {
  const winograd_tiles::Kernels& k =
      isa == SgemmIsa::kAvx512 ? nchwc_winograd_kernels_avx512() : nchwc_winograd_kernels_avx2();
  const int i = m == 2 ? 0 : 1;
  return Kernels{k.in[i], k.out[i], k.gemm};
}

#endif  // MINIRT_VMATH_X86

}  // namespace

std::string nchwc_winograd_declined(const NchwcConvSpec& s, int tile, bool bf16) {
  if (tile != 2 && tile != 4) return "needs tile 2 (F(2x2,3x3)) or 4 (F(4x4,3x3))";
  if (bf16) {
    // F(4x4)'s transforms multiply bf16's rounding about 3x as much as
    // F(2x2)'s (nchwc_winograd.h): more than the accuracy policy allows.
    if (tile != 2) return "bf16 products need tile 2 (F(2x2,3x3)): F(4x4)'s transforms amplify bf16's rounding";
    const CpuFeatures& f = cpu_features();
    if (!f.avx512_bf16 || !f.os_avx512 || cpu_isa() < CpuIsa::kAvx512Bf16)
      return std::string("needs AVX512_BF16 for bf16 products (this process's ISA: ") + cpu_isa_name(cpu_isa()) + ")";
    if (s.isa != SgemmIsa::kAvx512) return "needs the 16-channel blocked layout (AVX-512) for bf16 products";
  }
  const Geometry& q = s.q;
  if (q.groups != 1) return "needs groups == 1";
  if (q.kh != 3 || q.kw != 3) return "needs a 3x3 window";
  if (q.sh != 1 || q.sw != 1) return "needs stride 1";
  if (q.dh != 1 || q.dw != 1) return "needs dilation 1";
  if (!s.input_blocked) return "needs a blocked input";
  // The rest (ISA, block, padding, channels, y_channels) as the direct kernel's.
  return nchwc_direct_declined(s);
}

NchwcWinogradConv::NchwcWinogradConv(const NchwcConvSpec& s, int tile, const float* w, const float* bias, int threads,
                                     bool bf16)
    : s_(s), m_(tile), bf16_(bf16) {
  if (std::string why = nchwc_winograd_declined(s, tile, bf16); !why.empty())
    throw Error(ErrorCode::kInternal, "NchwcWinogradConv cannot run this convolution: " + why);
  const Geometry& q = s.q;
  const int64_t B = s.block, A = m_ + 2, P = A * A;
  empty_ = q.n == 0 || q.m == 0 || q.oh == 0 || q.ow == 0;
  cbs_ = nchwc_blocks(q.c, s.block);
  mb_ = nchwc_blocks(q.m, s.block);
  tw_ = ceil_div(q.ow, m_);
  tiles_ = ceil_div(q.oh, m_) * tw_;

  // Output blocks in groups of near-equal sizes of at most NB.
  const int64_t max_nb =
      std::min<int64_t>(s.isa == SgemmIsa::kAvx512 ? kMaxNb512 : kMaxNb256, std::max<int64_t>(mb_, 1));
  const int64_t ng = std::max<int64_t>(1, ceil_div(mb_, max_nb));
  for (int64_t g = 0, ob = 0; g < ng; ++g) {
    const int64_t nb = mb_ / ng + (g < mb_ % ng ? 1 : 0);
    groups_.push_back(Group{ob, std::max<int64_t>(nb, 1)});
    ob += nb;
  }
  const int nb_main = static_cast<int>(groups_[0].nb);
  ur_ = ur_max(s.isa, nb_main);

  // Tile groups and output chunks, from a cost model in cycles of one core:
  // per unit the GEMMs (vector FMAs, two a cycle, at the register tile's
  // efficiency), the output transform (~1.5 cycles per point and block for
  // F4, 1 for F2), U streamed from L3 when the U a task cycles through is
  // larger than kL2Budget, V and M written to and read back from L3 when
  // they are; per distinct (image, tile group) of a task the input
  // transform (~2 cycles per point and block for F4, 1.2 for F2). The
  // makespan is the busiest task's. A unit's V and M within
  // kTaskScratchCap, or groups of at most four register tiles.
  // bf16 products: U half the bytes; the GEMMs half the cycles where a
  // vdpbf16ps does twice an FMA's work in the same time, and V rounded once
  // more per point and block.
  const double k_in = (m_ == 4 ? 2.0 : 1.2) + (bf16_ ? 0.5 : 0.0), k_out = m_ == 4 ? 1.5 : 1.0;
  const double gemm_rate = bf16_ && bf16_dot_outpaces_fma(Bf16Isa::kAvx512Bf16) ? 2.0 : 1.0;
  const double u_elem = bf16_ ? 2 : 4;
  const int64_t tasks_max = std::max(1, threads);
  const double cpad = static_cast<double>(cbs_ * B);
  double best = std::numeric_limits<double>::infinity();
  const int64_t t_cap = std::min<int64_t>(std::max<int64_t>(tiles_, 1), 4096);
  for (int64_t tg = 1; tg <= std::max<int64_t>(tiles_, 1); ++tg) {
    const int64_t T = ceil_div(std::max<int64_t>(tiles_, 1), tg);
    if (T > t_cap) continue;
    if (tg > 1 && ceil_div(std::max<int64_t>(tiles_, 1), tg - 1) == T) continue;  // the same T as fewer groups
    for (int64_t ch = 1; ch <= ng; ++ch) {
      const int64_t cgroups = ceil_div(ng, ch);
      const double cblocks = std::min<double>(static_cast<double>(mb_), static_cast<double>(cgroups * nb_main));
      const int64_t units = q.n * tg * ch, tasks = std::min(tasks_max, std::max<int64_t>(units, 1));
      const int64_t upt = ceil_div(units, tasks);
      const int64_t distinct = ch == 1 ? upt : std::min(upt, ceil_div(upt, ch) + 1);
      const double Td = static_cast<double>(T);
      const double gemm = P * cpad * cblocks * Td / 2 / tile_efficiency(nb_main, ur_, T) / gemm_rate;
      const double out = k_out * P * cblocks * Td;
      const double u_bytes = P * cpad * cblocks * B * u_elem;
      const double ustream =
          u_bytes * static_cast<double>(std::min(ch, upt)) > kL2Budget ? u_bytes / kL3BytesPerCycle : 0;
      const double vm_bytes = P * (cpad + cblocks * B) * Td * 4;
      if (vm_bytes > kTaskScratchCap && T > 4 * ur_) continue;
      const double vmspill = vm_bytes > kL2Budget ? 2 * vm_bytes / kL3BytesPerCycle : 0;
      const double in = k_in * P * static_cast<double>(cbs_) * Td;
      const double cost =
          static_cast<double>(upt) * (gemm + out + ustream + vmspill) + static_cast<double>(distinct) * in;
      if (cost < best * 0.999) {
        best = cost;
        tile_groups_ = tg;
        group_tiles_ = T;
        chunks_ = ch;
      }
    }
  }
  chunk_blocks_ = 0;
  for (int64_t c = 0; c < chunks_; ++c) {
    const int64_t g0 = ng * c / chunks_, g1 = ng * (c + 1) / chunks_;
    if (g1 > g0) chunk_blocks_ = std::max(chunk_blocks_, groups_[g1 - 1].ob + groups_[g1 - 1].nb - groups_[g0].ob);
  }
  chunk_blocks_ = std::max<int64_t>(chunk_blocks_, 1);
  const int64_t units = q.n * tile_groups_ * chunks_;
  tasks_ = std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, units));
  auto round16 = [](int64_t f) { return static_cast<size_t>(ceil_div(f, 16) * 16); };
  v_floats_ = round16(P * cbs_ * B * group_tiles_);
  task_floats_ = v_floats_ + round16(P * chunk_blocks_ * B * group_tiles_);
  if (empty_) task_floats_ = 0;

  if (!w) return;
  // U = G g G^T in double, packed [point][group][input block][lane][nb][B], zero past C and M.
  const double(*G)[3] = m_ == 2 ? kG2 : kG4;
  const int64_t cpad_i = cbs_ * B, mpad = mb_ * B;
  // bf16: two to a float, zero bits past C and M as well.
  u_ = AlignedFloats(static_cast<size_t>(bf16_ ? P * cpad_i * mpad / 2 : P * cpad_i * mpad));
  bias_ = AlignedFloats(static_cast<size_t>(mpad));
  std::fill(u_.data(), u_.data() + u_.size(), 0.0f);
  uint16_t* ub = reinterpret_cast<uint16_t*>(u_.data());
  std::fill(bias_.data(), bias_.data() + bias_.size(), 0.0f);
  // Per group and input channel, the group's output channels side by side
  // (the innermost of U's layout): gathered, transformed, then written as
  // one run per point.
  int64_t widest = 0;
  for (const Group& g : groups_) widest = std::max(widest, g.nb * B);
  std::vector<double> f(static_cast<size_t>(9 * widest)), gg(static_cast<size_t>(A * 3 * widest));
  for (const Group& g : groups_) {
    const int64_t m0 = g.ob * B, no = std::min(g.nb * B, q.m - m0);
    if (no <= 0) continue;
    for (int64_t c = 0; c < q.c; ++c) {
      for (int64_t o = 0; o < no; ++o)
        for (int k = 0; k < 9; ++k) f[static_cast<size_t>(k * widest + o)] = w[((m0 + o) * q.c + c) * 9 + k];
      for (int64_t i = 0; i < A; ++i)  // G g
        for (int b = 0; b < 3; ++b) {
          double* out = gg.data() + (i * 3 + b) * widest;
          const double *f0 = f.data() + b * widest, *f1 = f0 + 3 * widest, *f2 = f0 + 6 * widest;
          for (int64_t o = 0; o < no; ++o) out[o] = G[i][0] * f0[o] + G[i][1] * f1[o] + G[i][2] * f2[o];
        }
      const int64_t cb = c / B, l = c % B;
      for (int64_t i = 0; i < A; ++i)
        for (int64_t j = 0; j < A; ++j) {
          const double *g0 = gg.data() + i * 3 * widest, *g1 = g0 + widest, *g2 = g1 + widest;
          const int64_t at = (i * A + j) * cpad_i * mpad + cpad_i * m0;
          if (bf16_) {
            for (int64_t o = 0; o < no; ++o)
              ub[static_cast<size_t>(at + ((cb * (B / 2) + l / 2) * g.nb + o / B) * 2 * B + o % B * 2 + l % 2)] =
                  float_to_bfloat16(static_cast<float>(g0[o] * G[j][0] + g1[o] * G[j][1] + g2[o] * G[j][2]));
          } else {
            float* dst = u_.data() + at + (cb * B + l) * g.nb * B;
            for (int64_t o = 0; o < no; ++o)
              dst[o] = static_cast<float>(g0[o] * G[j][0] + g1[o] * G[j][1] + g2[o] * G[j][2]);
          }
        }
    }
  }
  if (bias) std::copy(bias, bias + q.m, bias_.data());
}

std::string NchwcWinogradConv::describe() const {
  return "nchwc_winograd_f" + std::to_string(m_) +
         (bf16_ ? "_bf16 isa=avx512_bf16" : " isa=" + std::string(sgemm_isa_name(s_.isa))) +
         " nb=" + std::to_string(groups_.empty() ? 0 : groups_[0].nb) + " ur=" + std::to_string(ur_) +
         " tiles=" + std::to_string(tiles_) + " tiles/group=" + std::to_string(group_tiles_) +
         " chunks=" + std::to_string(chunks_) + " tasks=" + std::to_string(tasks_);
}

// One unit: tiles [t0, t1) of one image (x, r, y at the image), the output
// blocks of one chunk; transform_input false: V already holds those tiles.
void NchwcWinogradConv::unit(const float* x, const float* r, float* y, int64_t chunk, int64_t t0, int64_t t1,
                             bool transform_input, float* ws) const {
#if MINIRT_VMATH_X86
  const Geometry& q = s_.q;
  const int64_t B = s_.block, A = m_ + 2, P = A * A, nt = t1 - t0, plane = q.oh * q.ow;
  const Kernels k = kernels_of(s_.isa, m_);
  float* v = ws;
  float* mbuf = ws + v_floats_;
  if (transform_input) {
    InArgs ia{x, v, q.h, q.w, q.ph, q.pw, tw_, cbs_, t0, nt};
    k.in(ia);
    if (bf16_) winograd_bf16_narrow_avx512bf16(v, P * cbs_ * B * nt);
  }
  const int64_t ng = static_cast<int64_t>(groups_.size());
  const int64_t g0 = ng * chunk / chunks_, g1 = ng * (chunk + 1) / chunks_;
  const int64_t ob0 = groups_[g0].ob, nblocks = groups_[g1 - 1].ob + groups_[g1 - 1].nb - ob0;
  const int64_t cpad = cbs_ * B, mpad = mb_ * B, vxi = cpad * nt, mxi = nblocks * B * nt;
  // The point-wise GEMMs, per point and output group; with bf16 products
  // V's bf16 elements sit where its floats' indices were (narrowed in place).
  GemmArgs ga{};
  ga.vcb = nt * B;
  ga.mob = nt * B;
  ga.cbs = cbs_;
  WinogradBf16Gemm bg{};
  bg.vcb = nt * B;
  bg.mob = nt * B;
  bg.cbs = cbs_;
  bg.nt = nt;
  for (int64_t xi = 0; xi < P; ++xi)
    for (int64_t gi = g0; gi < g1; ++gi) {
      const Group& g = groups_[gi];
      const int ur = ur_max(s_.isa, static_cast<int>(g.nb));
      const int64_t u_at = xi * cpad * mpad + cpad * g.ob * B;
      float* m = mbuf + xi * mxi + (g.ob - ob0) * nt * B;
      if (bf16_) {
        bg.v = reinterpret_cast<const uint16_t*>(v) + xi * vxi;
        bg.u = reinterpret_cast<const uint16_t*>(u_.data()) + u_at;
        bg.m = m;
        bg.nb = static_cast<int>(g.nb);
        bg.ur = ur;
        winograd_bf16_gemm_avx512bf16(bg);
        continue;
      }
      const GemmFn* fns = k.gemm[g.nb - 1];
      const int64_t parts = ceil_div(nt, static_cast<int64_t>(ur));
      for (int64_t j = 0; j < parts; ++j) {
        const int64_t p0 = nt * j / parts, p1 = nt * (j + 1) / parts;
        ga.v = v + xi * vxi + p0 * B;
        ga.u = u_.data() + u_at;
        ga.m = m + p0 * B;
        fns[p1 - p0 - 1](ga);
      }
    }
  OutArgs oa{};
  oa.mxi = mxi;
  oa.oh = q.oh;
  oa.ow = q.ow;
  oa.tw = tw_;
  oa.t0 = t0;
  oa.nt = nt;
  oa.fin = finish_of(s_.act);
  oa.act = &s_.act;
  for (int64_t ob = 0; ob < nblocks; ++ob) {
    oa.m = mbuf + ob * nt * B;
    oa.bias = bias_.data() + (ob0 + ob) * B;
    oa.r = r ? r + (ob0 + ob) * plane * B : nullptr;
    oa.y = y + (ob0 + ob) * plane * B;
    k.out(oa);
  }
#else
  (void)x, (void)r, (void)y, (void)chunk, (void)t0, (void)t1, (void)transform_input, (void)ws;
#endif
}

void NchwcWinogradConv::run(const float* x, const float* r, float* y, int64_t y_channel_offset, float* workspace,
                            ThreadPool& pool) const {
  if (empty_) return;
  const Geometry& q = s_.q;
  const int64_t B = s_.block, plane = q.oh * q.ow;
  const int64_t x_img = cbs_ * q.h * q.w * B;
  const int64_t y_img = nchwc_blocks(s_.y_channels ? s_.y_channels : q.m, s_.block) * plane * B;
  const int64_t r_img = mb_ * plane * B;
  const int64_t yob0 = y_channel_offset / B;
  const bool res = s_.residual && r;
  const int64_t units = q.n * tile_groups_ * chunks_;
  // Units (image, tile group, chunk), chunks innermost, in equal runs per task.
  auto body = [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      float* ws = workspace + static_cast<size_t>(k) * task_floats_;
      int64_t have = -1;  // the (image, tile group) whose V the task holds
      for (int64_t u = units * k / tasks_; u < units * (k + 1) / tasks_; ++u) {
        const int64_t it = u / chunks_, chunk = u % chunks_, img = it / tile_groups_, g = it % tile_groups_;
        const int64_t t0 = tiles_ * g / tile_groups_, t1 = tiles_ * (g + 1) / tile_groups_;
        if (t1 <= t0) continue;
        unit(x + img * x_img, res ? r + img * r_img : nullptr, y + img * y_img + yob0 * plane * B, chunk, t0, t1,
             it != have, ws);
        have = it;
      }
    }
  };
  pool.parallel_for(tasks_, body);
}

}  // namespace minirt::cpu
