#include "runtime/planner.h"

#include "runtime/format_bytes.h"
#include "runtime/memory_plan.h"
#include "runtime/op_registry.h"
#include "runtime/placement.h"
#include "runtime/ops/shape_ops.h"
#include "runtime/passes/passes.h"

#include <minirt/half.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

namespace minirt {

std::vector<size_t> value_inputs(const Graph& model) {
  // The nodes in an order where producers come first (the file's order need
  // not be; a cycle was refused at load).
  std::vector<int> order = model.topo_order();
  std::vector<size_t> out;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    // The values computed from this input's values: through every node that
    // reads more than its shape (a half input's Cast, Add(n, 1), Concat of
    // pads, ...).
    std::vector<char> from_input(model.values.size(), 0);
    from_input[static_cast<size_t>(model.inputs[i])] = 1;
    bool needed = false;
    for (int idx : order) {
      const Node& n = model.nodes[static_cast<size_t>(idx)];
      const OpSchema* s = find_schema(n.op);
      bool reads = false;
      for (size_t slot = 0; slot < n.inputs.size(); ++slot) {
        int v = n.inputs[slot];
        if (v < 0 || !from_input[static_cast<size_t>(v)]) continue;
        if (s &&
            std::find(s->shape_inputs.begin(), s->shape_inputs.end(), static_cast<int>(slot)) != s->shape_inputs.end())
          needed = true;
        if (!(s && s->reads_shape_only)) reads = true;
      }
      if (reads)
        for (int o : n.outputs)
          if (o >= 0) from_input[static_cast<size_t>(o)] = 1;
    }
    if (needed) out.push_back(i);
  }
  return out;
}

namespace {

void bind_inputs(Graph& g, const std::vector<const Tensor*>& inputs, const std::vector<size_t>& vals) {
  if (inputs.size() != g.inputs.size())
    fail(ErrorCode::kInvalidArgument, "the model has " + std::to_string(g.inputs.size()) + " inputs, " +
                                          std::to_string(inputs.size()) + " were given");
  std::map<std::string, int64_t> symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value& v = g.values[g.inputs[i]];
    const Tensor& t = *inputs[i];
    std::string where = g.source + ": input '" + v.name + "'";
    if (v.dtype == DType::kUndefined && !v.shape_known) v.dtype = t.dtype();  // a stage's input (runtime/stages.h)
    if (t.dtype() != v.dtype)
      fail(ErrorCode::kInvalidArgument, where + " must be " + dtype_name(v.dtype) + ", got " + dtype_name(t.dtype()));
    // No shape declared (an ONNX input without one, a stage's input made by
    // a cut node, runtime/stages.h): the tensor's shape binds as it is.
    const bool any_shape = v.shape.empty() && !v.shape_known;
    if (!any_shape && t.rank() != static_cast<int64_t>(v.shape.size()))
      fail(ErrorCode::kInvalidArgument, where + " must have rank " + std::to_string(v.shape.size()) + " (" +
                                            shape_str(v.shape) + "), got " + shape_str(t.shape()));
    for (size_t d = 0; d < v.shape.size() && !any_shape; ++d) {
      int64_t want = v.shape[d];
      int64_t got = t.shape()[d];
      if (want >= 0 && want != got)
        fail(ErrorCode::kInvalidArgument, where + " must have shape " + shape_str(v.shape) + ", got " +
                                              shape_str(t.shape()) + " (dimension " + std::to_string(d) + ")");
      if (want < 0 && d < v.dim_params.size() && !v.dim_params[d].empty()) {
        auto [it, fresh] = symbols.emplace(v.dim_params[d], got);
        if (!fresh && it->second != got)
          fail(ErrorCode::kInvalidArgument, where + ": dimension '" + v.dim_params[d] + "' is " + std::to_string(got) +
                                                " here but " + std::to_string(it->second) + " in another input");
      }
    }
    v.shape = t.shape();
    v.shape_known = true;
    if (std::find(vals.begin(), vals.end(), i) != vals.end()) v.constant = std::make_shared<Tensor>(t.clone());
  }
}

std::string join_shapes(const Graph& g, const std::vector<int>& ids) {
  std::string s;
  for (int v : ids) {
    if (v < 0) continue;
    if (!s.empty()) s += ", ";
    s += value_shape_str(g.values[v]);
  }
  return s;
}

