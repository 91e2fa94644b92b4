// Tables that must agree with each other, checked here so that a forgotten
// line fails a test instead of a user's model: every op with a schema (the
// loader accepts it) has a CPU kernel (the CPU backend must run every node a
// schema accepts; see kernels/cpu/cpu_backend.h).
#include "kernels/cpu/cpu_backend.h"
#include "runtime/graph.h"
#include "runtime/op_registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace minirt {
namespace {

TEST(Consistency, EverySchemaHasACpuKernel) {
  auto cpu = make_cpu_backend(1);
  Graph g;
  std::vector<std::string> missing;
  size_t checked = 0;
  for (const OpSchema* s : all_schemas()) {
    if (s->lowered_at_load) continue;  // rewritten into other ops at load
    Node n;
    n.op = s->op;
    std::string why;
    if (!cpu->supports(g, n, &why)) missing.push_back(s->op + " (" + why + ")");
    ++checked;
  }
  EXPECT_GT(checked, 90u) << "all_schemas() lists too few ops";
  EXPECT_TRUE(missing.empty()) << "ops with a schema but no CPU kernel: " << ::testing::PrintToString(missing);
}

}  // namespace
}  // namespace minirt
