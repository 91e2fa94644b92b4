// Winograd F(2x2, 3x3) and F(4x4, 3x3) on the channel-blocked layout; see
// nchwc_winograd.h for the algorithm, the work split and the numerics.
//
// The AVX-512 and AVX2 kernels are compiled with target attributes and only
// reached through specs whose ISA the CPU has (the constructor checks
// nchwc_winograd_declined), so this file may be built for plain x86-64. A
// target attribute cannot depend on a template parameter, so each kernel is
// written out twice; the two copies are the same text but for the ISA's
// name (Avx512 / Avx2), and the vector operations they call are the members
// of those two structs.
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
#include <array>
#include <limits>
#include <utility>

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/vmath.h"
#include "kernels/cpu/winograd_bf16_isa.h"

namespace minirt::cpu {

namespace {

// Register tiles of the GEMMs, as the direct kernel's: output blocks per
// tile at most, and tiles per register tile for NB blocks (UR * NB
// accumulators, NB vectors of U and a broadcast of V fit the 32 zmm / 16
// ymm registers).
constexpr int kMaxNb512 = 4, kMaxNb256 = 3;
constexpr int kUr512[kMaxNb512] = {12, 12, 8, 6};
constexpr int kUr256[kMaxNb256] = {8, 6, 4};
constexpr int kMaxUr = 12;

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

// How the output transform applies the activation: as max(lo, v) (max(v,
// lo) when a NaN must become lo, as Relu's does) then min(hi, .) on the
// registers, which is Relu, Clip and none exactly; any other activation
// over the tile's pixels right after their store.
struct Finish {
  float lo, hi;
  bool nan_to_lo, after;
};

Finish finish_of(const Activation& act) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Finish f{-inf, inf, false, false};
  switch (act.kind) {
    case ActKind::kNone:
      break;
    case ActKind::kRelu:
      f.lo = 0.0f, f.nan_to_lo = true;
      break;
    case ActKind::kClip:
      f.lo = act.alpha, f.hi = act.beta;
      break;
    default:
      f.after = true;
  }
  return f;
}

// The input transform of tiles [t0, t0 + nt) of one image, every input block.
struct InArgs {
  const float* x;            // the image's input (block 0)
  float* v;                  // V: [point][input block][tile][B]
  int64_t h, w, ph, pw, tw;  // input plane, padding (top, left), tiles per row
  int64_t cbs, t0, nt;       // input blocks, first tile, tiles
};
using InFn = void (*)(const InArgs&);

// One register tile of one GEMM: UR tiles x NB output blocks, over every input block.
struct GemmArgs {
  const float* v;  // V at (point, input block 0, the first tile)
  const float* u;  // U at (point, the group, input block 0): [input block][lane][NB][B]
  float* m;        // M at (point, the group's first block, the first tile)
  int64_t vcb;     // floats between input blocks in V
  int64_t mob;     // floats between output blocks in M
  int64_t cbs;     // input blocks
};
using GemmFn = void (*)(const GemmArgs&);

// The output transform of one output block for the nt tiles of a unit.
struct OutArgs {
  const float* m;     // M at (point 0, this block, tile 0)
  int64_t mxi;        // floats between points in M
  const float* bias;  // this block's B biases
  const float* r;     // the residual's plane of this block, or null
  float* y;           // the output's plane of this block
  int64_t oh, ow, tw, t0, nt;
  Finish fin;
  const Activation* act;
};
using OutFn = void (*)(const OutArgs&);

#if MINIRT_VMATH_X86

MINIRT_AVX512_WARNINGS_OFF

#define MINIRT_WINO_INLINE __attribute__((always_inline)) inline

// The vector operations of each ISA, under the names the kernels use.
struct Avx512 {
  using V = __m512;
  static constexpr int B = 16;
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V load(const float* p) { return _mm512_loadu_ps(p); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V load_aligned(const float* p) { return _mm512_load_ps(p); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V set1(float f) { return _mm512_set1_ps(f); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V zero() { return _mm512_setzero_ps(); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V add(V a, V b) { return _mm512_add_ps(a, b); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  // k * a + c
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V fma(float k, V a, V c) {
    return _mm512_fmadd_ps(_mm512_set1_ps(k), a, c);
  }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V fmav(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V max(V a, V b) { return _mm512_max_ps(a, b); }
  MINIRT_TARGET_AVX512 static MINIRT_WINO_INLINE V min(V a, V b) { return _mm512_min_ps(a, b); }
};

struct Avx2 {
  using V = __m256;
  static constexpr int B = 8;
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V load_aligned(const float* p) { return _mm256_load_ps(p); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V set1(float f) { return _mm256_set1_ps(f); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V zero() { return _mm256_setzero_ps(); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V fma(float k, V a, V c) {
    return _mm256_fmadd_ps(_mm256_set1_ps(k), a, c);
  }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V fmav(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V max(V a, V b) { return _mm256_max_ps(a, b); }
  MINIRT_TARGET_AVX2 static MINIRT_WINO_INLINE V min(V a, V b) { return _mm256_min_ps(a, b); }
};

// ---------------------------------------------------------------- AVX-512

// B^T along one axis: o[i] = sum_r B^T[i][r] d[r].
template <int M>
MINIRT_TARGET_AVX512 MINIRT_WINO_INLINE void bt_avx512(const Avx512::V (&d)[M + 2], Avx512::V (&o)[M + 2]) {
  using I = Avx512;
  if constexpr (M == 2) {
    o[0] = I::sub(d[0], d[2]);
    o[1] = I::add(d[1], d[2]);
    o[2] = I::sub(d[2], d[1]);
    o[3] = I::sub(d[1], d[3]);
  } else {
    const I::V s = I::sub(d[3], d[1]), t = I::sub(d[4], d[2]);
    o[0] = I::fma(1.5f, s, I::fma(-2.0f, d[2], I::add(d[0], d[4])));
    o[1] = I::fma(2.5f, d[3], I::fma(0.5f, d[2], I::sub(d[4], d[1])));
    o[2] = I::fma(0.5f, d[3], I::fma(-2.5f, d[2], I::add(d[4], d[1])));
    o[3] = I::fma(2.0f, s, t);
    o[4] = I::fma(-0.5f, s, t);
    o[5] = I::fma(1.5f, t, I::fma(-2.0f, d[3], I::add(d[5], d[1])));
  }
}

// A^T along one axis: o[i] = sum_r A^T[i][r] d[r].
template <int M>
MINIRT_TARGET_AVX512 MINIRT_WINO_INLINE void at_avx512(const Avx512::V (&d)[M + 2], Avx512::V (&o)[M]) {
  using I = Avx512;
  if constexpr (M == 2) {
    o[0] = I::add(I::add(d[0], d[1]), d[2]);
    o[1] = I::sub(I::sub(d[1], d[2]), d[3]);
  } else {
    const I::V a = I::add(d[1], d[2]), b = I::sub(d[1], d[2]);
    o[0] = I::add(I::add(d[0], a), I::add(d[3], d[4]));
    o[1] = I::fma(-2.0f, d[4], I::fma(0.5f, d[3], b));
    o[2] = I::fma(4.0f, d[4], I::fma(0.25f, d[3], a));
    o[3] = I::add(I::fma(-8.0f, d[4], I::fma(0.125f, d[3], b)), d[5]);
  }
}

template <int M>
MINIRT_TARGET_AVX512 void input_avx512(const InArgs& args) {
  using I = Avx512;
  using V = I::V;
  constexpr int B = I::B, A = M + 2;
  const InArgs a = args;  // a copy the stores cannot alias: fields stay in registers
  alignas(64) float patch[A * A * B];
  const int64_t vxi = a.cbs * a.nt * B, plane = a.h * a.w * B;
  for (int64_t p = 0; p < a.nt; ++p) {
    const int64_t t = a.t0 + p, iy = t / a.tw * M - a.ph, ix = t % a.tw * M - a.pw;
    const bool inside = iy >= 0 && ix >= 0 && iy + A <= a.h && ix + A <= a.w;
    // A patch over the edge: the part inside the plane [r0, r1) x [s0, s1)
    // is copied into a patch whose rest is zero (the same for every block).
    const int64_t r0 = std::max<int64_t>(0, -iy), r1 = std::min<int64_t>(A, a.h - iy);
    const int64_t s0 = std::max<int64_t>(0, -ix), s1 = std::min<int64_t>(A, a.w - ix);
    if (!inside)
      for (int e = 0; e < A * A; ++e) I::store(patch + e * B, I::zero());
    for (int64_t cb = 0; cb < a.cbs; ++cb) {
      const float* xc = a.x + cb * plane;
      const float* src = patch;
      int64_t rs = A * B;
      if (inside) {
        src = xc + (iy * a.w + ix) * B;
        rs = a.w * B;
      } else {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = s0; c < s1; ++c)
            I::store(patch + (r * A + c) * B, I::load(xc + ((iy + r) * a.w + ix + c) * B));
      }
      // Opaque to the loop optimizer: else it keeps one pointer per load and
      // per store across the tiles (72), which spill.
      asm("" : "+r"(src), "+r"(rs));
      V tr[A][A];
#pragma GCC unroll 6
      for (int c = 0; c < A; ++c) {
        V d[A], o[A];
#pragma GCC unroll 6
        for (int r = 0; r < A; ++r) d[r] = I::load(src + r * rs + c * B);
        bt_avx512<M>(d, o);
#pragma GCC unroll 6
        for (int r = 0; r < A; ++r) tr[r][c] = o[r];
      }
      float* q = a.v + cb * a.nt * B + p * B;  // point (i, k) at q + (i * A + k) * vxi
      asm("" : "+r"(q));
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i) {
        V o[A];
        bt_avx512<M>(tr[i], o);
#pragma GCC unroll 6
        for (int k = 0; k < A; ++k, q += vxi) I::store(q, o[k]);
      }
    }
  }
}

template <int UR, int NB>
MINIRT_TARGET_AVX512 MINIRT_WINO_INLINE void fma_block_avx512(const float* v, const float* u,
                                                              Avx512::V (&acc)[UR][NB]) {
  using I = Avx512;
  constexpr int B = I::B;
#pragma GCC unroll 4
  for (int l = 0; l < B; ++l) {
    I::V w[NB];
#pragma GCC unroll 4
    for (int o = 0; o < NB; ++o) {
      w[o] = I::load_aligned(u + (l * NB + o) * B);
      asm("" : "+v"(w[o]));  // in a register: the compiler would fold the load into each of UR FMAs
    }
#pragma GCC unroll 12
    for (int p = 0; p < UR; ++p) {
      const I::V xv = I::set1(v[p * B + l]);
#pragma GCC unroll 4
      for (int o = 0; o < NB; ++o) acc[p][o] = I::fmav(xv, w[o], acc[p][o]);
    }
  }
}

template <int UR, int NB>
MINIRT_TARGET_AVX512 void gemm_avx512(const GemmArgs& args) {
  using I = Avx512;
  constexpr int B = I::B;
  const GemmArgs a = args;
  I::V acc[UR][NB];
#pragma GCC unroll 12
  for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
    for (int o = 0; o < NB; ++o) acc[p][o] = I::zero();
  const float* v = a.v;
  const float* u = a.u;
  for (int64_t cb = 0; cb < a.cbs; ++cb, v += a.vcb, u += B * NB * B) fma_block_avx512<UR, NB>(v, u, acc);
#pragma GCC unroll 12
  for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
    for (int o = 0; o < NB; ++o) I::store(a.m + o * a.mob + p * B, acc[p][o]);
}

// The activation over n pixels B floats apart, in place; the kind chosen
// once, its math inlined in the loop (the common ones).
template <ActKind K>
MINIRT_TARGET_AVX512 inline void act_kind_run_avx512(float* y, int n, const Activation& act) {
  for (int p = 0; p < n; ++p) _mm512_storeu_ps(y + p * 16, act_kind_avx512<K>(_mm512_loadu_ps(y + p * 16), act));
}

MINIRT_TARGET_AVX512 __attribute__((noinline)) void act_run_avx512(float* y, int n, const Activation& act) {
  switch (act.kind) {
    case ActKind::kSilu:
      return act_kind_run_avx512<ActKind::kSilu>(y, n, act);
    case ActKind::kSigmoid:
      return act_kind_run_avx512<ActKind::kSigmoid>(y, n, act);
    case ActKind::kHardSwish:
      return act_kind_run_avx512<ActKind::kHardSwish>(y, n, act);
    case ActKind::kLeakyRelu:
      return act_kind_run_avx512<ActKind::kLeakyRelu>(y, n, act);
    case ActKind::kTanh:
      return act_kind_run_avx512<ActKind::kTanh>(y, n, act);
    default:
      for (int p = 0; p < n; ++p) _mm512_storeu_ps(y + p * 16, act_avx512(_mm512_loadu_ps(y + p * 16), act));
  }
}

template <int M>
MINIRT_TARGET_AVX512 void output_avx512(const OutArgs& args) {
  using I = Avx512;
  using V = I::V;
  constexpr int B = I::B, A = M + 2;
  const OutArgs a = args;
  const V bias = I::load(a.bias), lo = I::set1(a.fin.lo), hi = I::set1(a.fin.hi);
  for (int64_t p = 0; p < a.nt; ++p) {
    const int64_t t = a.t0 + p, oy = t / a.tw * M, ox = t % a.tw * M;
    const int nu = static_cast<int>(std::min<int64_t>(M, a.oh - oy)),
              nv = static_cast<int>(std::min<int64_t>(M, a.ow - ox));
    const float* mp = a.m + p * B;
    int64_t mxi = a.mxi;
    asm("" : "+r"(mp), "+r"(mxi));  // opaque to the loop optimizer, as in the input transform
    V tr[M][A];
#pragma GCC unroll 6
    for (int k = 0; k < A; ++k) {
      V d[A], o[M];
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i) d[i] = I::load(mp + (i * A + k) * mxi);
      at_avx512<M>(d, o);
#pragma GCC unroll 4
      for (int u = 0; u < M; ++u) tr[u][k] = o[u];
    }
    float* yt = a.y + (oy * a.ow + ox) * B;
    const float* rt = a.r ? a.r + (oy * a.ow + ox) * B : nullptr;
#pragma GCC unroll 4
    for (int u = 0; u < M; ++u) {
      if (u >= nu) break;
      V o[M];
      at_avx512<M>(tr[u], o);
#pragma GCC unroll 4
      for (int v = 0; v < M; ++v) {
        if (v >= nv) break;
        V s = I::add(o[v], bias);
        if (rt) s = I::add(s, I::load(rt + (u * a.ow + v) * B));
        s = a.fin.nan_to_lo ? I::max(s, lo) : I::max(lo, s);
        I::store(yt + (u * a.ow + v) * B, I::min(hi, s));
      }
      if (a.fin.after) act_run_avx512(yt + u * a.ow * B, nv, *a.act);
    }
  }
}

// ---------------------------------------------------------------- AVX2 (the same text as AVX-512's)

template <int M>
MINIRT_TARGET_AVX2 MINIRT_WINO_INLINE void bt_avx2(const Avx2::V (&d)[M + 2], Avx2::V (&o)[M + 2]) {
  using I = Avx2;
  if constexpr (M == 2) {
    o[0] = I::sub(d[0], d[2]);
    o[1] = I::add(d[1], d[2]);
    o[2] = I::sub(d[2], d[1]);
    o[3] = I::sub(d[1], d[3]);
  } else {
    const I::V s = I::sub(d[3], d[1]), t = I::sub(d[4], d[2]);
    o[0] = I::fma(1.5f, s, I::fma(-2.0f, d[2], I::add(d[0], d[4])));
    o[1] = I::fma(2.5f, d[3], I::fma(0.5f, d[2], I::sub(d[4], d[1])));
    o[2] = I::fma(0.5f, d[3], I::fma(-2.5f, d[2], I::add(d[4], d[1])));
    o[3] = I::fma(2.0f, s, t);
    o[4] = I::fma(-0.5f, s, t);
    o[5] = I::fma(1.5f, t, I::fma(-2.0f, d[3], I::add(d[5], d[1])));
  }
}

template <int M>
MINIRT_TARGET_AVX2 MINIRT_WINO_INLINE void at_avx2(const Avx2::V (&d)[M + 2], Avx2::V (&o)[M]) {
  using I = Avx2;
  if constexpr (M == 2) {
    o[0] = I::add(I::add(d[0], d[1]), d[2]);
    o[1] = I::sub(I::sub(d[1], d[2]), d[3]);
  } else {
    const I::V a = I::add(d[1], d[2]), b = I::sub(d[1], d[2]);
    o[0] = I::add(I::add(d[0], a), I::add(d[3], d[4]));
    o[1] = I::fma(-2.0f, d[4], I::fma(0.5f, d[3], b));
    o[2] = I::fma(4.0f, d[4], I::fma(0.25f, d[3], a));
    o[3] = I::add(I::fma(-8.0f, d[4], I::fma(0.125f, d[3], b)), d[5]);
  }
}

template <int M>
MINIRT_TARGET_AVX2 void input_avx2(const InArgs& args) {
  using I = Avx2;
  using V = I::V;
  constexpr int B = I::B, A = M + 2;
  const InArgs a = args;  // a copy the stores cannot alias: fields stay in registers
  alignas(64) float patch[A * A * B];
  const int64_t vxi = a.cbs * a.nt * B, plane = a.h * a.w * B;
  for (int64_t p = 0; p < a.nt; ++p) {
    const int64_t t = a.t0 + p, iy = t / a.tw * M - a.ph, ix = t % a.tw * M - a.pw;
    const bool inside = iy >= 0 && ix >= 0 && iy + A <= a.h && ix + A <= a.w;
    // A patch over the edge: the part inside the plane [r0, r1) x [s0, s1)
    // is copied into a patch whose rest is zero (the same for every block).
    const int64_t r0 = std::max<int64_t>(0, -iy), r1 = std::min<int64_t>(A, a.h - iy);
    const int64_t s0 = std::max<int64_t>(0, -ix), s1 = std::min<int64_t>(A, a.w - ix);
    if (!inside)
      for (int e = 0; e < A * A; ++e) I::store(patch + e * B, I::zero());
    for (int64_t cb = 0; cb < a.cbs; ++cb) {
      const float* xc = a.x + cb * plane;
      const float* src = patch;
      int64_t rs = A * B;
      if (inside) {
        src = xc + (iy * a.w + ix) * B;
        rs = a.w * B;
      } else {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = s0; c < s1; ++c)
            I::store(patch + (r * A + c) * B, I::load(xc + ((iy + r) * a.w + ix + c) * B));
      }
      // Opaque to the loop optimizer: else it keeps one pointer per load and
      // per store across the tiles (72), which spill.
      asm("" : "+r"(src), "+r"(rs));
      V tr[A][A];
#pragma GCC unroll 6
      for (int c = 0; c < A; ++c) {
        V d[A], o[A];
#pragma GCC unroll 6
        for (int r = 0; r < A; ++r) d[r] = I::load(src + r * rs + c * B);
        bt_avx2<M>(d, o);
#pragma GCC unroll 6
        for (int r = 0; r < A; ++r) tr[r][c] = o[r];
      }
      float* q = a.v + cb * a.nt * B + p * B;  // point (i, k) at q + (i * A + k) * vxi
      asm("" : "+r"(q));
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i) {
        V o[A];
        bt_avx2<M>(tr[i], o);
#pragma GCC unroll 6
        for (int k = 0; k < A; ++k, q += vxi) I::store(q, o[k]);
      }
    }
  }
}

template <int UR, int NB>
MINIRT_TARGET_AVX2 MINIRT_WINO_INLINE void fma_block_avx2(const float* v, const float* u, Avx2::V (&acc)[UR][NB]) {
  using I = Avx2;
  constexpr int B = I::B;
#pragma GCC unroll 4
  for (int l = 0; l < B; ++l) {
    I::V w[NB];
#pragma GCC unroll 4
    for (int o = 0; o < NB; ++o) {
      w[o] = I::load_aligned(u + (l * NB + o) * B);
      asm("" : "+v"(w[o]));  // in a register: the compiler would fold the load into each of UR FMAs
    }
#pragma GCC unroll 12
    for (int p = 0; p < UR; ++p) {
      const I::V xv = I::set1(v[p * B + l]);
#pragma GCC unroll 4
      for (int o = 0; o < NB; ++o) acc[p][o] = I::fmav(xv, w[o], acc[p][o]);
    }
  }
}

template <int UR, int NB>
MINIRT_TARGET_AVX2 void gemm_avx2(const GemmArgs& args) {
  using I = Avx2;
  constexpr int B = I::B;
  const GemmArgs a = args;
  I::V acc[UR][NB];
#pragma GCC unroll 12
  for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
    for (int o = 0; o < NB; ++o) acc[p][o] = I::zero();
  const float* v = a.v;
  const float* u = a.u;
  for (int64_t cb = 0; cb < a.cbs; ++cb, v += a.vcb, u += B * NB * B) fma_block_avx2<UR, NB>(v, u, acc);
#pragma GCC unroll 12
  for (int p = 0; p < UR; ++p)
#pragma GCC unroll 4
    for (int o = 0; o < NB; ++o) I::store(a.m + o * a.mob + p * B, acc[p][o]);
}

template <ActKind K>
MINIRT_TARGET_AVX2 inline void act_kind_run_avx2(float* y, int n, const Activation& act) {
  for (int p = 0; p < n; ++p) _mm256_storeu_ps(y + p * 8, act_kind_avx2<K>(_mm256_loadu_ps(y + p * 8), act));
}

MINIRT_TARGET_AVX2 __attribute__((noinline)) void act_run_avx2(float* y, int n, const Activation& act) {
  switch (act.kind) {
    case ActKind::kSilu:
      return act_kind_run_avx2<ActKind::kSilu>(y, n, act);
    case ActKind::kSigmoid:
      return act_kind_run_avx2<ActKind::kSigmoid>(y, n, act);
    case ActKind::kHardSwish:
      return act_kind_run_avx2<ActKind::kHardSwish>(y, n, act);
    case ActKind::kLeakyRelu:
      return act_kind_run_avx2<ActKind::kLeakyRelu>(y, n, act);
    case ActKind::kTanh:
      return act_kind_run_avx2<ActKind::kTanh>(y, n, act);
    default:
      for (int p = 0; p < n; ++p) _mm256_storeu_ps(y + p * 8, act_avx2(_mm256_loadu_ps(y + p * 8), act));
  }
}

template <int M>
MINIRT_TARGET_AVX2 void output_avx2(const OutArgs& args) {
  using I = Avx2;
  using V = I::V;
  constexpr int B = I::B, A = M + 2;
  const OutArgs a = args;
  const V bias = I::load(a.bias), lo = I::set1(a.fin.lo), hi = I::set1(a.fin.hi);
  for (int64_t p = 0; p < a.nt; ++p) {
    const int64_t t = a.t0 + p, oy = t / a.tw * M, ox = t % a.tw * M;
    const int nu = static_cast<int>(std::min<int64_t>(M, a.oh - oy)),
              nv = static_cast<int>(std::min<int64_t>(M, a.ow - ox));
    const float* mp = a.m + p * B;
    int64_t mxi = a.mxi;
    asm("" : "+r"(mp), "+r"(mxi));  // opaque to the loop optimizer, as in the input transform
    V tr[M][A];
#pragma GCC unroll 6
    for (int k = 0; k < A; ++k) {
      V d[A], o[M];
#pragma GCC unroll 6
      for (int i = 0; i < A; ++i) d[i] = I::load(mp + (i * A + k) * mxi);
      at_avx2<M>(d, o);
#pragma GCC unroll 4
      for (int u = 0; u < M; ++u) tr[u][k] = o[u];
    }
    float* yt = a.y + (oy * a.ow + ox) * B;
    const float* rt = a.r ? a.r + (oy * a.ow + ox) * B : nullptr;
#pragma GCC unroll 4
    for (int u = 0; u < M; ++u) {
      if (u >= nu) break;
      V o[M];
      at_avx2<M>(tr[u], o);
#pragma GCC unroll 4
      for (int v = 0; v < M; ++v) {
        if (v >= nv) break;
        V s = I::add(o[v], bias);
        if (rt) s = I::add(s, I::load(rt + (u * a.ow + v) * B));
        s = a.fin.nan_to_lo ? I::max(s, lo) : I::max(lo, s);
        I::store(yt + (u * a.ow + v) * B, I::min(hi, s));
      }
      if (a.fin.after) act_run_avx2(yt + u * a.ow * B, nv, *a.act);
    }
  }
}

#undef MINIRT_WINO_INLINE

// Kernel tables.
using GemmRow = std::array<GemmFn, kMaxUr>;
template <int NB, int... U>
constexpr GemmRow gemm_row512(std::integer_sequence<int, U...>) {
  return {{&gemm_avx512<U + 1, NB>...}};
}
template <int NB, int... U>
constexpr GemmRow gemm_row256(std::integer_sequence<int, U...>) {
  return {{&gemm_avx2<U + 1, NB>...}};
}
constexpr std::array<GemmRow, kMaxNb512> kGemm512 = {{gemm_row512<1>(std::make_integer_sequence<int, kUr512[0]>()),
                                                      gemm_row512<2>(std::make_integer_sequence<int, kUr512[1]>()),
                                                      gemm_row512<3>(std::make_integer_sequence<int, kUr512[2]>()),
                                                      gemm_row512<4>(std::make_integer_sequence<int, kUr512[3]>())}};
constexpr std::array<GemmRow, kMaxNb512> kGemm256 = {{gemm_row256<1>(std::make_integer_sequence<int, kUr256[0]>()),
                                                      gemm_row256<2>(std::make_integer_sequence<int, kUr256[1]>()),
                                                      gemm_row256<3>(std::make_integer_sequence<int, kUr256[2]>()),
                                                      GemmRow{}}};

struct Kernels {
  InFn in;
  OutFn out;
  const std::array<GemmRow, kMaxNb512>* gemm;
};

Kernels kernels_of(SgemmIsa isa, int m) {
  if (isa == SgemmIsa::kAvx512)
    return m == 2 ? Kernels{&input_avx512<2>, &output_avx512<2>, &kGemm512}
                  : Kernels{&input_avx512<4>, &output_avx512<4>, &kGemm512};
  return m == 2 ? Kernels{&input_avx2<2>, &output_avx2<2>, &kGemm256}
                : Kernels{&input_avx2<4>, &output_avx2<4>, &kGemm256};
}

MINIRT_AVX512_WARNINGS_ON

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
  auto G = [&](int64_t i, int k) { return m_ == 2 ? kG2[i][k] : kG4[i][k]; };
  const int64_t cpad_i = cbs_ * B, mpad = mb_ * B;
  // bf16: two to a float, zero bits past C and M as well.
  u_ = AlignedFloats(static_cast<size_t>(bf16_ ? P * cpad_i * mpad / 2 : P * cpad_i * mpad));
  bias_ = AlignedFloats(static_cast<size_t>(mpad));
  std::fill(u_.data(), u_.data() + u_.size(), 0.0f);
  uint16_t* ub = reinterpret_cast<uint16_t*>(u_.data());
  std::fill(bias_.data(), bias_.data() + bias_.size(), 0.0f);
  for (const Group& g : groups_)
    for (int64_t o = 0; o < g.nb * B; ++o) {
      const int64_t mo = g.ob * B + o;
      if (mo >= q.m) continue;
      for (int64_t c = 0; c < q.c; ++c) {
        const float* f = w + (mo * q.c + c) * 9;
        double gg[6][3];  // G g
        for (int64_t i = 0; i < A; ++i)
          for (int b = 0; b < 3; ++b) {
            double acc = 0;
            for (int k = 0; k < 3; ++k) acc += G(i, k) * f[k * 3 + b];
            gg[i][b] = acc;
          }
        for (int64_t i = 0; i < A; ++i)
          for (int64_t j = 0; j < A; ++j) {
            const double u = gg[i][0] * G(j, 0) + gg[i][1] * G(j, 1) + gg[i][2] * G(j, 2);
            const int64_t xi = i * A + j, cb = c / B, l = c % B, at = xi * cpad_i * mpad + cpad_i * g.ob * B;
            if (bf16_)
              ub[static_cast<size_t>(at + ((cb * (B / 2) + l / 2) * g.nb + o / B) * 2 * B + o % B * 2 + l % 2)] =
                  float_to_bfloat16(static_cast<float>(u));
            else
              u_.data()[static_cast<size_t>(at + ((cb * B + l) * g.nb) * B + o)] = static_cast<float>(u);
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
      const GemmFn* fns = (*k.gemm)[g.nb - 1].data();
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
