// minirt's packed SGEMM; see sgemm.h for the layout, blocking and threading.
//
// The AVX-512 and AVX2 code is compiled with target attributes and only
// called after cpuid says the CPU has those instructions, so this file may
// be built for plain x86-64 (or any other architecture, where only the
// portable kernel exists).
#include "kernels/cpu/sgemm.h"

#include "kernels/cpu/vmath.h"

#include <minirt/error.h>

#include "runtime/host_resources.h"
#include "runtime/memory_pool.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MINIRT_SGEMM_X86 1
#define MINIRT_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define MINIRT_AVX2 __attribute__((target("avx2,fma")))
#else
#define MINIRT_SGEMM_X86 0
#endif

namespace minirt::cpu {

// ---------------------------------------------------------------- variants

namespace {

// Cache blocking, for a core with 32-48 KiB of L1 and 1 MiB of L2:
constexpr int64_t kMaxKc = 256;       // K block: one A panel (256 x MR) in L1 while B panels stream past
constexpr int64_t kMaxNc = 512;       // N block: a packed B block of 256 x 512 floats (512 KiB) in L2
constexpr int64_t kIndirectMc = 256;  // in-place B: 256 rows of A (256 KiB) per pass over a row of tiles

struct Variant {
  int mr, nr, vw;  // microkernel rows, columns (B panel width), vector width
  int narrow_max;  // column tails up to this use the narrow kernel
};

Variant variant(SgemmIsa isa) {
  switch (isa) {
    case SgemmIsa::kAvx512: return {8, 32, 16, 12};
    case SgemmIsa::kAvx2: return {4, 24, 8, 3};
    case SgemmIsa::kGeneric: break;
  }
  return {4, 16, 16, 0};
}

// The forced variant, or -1 for none (tests and benchmarks set it between plans).
std::atomic<int> g_forced{-1};

struct Caps {
  bool avx2_fma = false, avx512 = false;
};

// What this CPU (and its OS, which must save the wider registers) supports.
Caps cpu_caps() {
  static const Caps caps = [] {
    Caps c;
#if MINIRT_SGEMM_X86
    __builtin_cpu_init();
    c.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    // The AVX-512 kernels also use AVX2 and FMA for their narrow tails.
    c.avx512 = c.avx2_fma && __builtin_cpu_supports("avx512f");
#endif
    return c;
  }();
  return caps;
}

SgemmIsa parse_env_isa(SgemmIsa fallback) {
  const char* e = std::getenv("MINIRT_SGEMM_ISA");
  if (!e) return fallback;
  SgemmIsa want;
  if (std::strcmp(e, "generic") == 0) want = SgemmIsa::kGeneric;
  else if (std::strcmp(e, "avx2") == 0) want = SgemmIsa::kAvx2;
  else if (std::strcmp(e, "avx512") == 0) want = SgemmIsa::kAvx512;
  else return fallback;
  return sgemm_isa_supported(want) ? want : fallback;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Columns per N block: whole panels.
int64_t nc_max(const Variant& v) { return std::max<int64_t>(v.nr, kMaxNc / v.nr * v.nr); }

// K blocks of at most kMaxKc, as even as possible (K = 288 runs as 2 x 144,
// not 256 + 32).
int64_t k_step(int64_t k) {
  if (k <= kMaxKc) return std::max<int64_t>(k, 1);
  int64_t blocks = ceil_div(k, kMaxKc);
  return ceil_div(k, blocks);
}

}  // namespace

SgemmIsa sgemm_best_isa() {
  Caps c = cpu_caps();
  return c.avx512 ? SgemmIsa::kAvx512 : c.avx2_fma ? SgemmIsa::kAvx2 : SgemmIsa::kGeneric;
}

bool sgemm_isa_supported(SgemmIsa isa) {
  Caps c = cpu_caps();
  switch (isa) {
    case SgemmIsa::kGeneric: return true;
    case SgemmIsa::kAvx2: return c.avx2_fma;
    case SgemmIsa::kAvx512: return c.avx512;
  }
  return false;
}

SgemmIsa sgemm_default_isa() {
  int forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<SgemmIsa>(forced);
  static const SgemmIsa from_env = parse_env_isa(sgemm_best_isa());
  return from_env;
}

void sgemm_force_isa(SgemmIsa isa) { g_forced.store(static_cast<int>(isa), std::memory_order_relaxed); }
void sgemm_reset_isa() { g_forced.store(-1, std::memory_order_relaxed); }

const char* sgemm_isa_name(SgemmIsa isa) {
  switch (isa) {
    case SgemmIsa::kAvx512: return "avx512";
    case SgemmIsa::kAvx2: return "avx2";
    case SgemmIsa::kGeneric: break;
  }
  return "generic";
}

SgemmTile sgemm_tile(SgemmIsa isa) {
  Variant v = variant(isa);
  return {v.mr, v.nr};
}

// ---------------------------------------------------------------- buffers

AlignedFloats::AlignedFloats(size_t n) : n_(n) {
  if (n == 0) return;
  if (n > (std::numeric_limits<size_t>::max() - 63) / sizeof(float))
    throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(n) + " floats of packed weights or scratch");
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  check_host_room(bytes, "packed weights or scratch of a CPU kernel");
  p_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
  if (!p_)
    throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + format_bytes(bytes) +
                                             " for packed weights or scratch of a CPU kernel: the system refused it");
}
void AlignedFloats::Free::operator()(float* p) const { std::free(p); }

