// One descriptor per op: how many inputs and outputs it takes, how its
// attributes are parsed (once, at load) and how its output types and shapes
// follow from its inputs (no backend needed).
//
//   const OpSchema* s = find_schema("Conv");
//   auto attrs = s->parse(ctx);           // throws kUnsupported / kInvalidModel
//   s->infer(infer_ctx);                  // sets output dtypes and shapes
#pragma once

#include "runtime/graph.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace minirt {

// What parse() sees: the node with its raw attributes, and the opset.
class ParseContext {
 public:
  ParseContext(const Graph& g, const Node& n, int64_t opset) : g_(g), n_(n), opset_(opset) {}
  const Node& node() const { return n_; }
  int64_t opset() const { return opset_; }

  bool has(const std::string& name) const { return n_.attrs.count(name) != 0; }
  int64_t get_int(const std::string& name, int64_t def) const;
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> def = {}) const;
  const Tensor* get_tensor(const std::string& name) const;

  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void invalid(const std::string& what) const;

 private:
  const Attribute* find(const std::string& name, Attribute::Kind kind) const;
  const Graph& g_;
  const Node& n_;
  int64_t opset_;
};

// What infer() sees: the node, its inputs' types, shapes and (when known at
// plan time) values. It sets each output's dtype and shape, and may replace
// the node's attributes with a version completed from constant inputs.
class InferContext {
 public:
  InferContext(Graph& g, Node& n) : g_(g), n_(n) {}
  const Node& node() const { return n_; }
  const Graph& graph() const { return g_; }
  int64_t opset() const { return g_.opset; }
  template <typename T>
  const T& attrs() const {
    return n_.attrs_as<T>();
  }
  void set_attrs(std::shared_ptr<const OpAttrs> a) { n_.parsed = std::move(a); }

  size_t num_inputs() const { return n_.inputs.size(); }
  size_t num_outputs() const { return n_.outputs.size(); }
  bool has_input(size_t i) const { return n_.input(i) >= 0; }
  DType dtype(size_t i) const;
  const Shape& shape(size_t i) const;
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  // The input's value if it is known at plan time, else nullptr.
  const Tensor* constant(size_t i) const;
  // The input's value as int64s (int32/int64 inputs); fails unless known.
  std::vector<int64_t> const_ints(size_t i, const char* what) const;
  std::vector<float> const_floats(size_t i, const char* what) const;

  void set_output(size_t i, DType dtype, Shape shape);
  bool has_output(size_t i) const { return i < n_.outputs.size() && n_.outputs[i] >= 0; }

  [[noreturn]] void fail(const std::string& what) const;         // kInvalidModel
  [[noreturn]] void unsupported(const std::string& what) const;  // kUnsupported
  void expect_dtype(size_t i, std::initializer_list<DType> allowed) const;

 private:
  Graph& g_;
  Node& n_;
};

struct OpSchema {
  std::string op;
  int min_inputs = 1;
  int max_inputs = 1;
  int min_outputs = 1;
  int max_outputs = 1;
  // Parses and checks attributes; may be empty for ops without attributes.
  std::function<std::shared_ptr<const OpAttrs>(const ParseContext&)> parse;
  std::function<void(InferContext&)> infer;
  // Inputs whose values must be known when the plan is made (shape operands).
  std::vector<int> shape_inputs;
  // Constant folding may evaluate this op when all its inputs are known.
  bool foldable = true;
  // Which opset's semantics are implemented when they changed over time.
  std::string semantics;
  // Facts the planner and the passes use, so that generic code never names an op:
  // it reads only its input's shape, never the data (Shape, Size): foldable
  // whatever the input.
  bool reads_shape_only = false;
  // Its output is its first input's bytes under another shape (Reshape-like):
  // the two may share one block of the arena.
  bool view = false;
  // Its output is its inputs side by side along AxisAttrs::axis (Concat): the
  // inputs may be made in their slices of the output.
  bool joins_inputs = false;
};

const OpSchema* find_schema(const std::string& op);
std::vector<const OpSchema*> all_schemas();

// The newest default-domain opset minirt accepts (the newest the onnx
// package defines: every supported op's versions up to it are in
// runtime/ops/op_versions.h), and the oldest.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 28;

// Shared helpers for schemas.
// a * b for dimension arithmetic; fails (naming `what`) instead of overflowing.
int64_t checked_mul(int64_t a, int64_t b, const InferContext& ctx, const char* what);
int64_t normalize_axis(int64_t axis, int64_t rank, const InferContext& ctx);
// NumPy-style broadcast of two shapes; nullopt-like failure reported via ctx.
Shape broadcast_shapes(const Shape& a, const Shape& b, const InferContext& ctx);

}  // namespace minirt
