// The SGEMM engine (kernels/cpu/sgemm.h) against a plain triple loop with
// double accumulation.
//
// Every microkernel variant the CPU can run is forced in turn (so the AVX2
// and portable kernels are checked on an AVX-512 machine too), over odd
// sizes that leave partial row panels, partial column panels, narrow column
// tails and several K blocks; every way B can come in (a matrix packed per
// call, transposed or not; panels packed once; read in place through an
// offset table, in one long row or in rows with gaps; a convolution's input
// unrolled into panels); every epilogue (alpha, row and column bias,
// accumulate into C, each vectorized activation and one that is not); with
// 1 and 3 threads.
//
// C and the workspace carry guard values after their end and start out as
// NaN: a write past a buffer, an element left unwritten or scratch read
// before it is written shows up here.
#include "kernels/cpu/sgemm.h"
#include "runtime/thread_pool.h"
#include "poison.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

namespace minirt::cpu {
namespace {

using minirt::testing::is_poison;
using minirt::testing::kPoison;
using minirt::testing::poison;

constexpr size_t kGuard = 64;

std::vector<SgemmIsa> supported_isas() {
  std::vector<SgemmIsa> out;
  for (SgemmIsa isa : {SgemmIsa::kGeneric, SgemmIsa::kAvx2, SgemmIsa::kAvx512})
    if (sgemm_isa_supported(isa)) out.push_back(isa);
  return out;
}

enum class BSource { kMatrix, kTransposed, kPrepacked, kInPlaceOneRow, kInPlaceRows };
const char* name(BSource b) {
  switch (b) {
    case BSource::kMatrix:
      return "matrix";
    case BSource::kTransposed:
      return "transposed";
    case BSource::kPrepacked:
      return "prepacked";
    case BSource::kInPlaceOneRow:
      return "in-place";
    case BSource::kInPlaceRows:
      return "in-place-rows";
  }
  return "?";
}

struct Epi {
  bool row_bias = false, col_bias = false, accumulate = false;
  float alpha = 1.0f;
  Activation act;
  std::string str() const {
    std::ostringstream s;
    s << (row_bias ? " row_bias" : "") << (col_bias ? " col_bias" : "") << (accumulate ? " accumulate" : "")
      << (alpha != 1.0f ? " alpha" : "") << (act.none() ? "" : " " + act.name());
    return s.str();
  }
};

struct Case {
  int64_t m, n, k;
  BSource b = BSource::kMatrix;
  Epi ep;
  int threads = 1;
  SgemmIsa isa = SgemmIsa::kGeneric;
  std::string str() const {
    std::ostringstream s;
    s << sgemm_isa_name(isa) << " m" << m << " n" << n << " k" << k << " b=" << name(b) << ep.str() << " threads "
      << threads;
    return s.str();
  }
};

// Runs one case; returns how many outputs were wrong (reporting the first few).
int run_case(const Case& cs) {
  const int64_t m = cs.m, n = cs.n, k = cs.k;
  std::mt19937 rng(static_cast<uint32_t>(m * 1000003 + n * 1009 + k));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), rb(static_cast<size_t>(m)),
      cb(static_cast<size_t>(n)), c0(static_cast<size_t>(m * n));
  for (auto* v : {&a, &b, &rb, &cb, &c0})
    for (float& x : *v) x = u(rng);

  SgemmArgs g;
  g.isa = cs.isa;
  g.m = m;
  g.n = n;
  g.k = k;
  AlignedFloats pa = sgemm_pack_a(cs.isa, a.data(), k, 1, m, k);
  g.a = pa.data();

  // B in the form the case asks for.
  std::vector<float> bt, wide;
  std::vector<int64_t> koff(static_cast<size_t>(k));
  AlignedFloats pb;
  int64_t row_w = 0;
  bool packs = false;
  switch (cs.b) {
    case BSource::kMatrix:
      g.b = SgemmB::matrix(b.data(), n, 1);
      packs = true;
      break;
    case BSource::kTransposed:
      bt.resize(b.size());
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j) bt[static_cast<size_t>(j * k + kk)] = b[static_cast<size_t>(kk * n + j)];
      g.b = SgemmB::matrix(bt.data(), 1, k);
      packs = true;
      break;
    case BSource::kPrepacked:
      pb = sgemm_pack_b(cs.isa, b.data(), n, 1, k, n);
      g.b = SgemmB::prepacked(pb.data());
      break;
    case BSource::kInPlaceOneRow:
      for (int64_t kk = 0; kk < k; ++kk) koff[static_cast<size_t>(kk)] = kk * n;
      g.b = SgemmB::indirect(b.data(), koff.data(), n, n);
      break;
    case BSource::kInPlaceRows: {
      // Rows of w columns stored w + 3 apart, each K row 5 floats further on;
      // the gaps hold NaN, which must never be read.
      int64_t w = n % 7 == 0 ? 7 : (n % 3 == 0 ? 3 : n);
      int64_t rows = n / w, ww = w + 3, kstride = rows * ww + 5;
      wide.assign(static_cast<size_t>(k * kstride + 8), std::nanf(""));
      for (int64_t kk = 0; kk < k; ++kk) {
        koff[static_cast<size_t>(kk)] = kk * kstride;
        for (int64_t j = 0; j < n; ++j)
          wide[static_cast<size_t>(kk * kstride + (j / w) * ww + j % w)] = b[static_cast<size_t>(kk * n + j)];
      }
      g.b = SgemmB::indirect(wide.data(), koff.data(), w, ww);
      row_w = w;
      break;
    }
  }

