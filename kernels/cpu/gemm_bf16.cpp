#include "kernels/cpu/gemm_bf16.h"

#include <minirt/half.h>

#include <algorithm>

#include "kernels/cpu/bf16_values_isa.h"
#include "runtime/ops/activation.h"
#include "runtime/thread_pool.h"

namespace minirt::cpu {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The portable form of bf16_gemm_tile_avx512bf16: the same sums, pair by
// pair in k order, in float32.
void tile_reference(const Bf16GemmTile& t) {
  const int64_t pairs = t.groups * 16, kp = t.groups * 32;
  for (int64_t r = t.r0; r < t.r1; ++r)
    for (int64_t b = t.b0; b < t.b1; ++b)
      for (int c = 0; c < 16; ++c) {
        const int64_t col = b * 16 + c;
        if (col >= t.n) break;
        float sum = 0;
        for (int64_t p = 0; p < pairs; ++p) {
          const uint16_t* w = t.w + (b * pairs + p) * 32 + c * 2;
          const uint16_t* a = t.a + r * kp + p * 2;
          sum += bfloat16_to_float(a[0]) * bfloat16_to_float(w[0]) + bfloat16_to_float(a[1]) * bfloat16_to_float(w[1]);
        }
        t.y[r * t.ldy + col] = t.act->apply(t.alpha * sum + (t.bias ? t.bias[col] : 0.0f));
      }
}

}  // namespace

std::string bf16_gemm_declined(int64_t m, Bf16Isa isa) {
  if (isa == Bf16Isa::kNone) {
    std::string why = bf16_isa_reason();
    return why.empty() ? "needs bf16 math (MathMode::kBf16) on AVX512_BF16 or AMX" : why;
  }
  if (m > kBf16GemmMaxRows)
    return "has " + std::to_string(m) + " rows, more than " + std::to_string(kBf16GemmMaxRows) +
           " (past them the product is arithmetic, not a read of the weights, and vdpbf16ps does it no faster "
           "than the float32 SGEMM)";
  return {};
}

Bf16Gemm::Bf16Gemm(Bf16Isa isa, int64_t m, int64_t k, int64_t n, const float* b, int64_t brs, int64_t bcs)
    : isa_(isa), m_(m), k_(k), n_(n), groups_(ceil_div(k, 32)), blocks_(ceil_div(n, 16)) {
  w_.assign(static_cast<size_t>(blocks_ * groups_ * 512), 0);
  for (int64_t blk = 0; blk < blocks_; ++blk)
    for (int64_t r = 0; r < k; ++r)
      for (int c = 0; c < 16; ++c) {
        const int64_t col = blk * 16 + c;
        if (col >= n) break;
        const int64_t p = r / 2;  // the pair, across groups
        w_[static_cast<size_t>((blk * groups_ * 16 + p) * 32 + c * 2 + r % 2)] =
            float_to_bfloat16(b[r * brs + col * bcs]);
      }
  // Workspace: A rounded ([m][groups * 32] bf16), then the bias padded to whole blocks.
  a_elems_ = static_cast<size_t>(m * groups_ * 32);
  ws_bytes_ = (a_elems_ * sizeof(uint16_t) + 63) / 64 * 64 + static_cast<size_t>(blocks_ * 16) * sizeof(float);
}

void Bf16Gemm::run(const float* a, int64_t ars, int64_t acs, const float* bias, float alpha, const Activation& act,
                   float* y, void* workspace, ThreadPool& pool) const {
  if (m_ == 0 || n_ == 0) return;
  const int64_t kp = groups_ * 32;
  uint16_t* ab = static_cast<uint16_t*>(workspace);
  float* padded_bias = reinterpret_cast<float*>(static_cast<char*>(workspace) + (a_elems_ * 2 + 63) / 64 * 64);
  // A to bf16, a row at a time (16 columns a vector where the row is contiguous).
  for (int64_t r = 0; r < m_; ++r) {
    const float* src = a + r * ars;
    uint16_t* dst = ab + r * kp;
    int64_t c = 0;
    if (acs == 1 && isa_ != Bf16Isa::kNone) {
      c = k_ / 16 * 16;
      floats_to_bf16_lanes_avx512(src, dst, 16, c / 16);
    }
    for (; c < k_; ++c) dst[c] = float_to_bfloat16(src[c * acs]);
    std::fill(dst + k_, dst + kp, uint16_t{0});
  }
  const float* bp = nullptr;
  if (bias) {
    std::copy(bias, bias + n_, padded_bias);
    std::fill(padded_bias + n_, padded_bias + blocks_ * 16, 0.0f);
    bp = padded_bias;
  }
  auto tile = isa_ == Bf16Isa::kNone ? tile_reference : bf16_gemm_tile_avx512bf16;
  // Pairs of blocks over the pool: each task reads its columns' weights once.
  const int64_t pairs = ceil_div(blocks_, 2);
  pool.parallel_for(pairs, [&](int64_t p0, int64_t p1) {
    Bf16GemmTile t{ab, w_.data(), bp, &act, y, n_, n_, groups_, alpha, 0, m_, p0 * 2, std::min(blocks_, p1 * 2)};
    tile(t);
  });
}

std::string Bf16Gemm::describe() const {
  // The products are vdpbf16ps on AMX hosts too (a batch-1 product is a read of the weights, not arithmetic).
  return std::string("bf16_gemm isa=") + (isa_ == Bf16Isa::kNone ? "reference" : "avx512_bf16") +
         " k=" + std::to_string(k_) + " n=" + std::to_string(n_) + " b=prepacked bf16";
}

}  // namespace minirt::cpu
