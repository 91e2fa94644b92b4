// The SGEMM's AVX-512 kernels: 8 x 32 tiles (two zmm of columns), narrow
// tails of up to 12 columns along the 8 rows (ymm), and im2col packing with
// masked loads. Compiled with -mavx512f -mavx2 -mfma (CMakeLists.txt) and
// called only after cpuid says the CPU has them (sgemm.cpp). The one global
// symbol is sgemm_kernels_avx512; everything else is in an anonymous
// namespace (tests/cli/isa_objects_test.sh checks it).
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/sgemm_isa.h"
#include "kernels/cpu/sgemm_ukr.h"

// vmath_avx512.h's register forms local to this object (MINIRT_VMATH_INLINE there).
#define MINIRT_VMATH_INLINE static inline
#include "kernels/cpu/vmath_avx512.h"  // act_avx512: always inlined, target avx512f,avx2,fma

namespace minirt::cpu {
namespace {

// The narrow kernels' vector: the 8 rows of an A panel.
struct Ymm {
  static constexpr int kLanes = 8;
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store_aligned(float* p, V v) { _mm256_store_ps(p, v); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
};

struct Zmm {
  static constexpr int kMr = kSgemmAvx512Shape.mr, kNr = kSgemmAvx512Shape.nr, kLanes = 16;
  static constexpr bool kMaskEveryInPlace = true;  // a masked load costs what a plain one does
  using V = __m512;
  using Mask = __mmask16;
  using Row = Ymm;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static Mask mask(int n) { return static_cast<__mmask16>((1u << n) - 1); }
  static V act(V x, const Activation& a) { return act_avx512(x, a); }
};
static_assert(kSgemmAvx512Shape.vw == Zmm::kLanes);

// std::min, std::max and std::clamp as libstdc++ 12 writes them (by const
// reference, clamp as min(max(v, lo), hi)), so that the code is what it was
// with them, without a std template (ARCHITECTURE.md, "ISA files").
inline const int64_t& min64(const int64_t& a, const int64_t& b) { return b < a ? b : a; }
inline const int64_t& max64(const int64_t& a, const int64_t& b) { return a < b ? b : a; }
inline int64_t clamp16(int64_t v) {
  const int64_t lo = 0, hi = 16;
  return min64(max64(v, lo), hi);
}
int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Lanes [lo, hi) of a 16-lane mask (empty when lo >= hi).
inline __mmask16 lane_range(int64_t lo, int64_t hi) {
  lo = clamp16(lo);
  hi = clamp16(hi);
  return static_cast<__mmask16>(lo < hi ? ((1u << hi) - 1) & ~((1u << lo) - 1) : 0u);
}

// im2col for strides 1 and 2 (any dilation, padding): each 16-column chunk
// of a panel row is one masked load per piece straight from the input row
// (stride 2: two loads and their even lanes), zero where the window leaves
// the input.
void pack_b_im2col(const Im2colGeom& q, const float* x, int64_t k0, int64_t kc, int64_t nc, int nr, int64_t pstride,
                   float* dst, const SgemmPiece* pieces, int np) {
  const int lanes = 16;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const int chunks_per_panel = nr / lanes;
  const int64_t chunks = ceil_div64(ceil_div64(nc, nr) * nr, lanes);
  const int64_t khw = q.kh * q.kw;
  for (int64_t kk = 0; kk < kc; ++kk) {
    int64_t k = k0 + kk, ci = k / khw, i = (k % khw) / q.kw, j = k % q.kw;
    const float* xc = x + ci * q.h * q.w;
    const int64_t ioff = i * q.dh - q.ph, joff = j * q.dw - q.pw;
    int p = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      __m512 v = _mm512_setzero_ps();
      for (; p < np && pieces[p].chunk == c; ++p) {
        const SgemmPiece& pc = pieces[p];
        int64_t ih = pc.oh * q.sh + ioff;
        if (ih < 0 || ih >= q.h) continue;
        const float* xr = xc + ih * q.w;
        if (q.sw == 1) {
          // Lane t reads iw = t + shift, valid for 0 <= iw < w.
          int64_t shift = pc.ow0 - pc.t0 + joff;
          v = _mm512_mask_loadu_ps(v, lane_range(max64(pc.t0, -shift), min64(pc.t1, q.w - shift)), xr + shift);
        } else {
          // Lane t reads iw = 2t + shift: element 2t of the 32 from xr + shift.
          int64_t shift = 2 * (pc.ow0 - pc.t0) + joff;
          int64_t lo = max64(pc.t0, ceil_div64(max64(-shift, 0), 2));
          int64_t hi = min64(pc.t1, q.w - shift > 0 ? ceil_div64(q.w - shift, 2) : 0);
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

constexpr SgemmKernels make_kernels() {
  SgemmKernels k = Tile<Zmm>::make<kSgemmAvx512Shape.narrow_max>();
  k.im2col = pack_b_im2col;
  return k;
}
constexpr SgemmKernels kKernels = make_kernels();

}  // namespace

const SgemmKernels& sgemm_kernels_avx512() { return kKernels; }

}  // namespace minirt::cpu