// Step::recipe of node n run with `algorithm`: everything its kernel is
// made from that differs between two plans of one graph and input shapes
// (the algorithms chosen, and what fusion and layout passes did after them).
std::string step_recipe(const Graph& g, const Node& n, const std::string& algorithm) {
  std::ostringstream os;
  os << n.domain << "|" << n.op;
  for (const auto& f : n.fused_ops) os << "+" << f;
  os << "|" << n.name;
  for (const auto& f : n.fused) os << "+" << f;
  os << "|" << algorithm << "|" << (n.parsed ? n.parsed->recipe() : std::string());
  auto value = [&](int v) {
    if (v < 0) {
      os << "|-";
      return;
    }
    const Value& val = g.values[static_cast<size_t>(v)];
    os << "|" << val.name << ":" << static_cast<int>(val.dtype) << ":" << val.block << ":" << shape_str(val.shape)
       << (val.constant ? ":c" : "") << ":" << val.quant_axis << ":"
       << (val.quant_scales ? val.quant_scales->size() : 0);
  };
  for (int v : n.inputs) value(v);
  os << "|->";
  for (int v : n.outputs) value(v);
  return os.str();
}

// Moves a tensor between the host and a device backend's memory; the copy
// steps at the seams of a placed graph.
class CopyKernel final : public Kernel {
 public:
  CopyKernel(const KernelProvider* device, bool to_device, size_t bytes)
      : device_(device), to_device_(to_device), bytes_(bytes) {}
  void run(const KernelArgs& args) override {
    if (!bytes_) return;
    if (to_device_)
      device_->device().copy_to_device(args.outputs[0], args.inputs[0], bytes_, args.stream);
    else
      device_->device().copy_to_host(args.outputs[0], args.inputs[0], bytes_, args.stream);
  }
  std::string describe() const override { return to_device_ ? "host to device" : "device to host"; }

 private:
  const KernelProvider* device_;
  bool to_device_;
  size_t bytes_;
};

// The passes stage: shape inference and folding always; with `optimize`,
// identity removal, BatchNormalization and bias folding, activation and
// (CPU alone) residual fusion, and the CPU's blocked layout.
void run_passes(Graph& g, const KernelProvider& cpu, ThreadPool& pool, const PlanOptions& options, PlanStats& st) {
  // Before folding: which weights are dequantized 8-bit codes (the int8 convolution).
  if (options.optimize) mark_dequantized_constants(g);
  st.folded = infer_and_fold(g, cpu, pool, true);
  st.identities = remove_identities(g);
  if (options.optimize) {
    st.quantize_pairs = fold_quantize_pairs(g);
    st.batchnorms = fold_batchnorm(g);
    st.bias_adds = fold_bias_add(g);
    st.activations = fuse_gated_activations(g);
    st.activations += fuse_activations(g);
    // A device's Conv takes no residual input: fused only for the CPU alone
    // (no device, or devices that run none of these nodes).
    if (cpu_alone(g, options.devices)) {
      st.residuals = fuse_residual_add(g);
      if (st.residuals) st.activations += fuse_activations(g);
    }
  }
  st.dead = remove_dead_nodes(g);
  // The blocked layout is the CPU's own: only where every node stays on it.
  if (options.optimize && options.blocked_layout && cpu_alone(g, options.devices)) {
    st.reorders = assign_layouts(g, cpu);
    for (const Value& v : g.values) st.blocked += v.block > 0;
    if (st.blocked) st.block = cpu.channel_block();
  }
}

// A constant the plan no longer holds the bytes of: its dtype and shape, no data.
std::shared_ptr<const Tensor> released_constant(const Tensor& t) {
  return std::make_shared<Tensor>(Tensor::wrap(t.dtype(), t.shape(), nullptr));
}

