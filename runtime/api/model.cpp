#include "runtime/api/model_impl.h"

#include "loaders/onnx/onnx_loader.h"
#include "runtime/backend_registry.h"
#include "runtime/passes/passes.h"
#include "runtime/planner.h"
#include "runtime/stages.h"
#include "runtime/op_registry.h"
#include "runtime/weight_store.h"
#include "runtime/ops/op_versions.h"

#include <algorithm>

namespace minirt {

namespace {

ValueDesc describe(const Value& v) {
  ValueDesc d;
  d.name = v.name;
  d.dtype = v.dtype;
  d.has_shape = !v.shape.empty() || v.shape_known;
  d.dims = v.shape;
  d.dim_params = v.dim_params;
  d.dim_params.resize(d.dims.size());
  return d;
}

// With every input shape fixed in the file, shape inference runs at load so
// an inconsistent model fails here, naming the node, not at the first run.
// A model cut at value-sized nodes (runtime/stages.h) is checked up to its
// first cut: the first stage reads only the model's inputs.
void check_static_shapes(const Graph& model) {
  std::vector<Stage> parts = split_stages(model);
  if (!parts.empty() && parts[0].cut >= 0) return;
  const Graph& first = parts.empty() ? model : parts[0].graph;
  for (int v : first.inputs)
    if (!first.values[v].shape_known) return;
  // Inputs that are shape operands have no value until run time.
  if (!value_inputs(first).empty()) return;
  Graph g = first;
  ThreadPool pool(1);
  auto cpu = backend_registry().open_host({.threads = 1});
  infer_and_fold(g, *cpu, pool, true);
}

std::unique_ptr<Model::Impl> build_impl(Graph g) {
  auto impl = std::make_unique<Model::Impl>();
  // QLinearConv / QLinearMatMul become DequantizeLinear -> float op -> QuantizeLinear.
  lower_qoperator_ops(g);
  // float16 / bfloat16 weights become float32 here, once.
  lower_half_precision(g);
  if (g.weights) {
    // The store frees what the lowerings replaced.
    std::vector<const void*> held;
    for (const Value& v : g.values)
      if (v.constant) held.push_back(v.constant->raw());
    g.weights->keep_only(held);
    if (!g.weights->entries()) g.weights.reset();
  }
  check_static_shapes(g);
  for (int v : g.inputs) impl->inputs.push_back(describe(g.values[v]));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    ValueDesc d = describe(g.values[g.outputs[i]]);
    if (i < g.declared_outputs.size() && !d.has_shape) {
      // The file's declaration: a symbolic batch of an output shows here.
      const Value& decl = g.declared_outputs[i];
      ValueDesc dd = describe(decl);
      d.has_shape = dd.has_shape;
      d.dims = dd.dims;
      d.dim_params = dd.dim_params;
      if (d.dtype == DType::kUndefined) d.dtype = decl.dtype;
    }
    impl->outputs.push_back(std::move(d));
  }
  impl->info.path = g.source;
  impl->info.ir_version = g.ir_version;
  impl->info.opset = g.opset;
  impl->info.producer = g.producer;
  impl->info.node_count = g.nodes.size();
  impl->info.half_precision = g.half.summary();
  impl->graph = std::move(g);
  return impl;
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
std::shared_ptr<const Model> Model::make(std::unique_ptr<Impl> impl) {
  return std::shared_ptr<const Model>(new Model(std::move(impl)));
}
Model::~Model() = default;

std::shared_ptr<const Model> Model::load(const std::string& path) { return make(build_impl(onnx::load_file(path))); }

std::shared_ptr<const Model> Model::load_from_memory(const void* data, size_t size, const std::string& name) {
  return make(build_impl(onnx::load_bytes(data, size, name)));
}

const std::vector<ValueDesc>& Model::inputs() const { return impl_->inputs; }
const std::vector<ValueDesc>& Model::outputs() const { return impl_->outputs; }
const ModelInfo& Model::info() const { return impl_->info; }

const char* device_name(Device d) {
  switch (d) {
    case Device::kAuto:
      return "auto";
    case Device::kCpu:
      return "cpu";
    case Device::kCuda:
      return "cuda";
  }
  return "?";
}

std::vector<OpSupport> supported_ops() {
  std::vector<OpSupport> out;
  for (const OpSchema* s : all_schemas()) {
    OpSupport o;
    o.op = s->op;
    if (const std::vector<int>* v = op_versions(s->op)) o.versions = *v;
    o.notes = s->semantics;
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const OpSupport& a, const OpSupport& b) { return a.op < b.op; });
  return out;
}

}  // namespace minirt