// ---------------------------------------------------------------- packing

size_t sgemm_packed_a_floats(SgemmIsa isa, int64_t m, int64_t k) {
  Variant v = variant(isa);
  return static_cast<size_t>(ceil_div(m, v.mr) * v.mr * k);
}

namespace {

// Panels [p0, p1) of A, in K blocks: block b (rows k0 = b * kstep ... of
// length kc) holds every panel's kc x MR values one after the other, so the
// driver reads the A panels of one K block as a single forward stream.
void pack_a_panels(Variant v, const float* src, int64_t rs, int64_t cs, int64_t m, int64_t k, float* dst, float scale,
                   int64_t p0, int64_t p1) {
  const int mr = v.mr;
  const int64_t mpad = ceil_div(m, mr) * mr, kstep = k_step(k);
  for (int64_t k0 = 0; k0 < k; k0 += kstep) {
    const int64_t kc = std::min(kstep, k - k0);
    for (int64_t p = p0; p < p1; ++p) {
      float* d = dst + k0 * mpad + p * kc * mr;
      int64_t r0 = p * mr;
      int rows = static_cast<int>(std::min<int64_t>(mr, m - r0));
      for (int r = 0; r < rows; ++r) {
        const float* s = src + (r0 + r) * rs + k0 * cs;
        if (scale == 1.0f)
          for (int64_t kk = 0; kk < kc; ++kk) d[kk * mr + r] = s[kk * cs];
        else
          for (int64_t kk = 0; kk < kc; ++kk) d[kk * mr + r] = s[kk * cs] * scale;
      }
      for (int r = rows; r < mr; ++r)
        for (int64_t kk = 0; kk < kc; ++kk) d[kk * mr + r] = 0.0f;
    }
  }
}

// The A panel of rows [ir, ir + MR) for the K block starting at pc.
inline const float* a_panel(const float* a, const Variant& v, int64_t m, int64_t ir, int64_t pc, int64_t kc) {
  return a + pc * ceil_div(m, v.mr) * v.mr + (ir / v.mr) * kc * v.mr;
}

}  // namespace

void sgemm_pack_a(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m, int64_t k, float* dst,
                  float scale) {
  Variant v = variant(isa);
  pack_a_panels(v, src, rs, cs, m, k, dst, scale, 0, ceil_div(m, v.mr));
}

void sgemm_pack_a_panels(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m, int64_t k, float* dst,
                         int64_t p0, int64_t p1, float scale) {
  pack_a_panels(variant(isa), src, rs, cs, m, k, dst, scale, p0, p1);
}

AlignedFloats sgemm_pack_a(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m, int64_t k, float scale) {
  AlignedFloats out(sgemm_packed_a_floats(isa, m, k));
  if (!out.empty()) sgemm_pack_a(isa, src, rs, cs, m, k, out.data(), scale);
  return out;
}

void sgemm_pack_a_parallel(ThreadPool& pool, SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m,
                           int64_t k, float* dst, float scale) {
  Variant v = variant(isa);
  int64_t panels = ceil_div(m, v.mr);
  auto body = [&](int64_t p0, int64_t p1) { pack_a_panels(v, src, rs, cs, m, k, dst, scale, p0, p1); };
  // Small copies are not worth waking the pool for.
  int64_t grain = std::max<int64_t>(1, (64 * 1024) / std::max<int64_t>(1, k * v.mr));
  pool.parallel_for(panels, body, grain);
}

size_t sgemm_packed_b_floats(SgemmIsa isa, int64_t k, int64_t n) {
  Variant v = variant(isa);
  return static_cast<size_t>(ceil_div(n, v.nr) * v.nr * k);
}

