// Runs one op on the CPU backend the way a plan would (parse the attributes,
// infer the output shape, make the kernel once, run it), with guard bytes
// after the output and the workspace to catch overruns; for the kernel tests.
//
//   OpCase c{"Softmax", 13, {{"axis", int_attr(1)}}, {input}};
//   Shape shape;
//   std::vector<float> y = run_op(c, /*threads=*/3, &shape, c.str());
//   expect_close(y, reference, c.str(), 1e-5);
#pragma once

#include "kernels/cpu/cpu_backend.h"
#include "poison.h"
#include "runtime/op_registry.h"
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace minirt::testing {

inline Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}
inline Attribute float_attr(float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
inline Attribute ints_attr(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
inline Attribute floats_attr(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}
inline Attribute string_attr(std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

struct OpCase {
  std::string op;
  int64_t opset = 13;
  std::map<std::string, Attribute> attrs;
  std::vector<Tensor> inputs;  // an empty Tensor leaves that input out

  std::string str() const {
    std::ostringstream s;
    s << op << "-" << opset << " in";
    for (const auto& t : inputs) s << " " << (t.empty() ? "-" : shape_str(t.shape()));
    for (const auto& [name, a] : attrs) {
      s << " " << name << "=";
      if (a.kind == Attribute::Kind::kInts)
        s << "[" << shape_str(a.ints) << "]";
      else if (a.kind == Attribute::Kind::kFloat)
        s << a.f;
      else if (a.kind == Attribute::Kind::kString)
        s << a.s;
      else
        s << a.i;
    }
    return s.str();
  }
};

constexpr int64_t kGuard = 16;  // floats of guard after each buffer

// Parses, infers and runs the case's node on the CPU backend with `threads`
// threads (twice: a kernel is made once and run many times). Returns the
// float output; `shape` receives its inferred shape.
inline std::vector<float> run_op(const OpCase& c, int threads, Shape* shape, const std::string& what) {
  Graph g;
  g.source = "op_runner";
  g.opset = c.opset;
  std::vector<int> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) {
      ins.push_back(-1);
      continue;
    }
    int v = g.add_value("in" + std::to_string(i));
    g.values[v].dtype = c.inputs[i].dtype();
    g.values[v].shape = c.inputs[i].shape();
    g.values[v].shape_known = true;
    g.values[v].constant = std::make_shared<Tensor>(c.inputs[i].clone());
    ins.push_back(v);
  }
  int y = g.add_value("y");
  g.add_node("node", c.op, ins, {y});
  Node& n = g.nodes[0];
  n.attrs = c.attrs;
  const OpSchema* s = find_schema(c.op);
  EXPECT_NE(s, nullptr) << c.op;
  ParseContext pc(g, n, g.opset);
  n.parsed = s->parse ? s->parse(pc) : std::make_shared<OpAttrs>();
  InferContext ic(g, n);
  s->infer(ic);
  *shape = g.values[y].shape;

  ThreadPool pool(threads);
  std::unique_ptr<KernelProvider> cpu = make_cpu_backend(threads);
  std::string why;
  EXPECT_TRUE(cpu->supports(g, n, &why)) << why;
  std::unique_ptr<Kernel> k = cpu->make_kernel(g, n);
  int64_t ws_floats = static_cast<int64_t>((k->workspace_bytes() + 3) / 4);
  Tensor ws = Tensor::zeros(DType::kFloat32, {ws_floats + kGuard});
  int64_t count = shape_numel(*shape);
  Tensor out = Tensor::zeros(DType::kFloat32, {count + kGuard});
  std::vector<const void*> in_ptrs;
  for (int v : n.inputs) in_ptrs.push_back(v >= 0 ? g.values[v].constant->raw() : nullptr);
  void* outs[1] = {out.raw()};
  KernelArgs args{in_ptrs.data(), outs, ws_floats ? ws.raw() : nullptr, &pool};
  float* yp = out.data<float>();
  for (int rep = 0; rep < 2; ++rep) {
    poison(yp, count + kGuard);
    poison(ws.data<float>(), ws_floats + kGuard);
    k->run(args);
    for (int64_t i = 0; i < kGuard; ++i) {
      EXPECT_TRUE(is_poison(yp[count + i])) << "output guard overwritten: " << what;
      EXPECT_TRUE(is_poison(ws.data<float>()[ws_floats + i])) << "workspace guard overwritten: " << what;
    }
  }
  return std::vector<float>(yp, yp + count);
}
inline std::vector<float> run_op(const OpCase& c, int threads, Shape* shape) {
  return run_op(c, threads, shape, c.str());
}

// got ≈ want within `rtol` relative, with the same number as an absolute
// floor for values of magnitude below 1; infinities must match exactly.
// Reports the first few differences.
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& what,
                         double rtol = 1e-5) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double w = want[i];
    bool ok = std::isinf(w) ? got[i] == w : std::fabs(got[i] - w) <= rtol * std::max(std::fabs(w), 1.0);
    if (!ok && bad++ < 3) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << w;
  }
  if (bad) ADD_FAILURE() << bad << " of " << got.size() << " elements wrong: " << what;
}

}  // namespace minirt::testing
