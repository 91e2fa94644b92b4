// One descriptor per op: how many inputs and outputs it takes, how its
// attributes are parsed (once, at load) and how its output types and shapes
// follow from its inputs (no backend needed).
//
//   const OpSchema* s = find_schema("Conv");
//   auto attrs = s->parse(ctx);           // throws kUnsupported / kInvalidModel
//   s->infer(infer_ctx);                  // sets output dtypes and shapes
#pragma once

#include "runtime/graph.h"
#include "runtime/ops/legacy_broadcast.h"

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
  // Called by shape inference before infer(), with the inputs' shapes known:
  // checks and rewrites what older opsets express differently, adding nodes
  // in front of this one (the binary ops before opset 7 broadcast B from an
  // axis of A: B gets an Unsqueeze to trailing 1-dims so that NumPy
  // broadcasting computes the same). Returns the indices of the nodes added,
  // which shape inference visits first; may be empty.
  std::function<std::vector<int>(Graph& g, int node)> prepare;
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
  // Its output is a tensor written in the model (Constant): folding keeps it
  // as a constant however large (a computed result that large is left to run time).
  bool model_data = false;
  // Its outputs' shapes follow from its inputs' values, not their shapes
  // (NonZero, NonMaxSuppression): no plan can hold it, so the session cuts the
  // model there and runs it between plan stages (runtime/stages.h) with the
  // CPU backend's ValueSizedKernel. Its infer() checks inputs and sets only
  // the outputs' dtypes and ranks (each dimension -1 where values decide it).
  bool value_sized = false;
  // For an op whose backends offer a choice of algorithms (runtime/tuner.h):
  // the text that identifies a node's problem in the algorithm cache, and a
  // short one for the tuning report. Unset, or an empty answer: the op and
  // its shapes, and the op alone.
  std::function<std::string(const Graph& g, const Node& n)> tuning_problem;
  std::function<std::string(const Graph& g, const Node& n)> tuning_summary;
  // Rewritten into other ops when the model loads (the QOperator ops:
  // runtime/passes/quant.cpp), so no backend has a kernel for it and its
  // infer() is never reached.
  bool lowered_at_load = false;
  // The op's domain: "" for ONNX's default domain, else the one it belongs
  // to ("com.microsoft" for onnxruntime's quantized contrib ops). The loader
  // takes a node only when its domain is the schema's.
  std::string domain;
};

const OpSchema* find_schema(const std::string& op);
std::vector<const OpSchema*> all_schemas();

// The newest default-domain opset minirt accepts (the newest the onnx
// package defines: every supported op's versions up to it are in
// runtime/ops/op_versions.h), and the oldest.
constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 28;

// The binary ops' broadcasting before opset 7: see runtime/ops/legacy_broadcast.h.
// Reads the attributes where the opset is older than 7; inactive otherwise.
LegacyBroadcast parse_legacy_broadcast(const ParseContext& ctx);
// The prepare step for those ops: checks input 1 against input 0 under the
// rules above (failing with the node and op named) and, where B sits at an
// axis before A's trailing dimensions, adds an Unsqueeze that appends B's
// missing trailing 1-dims and makes it the node's input 1. Returns the nodes
// added (none or one).
std::vector<int> align_legacy_broadcast(Graph& g, int node, const LegacyBroadcast& lb);
// The prepare step of an op whose parsed attributes (Attrs) hold a
// LegacyBroadcast `legacy`: aligns once, then marks it done.
template <typename Attrs>
std::vector<int> prepare_legacy_broadcast(Graph& g, int node) {
  const auto& a = g.nodes[node].attrs_as<Attrs>();
  if (!a.legacy.active) return {};
  auto done = std::make_shared<Attrs>(a);
  done->legacy.active = false;
  const LegacyBroadcast lb = a.legacy;
  std::vector<int> added = align_legacy_broadcast(g, node, lb);
  g.nodes[node].parsed = std::move(done);
  return added;
}

// Shared helpers for schemas.
// a * b for dimension arithmetic; fails (naming `what`) instead of overflowing.
int64_t checked_mul(int64_t a, int64_t b, const InferContext& ctx, const char* what);
int64_t normalize_axis(int64_t axis, int64_t rank, const InferContext& ctx);
// NumPy-style broadcast of two shapes; nullopt-like failure reported via ctx.
Shape broadcast_shapes(const Shape& a, const Shape& b, const InferContext& ctx);

}  // namespace minirt