  std::vector<float> c(static_cast<size_t>(m * n) + kGuard);
  poison(c.data(), c.size());
  if (cs.ep.accumulate) std::copy(c0.begin(), c0.end(), c.begin());
  g.c = c.data();
  g.ldc = n;
  g.ep.alpha = cs.ep.alpha;
  g.ep.accumulate = cs.ep.accumulate;
  g.ep.row_bias = cs.ep.row_bias ? rb.data() : nullptr;
  g.ep.col_bias = cs.ep.col_bias ? cb.data() : nullptr;
  g.ep.act = cs.ep.act;

  ThreadPool pool(cs.threads);
  SgemmSplit split = sgemm_split(cs.isa, 1, m, n, k, cs.threads, row_w, packs);
  size_t ws_floats = sgemm_workspace_bytes(split, cs.isa, k, n, packs) / sizeof(float);
  std::vector<float> ws(ws_floats + kGuard);
  poison(ws.data(), ws.size());
  sgemm_run(pool, g, split, ws_floats ? ws.data() : nullptr);

  for (size_t i = 0; i < kGuard; ++i) {
    EXPECT_TRUE(is_poison(c[static_cast<size_t>(m * n) + i])) << "C guard overwritten: " << cs.str();
    EXPECT_TRUE(is_poison(ws[ws_floats + i])) << "workspace guard overwritten: " << cs.str();
  }
  int bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        double p = static_cast<double>(a[static_cast<size_t>(i * k + kk)]) * b[static_cast<size_t>(kk * n + j)];
        acc += p;
        mag += std::fabs(p);
      }
      acc *= cs.ep.alpha;
      mag *= std::fabs(cs.ep.alpha);
      if (cs.ep.accumulate) acc += c0[static_cast<size_t>(i * n + j)];
      if (cs.ep.row_bias) acc += rb[static_cast<size_t>(i)];
      if (cs.ep.col_bias) acc += cb[static_cast<size_t>(j)];
      mag += 3.0;  // the biases and C are at most 1 each
      float want = cs.ep.act.apply(static_cast<float>(acc));
      float got = c[static_cast<size_t>(i * n + j)];
      double tol = 1e-5 * mag;
      if (!(std::fabs(static_cast<double>(got) - want) <= tol)) {
        if (bad++ < 3) ADD_FAILURE() << cs.str() << ": C(" << i << ", " << j << ") = " << got << ", expected " << want;
      }
    }
  return bad;
}

TEST(Sgemm, SelectsAVariantTheCpuSupports) {
  EXPECT_TRUE(sgemm_isa_supported(sgemm_best_isa()));
  EXPECT_TRUE(sgemm_isa_supported(SgemmIsa::kGeneric));
  sgemm_force_isa(SgemmIsa::kGeneric);
  EXPECT_EQ(sgemm_default_isa(), SgemmIsa::kGeneric);
  sgemm_reset_isa();
  EXPECT_TRUE(sgemm_isa_supported(sgemm_default_isa()));
  for (SgemmIsa isa : supported_isas()) {
    SgemmTile t = sgemm_tile(isa);
    EXPECT_GT(t.mr, 0);
    EXPECT_EQ(t.nr % 8, 0) << sgemm_isa_name(isa);
  }
}

// Odd sizes in every dimension against each variant, B source and thread count.
TEST(Sgemm, MatchesTripleLoopOverOddSizes) {
  const int64_t sizes_m[] = {1, 3, 7, 8, 17, 33, 100};
  const int64_t sizes_n[] = {1, 3, 7, 17, 33, 100, 257};
  const int64_t sizes_k[] = {1, 7, 33, 300, 513};
  for (SgemmIsa isa : supported_isas())
    for (BSource bs : {BSource::kMatrix, BSource::kTransposed, BSource::kPrepacked, BSource::kInPlaceOneRow,
                       BSource::kInPlaceRows}) {
      int i = 0;
      for (int64_t m : sizes_m)
        for (int64_t n : sizes_n) {
          Case cs;
          cs.isa = isa;
          cs.b = bs;
          cs.m = m;
          cs.n = n;
          cs.k = sizes_k[i % 5];
          cs.threads = i % 2 ? 3 : 1;
          cs.ep.row_bias = i % 3 == 0;
          ++i;
          EXPECT_EQ(run_case(cs), 0) << cs.str();
        }
    }
}