namespace {

// Row-major rows of B into panels: NR floats per panel row, a fixed-size
// copy the compiler turns into vector moves.
template <int NR>
void pack_rows(const float* src, int64_t rs, int64_t k0, int64_t kc, int64_t n0, int64_t nc, int64_t pstride,
               float* dst) {
  const int64_t full = nc / NR, rest = nc % NR;
  for (int64_t kk = 0; kk < kc; ++kk) {
    const float* s = src + (k0 + kk) * rs + n0;
    float* d = dst + kk * NR;
    for (int64_t q = 0; q < full; ++q, s += NR, d += pstride)
      for (int j = 0; j < NR; ++j) d[j] = s[j];
    if (rest) {
      for (int64_t j = 0; j < rest; ++j) d[j] = s[j];
      for (int64_t j = rest; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

// B(k, n) = src[k * rs + n * cs] for k in [k0, k0 + kc), n in [n0, n0 + nc),
// into panels of nr columns (panel stride pstride), columns past nc zero.
void pack_b_matrix(const float* src, int64_t rs, int64_t cs, int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                   int64_t pstride, float* dst) {
  if (cs == 1) {
    switch (nr) {
      case 32: return pack_rows<32>(src, rs, k0, kc, n0, nc, pstride, dst);
      case 24: return pack_rows<24>(src, rs, k0, kc, n0, nc, pstride, dst);
      case 16: return pack_rows<16>(src, rs, k0, kc, n0, nc, pstride, dst);
      default: break;
    }
  }
  int64_t panels = ceil_div(nc, nr);
  for (int64_t q = 0; q < panels; ++q) {
    int64_t cols = std::min<int64_t>(nr, nc - q * nr);
    float* d = dst + q * pstride;
    for (int64_t j = 0; j < cols; ++j) {
      const float* s = src + k0 * rs + (n0 + q * nr + j) * cs;
      for (int64_t kk = 0; kk < kc; ++kk) d[kk * nr + j] = s[kk * rs];
    }
    for (int64_t kk = 0; kk < kc; ++kk)
      for (int64_t j = cols; j < nr; ++j) d[kk * nr + j] = 0.0f;
  }
}

// A piece of a B block: lanes [t0, t1) of one chunk of a panel row, all in
// output row `oh`, starting at output column `ow0`.
struct Piece {
  int32_t chunk;  // chunk index within the block (chunk = `lanes` columns)
  int16_t t0, t1;
  int32_t oh, ow0;
};

// The pieces of columns [n0, n0 + nc) cut at output rows and at chunks of
// `lanes` columns. Returns how many were written (at most cap); -1 if more.
int cut_pieces(const Im2colGeom& q, int64_t n0, int64_t nc, int lanes, Piece* out, int cap) {
  int count = 0;
  int64_t oh = n0 / q.ow, ow = n0 % q.ow;
  for (int64_t col = 0; col < nc;) {
    int64_t chunk = col / lanes;
    int64_t t = col % lanes;
    int64_t len = std::min({nc - col, q.ow - ow, static_cast<int64_t>(lanes) - t});
    if (count == cap) return -1;
    out[count++] = Piece{static_cast<int32_t>(chunk), static_cast<int16_t>(t), static_cast<int16_t>(t + len),
                         static_cast<int32_t>(oh), static_cast<int32_t>(ow)};
    col += len;
    ow += len;
    if (ow == q.ow) {
      ow = 0;
      ++oh;
    }
  }
  return count;
}

constexpr int kMaxPieces = 512;

// Portable im2col into panels: any stride, dilation and padding.
void pack_b_im2col_generic(const Im2colGeom& q, const float* x, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                           int nr, int64_t pstride, float* dst) {
  const int lanes = 8;  // every panel width is a multiple of 8
  const int chunks_per_panel = nr / lanes;
  Piece pieces[kMaxPieces];
  int np = cut_pieces(q, n0, nc, lanes, pieces, kMaxPieces);
  const int64_t khw = q.kh * q.kw;
  const int64_t panels = ceil_div(nc, nr);
  if (np < 0) {
    // Very narrow outputs (many rows per block): element by element.
    for (int64_t kk = 0; kk < kc; ++kk) {
      int64_t k = k0 + kk, ci = k / khw, i = (k % khw) / q.kw, j = k % q.kw;
      const float* xc = x + ci * q.h * q.w;
      for (int64_t col = 0; col < panels * nr; ++col) {
        float v = 0.0f;
        if (col < nc) {
          int64_t n = n0 + col, oh = n / q.ow, ow = n % q.ow;
          int64_t ih = oh * q.sh - q.ph + i * q.dh, iw = ow * q.sw - q.pw + j * q.dw;
          if (ih >= 0 && ih < q.h && iw >= 0 && iw < q.w) v = xc[ih * q.w + iw];
        }
        dst[(col / nr) * pstride + kk * nr + col % nr] = v;
      }
    }
    return;
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    int64_t k = k0 + kk, ci = k / khw, i = (k % khw) / q.kw, j = k % q.kw;
    const float* xc = x + ci * q.h * q.w;
    const int64_t ioff = i * q.dh - q.ph, joff = j * q.dw - q.pw;
    for (int p = 0; p < np; ++p) {
      const Piece& pc = pieces[p];
      float* d = dst + (pc.chunk / chunks_per_panel) * pstride + kk * nr + (pc.chunk % chunks_per_panel) * lanes;
      int64_t ih = pc.oh * q.sh + ioff;
      if (ih < 0 || ih >= q.h) {
        for (int t = pc.t0; t < pc.t1; ++t) d[t] = 0.0f;
        continue;
      }
      const float* xr = xc + ih * q.w;
      // Lane t reads iw = (ow0 + t - t0) * sw + joff; keep 0 <= iw < w.
      int64_t base = pc.ow0 - pc.t0;
      for (int t = pc.t0; t < pc.t1; ++t) {
        int64_t iw = (base + t) * q.sw + joff;
        d[t] = (iw >= 0 && iw < q.w) ? xr[iw] : 0.0f;
      }
    }
    // Columns past nc in the last panel.
    float* last = dst + (panels - 1) * pstride + kk * nr;
    for (int64_t col = nc - (panels - 1) * nr; col < nr; ++col) last[col] = 0.0f;
  }
}

#if MINIRT_SGEMM_X86
// Lanes [lo, hi) of a 16-lane mask (empty when lo >= hi).
inline __mmask16 lane_range(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, 16);
  hi = std::clamp<int64_t>(hi, 0, 16);
  return static_cast<__mmask16>(lo < hi ? ((1u << hi) - 1) & ~((1u << lo) - 1) : 0u);
}

// AVX-512 im2col for strides 1 and 2 (any dilation, padding): each 16-column
// chunk of a panel row is one masked load per piece straight from the input
// row (stride 2: two loads and their even lanes), zero where the window
// leaves the input.
MINIRT_AVX512 void pack_b_im2col_avx512(const Im2colGeom& q, const float* x, int64_t k0, int64_t kc, int64_t n0,
                                        int64_t nc, int nr, int64_t pstride, float* dst) {
  const int lanes = 16;
  if (q.sw != 1 && q.sw != 2) return pack_b_im2col_generic(q, x, k0, kc, n0, nc, nr, pstride, dst);
  Piece pieces[kMaxPieces];
  int np = cut_pieces(q, n0, nc, lanes, pieces, kMaxPieces);
  if (np < 0) return pack_b_im2col_generic(q, x, k0, kc, n0, nc, nr, pstride, dst);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const int chunks_per_panel = nr / lanes;
  const int64_t chunks = ceil_div(ceil_div(nc, nr) * nr, lanes);
  const int64_t khw = q.kh * q.kw;
  for (int64_t kk = 0; kk < kc; ++kk) {
    int64_t k = k0 + kk, ci = k / khw, i = (k % khw) / q.kw, j = k % q.kw;
    const float* xc = x + ci * q.h * q.w;
    const int64_t ioff = i * q.dh - q.ph, joff = j * q.dw - q.pw;
    int p = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      __m512 v = _mm512_setzero_ps();
      for (; p < np && pieces[p].chunk == c; ++p) {
        const Piece& pc = pieces[p];
        int64_t ih = pc.oh * q.sh + ioff;
        if (ih < 0 || ih >= q.h) continue;
        const float* xr = xc + ih * q.w;
        if (q.sw == 1) {
          // Lane t reads iw = t + shift, valid for 0 <= iw < w.
          int64_t shift = pc.ow0 - pc.t0 + joff;
          v = _mm512_mask_loadu_ps(v, lane_range(std::max<int64_t>(pc.t0, -shift), std::min<int64_t>(pc.t1, q.w - shift)),
                                   xr + shift);
        } else {
          // Lane t reads iw = 2t + shift: element 2t of the 32 from xr + shift.
          int64_t shift = 2 * (pc.ow0 - pc.t0) + joff;
          int64_t lo = std::max<int64_t>(pc.t0, ceil_div(std::max<int64_t>(-shift, 0), 2));
          int64_t hi = std::min<int64_t>(pc.t1, q.w - shift > 0 ? ceil_div(q.w - shift, 2) : 0);
          if (lo >= hi) continue;
          int64_t e0 = 2 * lo, e1 = 2 * hi - 1;  // elements [e0, e1) are read
          __m512 a = _mm512_maskz_loadu_ps(lane_range(e0, e1), xr + shift);
          __m512 b = _mm512_maskz_loadu_ps(lane_range(e0 - 16, e1 - 16), xr + shift + 16);
          v = _mm512_mask_mov_ps(v, lane_range(lo, hi), _mm512_permutex2var_ps(a, even, b));
        }
      }
      float* d = dst + (c / chunks_per_panel) * pstride + kk * nr + (c % chunks_per_panel) * lanes;
      _mm512_storeu_ps(d, v);
    }
  }
}
#endif

// Panels of a per-call B block are kc * nr floats apart plus one cache line,
// so that the rows the packers write across panels (and the microkernel's
// reads) do not all fall into the same L1 set when kc * nr * 4 is a multiple
// of 4 KiB.
int64_t block_pstride(int64_t kc, int nr) { return kc * nr + 16; }

void pack_b_block(SgemmIsa isa, const SgemmB& b, int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                  float* dst) {
  int64_t pstride = block_pstride(kc, nr);
  switch (b.kind) {
    case SgemmB::Kind::kMatrix: return pack_b_matrix(b.data, b.rs, b.cs, k0, kc, n0, nc, nr, pstride, dst);
    case SgemmB::Kind::kIm2col:
#if MINIRT_SGEMM_X86
      if (isa == SgemmIsa::kAvx512) return pack_b_im2col_avx512(*b.conv, b.data, k0, kc, n0, nc, nr, pstride, dst);
#endif
      return pack_b_im2col_generic(*b.conv, b.data, k0, kc, n0, nc, nr, pstride, dst);
    case SgemmB::Kind::kPrepacked:
    case SgemmB::Kind::kIndirect: break;
  }
}

}  // namespace

AlignedFloats sgemm_pack_b(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t k, int64_t n) {
  Variant v = variant(isa);
  AlignedFloats out(sgemm_packed_b_floats(isa, k, n));
  if (!out.empty()) pack_b_matrix(src, rs, cs, 0, k, 0, n, v.nr, k * v.nr, out.data());
  return out;
}

// ---------------------------------------------------------------- microkernels
//
// Every kernel computes an MR x (up to NR) tile over kc steps of K from an A
// panel (MR floats per k) and a B source: packed panels (NR floats per k) or,
// with IND, rows read in place at b + koff[k] (the last vector of a short
// tile read with a mask, so nothing past the tile is touched).

namespace {

// Where a tile of C goes and what happens to it on the way.
struct TileOut {
  float* c;
  int64_t ldc;
  int rows, cols;
  bool load_c;  // add to what C holds (later K blocks, or accumulate)
  bool last;    // the sum over K is complete: bias and activation
  float alpha;
  const float* row_bias;  // at the tile's first row
  const float* col_bias;  // at the tile's first column
  const Activation* act;
};

// The epilogue of one element, in the order the vector kernels use.
inline void finish(float acc, float* p, const TileOut& o, int r, int j) {
  float x = o.alpha == 1.0f ? acc : o.alpha * acc;
  if (o.load_c) x += *p;
  if (o.last) {
    if (o.row_bias) x += o.row_bias[r];
    if (o.col_bias) x += o.col_bias[j];
    x = o.act->apply(x);
  }
  *p = x;
}

// Portable kernel: MR x NR of plain loops the compiler vectorizes.
template <int MR, int NR, bool IND>
void ukr_generic(int64_t kc, const float* a, const float* b, const int64_t* koff, const TileOut& o) {
  float acc[MR][NR] = {};
  float row[NR] = {};
  for (int64_t k = 0; k < kc; ++k, a += MR) {
    const float* bk = b + k * NR;
    if (IND) {
      for (int j = 0; j < o.cols; ++j) row[j] = b[koff[k] + j];
      bk = row;
    }
    for (int r = 0; r < MR; ++r) {
      float av = a[r];
      for (int j = 0; j < NR; ++j) acc[r][j] += av * bk[j];
    }
  }
  for (int r = 0; r < o.rows; ++r)
    for (int j = 0; j < o.cols; ++j) finish(acc[r][j], o.c + r * o.ldc + j, o, r, j);
}

// Partial sums per column in the narrow kernels: enough independent FMA
// chains to cover the latency when there are few columns.
constexpr int narrow_sums(int nc) { return std::min(4, std::max(1, 8 / nc)); }

#if MINIRT_SGEMM_X86

// ---- AVX-512: 8 x 32 (two zmm columns); rows and vectors as templates.

template <int R, int V, bool IND>
MINIRT_AVX512 void ukr_avx512(int64_t kc, const float* a, const float* b, const int64_t* koff, const TileOut& o) {
  constexpr int MR = 8, NR = 32;
  __mmask16 mask[V];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    int n = std::clamp(o.cols - 16 * v, 0, 16);
    mask[v] = static_cast<__mmask16>((1u << n) - 1);
  }
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k, a += MR) {
    const float* bk = IND ? b + koff[k] : b + k * NR;
    __m512 bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) bv[v] = IND ? _mm512_maskz_loadu_ps(mask[v], bk + 16 * v) : _mm512_loadu_ps(bk + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512 av = _mm512_set1_ps(a[r]);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  const bool scale = o.alpha != 1.0f;
  const __m512 alpha = _mm512_set1_ps(o.alpha);
  // The fused activation, every kind in vector form (vmath.h), on the tile in registers.
  const bool vact = o.last && !o.act->none();
  __m512 cb[V];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v)
    cb[v] = o.last && o.col_bias ? _mm512_maskz_loadu_ps(mask[v], o.col_bias + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* p = o.c + r * o.ldc;
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      __m512 x = acc[r][v];
      if (scale) x = _mm512_mul_ps(x, alpha);
      if (o.load_c) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask[v], p + 16 * v));
      if (o.last) {
        if (o.row_bias) x = _mm512_add_ps(x, _mm512_set1_ps(o.row_bias[r]));
        if (o.col_bias) x = _mm512_add_ps(x, cb[v]);
        if (vact) x = act_avx512(x, *o.act);
      }
      _mm512_mask_storeu_ps(p + 16 * v, mask[v], x);
    }
  }
}