// The constants of a plan's graph and who reads them: lets go of those no
// live node reads, and of each one every reader packed into a form of its
// own once the last of them is made (step_made), so that a plan's
// weights are held once, packed, instead of beside the float32 tensors they
// came from. The plan's WeightHold follows: it holds exactly the model's
// weights the plan still has.
class ConstantReleaser {
 public:
  ConstantReleaser(Plan& plan, const std::vector<int>& order, const std::vector<int>& node_space)
      : plan_(plan), pending_(plan.graph.values.size(), 0), kept_(plan.graph.values.size(), 0) {
    Graph& g = plan.graph;
    for (int v : plan.output_values) kept_[static_cast<size_t>(v)] = 1;
    for (int idx : order)
      for (int v : g.nodes[static_cast<size_t>(idx)].inputs) {
        if (v < 0 || !g.values[static_cast<size_t>(v)].constant) continue;
        ++pending_[static_cast<size_t>(v)];
        // Another memory space's kernel reads the host's tensor (an upload).
        if (node_space[static_cast<size_t>(idx)] != 0) kept_[static_cast<size_t>(v)] = 1;
      }
    for (size_t v = 0; v < g.values.size(); ++v)
      if (!pending_[v] && !kept_[v]) release(v);
  }
  // After a host step's kernel is made: its constant inputs it packed are
  // one reader closer to being let go; the others stay.
  void step_made(const Step& s) {
    if (s.node < 0 || s.space != 0) return;
    const Graph& g = plan_.graph;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      int v = s.inputs[k];
      if (v < 0 || !g.values[static_cast<size_t>(v)].constant) continue;
      if (!s.kernel->packs_input(k)) kept_[static_cast<size_t>(v)] = 1;
      if (--pending_[static_cast<size_t>(v)] == 0 && !kept_[static_cast<size_t>(v)]) release(static_cast<size_t>(v));
    }
  }

  // Once every step is made, for a plan that held the model's weights only
  // while its kernels were made (PlanOptions::reuse): the plan's WeightHold
  // takes what it still has, the constants its kernels read as they are.
  void hold_kept() {
    for (const Value& val : plan_.graph.values)
      if (val.constant && val.constant->raw()) plan_.weights.add(*val.constant);
  }

 private:
  void release(size_t v) {
    Value& val = plan_.graph.values[v];
    // A folded filter never made (a shared kernel packed it in another
    // plan) lets go of what it would be made from.
    val.lazy.reset();
    if (!val.constant || !val.constant->raw()) return;
    plan_.weights.drop(*val.constant);
    val.constant = released_constant(*val.constant);
    ++plan_.released;
  }
  Plan& plan_;
  std::vector<int> pending_;  // per value: live readers whose kernel is not made yet
  std::vector<char> kept_;    // per value: read as it is at run time (or a graph output)
};

