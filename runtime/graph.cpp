#include "runtime/graph.h"

#include <deque>
#include <unordered_map>

namespace minirt {

size_t value_data_bytes(const Value& v) {
  if (v.block > 0 && v.shape.size() == 4) {
    int64_t c = (v.shape[1] + v.block - 1) / v.block * v.block;
    return static_cast<size_t>(v.shape[0] * c * v.shape[2] * v.shape[3]) * dtype_size(v.dtype);
  }
  return static_cast<size_t>(shape_numel(v.shape)) * dtype_size(v.dtype);
}

size_t value_bytes(const Value& v) {
  size_t bytes = value_data_bytes(v);
  // A bf16 blocked value (the CPU's MathMode::kBf16 convolutions) or an
  // int8 one (uint8 codes between int8 convolutions) is read by AMX tiles of
  // 16 and 32 pixels that may run past its end: 32 pixels of slack.
  if (v.block > 0 && v.shape.size() == 4 && (v.dtype == DType::kBFloat16 || v.dtype == DType::kUInt8))
    bytes += static_cast<size_t>(32 * v.block) * dtype_size(v.dtype);
  return bytes;
}

std::string value_shape_str(const Value& v) {
  std::string s = shape_str(v.shape);
  if (v.block > 0)
    s += "/" + std::to_string(v.block) + "c" +
         (v.dtype == DType::kBFloat16 ? " bf16"
          : v.dtype == DType::kUInt8  ? " u8"
                                      : "");
  return s;
}

int Graph::add_value(std::string name) {
  Value v;
  v.name = std::move(name);
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int Graph::add_constant(std::string name, Tensor t) {
  int id = add_value(std::move(name));
  Value& v = values[id];
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.shape_known = true;
  v.constant = std::make_shared<Tensor>(std::move(t));
  return id;
}

bool has_lazy_input(const Graph& g, const Node& n) {
  for (int v : n.inputs)
    if (v >= 0 && g.values[static_cast<size_t>(v)].lazy) return true;
  return false;
}

void materialize(Value& v) {
  if (!v.lazy) return;
  v.constant = std::make_shared<Tensor>(v.lazy->make());
  v.lazy.reset();
}

void materialize_inputs(Graph& g, const Node& n) {
  for (int v : n.inputs)
    if (v >= 0) materialize(g.values[static_cast<size_t>(v)]);
}

int Graph::add_node(std::string name, std::string op, std::vector<int> ins, std::vector<int> outs) {
  Node n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<int>(i);
  return -1;
}

void Graph::link_producers() {
  for (auto& v : values) v.producer = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int o : nodes[i].outputs)
      if (o >= 0) values[o].producer = static_cast<int>(i);
  }
}

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values.size(), 0);
  for (const auto& n : nodes) {
    if (n.dead) continue;
    for (int in : n.inputs)
      if (in >= 0) uses[in]++;
  }
  for (int o : outputs) uses[o]++;
  return uses;
}

std::vector<int> Graph::topo_order() const {
  // Kahn's algorithm over live nodes, keeping file order among ready nodes so
  // plans are deterministic.
  std::vector<int> producer(values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int o : nodes[i].outputs)
      if (o >= 0) producer[o] = static_cast<int>(i);
  }
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> consumers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int in : nodes[i].inputs) {
      if (in < 0 || producer[in] < 0) continue;
      pending[i]++;
      consumers[producer[in]].push_back(static_cast<int>(i));
    }
  }
  std::vector<int> order;
  std::deque<int> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!nodes[i].dead && pending[i] == 0) ready.push_back(static_cast<int>(i));
  while (!ready.empty()) {
    int n = ready.front();
    ready.pop_front();
    order.push_back(n);
    for (int c : consumers[n])
      if (--pending[c] == 0) ready.push_back(c);
  }
  size_t live = 0;
  for (const auto& n : nodes) live += n.dead ? 0 : 1;
  if (order.size() != live) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!nodes[i].dead && pending[i] > 0)
        node_fail(ErrorCode::kInvalidModel, *this, nodes[i],
                  "the graph has a cycle through this node (its inputs depend on its own outputs)");
  }
  return order;
}

std::string node_context(const Graph& g, const Node& n) {
  std::string s = g.source.empty() ? std::string("<memory>") : g.source;
  s += ": node '";
  s += n.name;
  s += "' (";
  s += n.op;
  s += "): ";
  return s;
}

void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

void node_fail(ErrorCode code, const Graph& g, const Node& n, const std::string& message) {
  throw Error(code, node_context(g, n) + message);
}

}  // namespace minirt