// Narrow column tails (NC <= 12 columns): vectorized along the 8 rows of the
// A panel instead, one ymm accumulator per column (and per partial sum).
template <int NC, bool IND>
MINIRT_AVX512 void narrow_avx512(int64_t kc, const float* a, const float* b, const int64_t* koff,
                                 const TileOut& o) {
  constexpr int MR = 8, NR = 32, U = narrow_sums(NC);
  __m256 acc[U][NC];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j) acc[u][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + U <= kc; k += U, a += U * MR)
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const float* bk = IND ? b + koff[k + u] : b + (k + u) * NR;
      __m256 av = _mm256_loadu_ps(a + u * MR);
#pragma GCC unroll 16
      for (int j = 0; j < NC; ++j) acc[u][j] = _mm256_fmadd_ps(av, _mm256_set1_ps(bk[j]), acc[u][j]);
    }
  for (; k < kc; ++k, a += MR) {
    const float* bk = IND ? b + koff[k] : b + k * NR;
    __m256 av = _mm256_loadu_ps(a);
#pragma GCC unroll 16
    for (int j = 0; j < NC; ++j) acc[0][j] = _mm256_fmadd_ps(av, _mm256_set1_ps(bk[j]), acc[0][j]);
  }
  alignas(32) float t[NC][8];