// The steps stage: a kernel per node in `order`, on its space's backend with
// the algorithm chosen for it, and a copy step before the first reader of a
// value made in another space (constants: uploaded once, at plan time);
// graph outputs made on a device come back to the host at the end. Sets
// plan.space, each value's memory space.
void make_steps(Plan& plan, const std::vector<int>& order, const std::vector<int>& node_space,
                const std::map<int, std::string>& algorithm, ThreadPool& pool, const Plan* reuse,
                ConstantCache* constants) {
  Graph& g = plan.graph;
  ConstantReleaser releaser(plan, order, node_space);
  // The kernels of the plan this one may share with, by recipe.
  std::unordered_map<std::string, std::shared_ptr<Kernel>> donor;
  if (reuse)
    for (const Step& s : reuse->steps)
      if (!s.recipe.empty()) donor.emplace(s.recipe, s.kernel);
  std::atomic<int> shared{0};
  std::mutex materializing;
  // Where each value lives: graph inputs and constants on the host, every
  // other value where its producer runs.
  std::vector<int> home(g.values.size(), 0);
  for (int idx : order)
    for (int o : g.nodes[idx].outputs)
      if (o >= 0) home[o] = node_space[idx];
  std::map<std::pair<int, int>, int> copies;  // (value, space) -> copy value
  auto make_step_for = [&](int idx) {
    const Node& n = g.nodes[idx];
    const KernelProvider* b = plan.spaces[node_space[idx]].backend;
    Step s;
    s.node = idx;
    s.space = node_space[idx];
    s.backend = b;
    const auto a = algorithm.find(idx);
    if (a != algorithm.end() && !a->second.empty()) s.algorithm = a->second;
    if (s.space == 0) s.recipe = step_recipe(g, n, s.algorithm);
    // Its lazily folded filters (LazyConstant) made now, those of input
    // slots `which` says; interned as the passes' constants are, so that two
    // plans whose kernels read them as they are share one copy.
    auto make_lazy = [&](auto which) {
      std::lock_guard<std::mutex> lock(materializing);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const int v = n.inputs[k];
        if (v < 0 || !g.values[static_cast<size_t>(v)].lazy || !which(k)) continue;
        Value& val = g.values[static_cast<size_t>(v)];
        materialize(val);
        if (constants) val.constant = constants->intern(val.constant);
      }
    };
    if (auto d = donor.find(s.recipe); !s.recipe.empty() && d != donor.end()) {
      s.kernel = d->second;
      s.shared = true;
      ++shared;
      // What the kernel reads as it is at run time, this plan holds too.
      if (has_lazy_input(g, n)) make_lazy([&](size_t k) { return !s.kernel->packs_input(k); });
    } else {
      if (has_lazy_input(g, n)) make_lazy([](size_t) { return true; });
      // The model's weights it reads in memory while it is made (a plan
      // made beside another holds them only then: PlanOptions::reuse).
      WeightHold hold(g.weights);
      for (int v : n.inputs)
        if (v >= 0 && g.values[static_cast<size_t>(v)].constant) hold.add(*g.values[static_cast<size_t>(v)].constant);
      s.kernel = s.algorithm.empty() ? b->make_kernel(g, n) : b->make_kernel_with(g, n, s.algorithm);
    }
    s.inputs = n.inputs;
    s.outputs = n.outputs;
    s.workspace_bytes = s.kernel->workspace_bytes();
    s.label = n.name;
    s.op = n.op;
    for (const auto& f : n.fused) s.label += "+" + f;
    for (const auto& f : n.fused_ops) s.op += "+" + f;
    s.shapes = join_shapes(g, n.inputs) + " -> " + join_shapes(g, n.outputs);
    return s;
  };
  std::function<int(int, int)> copy_of = [&](int v, int to_space) -> int {
    auto key = std::make_pair(v, to_space);
    if (auto it = copies.find(key); it != copies.end()) return it->second;
    int from_space = home[v];
    if (from_space != 0 && to_space != 0) return copy_of(copy_of(v, 0), to_space);  // device to device: via the host
    const KernelProvider* device = plan.spaces[to_space ? to_space : from_space].backend;
    std::string name = g.values[v].name + "@" + plan.spaces[to_space].backend->name();
    int c = g.add_value(name);
    g.values[c].dtype = g.values[v].dtype;
    g.values[c].shape = g.values[v].shape;
    g.values[c].shape_known = true;
    home.push_back(to_space);
    copies[key] = c;
    if (g.values[v].constant && to_space != 0) {
      // Kernels may still read the host copy when they are made (shapes,
      // repacking); at run time they get the device copy.
      materialize(g.values[v]);  // lazily folded filters, made for the upload
      g.values[c].constant = g.values[v].constant;
      WeightHold hold(g.weights);
      hold.add(*g.values[v].constant);
      plan.uploads.push_back({c, device->device().upload(*g.values[v].constant)});
      return c;
    }
    Step s;
    s.space = to_space ? to_space : from_space;
    s.backend = device;
    s.kernel = std::make_unique<CopyKernel>(device, to_space != 0, value_bytes(g.values[v]));
    s.inputs = {v};
    s.outputs = {c};
    s.label = g.values[v].name;
    s.op = std::string("Copy(") + plan.spaces[from_space].backend->name() + "->" +
           plan.spaces[to_space].backend->name() + ")";
    s.shapes = shape_str(g.values[v].shape);
    plan.steps.push_back(std::move(s));
    return c;
  };
  // A plan the host runs alone has no copies to insert: its kernels (most
  // of a plan's time is packing their weights) are made in parallel, a wave
  // of them at a time; between waves the constants they packed are let go,
  // so that the plan's memory holds about one wave's weights in both forms.
  // A wave is 4 nodes per thread, fewer where their weights pass
  // kWaveBytes (the last layers of a network hold most of its weights).
  if (std::all_of(order.begin(), order.end(), [&](int idx) { return node_space[static_cast<size_t>(idx)] == 0; }) &&
      pool.size() > 1) {
    constexpr size_t kWaveBytes = size_t{16} << 20;
    const size_t most = 4 * static_cast<size_t>(pool.size());
    std::vector<Step> made(most);
    std::vector<std::exception_ptr> failed(most);
    for (size_t w0 = 0, count = 0; w0 < order.size(); w0 += count) {
      size_t bytes = 0;
      for (count = 0; w0 + count < order.size() && count < most && (count == 0 || bytes < kWaveBytes); ++count)
        for (int v : g.nodes[static_cast<size_t>(order[w0 + count])].inputs)
          if (v >= 0 && g.values[static_cast<size_t>(v)].constant) bytes += g.values[v].constant->nbytes();
      pool.parallel_for(static_cast<int64_t>(count), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          try {
            made[static_cast<size_t>(i)] = make_step_for(order[w0 + static_cast<size_t>(i)]);
          } catch (...) {
            failed[static_cast<size_t>(i)] = std::current_exception();
          }
        }
      });
      for (size_t i = 0; i < count; ++i)
        if (failed[i]) std::rethrow_exception(failed[i]);  // the first in the order, as one at a time would
      for (size_t i = 0; i < count; ++i) {
        plan.steps.push_back(std::move(made[i]));
        releaser.step_made(plan.steps.back());
      }
    }
    plan.space = std::move(home);
    plan.stats.shared_kernels = shared;
    if (reuse) releaser.hold_kept();
    return;
  }
  for (int idx : order) {
    Node& n = g.nodes[idx];
    const KernelProvider* b = plan.spaces[node_space[idx]].backend;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int& in = n.inputs[k];
      if (in < 0 || home[in] == node_space[idx]) continue;
      // A constant the device's kernel keeps in a form of its own: no upload.
      if (node_space[idx] != 0 && g.values[in].constant && !b->reads_uploaded_constant(g, n, k)) continue;
      in = copy_of(in, node_space[idx]);
    }
    plan.steps.push_back(make_step_for(idx));
    releaser.step_made(plan.steps.back());
  }
  for (int& v : plan.output_values)
    if (home[v] != 0) v = copy_of(v, 0);
  plan.space = std::move(home);
  plan.stats.shared_kernels = shared;
  if (reuse) releaser.hold_kept();
}

}  // namespace

