// Which nodes the GPU backend runs, as a pure function of the node, its
// attributes and its concrete types and shapes: no CUDA call, so the table is
// tested on every machine (tests/gpu/test_cuda_support.cpp) and the placement
// line ("placed 61 nodes on cuda, 2 on cpu (Resize: ...)") says exactly why a
// node stayed on the CPU.
//
//   std::string why;
//   if (!cuda_supports(g, node, &why)) std::cout << node.op << ": " << why << "\n";
//
// The op table. Each kernel file of the module has one table here of
// {op, supports} entries (kDnnSupport for dnn_ops.cpp, kBlasSupport for
// blas_ops.cpp, kSimpleSupport for simple_ops.cpp) and, in its own file, a
// table of {op, make} entries (kernels/cuda/registry.h). The family file
// checks with a static_assert (same_ops) that both tables name the same ops,
// so a rule without a kernel, or a kernel without a rule, does not compile;
// support.cpp checks that no op is in two families. The rules are declared
// here and defined in support.cpp, which has no CUDA call and is compiled
// into the GPU tests as well as into the module.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <string>

#include "runtime/graph.h"
#include "runtime/ops/op_table.h"

namespace minirt::cuda {

// True when the CUDA backend has a kernel for this node as it is; otherwise
// false and `why` (when given) holds a few words: "float32 only on cuda (got
// int64)", "LRN size 20 (cuDNN takes sizes from 1 to 16)".
bool cuda_supports(const Graph& g, const Node& n, std::string* why);

// The op types the backend has kernels for (some only for some attributes).
const char* const* cuda_ops(size_t* count);

// ---- the table ----

// The rule for one op, asked after the checks every op shares (domain, a
// data input, shapes known and within int range): false with a reason when
// the node stays on the CPU.
using SupportFn = bool (*)(const Graph& g, const Node& n, std::string* why);

struct SupportEntry {
  const char* op;
  SupportFn supports;
};

// The op table's rows (runtime/ops/op_table.h) in a family's tables: the
// activation ops that GPU path G runs and, with kUnary, every unary math op,
// as {op, fn} entries, followed by `rest`. A family lists the rest of its
// ops by hand; the activations and the unary math come from their rows.
template <ActGpu G, bool kUnary>
constexpr size_t op_table_row_count() {
  size_t n = 0;
  for (const ActInfo& e : kActInfo) n += e.op && e.gpu == G ? 1 : 0;
  if (kUnary)
    for (const UnaryInfo& e : kUnaryInfo) n += e.op ? 1 : 0;
  return n;
}

template <ActGpu G, bool kUnary, typename Entry, typename Fn, size_t N>
constexpr std::array<Entry, op_table_row_count<G, kUnary>() + N> with_op_table_rows(Fn fn, const Entry (&rest)[N]) {
  std::array<Entry, op_table_row_count<G, kUnary>() + N> out{};
  size_t i = 0;
  for (const ActInfo& e : kActInfo)
    if (e.op && e.gpu == G) out[i++] = Entry{e.op, fn};
  if (kUnary)
    for (const UnaryInfo& e : kUnaryInfo)
      if (e.op) out[i++] = Entry{e.op, fn};
  for (const Entry& e : rest) out[i++] = e;
  return out;
}

namespace rules {  // support.cpp
bool conv(const Graph& g, const Node& n, std::string* why);
bool pool(const Graph& g, const Node& n, std::string* why);
bool global_pool(const Graph& g, const Node& n, std::string* why);
bool lrn(const Graph& g, const Node& n, std::string* why);
bool batchnorm(const Graph& g, const Node& n, std::string* why);
bool softmax(const Graph& g, const Node& n, std::string* why);
bool float32_only(const Graph& g, const Node& n, std::string* why);  // Gemm, MatMul
bool unary(const Graph& g, const Node& n, std::string* why);         // activations, unary math, Identity, Dropout
bool broadcast(const Graph& g, const Node& n, std::string* why);
bool resize(const Graph& g, const Node& n, std::string* why);
bool movement(const Graph& g, const Node& n, std::string* why);
bool cast(const Graph& g, const Node& n, std::string* why);
}  // namespace rules

// dnn_ops.cpp: cuDNN, and the module's pooling kernel. The activations here
// run through cuDNN when it has the function, else as the module's kernel.
inline constexpr auto kDnnSupport =
    with_op_table_rows<ActGpu::kDnn, false, SupportEntry>(rules::unary, {
                                                                            {"Conv", rules::conv},
                                                                            {"MaxPool", rules::pool},
                                                                            {"AveragePool", rules::pool},
                                                                            {"GlobalMaxPool", rules::global_pool},
                                                                            {"GlobalAveragePool", rules::global_pool},
                                                                            {"LRN", rules::lrn},
                                                                            {"BatchNormalization", rules::batchnorm},
                                                                            {"Softmax", rules::softmax},
                                                                            {"LogSoftmax", rules::softmax},
                                                                        });

// blas_ops.cpp: cuBLAS.
inline constexpr SupportEntry kBlasSupport[] = {
    {"Gemm", rules::float32_only},
    {"MatMul", rules::float32_only},
};

// simple_ops.cpp: the module's own kernels (elementwise.cu, movement.cu) and device copies.
inline constexpr auto kSimpleSupport = with_op_table_rows<ActGpu::kModule, true, SupportEntry>(
    rules::unary, {
                      // the copies (the activations and unary math: the op table's rows)
                      {"Identity", rules::unary},
                      {"Dropout", rules::unary},
                      // broadcast arithmetic
                      {"Add", rules::broadcast},
                      {"Sub", rules::broadcast},
                      {"Mul", rules::broadcast},
                      {"Div", rules::broadcast},
                      {"Pow", rules::broadcast},
                      {"PRelu", rules::broadcast},
                      {"Max", rules::broadcast},
                      {"Min", rules::broadcast},
                      {"Sum", rules::broadcast},
                      {"Mean", rules::broadcast},
                      // data movement and conversion
                      {"Reshape", rules::movement},
                      {"Flatten", rules::movement},
                      {"Squeeze", rules::movement},
                      {"Unsqueeze", rules::movement},
                      {"Concat", rules::movement},
                      {"Split", rules::movement},
                      {"Transpose", rules::movement},
                      {"Slice", rules::movement},
                      {"Expand", rules::movement},
                      {"Pad", rules::movement},
                      {"Gather", rules::movement},
                      {"Resize", rules::resize},
                      {"Upsample", rules::resize},
                      {"Cast", rules::cast},
                  });

// ---- compile-time checks on the tables ----

constexpr bool same_name(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// How often `op` is named in `table` (any array of structs with an `op`).
template <typename Table>
constexpr int count_op(const Table& table, const char* op) {
  int c = 0;
  for (const auto& e : table) c += same_name(e.op, op) ? 1 : 0;
  return c;
}

// Both tables name the same ops, each once: the check between a family's
// support table and its kernel table.
template <typename A, typename B>
constexpr bool same_ops(const A& a, const B& b) {
  if (std::size(a) != std::size(b)) return false;
  for (const auto& e : a)
    if (count_op(a, e.op) != 1 || count_op(b, e.op) != 1) return false;
  return true;
}

}  // namespace minirt::cuda