#pragma GCC unroll 16
  for (int j = 0; j < NC; ++j) {
    __m256 sum = acc[0][j];
#pragma GCC unroll 4
    for (int u = 1; u < U; ++u) sum = _mm256_add_ps(sum, acc[u][j]);
    _mm256_store_ps(t[j], sum);
  }
  for (int r = 0; r < o.rows; ++r)
    for (int j = 0; j < NC; ++j) finish(t[j][r], o.c + r * o.ldc + j, o, r, j);
}

// ---- AVX2: 4 x 24 (three ymm columns).

alignas(32) const int32_t kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

template <int R, int V, bool IND>
MINIRT_AVX2 void ukr_avx2(int64_t kc, const float* a, const float* b, const int64_t* koff, const TileOut& o) {
  constexpr int MR = 4, NR = 24;
  __m256i mask[V];
#pragma GCC unroll 3
  for (int v = 0; v < V; ++v) {
    int n = std::clamp(o.cols - 8 * v, 0, 8);
    mask[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMask + 8 - n));
  }
  __m256 acc[R][V];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k, a += MR) {
    const float* bk = IND ? b + koff[k] : b + k * NR;
    __m256 bv[V];
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v)
      bv[v] = IND && v == V - 1 ? _mm256_maskload_ps(bk + 8 * v, mask[v]) : _mm256_loadu_ps(bk + 8 * v);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      __m256 av = _mm256_broadcast_ss(a + r);
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  const bool scale = o.alpha != 1.0f;
  const __m256 alpha = _mm256_set1_ps(o.alpha);
  // The fused activation, every kind in vector form (vmath.h), on the tile in registers.
  const bool vact = o.last && !o.act->none();
  __m256 cb[V];
