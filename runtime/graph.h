// Graph IR: values (name, dtype, shape, optional constant), nodes (op, raw
// attributes, typed attributes) and the graph's inputs and outputs.
//
//   Graph g;
//   int x = g.add_value("x");
//   int y = g.add_value("y");
//   g.add_node("relu0", "Relu", {x}, {y});
//
// Value ids index Graph::values; an input slot of -1 is an optional input
// that was left out (an empty name in ONNX).
#pragma once

#include <minirt/error.h>
#include <minirt/tensor.h>

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace minirt {

// A raw attribute as written in the file.
struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kGraph, kOther };
  Kind kind = Kind::kOther;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

// Typed attributes of one op, parsed once at load. Each op family derives its own.
struct OpAttrs {
  virtual ~OpAttrs() = default;
  // The fields passes set after parsing (fused activations, grids), as
  // text, for Step::recipe: two nodes of the same name, ops and values whose
  // recipes are equal make the same kernel. Empty where passes change none.
  virtual std::string recipe() const { return {}; }
};

// A constant the planner computes when a kernel is made from it rather than
// when a pass makes it (a BatchNormalization folded into a convolution's
// weights): the pass leaves Value::constant with its dtype and shape alone
// (raw() null) and this, so that a plan never has every folded weight in
// memory at once, only those of the kernels being made (and of the steps
// that read them as they are). materialize_inputs() makes them.
struct LazyConstant {
  virtual ~LazyConstant() = default;
  virtual Tensor make() const = 0;
};

struct Value {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;  // meaningful when shape_known
  bool shape_known = false;
  std::vector<std::string> dim_params;     // for graph inputs: symbolic names ("" where numeric)
  std::shared_ptr<const Tensor> constant;  // initializer or folded value
  int producer = -1;                       // node index, -1 for inputs and constants
  // The CPU's channel-blocked layout (kernels/cpu/nchwc.h): 0 for the plain
  // layout, else the channel block B of [N][ceil(C/B)][H][W][B] (4-D only).
  // Set by assign_layouts; the shape stays the logical NCHW one.
  int block = 0;
  // A constant folded from DequantizeLinear of 8-bit codes
  // (mark_dequantized_constants): its scale per index of quant_axis, or its
  // one scale (quant_axis -1). The int8 kernels recover the codes from the
  // floats with it, and check them.
  std::shared_ptr<const std::vector<float>> quant_scales;
  int quant_axis = -1;
  // Set while the constant is still to be made (LazyConstant); constant then
  // has no data.
  std::shared_ptr<const LazyConstant> lazy;
};

// Bytes a value's buffer holds: its shape's elements, with the channels
// rounded up to whole blocks when it is blocked.
size_t value_bytes(const Value& v);
// The bytes of its elements alone (padded channels included, the bf16
// slack not): where the next slice starts when values are laid end to end
// as the channel slices of one (an in-place Concat).
size_t value_data_bytes(const Value& v);
// "1x64x56x56", with "/16c" appended when blocked ("/32c bf16": the CPU's
// bf16 values between MathMode::kBf16 convolutions; "/64c u8": its int8
// values between int8 convolutions).
std::string value_shape_str(const Value& v);

struct Node {
  std::string name;
  std::string op;
  std::string domain;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::map<std::string, Attribute> attrs;
  std::shared_ptr<const OpAttrs> parsed;  // set by the op's parse function
  std::vector<std::string> fused;         // names of nodes folded into this one
  std::vector<std::string> fused_ops;     // and their op types
  bool dead = false;                      // removed by a pass; skipped everywhere

  int input(size_t i) const { return i < inputs.size() ? inputs[i] : -1; }
  template <typename T>
  const T& attrs_as() const {
    return static_cast<const T&>(*parsed);
  }
};

// What the half lowering (lower_half_precision, runtime/passes/passes.h)
// did to a float16 / bfloat16 model; empty for other models.
struct HalfLowering {
  int initializers = 0;                    // float16/bfloat16 initializers converted to float32
  int constants = 0;                       // Constant / ConstantOfShape values converted
  int casts = 0;                           // Cast / CastLike to a half type, made float32 casts that round
  bool float16 = false, bfloat16 = false;  // which half types the model has
  std::vector<std::string> inputs;         // "x float16->float32"
  std::vector<std::string> outputs;        // "y float32->float16"
  bool any() const { return initializers || constants || casts || !inputs.empty() || !outputs.empty(); }
  // One line: "float16 model: 53 initializers converted to float32 at load; ...".
  std::string summary() const;
};

class WeightStore;

struct Graph {
  std::string source;  // the file, for messages
  int64_t opset = 0;   // default-domain opset
  int64_t ir_version = 0;
  std::string producer;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;  // graph inputs that are not initializers
  std::vector<int> outputs;
  // The graph outputs' types and shapes as the file declares them (same
  // order as outputs; a shape is empty where none is declared). Only for
  // describing the model (Model::outputs()); planning infers its own.
  std::vector<Value> declared_outputs;
  HalfLowering half;  // what the half lowering did (Model::load runs it)
  // The store of the model's large initializers, when it was loaded from a
  // file (runtime/weight_store.h): planning holds what it reads there.
  std::shared_ptr<WeightStore> weights;

  int add_value(std::string name);
  // A new value holding a constant (dtype and shape from the tensor).
  int add_constant(std::string name, Tensor t);
  int add_node(std::string name, std::string op, std::vector<int> inputs, std::vector<int> outputs);
  // Value id by name, -1 if absent. Linear; for building and tests.
  int find_value(const std::string& name) const;
  // Node indices in an order where every producer comes before its consumers,
  // dead nodes left out. Throws kInvalidModel naming a node on a cycle.
  std::vector<int> topo_order() const;
  // Fills Value::producer from the nodes (live ones only).
  void link_producers();
  // Consumers count of each value (live nodes; graph outputs count once).
  std::vector<int> use_counts() const;
};

// Whether one of n's inputs is a LazyConstant still to be made.
bool has_lazy_input(const Graph& g, const Node& n);
// Makes v's LazyConstant, when it has one: its constant gets its data.
void materialize(Value& v);
// Makes n's LazyConstant inputs: each value's constant gets its data. Not
// thread-safe for values two callers share (the planner serializes it).
void materialize_inputs(Graph& g, const Node& n);

// "file.onnx: node 'conv1' (Conv): " — the prefix every node error carries.
std::string node_context(const Graph& g, const Node& n);
[[noreturn]] void fail(ErrorCode code, const std::string& message);
[[noreturn]] void node_fail(ErrorCode code, const Graph& g, const Node& n, const std::string& message);

}  // namespace minirt