// The pipeline: bind shapes -> passes -> placement -> algorithm choice ->
// steps -> memory plan.
std::unique_ptr<Plan> make_plan(const Graph& model, const std::vector<const Tensor*>& inputs, const KernelProvider& cpu,
                                ThreadPool& pool, const PlanOptions& options) {
  auto plan = std::make_unique<Plan>();
  // The model's weights, in memory while the passes read them (copied in
  // again from the file where an earlier plan let them go); but not a
  // Conv's filters, which no pass reads (a BatchNormalization folds into
  // them lazily: LazyConstant): they are held while a kernel is made from
  // them, so that a plan made beside another (a tuned one) does not bring
  // every filter back at once.
  WeightHold reading(model.weights);
  {
    // Per value: 1 read as a Conv's filters, 2 read otherwise (0: unread,
    // held too, so that clearing the hold gives it back).
    std::vector<char> role(model.values.size(), 0);
    for (const Node& n : model.nodes)
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (n.inputs[k] >= 0)
          role[static_cast<size_t>(n.inputs[k])] |= n.op == "Conv" && n.domain.empty() && k == 1 ? 1 : 2;
    for (size_t v = 0; v < model.values.size(); ++v)
      if (model.values[v].constant && role[v] != 1) reading.add(*model.values[v].constant);
  }
  Graph& g = plan->graph;
  g = model;
  bind_inputs(g, inputs, value_inputs(model));
  plan->input_values = g.inputs;

  run_passes(g, cpu, pool, options, plan->stats);
  plan->output_values = g.outputs;
  // Folding made new tensors with the bytes another plan of the session may
  // hold already (one set per batch size otherwise).
  // (The model's own weights are one set already, and may be given back.)
  if (options.constants)
    for (Value& v : g.values)
      if (v.constant && !(g.weights && g.weights->owns(v.constant->raw())))
        v.constant = options.constants->intern(v.constant);
  // From here the plan holds what its live nodes read of the model's
  // weights; constants the passes replaced (weights BatchNormalization was
  // folded into, its parameters) go, the model's back to its store.
  {
    std::vector<char> read(g.values.size(), 0);
    for (const Node& n : g.nodes)
      if (!n.dead)
        for (int v : n.inputs)
          if (v >= 0) read[static_cast<size_t>(v)] = 1;
    for (int v : g.outputs) read[static_cast<size_t>(v)] = 1;
    plan->weights = WeightHold(model.weights);
    for (size_t v = 0; v < g.values.size(); ++v) {
      Value& val = g.values[v];
      if (!val.constant || !val.constant->raw()) continue;
      // A plan made beside another (options.reuse) holds them later, each
      // while a kernel is made from it, and at the end what is read as it is.
      if (!read[v])
        val.constant = released_constant(*val.constant);
      else if (!options.reuse)
        plan->weights.add(*val.constant);
    }
  }
  reading.clear();

  // Memory spaces: 0 is the host (the CPU backend); then one per device backend.
  plan->spaces.push_back({&cpu, 0, 0});
  for (const KernelProvider* d : options.devices) plan->spaces.push_back({d, 0, 0});
  std::vector<int> order = g.topo_order();
  Placement placed = place_nodes(g, order, cpu, options.devices);
  plan->placement = placed.summary;

  // Algorithms, chosen before any step is made: tuning measures on the
  // real shapes, here at plan time, never inside a run.
  std::map<int, std::string> algorithm;
  if (options.tuner) {
    std::vector<std::pair<int, const KernelProvider*>> nodes;
    for (int idx : order) nodes.emplace_back(idx, plan->spaces[placed.node_space[idx]].backend);
    algorithm = options.tuner->tune(g, nodes, pool);
  }
  // A plan the CPU runs alone may keep some values in a narrower form
  // between its kernels (bf16 between MathMode::kBf16 convolutions).
  if (std::all_of(order.begin(), order.end(), [&](int idx) { return placed.node_space[idx] == 0; })) {
    // Nodes folded into a chosen kernel (the residual Add of an int8 convolution) leave the order.
    plan->stats.chosen_fusions = cpu.fuse_chosen(g, algorithm, order);
    if (plan->stats.chosen_fusions)
      order.erase(std::remove_if(order.begin(), order.end(), [&](int idx) { return g.nodes[idx].dead; }), order.end());
    plan->stats.narrowed = cpu.narrow_values(g, algorithm);
  }
  make_steps(*plan, order, placed.node_space, algorithm, pool, options.reuse, options.constants);
  plan_memory(*plan, options.optimize);
  return plan;
}