// Every epilogue on tiles with full and partial panels and several K blocks.
TEST(Sgemm, EveryEpilogue) {
  std::vector<Epi> epis;
  epis.push_back({});
  epis.push_back({true, false, false, 1.0f, {}});
  epis.push_back({false, true, false, 1.0f, {}});
  epis.push_back({true, true, true, 0.5f, {}});
  epis.push_back({false, false, true, -1.5f, {}});
  for (Activation act : {Activation{ActKind::kRelu, 0, 0}, Activation{ActKind::kClip, -0.25f, 0.5f},
                         Activation{ActKind::kLeakyRelu, 0.1f, 0}, Activation{ActKind::kSigmoid, 0, 0},
                         Activation{ActKind::kTanh, 0, 0}, Activation{ActKind::kHardSwish, 0, 0}}) {
    epis.push_back({true, false, false, 1.0f, act});
    epis.push_back({false, true, true, 2.0f, act});
  }
  for (SgemmIsa isa : supported_isas())
    for (const Epi& ep : epis)
      for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{17, 49, 300}, {8, 32, 7}, {3, 71, 600}})
        for (BSource bs : {BSource::kMatrix, BSource::kInPlaceRows}) {
          Case cs{m, n, k, bs, ep, 3, isa};
          EXPECT_EQ(run_case(cs), 0) << cs.str();
        }
}

// Larger shapes: several N blocks and K blocks, split over threads by rows
// and by columns.
TEST(Sgemm, LargerShapesAcrossThreads) {
  for (SgemmIsa isa : supported_isas())
    for (auto [m, n, k] :
         {std::tuple<int64_t, int64_t, int64_t>{64, 1100, 70}, {300, 9, 257}, {1, 1000, 520}, {129, 129, 129}})
      for (int threads : {1, 3})
        for (BSource bs : {BSource::kMatrix, BSource::kPrepacked, BSource::kInPlaceRows}) {
          Case cs{m, n, k, bs, Epi{true, false, false, 1.0f, {ActKind::kRelu, 0, 0}}, threads, isa};
          EXPECT_EQ(run_case(cs), 0) << cs.str();
        }
}

TEST(Sgemm, EmptyKGivesTheEpilogueOfZero) {
  for (SgemmIsa isa : supported_isas()) {
    Case cs{5, 9, 0, BSource::kMatrix, Epi{true, true, true, 1.0f, {ActKind::kRelu, 0, 0}}, 1, isa};
    EXPECT_EQ(run_case(cs), 0) << cs.str();
  }
}

// The split keeps every thread busy and covers each output exactly once.
TEST(Sgemm, SplitCoversTheOutputOnce) {
  for (SgemmIsa isa : supported_isas())
    for (auto [batches, m, n, k, row_w] : {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>{1, 512, 49, 4608, 0},
                                           {1, 64, 3136, 576, 56},
                                           {3, 10, 10, 10, 0},
                                           {1, 2048, 49, 512, 0},
                                           {2, 1, 1000, 2048, 0},
                                           {1, 33, 130, 17, 13}})
      for (int threads : {1, 2, 3, 8}) {
        SgemmSplit s = sgemm_split(isa, batches, m, n, k, threads, row_w);
        EXPECT_GE(s.tasks, 1);
        EXPECT_LE(s.tasks, std::max(1, threads));
        if (threads > 1 && batches * m * n * k > 1000000) {
          EXPECT_EQ(s.tasks, threads) << "m" << m << " n" << n << " k" << k << " threads " << threads;
        }
        std::vector<int> seen(static_cast<size_t>(batches * m * n), 0);
        for (int64_t u = 0; u < s.units(); ++u) {
          SgemmUnit w = sgemm_unit(s, isa, m, n, u);
          for (int64_t i = w.m0; i < w.m1; ++i)
            for (int64_t j = w.n0; j < w.n1; ++j) ++seen[static_cast<size_t>((w.batch * m + i) * n + j)];
          if (row_w > 0) {
            EXPECT_EQ(w.n0 % row_w, 0);
          }
          EXPECT_EQ(w.m0 % sgemm_tile(isa).mr, 0);
        }
        for (int v : seen) ASSERT_EQ(v, 1);
      }
}

}  // namespace
}  // namespace minirt::cpu