#pragma GCC unroll 3
  for (int v = 0; v < V; ++v)
    cb[v] = o.last && o.col_bias ? _mm256_maskload_ps(o.col_bias + 8 * v, mask[v]) : _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float* p = o.c + r * o.ldc;
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) {
      __m256 x = acc[r][v];
      if (scale) x = _mm256_mul_ps(x, alpha);
      if (o.load_c) x = _mm256_add_ps(x, _mm256_maskload_ps(p + 8 * v, mask[v]));
      if (o.last) {
        if (o.row_bias) x = _mm256_add_ps(x, _mm256_set1_ps(o.row_bias[r]));
        if (o.col_bias) x = _mm256_add_ps(x, cb[v]);
        if (vact) x = act_avx2(x, *o.act);
      }
      _mm256_maskstore_ps(p + 8 * v, mask[v], x);
    }
  }
}

template <int NC, bool IND>
MINIRT_AVX2 void narrow_avx2(int64_t kc, const float* a, const float* b, const int64_t* koff, const TileOut& o) {
  constexpr int MR = 4, NR = 24, U = narrow_sums(NC);
  __m128 acc[U][NC];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 8
    for (int j = 0; j < NC; ++j) acc[u][j] = _mm_setzero_ps();
  int64_t k = 0;
  for (; k + U <= kc; k += U, a += U * MR)
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
      const float* bk = IND ? b + koff[k + u] : b + (k + u) * NR;
      __m128 av = _mm_loadu_ps(a + u * MR);
#pragma GCC unroll 8
      for (int j = 0; j < NC; ++j) acc[u][j] = _mm_fmadd_ps(av, _mm_set1_ps(bk[j]), acc[u][j]);
    }
  for (; k < kc; ++k, a += MR) {
    const float* bk = IND ? b + koff[k] : b + k * NR;
    __m128 av = _mm_loadu_ps(a);
#pragma GCC unroll 8
    for (int j = 0; j < NC; ++j) acc[0][j] = _mm_fmadd_ps(av, _mm_set1_ps(bk[j]), acc[0][j]);
  }
  alignas(16) float t[NC][4];
#pragma GCC unroll 8
  for (int j = 0; j < NC; ++j) {
    __m128 sum = acc[0][j];
#pragma GCC unroll 4
    for (int u = 1; u < U; ++u) sum = _mm_add_ps(sum, acc[u][j]);
    _mm_store_ps(t[j], sum);
  }
  for (int r = 0; r < o.rows; ++r)
    for (int j = 0; j < NC; ++j) finish(t[j][r], o.c + r * o.ldc + j, o, r, j);
}

#endif  // MINIRT_SGEMM_X86

using Ukr = void (*)(int64_t, const float*, const float*, const int64_t*, const TileOut&);

#if MINIRT_SGEMM_X86
// Tables indexed [rows - 1][vectors - 1] and [columns - 1].
template <bool IND, int... R>
constexpr std::array<std::array<Ukr, 2>, sizeof...(R)> avx512_table(std::integer_sequence<int, R...>) {
  return {{{ukr_avx512<R + 1, 1, IND>, ukr_avx512<R + 1, 2, IND>}...}};
}
template <bool IND, int... R>
constexpr std::array<std::array<Ukr, 3>, sizeof...(R)> avx2_table(std::integer_sequence<int, R...>) {
  return {{{ukr_avx2<R + 1, 1, IND>, ukr_avx2<R + 1, 2, IND>, ukr_avx2<R + 1, 3, IND>}...}};
}
template <bool IND, int... C>
constexpr std::array<Ukr, sizeof...(C)> narrow512_table(std::integer_sequence<int, C...>) {
  return {{narrow_avx512<C + 1, IND>...}};
}
template <bool IND, int... C>
constexpr std::array<Ukr, sizeof...(C)> narrow2_table(std::integer_sequence<int, C...>) {
  return {{narrow_avx2<C + 1, IND>...}};
}
constexpr int kNarrow512 = 12, kNarrow2 = 3;
constexpr std::array<std::array<std::array<Ukr, 2>, 8>, 2> kAvx512 = {
    avx512_table<false>(std::make_integer_sequence<int, 8>{}), avx512_table<true>(std::make_integer_sequence<int, 8>{})};
constexpr std::array<std::array<std::array<Ukr, 3>, 4>, 2> kAvx2 = {
    avx2_table<false>(std::make_integer_sequence<int, 4>{}), avx2_table<true>(std::make_integer_sequence<int, 4>{})};
