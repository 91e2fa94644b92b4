// The int8 matrix product: C = P Q in int32, exact, with P's rows int8 and
// Q uint8 in 16-column panels (gemm_int8_isa.h has the layouts), on
// AVX512-VNNI (vpdpbusd) or a portable reference of the same arithmetic.
// MatMulInteger and ConvInteger (kernels/cpu/quant.cpp) run on it; the
// quantized convolutions will.
//
// Operands of either signedness go in by flipping their top bit (x ^ 0x80:
// uint8 x becomes int8 x - 128, int8 x becomes uint8 x + 128), and the
// zero points and those offsets come out again with row and column sums:
//   sum_k (a - za)(b - zb) = sum_k a'b' - B0 rowsum(a') - A0 colsum(b') + k A0 B0
// where a = a' + oa, b = b' - ob, A0 = za - oa, B0 = zb + ob (int8_unshift).
//
//   Int8Isa isa = int8_isa();
//   int8_pack_p(a, lda, k, m, a_is_uint8 ? 0x80 : 0, pbuf, rowsum);   // rows of `quads * 4` int8
//   int8_pack_q(b, ldb, 1, k, n, b_is_int8 ? 0x80 : 0, qbuf, colsum); // panels
//   int8_gemm(isa, pbuf, int8_quads(k) * 4, m, int8_quads(k), qbuf, n, c, n, &pool);
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace minirt {
class ThreadPool;
class Kernel;
struct Graph;
struct Node;
}  // namespace minirt

namespace minirt::cpu {

enum class Int8Isa : uint8_t { kGeneric, kAvx512Vnni };
const char* int8_isa_name(Int8Isa isa);
// AVX512-VNNI where the CPU has it and MINIRT_CPU_ISA allows AVX-512; else the reference.
Int8Isa int8_isa();

inline int64_t int8_quads(int64_t k) { return (k + 3) / 4; }
inline int64_t int8_panels(int64_t n) { return (n + 15) / 16; }
// Bytes of Q's panels for k x n.
inline int64_t int8_q_bytes(int64_t k, int64_t n) { return int8_panels(n) * int8_quads(k) * 64; }

// P's m rows of k (element (r, i) at p[r * ldp + i]) as int8 rows of
// int8_quads(k) * 4 bytes (zero past k), each byte XOR `flip`; rowsum[r]
// (when not null) gets the sum of row r's int8 values.
void int8_pack_p(const uint8_t* p, int64_t ldp, int64_t k, int64_t m, uint8_t flip, int8_t* out, int32_t* rowsum);
// Q's k x n (element (i, j) at q[i * rs + j * cs]) as panels, each byte
// XOR `flip`; colsum[j] (when not null) gets the sum of column j's uint8
// values. Panels over the pool when given.
void int8_pack_q(const uint8_t* q, int64_t rs, int64_t cs, int64_t k, int64_t n, uint8_t flip, uint8_t* out,
                 int32_t* colsum, ThreadPool* pool = nullptr);

// C = P Q (int32, row stride ldc); rows and panels over the pool when given.
void int8_gemm(Int8Isa isa, const int8_t* p, int64_t ldp, int64_t m, int64_t quads, const uint8_t* q, int64_t n,
               int32_t* c, int64_t ldc, ThreadPool* pool);

// Takes the flips and zero points out of C = P Q (see above): c[r][j] +=
// k * A0[r] * B0[j] - B0[j] * rowsum[r] - A0[r] * colsum[j], A0[r] =
// za[r] - oa, B0[j] = zb[j] + ob; za and zb per row / column (their stride
// 0 for one value).
void int8_unshift(int32_t* c, int64_t ldc, int64_t m, int64_t n, int64_t k, const int32_t* rowsum,
                  const int32_t* colsum, const int32_t* za, int64_t za_stride, int32_t oa, const int32_t* zb,
                  int64_t zb_stride, int32_t ob);

// A quantized model's Gemm or MatMul on its codes (int8_product.cpp): A a
// float value on a quantize pair's 8-bit grid, B a constant DequantizeLinear
// of int8 codes (per tensor or per output column), a Gemm's C one row; on
// AVX512-VNNI. Null (the float32 product runs) where it cannot.
std::unique_ptr<Kernel> make_int8_product_kernel(const Graph& g, const Node& n);

}  // namespace minirt::cpu
