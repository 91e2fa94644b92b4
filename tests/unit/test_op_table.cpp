// The op table (runtime/ops/op_table.h) against the places derived from it:
// each activation and unary math op parses to its row's kind with its row's
// default attributes, has its row's opset versions, a CPU kernel and its
// row's GPU tolerance family. The GPU module's registrations and support
// rules are checked in tests/gpu/test_cuda_support.cpp, the vector forms
// within their rows' bounds in test_vmath.cpp, and the places a new kind
// must write by hand by cli.op_table_places (tests/cli/op_table_places_test.sh).
#include "kernels/cpu/registry.h"
#include "loaders/onnx/onnx_loader.h"
#include "model_builder.h"
#include "runtime/op_registry.h"
#include "runtime/ops/activation.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/op_versions.h"
#include "tools/gpu_tolerance.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace minirt {
namespace {

using testing::ModelBuilder;

std::vector<int> versions_of(const int (&v)[8]) {
  std::vector<int> out;
  for (int x : v)
    if (x != 0) out.push_back(x);
  return out;
}

// The one node of a model of `op` at `opset`, loaded and parsed.
Graph one_node(const std::string& op, int64_t opset) {
  ModelBuilder m(opset);
  m.input("x", DType::kFloat32, {2, 3});
  m.node(op, {"x"}, {"y"}, "n");
  m.output("y");
  std::string bytes = m.bytes();
  return onnx::load_bytes(bytes.data(), bytes.size(), op + ".onnx");
}

int64_t opset_for(const int (&v)[8]) { return v[0] > 13 ? v[0] : 13; }

TEST(OpTable, RowsAreInTheEnumsOrderWithDistinctNames) {
  std::set<std::string> names, ops;
  for (int k = 0; k < kActKindCount; ++k) {
    const ActInfo& r = kActInfo[k];
    EXPECT_EQ(static_cast<int>(r.kind), k);
    EXPECT_EQ(Activation{r.kind}.name(), r.name);
    if (k > 0) {
      EXPECT_TRUE(names.insert(r.name).second) << "two kinds named " << r.name;
    }
    if (r.op) {
      EXPECT_TRUE(ops.insert(r.op).second) << "two kinds parse from " << r.op;
    }
    if (r.op) {
      EXPECT_NE(r.versions[0], 0) << r.op << " has no opset version";
    }
    if (!r.op) {
      EXPECT_EQ(r.gpu, ActGpu::kFusedOnly) << r.name << ": a GPU op path for a kind no op parses to";
    }
  }
  EXPECT_EQ(Activation{ActKind::kCount}.name(), "");
  for (int k = 0; k < kUnaryKindCount; ++k) {
    const UnaryInfo& r = kUnaryInfo[k];
    EXPECT_EQ(static_cast<int>(r.kind), k);
    if (r.op) {
      EXPECT_TRUE(ops.insert(r.op).second) << "two kinds parse from " << r.op;
    }
  }
}

TEST(OpTable, EveryActivationOpParsesToItsRow) {
  for (const ActInfo& r : kActInfo) {
    if (!r.op) continue;
    SCOPED_TRACE(r.op);
    ASSERT_NE(find_schema(r.op), nullptr) << "no schema registered";
    ASSERT_NE(op_versions(r.op), nullptr);
    EXPECT_EQ(*op_versions(r.op), versions_of(r.versions));
    Graph g = one_node(r.op, opset_for(r.versions));
    ASSERT_EQ(g.nodes.size(), 1u);
    const auto& a = g.nodes[0].attrs_as<UnaryAttrs>();
    EXPECT_EQ(a.kind, UnaryKind::kActivation);
    EXPECT_EQ(a.act.kind, r.kind);
    if (r.alpha.attr) {
      EXPECT_EQ(a.act.alpha, r.alpha.value) << "the default of " << r.alpha.attr;
    }
    if (r.beta.attr) {
      EXPECT_EQ(a.act.beta, r.beta.value) << "the default of " << r.beta.attr;
    }
  }
}

TEST(OpTable, AnActivationAttributeIsRead) {
  for (const ActInfo& r : kActInfo) {
    if (!r.op || !r.alpha.attr) continue;
    SCOPED_TRACE(r.op);
    ModelBuilder m(opset_for(r.versions));
    m.input("x", DType::kFloat32, {2, 3});
    m.node(r.op, {"x"}, {"y"}, "n").f(r.alpha.attr, 0.375f);
    m.output("y");
    std::string bytes = m.bytes();
    Graph g = onnx::load_bytes(bytes.data(), bytes.size(), "t.onnx");
    EXPECT_EQ(g.nodes[0].attrs_as<UnaryAttrs>().act.alpha, 0.375f);
  }
}

TEST(OpTable, EveryUnaryOpParsesToItsRow) {
  for (const UnaryInfo& r : kUnaryInfo) {
    if (!r.op) continue;
    SCOPED_TRACE(r.op);
    ASSERT_NE(op_versions(r.op), nullptr);
    EXPECT_EQ(*op_versions(r.op), versions_of(r.versions));
    Graph g = one_node(r.op, opset_for(r.versions));
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].attrs_as<UnaryAttrs>().kind, r.kind);
  }
}

TEST(OpTable, EveryTableOpHasACpuKernel) {
  std::vector<cpu::KernelEntry> entries;
  cpu::add_elementwise_kernels(entries);
  std::set<std::string> ops;
  for (const auto& e : entries) ops.insert(e.op);
  for (const ActInfo& r : kActInfo)
    if (r.op) {
      EXPECT_TRUE(ops.count(r.op)) << r.op;
    }
  for (const UnaryInfo& r : kUnaryInfo)
    if (r.op) {
      EXPECT_TRUE(ops.count(r.op)) << r.op;
    }
}

TEST(OpTable, TheGpuToleranceIsTheRows) {
  for (const ActInfo& r : kActInfo) {
    if (!r.op) continue;
    const tools::GpuTolerance& want = r.tol == GpuTolFamily::kExact     ? tools::kGpuExact
                                      : r.tol == GpuTolFamily::kLibrary ? tools::kGpuLibrary
                                                                        : tools::kGpuUlps;
    EXPECT_STREQ(tools::gpu_tolerance(r.op).family, want.family) << r.op;
  }
  for (const UnaryInfo& r : kUnaryInfo)
    if (r.op) {
      EXPECT_STREQ(tools::gpu_tolerance(r.op).family, tools::kGpuUlps.family) << r.op;
    }
}

}  // namespace
}  // namespace minirt