constexpr std::array<std::array<Ukr, kNarrow512>, 2> kNarrowAvx512 = {
    narrow512_table<false>(std::make_integer_sequence<int, kNarrow512>{}),
    narrow512_table<true>(std::make_integer_sequence<int, kNarrow512>{})};
constexpr std::array<std::array<Ukr, kNarrow2>, 2> kNarrowAvx2 = {
    narrow2_table<false>(std::make_integer_sequence<int, kNarrow2>{}),
    narrow2_table<true>(std::make_integer_sequence<int, kNarrow2>{})};
#endif

// One MR x (up to NR) tile: whole vectors with one kernel call, a short tail
// with the narrow kernel (cheaper than a mostly empty vector).
inline void run_tile(SgemmIsa isa, const Variant& v, int64_t kc, const float* a, const float* b, const int64_t* koff,
                     TileOut o) {
  const int ind = koff != nullptr;
#if MINIRT_SGEMM_X86
  if (isa == SgemmIsa::kAvx512 || isa == SgemmIsa::kAvx2) {
    const bool wide = isa == SgemmIsa::kAvx512;
    const int cols = o.cols;
    const int full = cols / v.vw, rest = cols % v.vw;
    if (rest == 0 || rest > v.narrow_max) {
      int vecs = ceil_div(cols, v.vw);
      if (wide) kAvx512[ind][o.rows - 1][vecs - 1](kc, a, b, koff, o);
      else kAvx2[ind][o.rows - 1][vecs - 1](kc, a, b, koff, o);
      return;
    }
    if (full > 0) {
      TileOut head = o;
      head.cols = full * v.vw;
      if (wide) kAvx512[ind][o.rows - 1][full - 1](kc, a, b, koff, head);
      else kAvx2[ind][o.rows - 1][full - 1](kc, a, b, koff, head);
    }
    const int off = full * v.vw;
    o.c += off;
    o.cols = rest;
    if (o.col_bias) o.col_bias += off;
    if (wide) kNarrowAvx512[ind][rest - 1](kc, a, b + off, koff, o);
    else kNarrowAvx2[ind][rest - 1](kc, a, b + off, koff, o);
    return;
  }
#endif
  (void)isa;
  (void)v;
  if (ind) ukr_generic<4, 16, true>(kc, a, b, koff, o);
  else ukr_generic<4, 16, false>(kc, a, b, koff, o);
}

}  // namespace

// ---------------------------------------------------------------- driver

size_t sgemm_scratch_floats(SgemmIsa isa, int64_t k, int64_t n) {
  Variant v = variant(isa);
  int64_t panels = std::min<int64_t>(nc_max(v), ceil_div(n, v.nr) * v.nr) / v.nr;
  return static_cast<size_t>(panels * block_pstride(k_step(k), v.nr));
}

namespace {

TileOut tile_out(const SgemmArgs& g, int64_t row, int64_t col, int rows, int cols, bool first, bool last) {
  TileOut o;
  o.c = g.c + row * g.ldc + col;
  o.ldc = g.ldc;
  o.rows = rows;
  o.cols = cols;
  o.load_c = !first || g.ep.accumulate;
  o.last = last;
  o.alpha = g.ep.alpha;
  o.row_bias = g.ep.row_bias ? g.ep.row_bias + row : nullptr;
  o.col_bias = g.ep.col_bias ? g.ep.col_bias + col : nullptr;
  o.act = &g.ep.act;
  return o;
}

// B read in place through the offset table: tiles never cross a row of
// `row_w` columns, whose B rows start `wide_w` apart.
void compute_indirect(const SgemmArgs& g, const Variant& v, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const int64_t K = g.k, kstep = k_step(K);
  const int64_t W = g.b.row_w, WQ = g.b.wide_w;
  for (int64_t pc = 0; pc < K; pc += kstep) {
    const int64_t kc = std::min(kstep, K - pc);
    const bool first = pc == 0, last = pc + kc == K;
    const int64_t* koff = g.b.koff + pc;
    // Each tile's B rows (gathered from a few input rows per channel) are
    // read by all the A panels of a row block while they are in L1.
    for (int64_t ic = m0; ic < m1; ic += kIndirectMc) {
      const int64_t ie = std::min(m1, ic + kIndirectMc);
      for (int64_t n = n0; n < n1;) {
        const int64_t oh = n / W, ow = n % W;
        const int cols = static_cast<int>(std::min<int64_t>({v.nr, W - ow, n1 - n}));
        const float* bp = g.b.data + oh * WQ + ow;
        for (int64_t ir = ic; ir < ie; ir += v.mr) {
          const float* ap = a_panel(g.a, v, g.m, ir, pc, kc);
          const int rows = static_cast<int>(std::min<int64_t>(v.mr, ie - ir));
          run_tile(g.isa, v, kc, ap, bp, koff, tile_out(g, ir, n, rows, cols, first, last));
        }
        n += cols;
      }
    }
  }
}

}  // namespace

