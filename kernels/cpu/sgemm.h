// minirt's own single-precision GEMM: C = A * B (+ epilogue), for Conv,
// Gemm and MatMul on the CPU.
//
//   SgemmIsa isa = sgemm_default_isa();
//   AlignedFloats w = sgemm_pack_a(isa, weights, /*rs=*/k, /*cs=*/1, m, k);  // once, at plan time
//   SgemmArgs g{isa, m, n, k, w.data(), SgemmB::matrix(x, n, 1), y, n};
//   g.ep.row_bias = bias;
//   g.ep.act = act;
//   SgemmSplit s = sgemm_split(isa, 1, m, n, k, threads);               // plan time
//   size_t ws = sgemm_workspace_bytes(isa, s, k, n, threads);           // plan time
//   sgemm_run(pool, g, s, workspace);                                   // run time, allocates nothing
//
// Layout. A is packed once into row panels of MR rows (for each k, MR values;
// rows past M zero), K block by K block, so it is read as one stream in the
// order the microkernel wants. B is packed per call, block by block, into column panels
// of NR columns (for each k, NR values; columns past N zero): from a strided
// matrix, from a convolution's input (im2col written straight into the panel
// layout), or read from panels packed once (a constant B).
//
// Blocking. K is cut into blocks of at most 256 (evenly), N into blocks of at
// most 512 columns; one B block (256 x 512 floats, 512 KiB) stays in the 1 MiB
// L2 while the A panels of the row range stream past it, and each B panel
// (256 x NR) stays in L1 across the rows. The first K block stores, the later
// ones add, and the last applies the epilogue (alpha, row or column bias,
// the fused activation) while the tile is still in registers.
//
// Microkernels (chosen at run time from cpuid, so one binary runs on any
// x86-64): AVX-512 8x32 (sgemm_avx512.cpp), AVX2+FMA 4x24 (sgemm_avx2.cpp),
// each file compiled with its own -m flags, and a portable 4x16 fallback in
// sgemm.cpp the compiler vectorizes for whatever the build targets. Column
// tails of at most 12 (AVX-512) or 3 (AVX2) columns use a narrow kernel
// vectorized along rows instead of padding a whole vector.
//
// Threads. A GEMM (or a batch of them: images x groups) is cut into units of
// whole MR panels by whole NR panels; sgemm_split picks the grid that keeps
// every thread busy with the least duplicated packing, and each task gets its
// own slice of the workspace.
#pragma once

#include "kernels/cpu/sgemm_isa.h"
#include "runtime/ops/activation.h"
#include "runtime/thread_pool.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace minirt::cpu {

enum class SgemmIsa : uint8_t { kGeneric, kAvx2, kAvx512 };

// The best microkernel this CPU supports (cpuid, read once).
SgemmIsa sgemm_best_isa();
bool sgemm_isa_supported(SgemmIsa isa);
// What kernels made from now on use: the best, unless forced by
// sgemm_force_isa or by the environment (MINIRT_SGEMM_ISA=generic|avx2|avx512;
// a variant the CPU lacks is ignored).
SgemmIsa sgemm_default_isa();
// Forces the variant for kernels made afterwards (tests, benchmarks), and
// goes back to detection; a variant the CPU lacks must not be forced.
void sgemm_force_isa(SgemmIsa isa);
void sgemm_reset_isa();
const char* sgemm_isa_name(SgemmIsa isa);

// Why MINIRT_SGEMM_ISA cannot be followed as it is set (not one of generic,
// avx2, avx512, or an instruction set this CPU lacks); empty when it is unset
// or followed. The CPU backend refuses to start with this sentence rather
// than run other kernels than the ones asked for.
std::string sgemm_env_isa_problem();

struct SgemmTile {
  int mr, nr;
};
SgemmTile sgemm_tile(SgemmIsa isa);

// 64-byte aligned floats that own their memory (packed constant operands).
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n);
  float* data() { return p_.get(); }
  const float* data() const { return p_.get(); }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }

 private:
  struct Free {
    size_t bytes;  // as allocated (value-initialized: 0)
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> p_;
  size_t n_ = 0;
};

// A packed into row panels: element (r, k) of A is src[r * rs + k * cs],
// times `scale`. dst holds sgemm_packed_a_floats(isa, m, k) floats. The
// layout follows the driver's K blocks: within each block, all the panels
// back to back. Panels [p0, p1) alone (for packing in parallel) with
// sgemm_pack_a_panels.
size_t sgemm_packed_a_floats(SgemmIsa isa, int64_t m, int64_t k);
void sgemm_pack_a(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m, int64_t k, float* dst,
                  float scale = 1.0f);
void sgemm_pack_a_panels(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m, int64_t k, float* dst,
                         int64_t p0, int64_t p1, float scale = 1.0f);
AlignedFloats sgemm_pack_a(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m, int64_t k,
                           float scale = 1.0f);
// Packs A over the pool (per-call packing of a large non-constant A).
void sgemm_pack_a_parallel(ThreadPool& pool, SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t m,
                           int64_t k, float* dst, float scale = 1.0f);

// B packed once into column panels: element (k, n) of B is src[k * rs + n * cs].
size_t sgemm_packed_b_floats(SgemmIsa isa, int64_t k, int64_t n);
AlignedFloats sgemm_pack_b(SgemmIsa isa, const float* src, int64_t rs, int64_t cs, int64_t k, int64_t n);