WeightStats weight_stats(const Graph& model, const std::vector<const Plan*>& plans) {
  WeightStats w;
  std::set<const void*> seen;  // the model's tensors, then the plans'
  const WeightStore* store = model.weights.get();
  for (const Value& v : model.values)
    if (v.constant && v.constant->raw() && seen.insert(v.constant->raw()).second &&
        !(store && store->owns(v.constant->raw())))
      w.model_bytes += v.constant->nbytes();
  w.model_resident_bytes = w.model_bytes;
  if (store) {
    w.model_bytes += store->bytes();
    w.model_resident_bytes += store->resident_bytes();
  }
  for (const Plan* p : plans) {
    w.released_constants += static_cast<size_t>(p->released);
    for (const Value& v : p->graph.values)
      if (v.constant && v.constant->raw() && !(store && store->owns(v.constant->raw())) &&
          seen.insert(v.constant->raw()).second)
        w.plan_bytes += v.constant->nbytes();
    for (const Step& s : p->steps)  // a kernel two plans share (PlanOptions::reuse) once
      if (seen.insert(s.kernel.get()).second) w.packed_bytes += s.kernel->packed_bytes();
  }
  return w;
}

std::string Plan::int8_summary() const {
  size_t convs = 0, products = 0, other = 0;
  for (const Step& s : steps) {
    if (std::strcmp(s.kernel->precision(), "int8") != 0) {
      ++other;
      continue;
    }
    const std::string& op = s.node >= 0 ? graph.nodes[static_cast<size_t>(s.node)].op : std::string();
    (op == "Conv" || op == "ConvInteger" || op == "QLinearConv" ? convs : products)++;
  }
  if (convs + products == 0) return {};
  return "int8 (" + std::to_string(convs) + " convolution" + (convs == 1 ? "" : "s") + ", " + std::to_string(products) +
         " product" + (products == 1 ? "" : "s") + "), " + std::to_string(other) + " step" + (other == 1 ? "" : "s") +
         " in float between quantize pairs";
}