void sgemm_compute(const SgemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* scratch) {
  if (m0 >= m1 || n0 >= n1) return;
  const Variant v = variant(g.isa);
  const int64_t K = g.k;
  if (K == 0) {
    // Nothing to sum: the epilogue of zero.
    for (int64_t r = m0; r < m1; ++r)
      for (int64_t j = n0; j < n1; ++j) {
        TileOut o = tile_out(g, r, j, 1, 1, true, true);
        finish(0.0f, o.c, o, 0, 0);
      }
    return;
  }
  if (g.b.kind == SgemmB::Kind::kIndirect) return compute_indirect(g, v, m0, m1, n0, n1);
  const int64_t kstep = k_step(K);
  const bool prepacked = g.b.kind == SgemmB::Kind::kPrepacked;
  const int64_t ncb = nc_max(v);
  for (int64_t jc = n0; jc < n1; jc += ncb) {
    const int64_t nc = std::min(ncb, n1 - jc);
    for (int64_t pc = 0; pc < K; pc += kstep) {
      const int64_t kc = std::min(kstep, K - pc);
      const float* bb;
      int64_t bstride;
      if (prepacked) {
        bb = g.b.data + (jc / v.nr) * K * v.nr + pc * v.nr;
        bstride = K * v.nr;
      } else {
        pack_b_block(g.isa, g.b, pc, kc, jc, nc, v.nr, scratch);
        bb = scratch;
        bstride = block_pstride(kc, v.nr);
      }
      const bool first = pc == 0, last = pc + kc == K;
      // Each A panel (kc x MR, in L1) meets every B panel of the block (in L2).
      for (int64_t ir = m0; ir < m1; ir += v.mr) {
        const float* ap = a_panel(g.a, v, g.m, ir, pc, kc);
        const int rows = static_cast<int>(std::min<int64_t>(v.mr, m1 - ir));
        for (int64_t jr = 0; jr < nc; jr += v.nr) {
          const int cols = static_cast<int>(std::min<int64_t>(v.nr, nc - jr));
          run_tile(g.isa, v, kc, ap, bb + (jr / v.nr) * bstride, nullptr,
                   tile_out(g, ir, jc + jr, rows, cols, first, last));
        }
      }
    }
  }
}

// ---------------------------------------------------------------- threads

SgemmSplit sgemm_split(SgemmIsa isa, int64_t batches, int64_t m, int64_t n, int64_t k, int threads,
                       int64_t row_w, bool packs_b) {
  SgemmSplit s;
  s.batches = std::max<int64_t>(batches, 1);
  const Variant v = variant(isa);
  // Columns are cut at whole panels, or at whole rows for a B read in place.
  s.granule = row_w > 0 ? row_w : v.nr;
  const int64_t mp = std::max<int64_t>(1, ceil_div(m, v.mr));
  const int64_t np = std::max<int64_t>(1, ceil_div(n, s.granule));
  const double macs = static_cast<double>(s.batches) * m * n * std::max<int64_t>(k, 1);
  if (threads <= 1 || macs < 64 * 1024) {
    s.tasks = 1;
    return s;
  }
  // Cost of the busiest task, in multiply-adds: its units' tiles (padded to
  // whole panels), the B packing each unit repeats, and a fixed overhead.
  const double pack = packs_b ? 8.0 : 0.0;
  const double gran = static_cast<double>(row_w > 0 ? ceil_div(row_w, v.nr) * v.nr : v.nr);
  double best = std::numeric_limits<double>::infinity();
  for (int64_t tm = 1; tm <= std::min<int64_t>(mp, 64); ++tm)
    for (int64_t tn = 1; tn <= std::min<int64_t>(np, 64); ++tn) {
      int64_t units = s.batches * tm * tn;
      int64_t tasks = std::min<int64_t>(threads, units);
      int64_t per_task = ceil_div(units, tasks);
      double um = static_cast<double>(ceil_div(mp, tm) * v.mr);
      double un = static_cast<double>(ceil_div(np, tn)) * gran;
      double unit = um * un * static_cast<double>(k) + pack * un * static_cast<double>(k) + 4000.0;
      double cost = static_cast<double>(per_task) * unit;
      if (cost < best * 0.999) {
        best = cost;
        s.tm = tm;
        s.tn = tn;
        s.tasks = tasks;
      }
    }
  return s;
}

SgemmUnit sgemm_unit(const SgemmSplit& s, SgemmIsa isa, int64_t m, int64_t n, int64_t u) {
  const Variant v = variant(isa);
  const int64_t per = s.tm * s.tn;
  SgemmUnit w;
  w.batch = u / per;
  int64_t rest = u % per, im = rest / s.tn, in = rest % s.tn;
  const int64_t mp = ceil_div(m, v.mr), np = ceil_div(n, s.granule);
  w.m0 = std::min(m, mp * im / s.tm * v.mr);
  w.m1 = std::min(m, mp * (im + 1) / s.tm * v.mr);
  w.n0 = std::min(n, np * in / s.tn * s.granule);
  w.n1 = std::min(n, np * (in + 1) / s.tn * s.granule);
  return w;
}

size_t sgemm_task_stride_floats(SgemmIsa isa, int64_t k, int64_t n) {
  return (sgemm_scratch_floats(isa, k, n) + 15) / 16 * 16;
}

size_t sgemm_workspace_bytes(const SgemmSplit& s, SgemmIsa isa, int64_t k, int64_t n, bool packs_b) {
  if (!packs_b) return 0;
  return static_cast<size_t>(s.tasks) * sgemm_task_stride_floats(isa, k, n) * sizeof(float);
}

void sgemm_run(ThreadPool& pool, const SgemmArgs& g, const SgemmSplit& s, float* workspace) {
  sgemm_run_batch(pool, s, g.isa, g.m, g.n, g.k, workspace, [&](int64_t, SgemmArgs& a) { a = g; });
}

}  // namespace minirt::cpu
