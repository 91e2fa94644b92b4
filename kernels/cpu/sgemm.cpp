// minirt's packed SGEMM; see sgemm.h for the layout, blocking and threading.
//
// The driver: ISA choice, packing, blocking, threads, and the portable
// microkernel. The AVX-512 and AVX2 microkernels are in sgemm_avx512.cpp and
// sgemm_avx2.cpp (sgemm_isa.h), compiled with their own -m flags and called
// only after cpuid says the CPU has those instructions, so this file may be
// built for plain x86-64 (or any other architecture, where only the portable
// kernel exists).
#include "kernels/cpu/sgemm.h"

#include "kernels/cpu/cpu_caps.h"

#include "kernels/cpu/sgemm_isa.h"

#include <minirt/error.h>

#include "runtime/host_memory.h"
#include "runtime/host_resources.h"
#include "runtime/memory_pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#define MINIRT_SGEMM_X86 1
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
  SgemmShape s = isa == SgemmIsa::kAvx512 ? kSgemmAvx512Shape
                 : isa == SgemmIsa::kAvx2 ? kSgemmAvx2Shape
                                          : kSgemmGenericShape;
  return {s.mr, s.nr, s.vw, s.narrow_max};
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

// MINIRT_SGEMM_ISA's value as an ISA; false when it is not one of the names.
bool isa_from_name(const char* name, SgemmIsa* isa) {
  for (SgemmIsa i : {SgemmIsa::kGeneric, SgemmIsa::kAvx2, SgemmIsa::kAvx512})
    if (std::strcmp(name, sgemm_isa_name(i)) == 0) {
      *isa = i;
      return true;
    }
  return false;
}

// The ISA MINIRT_SGEMM_ISA asks for, or `fallback` when it is unset or
// cannot be followed (the CPU backend then refuses to start:
// sgemm_env_isa_problem).
SgemmIsa parse_env_isa(SgemmIsa fallback) {
  // MINIRT_CPU_ISA (cpu_caps.h) first: its bf16 levels run the AVX-512 SGEMM.
  if (std::getenv("MINIRT_CPU_ISA")) {
    if (!cpu_env_isa_problem().empty()) return fallback;
    CpuIsa c = cpu_isa();
    return c >= CpuIsa::kAvx512 ? SgemmIsa::kAvx512 : c == CpuIsa::kAvx2 ? SgemmIsa::kAvx2 : SgemmIsa::kGeneric;
  }
  const char* e = std::getenv("MINIRT_SGEMM_ISA");
  SgemmIsa want;
  if (!e || !isa_from_name(e, &want)) return fallback;
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
    case SgemmIsa::kGeneric:
      return true;
    case SgemmIsa::kAvx2:
      return c.avx2_fma;
    case SgemmIsa::kAvx512:
      return c.avx512;
  }
  return false;
}

std::string sgemm_env_isa_problem() {
  const char* e = std::getenv("MINIRT_SGEMM_ISA");
  if (!e || std::getenv("MINIRT_CPU_ISA")) return {};  // MINIRT_CPU_ISA wins (cpu_env_isa_problem)
  SgemmIsa want;
  if (!isa_from_name(e, &want))
    return std::string("MINIRT_SGEMM_ISA='") + e + "' is not one of generic, avx2, avx512; set one of them or unset it";
  if (!sgemm_isa_supported(want))
    return std::string("MINIRT_SGEMM_ISA=") + e + " asks for kernels this CPU cannot run (it has " +
           sgemm_isa_name(sgemm_best_isa()) + " at most); set a narrower one or unset it";
  return {};
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
    case SgemmIsa::kAvx512:
      return "avx512";
    case SgemmIsa::kAvx2:
      return "avx2";
    case SgemmIsa::kGeneric:
      break;
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
    throw Error(ErrorCode::kOutOfMemory,
                "cannot allocate " + std::to_string(n) + " floats of packed weights or scratch");
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  check_host_room(bytes, "packed weights or scratch of a CPU kernel");
  p_ = std::unique_ptr<float[], Free>(static_cast<float*>(host_alloc(bytes, nullptr, true)), Free{bytes});
  if (!p_)
    throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + format_bytes(bytes) +
                                             " for packed weights or scratch of a CPU kernel: the system refused it");
}
void AlignedFloats::Free::operator()(float* p) const { host_free(p, bytes); }

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
      case 32:
        return pack_rows<32>(src, rs, k0, kc, n0, nc, pstride, dst);
      case 24:
        return pack_rows<24>(src, rs, k0, kc, n0, nc, pstride, dst);
      case 16:
        return pack_rows<16>(src, rs, k0, kc, n0, nc, pstride, dst);
      default:
        break;
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

