// MatMul's geometry (runtime/ops/linalg.h), which the CPU and the CUDA
// kernels share: unit axes for 1-D operands, batch broadcasting (0 against 1
// included), the matrices each product reads, and the fold of a batch of A
// against one B into one taller product.
#include <gtest/gtest.h>

#include "runtime/format_bytes.h"
#include "runtime/ops/linalg.h"

namespace minirt {
namespace {

TEST(MatMulGeometry, OneDimensionalOperandsGetUnitAxes) {
  MatMulGeometry g = matmul_geometry({4}, {4, 3});
  EXPECT_EQ(g.m, 1);
  EXPECT_EQ(g.k, 4);
  EXPECT_EQ(g.n, 3);
  EXPECT_EQ(g.count(), 1);
  g = matmul_geometry({2, 4}, {4});
  EXPECT_EQ(g.m, 2);
  EXPECT_EQ(g.n, 1);
}

TEST(MatMulGeometry, BatchAxesBroadcast) {
  // A [2, 1, 3, 4] against B [5, 4, 6]: batch [2, 5]; A's matrix follows
  // the first axis only, B's the second only.
  MatMulGeometry g = matmul_geometry({2, 1, 3, 4}, {5, 4, 6});
  EXPECT_EQ(g.batch, (Shape{2, 5}));
  EXPECT_EQ(g.count(), 10);
  EXPECT_EQ(g.a_mats, 2);
  EXPECT_EQ(g.b_mats, 5);
  for (int64_t e = 0; e < 10; ++e) {
    auto [ia, ib] = g.operands(e);
    EXPECT_EQ(ia, e / 5) << e;
    EXPECT_EQ(ib, e % 5) << e;
  }
  EXPECT_FALSE(g.fold_shared_b());
  // A 0 against a 1 is 0 products, not one.
  EXPECT_EQ(matmul_geometry({0, 3, 4}, {1, 4, 6}).count(), 0);
}

TEST(MatMulGeometry, ABatchAgainstOneBFoldsIntoRows) {
  MatMulGeometry g = matmul_geometry({2, 3, 5, 4}, {4, 6});
  ASSERT_TRUE(g.fold_shared_b());
  EXPECT_EQ(g.m, 30);
  EXPECT_EQ(g.count(), 1);
  EXPECT_EQ(g.operands(0), (std::pair<int64_t, int64_t>{0, 0}));
  // B broadcast along a batch axis of A is still one B; A broadcast is not dense.
  EXPECT_TRUE(matmul_geometry({3, 5, 4}, {1, 4, 6}).fold_shared_b());
  EXPECT_FALSE(matmul_geometry({1, 5, 4}, {3, 4, 6}).fold_shared_b());
  EXPECT_FALSE(matmul_geometry({5, 4}, {4, 6}).fold_shared_b());  // nothing to fold
}

TEST(FormatBytes, OneFormatterBothForms) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(size_t{3} << 19), "1.50 MiB");
  EXPECT_EQ(format_bytes(size_t{3} << 19, 1), "1.5 MiB");
  EXPECT_EQ(format_bytes(size_t{5} << 30), "5.00 GiB");
  EXPECT_EQ(format_bytes(size_t{5} << 30, 1), "5.0 GiB");
}

}  // namespace
}  // namespace minirt