std::string Plan::report() const {
  std::ostringstream os;
  size_t copies = 0;
  for (const Step& s : steps) copies += s.node < 0 ? 1 : 0;
  os << "plan: " << steps.size() << " steps";
  if (copies) os << " (" << copies << " copies)";
  os << "; passes: " << stats.folded << " folded, " << stats.identities << " identities removed, " << stats.batchnorms
     << " BatchNormalization folded, " << stats.bias_adds << " bias Add folded, " << stats.activations
     << " activations fused, " << stats.residuals << " residual Add fused, " << stats.dead << " dead removed";
  if (stats.concats_elided) os << ", " << stats.concats_elided << " Concat made in place";
  if (stats.quantize_pairs) os << ", " << stats.quantize_pairs << " quantize pairs made one step";
  if (stats.chosen_fusions)
    os << ", " << stats.chosen_fusions << " residual Add, SiLU or activation steps fused into the step before";
  os << "\n";
  if (graph.half.any()) os << graph.half.summary() << "\n";
  if (stats.block) {
    os << "layout: nchw" << stats.block << "c for " << stats.blocked << " values (shapes marked /" << stats.block
       << "c), " << stats.reorders << " reorder" << (stats.reorders == 1 ? "" : "s");
    if (stats.narrowed)
      os << "; " << stats.narrowed << " of them narrower between the steps that read them (/32c bf16, /64c u8)";
    os << "\n";
  }
  if (!placement.empty()) os << placement << "\n";
  // Steps whose products run in another precision than float32 (MathMode::kBf16's
  // convolutions); each such step says it after its description.
  std::map<std::string, int> lower;
  for (const Step& s : steps)
    if (std::strcmp(s.kernel->precision(), "fp32") != 0) ++lower[s.kernel->precision()];
  if (!lower.empty()) {
    os << "precision:";
    const char* sep = " ";
    for (const auto& [p, count] : lower) {
      os << sep << count << " step" << (count == 1 ? "" : "s") << " in " << p;
      sep = ", ";
    }
    os << ", the other " << steps.size() - [&] {
      size_t k = 0;
      for (const auto& [p, count] : lower) k += static_cast<size_t>(count);
      return k;
    }() << " in fp32 (the math of the products; ";
    bool bf16 = false, u8 = false;
    for (const Value& v : graph.values) {
      bf16 = bf16 || (v.block > 0 && v.dtype == DType::kBFloat16);
      u8 = u8 || (v.block > 0 && v.dtype == DType::kUInt8);
    }
    if (!bf16 && !u8)
      os << "every value between steps is float32)\n";
    else
      os << "values marked " << (bf16 ? "/32c bf16 are stored in bf16" : "") << (bf16 && u8 ? ", those marked " : "")
         << (u8 ? "/64c u8 as uint8 codes of their grid" : "") << ", the rest in float32)\n";
  }
  char line[512];
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    std::string where;
    for (int v : s.outputs) {
      if (v < 0) continue;
      if (!where.empty()) where += ",";
      if (storage[v] == Storage::kArena)
        where += (space[v] ? std::string(spaces[space[v]].backend->name()) : "") + "@" + std::to_string(offset[v]);
      else
        where += "output";
    }
    std::snprintf(line, sizeof line, "%4zu  %-4s %-18s %-28s %s  [%s]", i, s.backend->name(), s.op.c_str(),
                  s.label.substr(0, 28).c_str(), s.shapes.c_str(), where.c_str());
    os << line;
    std::string d = s.kernel->describe();
    if (!d.empty()) os << "  " << d;
    if (std::strcmp(s.kernel->precision(), "fp32") != 0) os << "  precision " << s.kernel->precision();
    if (s.workspace_bytes) os << "  workspace " << format_bytes(s.workspace_bytes) << " @" << s.workspace_offset;
    os << "\n";
  }
  for (size_t sp = 0; sp < spaces.size(); ++sp) {
    os << "arena";
    if (spaces.size() > 1) os << " (" << spaces[sp].backend->name() << ")";
    os << ": " << format_bytes(spaces[sp].arena_bytes) << " (" << spaces[sp].arena_bytes << " bytes; without reuse "
       << format_bytes(spaces[sp].naive_bytes) << ")\n";
  }
  size_t own = 0;  // constants the device kernels hold in their own form
  int holders = 0;
  for (const Step& s : steps)
    if (s.space != 0 && s.kernel->own_constant_bytes()) {
      own += s.kernel->own_constant_bytes();
      ++holders;
    }
  if (!uploads.empty() || own) {
    size_t bytes = 0;
    for (const auto& u : uploads) bytes += value_bytes(graph.values[u.value]);
    os << "weights on devices: " << uploads.size() << " tensors, " << format_bytes(bytes);
    if (own)
      os << "; and " << format_bytes(own) << " held by " << holders << " kernel" << (holders == 1 ? "" : "s")
         << " in a form of their own (e.g. float16 weights)";
    os << "\n";
  }
  return os.str();
}

}  // namespace minirt
