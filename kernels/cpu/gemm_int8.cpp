// The int8 matrix product's driver: packing, the instruction-set choice,
// the portable reference tile, and the zero-point arithmetic (gemm_int8.h).
#include "kernels/cpu/gemm_int8.h"

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/gemm_int8_isa.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstring>

namespace minirt::cpu {

const char* int8_isa_name(Int8Isa isa) { return isa == Int8Isa::kAvx512Vnni ? "avx512_vnni" : "generic"; }

Int8Isa int8_isa() {
  const CpuFeatures& f = cpu_features();
  const bool vnni = f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni && f.os_avx512;
  return vnni && static_cast<int>(cpu_isa()) >= static_cast<int>(CpuIsa::kAvx512) ? Int8Isa::kAvx512Vnni
                                                                                  : Int8Isa::kGeneric;
}

void int8_pack_p(const uint8_t* p, int64_t ldp, int64_t k, int64_t m, uint8_t flip, int8_t* out, int32_t* rowsum) {
  const int64_t kp = int8_quads(k) * 4;
  for (int64_t r = 0; r < m; ++r) {
    int8_t* o = out + r * kp;
    int32_t sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      o[i] = static_cast<int8_t>(p[r * ldp + i] ^ flip);
      sum += o[i];
    }
    std::memset(o + k, 0, static_cast<size_t>(kp - k));
    if (rowsum) rowsum[r] = sum;
  }
}

void int8_pack_q(const uint8_t* q, int64_t rs, int64_t cs, int64_t k, int64_t n, uint8_t flip, uint8_t* out,
                 int32_t* colsum, ThreadPool* pool) {
  const int64_t quads = int8_quads(k), panels = int8_panels(n);
  // Panel by panel, each written front to back (a quad of 4 rows x 16
  // columns is one 64-byte vector), reading 16 bytes of each row.
  auto body = [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t j0 = b * 16, cols = std::min<int64_t>(16, n - j0);
      int32_t sums[16] = {};
      uint8_t* o = out + b * quads * 64;
      for (int64_t qd = 0; qd < quads; ++qd, o += 64) {
        if (cols < 16 || qd * 4 + 4 > k) std::memset(o, 0, 64);
        for (int i = 0; i < 4 && qd * 4 + i < k; ++i) {
          const uint8_t* src = q + (qd * 4 + i) * rs + j0 * cs;
          for (int64_t c = 0; c < cols; ++c) {
            const uint8_t v = src[c * cs] ^ flip;
            o[c * 4 + i] = v;
            sums[c] += v;
          }
        }
      }
      if (colsum) std::copy(sums, sums + cols, colsum + j0);
    }
  };
  if (pool)
    pool->parallel_for(panels, body, 1);
  else
    body(0, panels);
}

namespace {

// The reference of the VNNI tile: the same sums in plain int32.
void int8_gemm_tile_generic(const Int8GemmTile& t) {
  for (int64_t r = t.r0; r < t.r1; ++r)
    for (int64_t b = t.b0; b < t.b1; ++b) {
      int32_t acc[16] = {};
      const uint8_t* q = t.q + b * t.quads * 64;
      const int8_t* p = t.p + r * t.ldp;
      for (int64_t k = 0; k < t.quads; ++k)
        for (int col = 0; col < 16; ++col)
          for (int i = 0; i < 4; ++i)
            acc[col] += static_cast<int32_t>(q[k * 64 + col * 4 + i]) * static_cast<int32_t>(p[k * 4 + i]);
      const int64_t valid = std::min<int64_t>(16, t.n - b * 16);
      std::memcpy(t.c + r * t.ldc + b * 16, acc, static_cast<size_t>(valid) * sizeof(int32_t));
    }
}

}  // namespace

void int8_gemm(Int8Isa isa, const int8_t* p, int64_t ldp, int64_t m, int64_t quads, const uint8_t* q, int64_t n,
               int32_t* c, int64_t ldc, ThreadPool* pool) {
  const int64_t panels = int8_panels(n);
  if (m <= 0 || panels <= 0) return;
  // Work items of up to 24 rows x 4 panels.
  const int64_t row_chunks = (m + 23) / 24, panel_chunks = (panels + 3) / 4;
  auto run = [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t rc = w / panel_chunks, pc = w % panel_chunks;
      Int8GemmTile t{
          p, ldp, q, c, ldc, n, quads, rc * 24, std::min(m, rc * 24 + 24), pc * 4, std::min(panels, pc * 4 + 4)};
      if (isa == Int8Isa::kAvx512Vnni)
        int8_gemm_tile_avx512vnni(t);
      else
        int8_gemm_tile_generic(t);
    }
  };
  if (pool)
    pool->parallel_for(row_chunks * panel_chunks, run, 1);
  else
    run(0, row_chunks * panel_chunks);
}

void int8_unshift(int32_t* c, int64_t ldc, int64_t m, int64_t n, int64_t k, const int32_t* rowsum,
                  const int32_t* colsum, const int32_t* za, int64_t za_stride, int32_t oa, const int32_t* zb,
                  int64_t zb_stride, int32_t ob) {
  for (int64_t r = 0; r < m; ++r) {
    const int32_t a0 = (za ? za[r * za_stride] : 0) - oa;
    int32_t* row = c + r * ldc;
    for (int64_t j = 0; j < n; ++j) {
      const int32_t b0 = (zb ? zb[j * zb_stride] : 0) + ob;
      row[j] += static_cast<int32_t>(k) * a0 * b0 - b0 * rowsum[r] - a0 * colsum[j];
    }
  }
}

}  // namespace minirt::cpu
