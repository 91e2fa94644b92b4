// The int8 matrix product (kernels/cpu/gemm_int8.h) against sums in int64:
// the VNNI tile and its portable reference over shapes with every kind of
// tail, the extremes of both types over a long k (vpdpbusd must not
// saturate), and the flips and zero points of all four sign combinations.
#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/gemm_int8.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace minirt {
namespace {

using cpu::Int8Isa;

std::vector<Int8Isa> isas() {
  std::vector<Int8Isa> v = {Int8Isa::kGeneric};
  if (cpu::int8_isa() == Int8Isa::kAvx512Vnni) v.push_back(Int8Isa::kAvx512Vnni);
  return v;
}

// C = A B - the zero points, in int64, for A m x k and B k x n of either signedness.
std::vector<int64_t> reference(const std::vector<uint8_t>& a, bool a_signed, const std::vector<uint8_t>& b,
                               bool b_signed, int64_t m, int64_t k, int64_t n, const std::vector<int32_t>& za,
                               const std::vector<int32_t>& zb) {
  auto val = [](uint8_t v, bool s) { return s ? static_cast<int64_t>(static_cast<int8_t>(v)) : int64_t{v}; };
  std::vector<int64_t> c(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t i = 0; i < k; ++i)
        s += (val(a[r * k + i], a_signed) - za[r]) * (val(b[i * n + j], b_signed) - zb[j]);
      c[r * n + j] = s;
    }
  return c;
}

// The whole pipeline as MatMulInteger runs it: pack, product, unshift.
std::vector<int32_t> product(Int8Isa isa, const std::vector<uint8_t>& a, bool a_signed, const std::vector<uint8_t>& b,
                             bool b_signed, int64_t m, int64_t k, int64_t n, const std::vector<int32_t>& za,
                             const std::vector<int32_t>& zb, ThreadPool* pool) {
  const int64_t kp = cpu::int8_quads(k) * 4;
  std::vector<int8_t> p(static_cast<size_t>(m * kp));
  std::vector<uint8_t> q(static_cast<size_t>(cpu::int8_q_bytes(k, n)));
  std::vector<int32_t> rowsum(static_cast<size_t>(m)), colsum(static_cast<size_t>(n));
  cpu::int8_pack_p(a.data(), k, k, m, a_signed ? 0 : 0x80, p.data(), rowsum.data());
  cpu::int8_pack_q(b.data(), n, 1, k, n, b_signed ? 0x80 : 0, q.data(), colsum.data());
  // Guard values past the last column: the product must not write there.
  const int64_t ldc = n + 3;
  std::vector<int32_t> c(static_cast<size_t>(m * ldc), 0x5a5a5a5a);
  cpu::int8_gemm(isa, p.data(), kp, m, kp / 4, q.data(), n, c.data(), ldc, pool);
  cpu::int8_unshift(c.data(), ldc, m, n, k, rowsum.data(), colsum.data(), za.data(), 1, a_signed ? 0 : 128, zb.data(),
                    1, b_signed ? 128 : 0);
  std::vector<int32_t> out(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) out[r * n + j] = c[r * ldc + j];
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = n; j < ldc; ++j) EXPECT_EQ(c[r * ldc + j], 0x5a5a5a5a) << "wrote past column " << n;
  return out;
}

TEST(GemmInt8, EverySignAndShapeMatchesInt64Sums) {
  std::mt19937 rng(25);
  std::uniform_int_distribution<int> byte(0, 255);
  ThreadPool pool(3);
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 4, 16}, {6, 8, 32}, {7, 13, 17}, {13, 64, 70}, {25, 37, 5}, {3, 300, 65}};
  for (Int8Isa isa : isas())
    for (const auto& s : shapes)
      for (int signs = 0; signs < 4; ++signs) {
        const int64_t m = s[0], k = s[1], n = s[2];
        const bool as = signs & 1, bs = signs & 2;
        std::vector<uint8_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
        for (auto& v : a) v = static_cast<uint8_t>(byte(rng));
        for (auto& v : b) v = static_cast<uint8_t>(byte(rng));
        std::vector<int32_t> za(static_cast<size_t>(m)), zb(static_cast<size_t>(n));
        for (auto& z : za) z = as ? byte(rng) - 128 : byte(rng);
        for (auto& z : zb) z = bs ? byte(rng) - 128 : byte(rng);
        const std::vector<int64_t> want = reference(a, as, b, bs, m, k, n, za, zb);
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          const std::vector<int32_t> got = product(isa, a, as, b, bs, m, k, n, za, zb, p);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(got[i], want[i]) << cpu::int8_isa_name(isa) << " " << m << "x" << k << "x" << n << " signs "
                                       << signs << " at " << i;
        }
      }
}

// The largest products of every sign over k = 4096: 4096 * 255 * 128 and
// more fit int32 but not a saturating 16-bit step.
TEST(GemmInt8, ExtremesOverALongKDoNotSaturate) {
  const int64_t m = 2, k = 4096, n = 16;
  for (Int8Isa isa : isas())
    for (int signs = 0; signs < 4; ++signs) {
      const bool as = signs & 1, bs = signs & 2;
      std::vector<uint8_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
      for (size_t i = 0; i < a.size(); ++i) a[i] = as ? (i % 2 ? 0x80 : 0x7f) : (i % 2 ? 255 : 0);
      for (size_t i = 0; i < b.size(); ++i) b[i] = bs ? 0x80 : 255;
      std::vector<int32_t> za(static_cast<size_t>(m), 0), zb(static_cast<size_t>(n), 0);
      const std::vector<int64_t> want = reference(a, as, b, bs, m, k, n, za, zb);
      const std::vector<int32_t> got = product(isa, a, as, b, bs, m, k, n, za, zb, nullptr);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << cpu::int8_isa_name(isa) << " " << signs;
    }
}

// Under MINIRT_CPU_ISA=avx2 (or a CPU without VNNI) the reference runs.
TEST(GemmInt8, IsaFollowsTheCap) {
  cpu::cpu_force_isa(cpu::CpuIsa::kAvx2);
  EXPECT_EQ(cpu::int8_isa(), Int8Isa::kGeneric);
  cpu::cpu_reset_isa();
  EXPECT_EQ(cpu::int8_isa() == Int8Isa::kAvx512Vnni,
            cpu::cpu_features().avx512_vnni && cpu::cpu_features().os_avx512 && cpu::cpu_isa() >= cpu::CpuIsa::kAvx512);
}

}  // namespace
}  // namespace minirt