// The pieces of columns [n0, n0 + nc) cut at output rows and at chunks of
// `lanes` columns. Returns how many were written (at most cap); -1 if more.
int cut_pieces(const Im2colGeom& q, int64_t n0, int64_t nc, int lanes, SgemmPiece* out, int cap) {
  int count = 0;
  int64_t oh = n0 / q.ow, ow = n0 % q.ow;
  for (int64_t col = 0; col < nc;) {
    int64_t chunk = col / lanes;
    int64_t t = col % lanes;
    int64_t len = std::min({nc - col, q.ow - ow, static_cast<int64_t>(lanes) - t});
    if (count == cap) return -1;
    out[count++] = SgemmPiece{static_cast<int32_t>(chunk), static_cast<int16_t>(t), static_cast<int16_t>(t + len),
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
void pack_b_im2col_generic(const Im2colGeom& q, const float* x, int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                           int64_t pstride, float* dst) {
  const int lanes = 8;  // every panel width is a multiple of 8
  const int chunks_per_panel = nr / lanes;
  SgemmPiece pieces[kMaxPieces];
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
      const SgemmPiece& pc = pieces[p];
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

// Panels of a per-call B block are kc * nr floats apart plus one cache line,
// so that the rows the packers write across panels (and the microkernel's
// reads) do not all fall into the same L1 set when kc * nr * 4 is a multiple
// of 4 KiB.
int64_t block_pstride(int64_t kc, int nr) { return kc * nr + 16; }

void pack_b_block(const SgemmKernels* kernels, const SgemmB& b, int64_t k0, int64_t kc, int64_t n0, int64_t nc, int nr,
                  float* dst) {
  int64_t pstride = block_pstride(kc, nr);
  switch (b.kind) {
    case SgemmB::Kind::kMatrix:
      return pack_b_matrix(b.data, b.rs, b.cs, k0, kc, n0, nc, nr, pstride, dst);
    case SgemmB::Kind::kIm2col:
      if (kernels && kernels->im2col && (b.conv->sw == 1 || b.conv->sw == 2)) {
        // 16-lane pieces for the ISA file's masked loads; very narrow
        // outputs (more pieces than fit) take the portable path.
        SgemmPiece pieces[kMaxPieces];
        int np = cut_pieces(*b.conv, n0, nc, 16, pieces, kMaxPieces);
        if (np >= 0) return kernels->im2col(*b.conv, b.data, k0, kc, nc, nr, pstride, dst, pieces, np);
      }
      return pack_b_im2col_generic(*b.conv, b.data, k0, kc, n0, nc, nr, pstride, dst);
    case SgemmB::Kind::kPrepacked:
    case SgemmB::Kind::kIndirect:
      break;
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
// Every kernel computes an MR x (up to NR) tile (SgemmUkr in sgemm_isa.h).
// The vector ones are in the ISA files; here, the portable one, the epilogue
// of one element, and the choice of kernel for a tile.

namespace {

using TileOut = SgemmTileOut;

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

// The ISA file's kernels for isa; null for the portable kernel.
const SgemmKernels* kernels_for(SgemmIsa isa) {
#if MINIRT_SGEMM_X86
  if (isa == SgemmIsa::kAvx512) return &sgemm_kernels_avx512();
  if (isa == SgemmIsa::kAvx2) return &sgemm_kernels_avx2();
#endif
  (void)isa;
  return nullptr;
}

// One MR x (up to NR) tile: whole vectors with one kernel call, a short tail
// with the narrow kernel (cheaper than a mostly empty vector).
inline void run_tile(const SgemmKernels* k, const Variant& v, int64_t kc, const float* a, const float* b,
                     const int64_t* koff, TileOut o) {
  const int ind = koff != nullptr;
  if (k) {
    const int cols = o.cols;
    const int full = cols / v.vw, rest = cols % v.vw;
    if (rest == 0 || rest > v.narrow_max) {
      int vecs = static_cast<int>(ceil_div(cols, v.vw));
      k->wide[ind][o.rows - 1][vecs - 1](kc, a, b, koff, o);
      return;
    }
    if (full > 0) {
      TileOut head = o;
      head.cols = full * v.vw;
      k->wide[ind][o.rows - 1][full - 1](kc, a, b, koff, head);
    }
    const int off = full * v.vw;
    o.c += off;
    o.cols = rest;
    if (o.col_bias) o.col_bias += off;
    k->narrow[ind][rest - 1](kc, a, b + off, koff, o);
    return;
  }
  (void)v;
  if (ind)
    ukr_generic<4, 16, true>(kc, a, b, koff, o);
  else
    ukr_generic<4, 16, false>(kc, a, b, koff, o);
}

}  // namespace

void sgemm_finish_narrow(const float* sums, int lanes, int cols, const SgemmTileOut& o) {
  for (int r = 0; r < o.rows; ++r)
    for (int j = 0; j < cols; ++j) finish(sums[j * lanes + r], o.c + r * o.ldc + j, o, r, j);
}

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
void compute_indirect(const SgemmArgs& g, const SgemmKernels* kern, const Variant& v, int64_t m0, int64_t m1,
                      int64_t n0, int64_t n1) {
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
          run_tile(kern, v, kc, ap, bp, koff, tile_out(g, ir, n, rows, cols, first, last));
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
  const SgemmKernels* kern = kernels_for(g.isa);
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
  if (g.b.kind == SgemmB::Kind::kIndirect) return compute_indirect(g, kern, v, m0, m1, n0, n1);
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
        pack_b_block(kern, g.b, pc, kc, jc, nc, v.nr, scratch);
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
          run_tile(kern, v, kc, ap, bb + (jr / v.nr) * bstride, nullptr,
                   tile_out(g, ir, jc + jr, rows, cols, first, last));
        }
      }
    }
  }
}

// ---------------------------------------------------------------- threads

SgemmSplit sgemm_split(SgemmIsa isa, int64_t batches, int64_t m, int64_t n, int64_t k, int threads, int64_t row_w,
                       bool packs_b) {
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