// Im2colGeom (one image and group of a 2-D convolution as B): sgemm_isa.h.

// Where B comes from.
//   kMatrix:    element (k, n) at data[k * rs + n * cs], packed per call;
//   kPrepacked: the panels of sgemm_pack_b;
//   kIm2col:    a convolution's input, unrolled per call into the panels;
//   kIndirect:  read in place, unpacked: column n = (row, col) of rows of
//               row_w columns is element data[row * wide_w + col + koff[k]]
//               (a convolution over a padded, phase-split copy of its input,
//               or a 1x1 convolution's input itself, with one row of n).
struct SgemmB {
  enum class Kind : uint8_t { kMatrix, kPrepacked, kIm2col, kIndirect };
  Kind kind = Kind::kMatrix;
  const float* data = nullptr;
  int64_t rs = 0, cs = 1;
  const Im2colGeom* conv = nullptr;
  const int64_t* koff = nullptr;
  int64_t row_w = 0, wide_w = 0;

  static SgemmB matrix(const float* p, int64_t rs, int64_t cs) { return {Kind::kMatrix, p, rs, cs}; }
  static SgemmB prepacked(const float* panels) { return {Kind::kPrepacked, panels}; }
  static SgemmB im2col(const float* x, const Im2colGeom* g) { return {Kind::kIm2col, x, 0, 1, g}; }
  static SgemmB indirect(const float* base, const int64_t* koff, int64_t row_w, int64_t wide_w) {
    return {Kind::kIndirect, base, 0, 1, nullptr, koff, row_w, wide_w};
  }
};

// Applied to each element of C once its sum over K is complete:
//   c = act(alpha * sum + (accumulate ? c_before : 0) + row_bias[r] + col_bias[n])
struct SgemmEpilogue {
  const float* row_bias = nullptr;  // indexed by the row of C
  const float* col_bias = nullptr;  // indexed by the column of C
  float alpha = 1.0f;
  bool accumulate = false;  // add to what C holds
  Activation act;
};

struct SgemmArgs {
  SgemmIsa isa = SgemmIsa::kGeneric;
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // packed by sgemm_pack_a with the same isa
  SgemmB b;
  float* c = nullptr;  // row-major, row stride ldc
  int64_t ldc = 0;
  SgemmEpilogue ep;
};

// Floats of scratch one task needs to pack B for a GEMM with this K and N.
size_t sgemm_scratch_floats(SgemmIsa isa, int64_t k, int64_t n);

// Computes rows [m0, m1) and columns [n0, n1) of C (m0 a multiple of MR, n0
// of NR, or of row_w for kIndirect). `scratch`: sgemm_scratch_floats(isa, k,
// n) floats where B is packed per call (kMatrix, kIm2col), else unused.
void sgemm_compute(const SgemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* scratch);

// A batch of `batches` GEMMs of one shape, each cut into tm x tn units (rows
// in whole MR panels, columns in granules of whole NR panels, or whole rows
// of row_w columns for kIndirect); the units are dealt to `tasks` tasks in
// contiguous runs.
struct SgemmSplit {
  int64_t batches = 1, tm = 1, tn = 1, granule = 1;
  int64_t tasks = 1;
  int64_t units() const { return batches * tm * tn; }
};
SgemmSplit sgemm_split(SgemmIsa isa, int64_t batches, int64_t m, int64_t n, int64_t k, int threads, int64_t row_w = 0,
                       bool packs_b = true);

struct SgemmUnit {
  int64_t batch, m0, m1, n0, n1;
};
SgemmUnit sgemm_unit(const SgemmSplit& s, SgemmIsa isa, int64_t m, int64_t n, int64_t u);

// Workspace for sgemm_run / sgemm_run_batch: a scratch slice per task.
size_t sgemm_task_stride_floats(SgemmIsa isa, int64_t k, int64_t n);
size_t sgemm_workspace_bytes(const SgemmSplit& s, SgemmIsa isa, int64_t k, int64_t n, bool packs_b);

// Runs a batch over the pool: `make(batch, args)` fills the arguments of one
// GEMM of the batch (cheap: pointers only). Allocates nothing.
template <typename F>
void sgemm_run_batch(ThreadPool& pool, const SgemmSplit& s, SgemmIsa isa, int64_t m, int64_t n, int64_t k,
                     float* workspace, F&& make) {
  const int64_t units = s.units();
  const int64_t tasks = s.tasks;
  const size_t stride = workspace ? sgemm_task_stride_floats(isa, k, n) : 0;
  auto body = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* scratch = workspace ? workspace + static_cast<size_t>(t) * stride : nullptr;
      int64_t u0 = units * t / tasks, u1 = units * (t + 1) / tasks;
      int64_t batch = -1;
      SgemmArgs g;
      for (int64_t u = u0; u < u1; ++u) {
        SgemmUnit w = sgemm_unit(s, isa, m, n, u);
        if (w.batch != batch) {
          batch = w.batch;
          make(batch, g);
        }
        sgemm_compute(g, w.m0, w.m1, w.n0, w.n1, scratch);
      }
    }
  };
  pool.parallel_for(tasks, body);
}

// One GEMM over the pool.
void sgemm_run(ThreadPool& pool, const SgemmArgs& g, const SgemmSplit& s, float* workspace);

}  // namespace minirt::cpu
