#include "runtime/planner.h"

#include "runtime/op_registry.h"
#include "runtime/ops/shape_ops.h"
#include "runtime/passes/passes.h"

#include <algorithm>
#include <functional>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace minirt {

std::vector<size_t> value_inputs(const Graph& model) {
  std::vector<size_t> out;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    int v = model.inputs[i];
    bool needed = false;
    for (const auto& n : model.nodes) {
      const OpSchema* s = find_schema(n.op);
      if (!s) continue;
      for (int slot : s->shape_inputs)
        if (n.input(slot) == v) needed = true;
    }
    if (needed) out.push_back(i);
  }
  return out;
}

size_t assign_offsets(std::vector<Block>& blocks, size_t alignment) {
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return blocks[a].size > blocks[b].size; });
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t bi : order) {
    Block& b = blocks[bi];
    size_t need = (b.size + alignment - 1) / alignment * alignment;
    // Blocks alive at the same time, by offset.
    std::vector<const Block*> live;
    for (size_t pi : placed) {
      const Block& p = blocks[pi];
      if (p.first <= b.last && b.first <= p.last) live.push_back(&p);
    }
    std::sort(live.begin(), live.end(), [](const Block* x, const Block* y) { return x->offset < y->offset; });
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, end = 0;
    for (const Block* p : live) {
      if (p->offset > end) {
        size_t gap = p->offset - end;
        if (gap >= need && gap < best_gap) {
          best = end;
          best_gap = gap;
        }
      }
      end = std::max(end, p->offset + (p->size + alignment - 1) / alignment * alignment);
    }
    b.offset = best != SIZE_MAX ? best : end;
    total = std::max(total, b.offset + need);
    placed.push_back(bi);
  }
  return total;
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
    if (t.dtype() != v.dtype)
      fail(ErrorCode::kInvalidArgument, where + " must be " + dtype_name(v.dtype) + ", got " + dtype_name(t.dtype()));
    if (t.rank() != static_cast<int64_t>(v.shape.size()))
      fail(ErrorCode::kInvalidArgument, where + " must have rank " + std::to_string(v.shape.size()) + " (" +
                                            shape_str(v.shape) + "), got " + shape_str(t.shape()));
    for (size_t d = 0; d < v.shape.size(); ++d) {
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

std::string human_bytes(size_t b) {
  char buf[64];
  if (b >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%zu B", b);
  return buf;
}

}  // namespace

namespace {

// Moves a tensor between the host and a device backend's memory; the copy
// steps at the seams of a placed graph.
class CopyKernel final : public Kernel {
 public:
  CopyKernel(const Backend* device, bool to_device, size_t bytes) : device_(device), to_device_(to_device), bytes_(bytes) {}
  void run(const KernelArgs& args) override {
    if (!bytes_) return;
    if (to_device_) device_->copy_to_device(args.outputs[0], args.inputs[0], bytes_, args.stream);
    else device_->copy_to_host(args.outputs[0], args.inputs[0], bytes_, args.stream);
  }
  std::string describe() const override { return to_device_ ? "host to device" : "device to host"; }

 private:
  const Backend* device_;
  bool to_device_;
  size_t bytes_;
};


// A Concat whose inputs were made in place, in their slices of its output.
class ElidedKernel final : public Kernel {
 public:
  void run(const KernelArgs&) override {}
  std::string describe() const override { return "in place: each input was made in its slice"; }
};

// True when no device backend would take any node of g: the plan runs on
// the CPU alone, and its CPU-only passes (residual fusion, blocked layout)
// apply as if no device had been added.
bool cpu_alone(const Graph& g, const std::vector<const Backend*>& devices) {
  std::string why;
  for (const Backend* d : devices)
    for (const Node& n : g.nodes)
      if (!n.dead && d->supports(g, n, &why)) return false;
  return true;
}

}  // namespace

std::unique_ptr<Plan> make_plan(const Graph& model, const std::vector<const Tensor*>& inputs, const Backend& cpu,
                                ThreadPool& pool, const PlanOptions& options) {
  auto plan = std::make_unique<Plan>();
  Graph& g = plan->graph;
  g = model;
  bind_inputs(g, inputs, value_inputs(model));
  plan->input_values = g.inputs;
  plan->output_values = g.outputs;

  PlanStats& st = plan->stats;
  st.folded = infer_and_fold(g, cpu, pool, true);
  st.identities = remove_identities(g);
  if (options.optimize) {
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
  plan->output_values = g.outputs;
  // Folding made new tensors with the bytes another plan of the session may
  // hold already (one set per batch size otherwise).
  if (options.constants)
    for (Value& v : g.values)
      if (v.constant) v.constant = options.constants->intern(v.constant);

  // Memory spaces: 0 is the host (the CPU backend); then one per device backend.
  plan->spaces.push_back({&cpu, 0, 0});
  for (const Backend* d : options.devices) plan->spaces.push_back({d, 0, 0});
  size_t ns = plan->spaces.size();

  // Placement: each node on the first device backend that supports it, else the CPU.
  std::vector<int> order = g.topo_order();
  std::vector<int> node_space(g.nodes.size(), 0);
  std::map<std::string, int> fallback_reasons;  // "op: why" -> nodes
  std::vector<int> placed(ns, 0);
  for (int idx : order) {
    const Node& n = g.nodes[idx];
    std::string first_why;
    for (size_t sp = 1; sp < ns && !node_space[idx]; ++sp) {
      std::string why;
      if (plan->spaces[sp].backend->supports(g, n, &why)) node_space[idx] = static_cast<int>(sp);
      else if (first_why.empty()) first_why = why.empty() ? "not supported" : why;
    }
    if (!node_space[idx]) {
      std::string why;
      if (!cpu.supports(g, n, &why)) node_fail(ErrorCode::kUnsupported, g, n, why);
      if (ns > 1) fallback_reasons[n.op + ": " + first_why]++;
    }
    placed[node_space[idx]]++;
  }
  if (ns > 1) {
    std::string line = "placed";
    for (size_t sp = ns; sp-- > 0;) {
      if (!placed[sp] && sp != 0) continue;
      line += (line == "placed" ? " " : ", ") + std::to_string(placed[sp]) + " node" + (placed[sp] == 1 ? "" : "s") +
              " on " + plan->spaces[sp].backend->name();
    }
    if (!fallback_reasons.empty()) {
      line += " (";
      bool first = true;
      for (const auto& [why, count] : fallback_reasons) {
        line += (first ? "" : "; ") + why + (count > 1 ? " x" + std::to_string(count) : "");
        first = false;
      }
      line += ")";
    }
    plan->placement = line;
  }

  // Where each value lives: graph inputs and constants on the host, every
  // other value where its producer runs.
  std::vector<int> home(g.values.size(), 0);
  for (int idx : order)
    for (int o : g.nodes[idx].outputs)
      if (o >= 0) home[o] = node_space[idx];
  // A value needed in another space gets a copy there, made by a copy step
  // just before its first reader (constants: uploaded once, at plan time).
  std::map<std::pair<int, int>, int> copies;  // (value, space) -> copy value
  // Algorithms, chosen before any step is made: tuning measures on the
  // real shapes, here at plan time, never inside a run.
  std::map<int, std::string> algorithm;
  if (options.tuner) {
    std::vector<std::pair<int, const Backend*>> nodes;
    for (int idx : order) nodes.emplace_back(idx, plan->spaces[node_space[idx]].backend);
    algorithm = options.tuner->tune(g, nodes, pool);
  }
  auto make_step_for = [&](int idx) {
    const Node& n = g.nodes[idx];
    const Backend* b = plan->spaces[node_space[idx]].backend;
    Step s;
    s.node = idx;
    s.space = node_space[idx];
    s.backend = b;
    if (auto a = algorithm.find(idx); a != algorithm.end() && !a->second.empty()) {
      s.kernel = b->make_kernel_with(g, n, a->second);
      s.algorithm = a->second;
    } else {
      s.kernel = b->make_kernel(g, n);
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
    const Backend* device = plan->spaces[to_space ? to_space : from_space].backend;
    std::string name = g.values[v].name + "@" + plan->spaces[to_space].backend->name();
    int c = g.add_value(name);
    g.values[c].dtype = g.values[v].dtype;
    g.values[c].shape = g.values[v].shape;
    g.values[c].shape_known = true;
    home.push_back(to_space);
    copies[key] = c;
    if (g.values[v].constant && to_space != 0) {
      // Kernels may still read the host copy when they are made (shapes,
      // repacking); at run time they get the device copy.
      g.values[c].constant = g.values[v].constant;
      plan->uploads.push_back({c, device->upload(*g.values[v].constant)});
      return c;
    }
    Step s;
    s.space = to_space ? to_space : from_space;
    s.backend = device;
    s.kernel = std::make_unique<CopyKernel>(device, to_space != 0, value_bytes(g.values[v]));
    s.inputs = {v};
    s.outputs = {c};
    s.label = g.values[v].name;
    s.op = std::string("Copy(") + plan->spaces[from_space].backend->name() + "->" +
           plan->spaces[to_space].backend->name() + ")";
    s.shapes = shape_str(g.values[v].shape);
    plan->steps.push_back(std::move(s));
    return c;
  };
  for (int idx : order) {
    Node& n = g.nodes[idx];
    for (int& in : n.inputs)
      if (in >= 0 && home[in] != node_space[idx]) in = copy_of(in, node_space[idx]);
    plan->steps.push_back(make_step_for(idx));
  }
  // Graph outputs computed on a device come back to the host at the end.
  for (int& v : plan->output_values)
    if (home[v] != 0) v = copy_of(v, 0);

  // Storage of every value.
  size_t nv = g.values.size();
  plan->storage.assign(nv, Storage::kNone);
  plan->offset.assign(nv, 0);
  plan->space = home;
  std::set<int> outs(plan->output_values.begin(), plan->output_values.end());
  for (size_t v = 0; v < nv; ++v)
    if (g.values[v].constant) plan->storage[v] = Storage::kConstant;
  for (const auto& u : plan->uploads) plan->storage[u.value] = Storage::kConstant;
  for (int v : g.inputs)
    if (plan->storage[v] == Storage::kNone) plan->storage[v] = Storage::kInput;
  std::vector<int> first(nv, -1), last(nv, -1);
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    const Step& s = plan->steps[i];
    for (int v : s.outputs) {
      if (v < 0) continue;
      plan->storage[v] = outs.count(v) ? Storage::kOutput : Storage::kArena;
      first[v] = static_cast<int>(i);
      last[v] = std::max(last[v], static_cast<int>(i));
    }
    for (int v : s.inputs)
      if (v >= 0) last[v] = std::max(last[v], static_cast<int>(i));
  }
  // Reshape-like steps only relabel bytes: their output shares the input's
  // block (the kernel then sees the same pointer and copies nothing). A value
  // lives at its root's offset plus delta bytes.
  std::vector<int> root(nv);
  std::vector<size_t> delta(nv, 0);
  for (size_t v = 0; v < nv; ++v) root[v] = static_cast<int>(v);
  auto find = [&](int v) {
    size_t d = 0;
    while (root[v] != v) {
      d += delta[v];
      v = root[v];
    }
    return std::make_pair(v, d);
  };
  for (const Step& s : plan->steps) {
    if (s.node < 0) continue;
    const std::string& op = g.nodes[s.node].op;
    bool view = op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
    int in = s.inputs[0], out = s.outputs[0];
    if (view && plan->storage[in] == Storage::kArena && plan->storage[out] == Storage::kArena &&
        home[in] == home[out] && g.values[in].block == 0 && g.values[out].block == 0)
      root[out] = in;
  }
  // A Concat whose inputs are contiguous slices of its output (batch 1 along
  // channels; whole channel blocks in the blocked layout) costs nothing: each
  // input is made in its slice, and the step is left with nothing to do.
  if (options.optimize) {
    for (Step& s : plan->steps) {
      if (s.node < 0 || g.nodes[s.node].op != "Concat" || !g.nodes[s.node].parsed) continue;
      int out = s.outputs[0];
      const Value& ov = g.values[out];
      if (plan->storage[out] != Storage::kArena) continue;
      int64_t axis = g.nodes[s.node].attrs_as<AxisAttrs>().axis;
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= ov.shape[d];
      bool ok = outer == 1 && s.inputs.size() > 1;
      if (ov.block) ok = ok && axis == 1;
      std::set<int> seen;
      for (size_t k = 0; k < s.inputs.size() && ok; ++k) {
        int v = s.inputs[k];
        const Value& iv = g.values[v];
        ok = v >= 0 && v != out && plan->storage[v] == Storage::kArena && home[v] == home[out] &&
             find(v).first == v && seen.insert(v).second && iv.block == ov.block &&
             (!ov.block || k + 1 == s.inputs.size() || iv.shape[1] % ov.block == 0);
      }
      if (!ok) continue;
      size_t at = 0;
      for (int v : s.inputs) {
        root[v] = out;
        delta[v] = at;
        at += value_bytes(g.values[v]);
      }
      s.kernel = std::make_unique<ElidedKernel>();
      st.concats_elided++;
    }
  }
  for (size_t v = 0; v < nv; ++v) {
    if (plan->storage[v] != Storage::kArena) continue;
    int r = find(static_cast<int>(v)).first;
    if (r == static_cast<int>(v)) continue;
    first[r] = std::min(first[r], first[v]);
    last[r] = std::max(last[r], last[v]);
  }
  // One arena per memory space, each planned by liveness.
  for (size_t sp = 0; sp < ns; ++sp) {
    std::vector<Block> blocks;
    std::vector<int> owner;  // value id, or -(step+1) for a workspace
    for (size_t v = 0; v < nv; ++v) {
      if (plan->storage[v] != Storage::kArena || home[v] != static_cast<int>(sp) ||
          find(static_cast<int>(v)).first != static_cast<int>(v))
        continue;
      Block b;
      b.size = value_bytes(g.values[v]);
      b.first = first[v];
      b.last = last[v];
      blocks.push_back(b);
      owner.push_back(static_cast<int>(v));
    }
    for (size_t i = 0; i < plan->steps.size(); ++i) {
      if (!plan->steps[i].workspace_bytes || plan->steps[i].space != static_cast<int>(sp)) continue;
      Block b;
      b.size = plan->steps[i].workspace_bytes;
      b.first = b.last = static_cast<int>(i);
      blocks.push_back(b);
      owner.push_back(-static_cast<int>(i) - 1);
    }
    for (const Block& b : blocks) plan->spaces[sp].naive_bytes += (b.size + 63) / 64 * 64;
    plan->spaces[sp].arena_bytes = assign_offsets(blocks);
    for (size_t k = 0; k < blocks.size(); ++k) {
      if (owner[k] >= 0) plan->offset[owner[k]] = blocks[k].offset;
      else plan->steps[-owner[k] - 1].workspace_offset = blocks[k].offset;
    }
  }
  for (size_t v = 0; v < nv; ++v)
    if (plan->storage[v] == Storage::kArena) {
      auto [r, d] = find(static_cast<int>(v));
      plan->offset[v] = plan->offset[r] + d;
    }
  plan->arena_bytes = plan->spaces[0].arena_bytes;
  plan->naive_bytes = plan->spaces[0].naive_bytes;
  return plan;
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
  os << "\n";
  if (stats.block)
    os << "layout: nchw" << stats.block << "c for " << stats.blocked << " values (shapes marked /" << stats.block
       << "c), " << stats.reorders << " reorder" << (stats.reorders == 1 ? "" : "s") << "\n";
  if (!placement.empty()) os << placement << "\n";
  char line[512];
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    std::string where;
    for (int v : s.outputs) {
      if (v < 0) continue;
      if (!where.empty()) where += ",";
      if (storage[v] == Storage::kArena) where += (space[v] ? std::string(spaces[space[v]].backend->name()) : "") + "@" + std::to_string(offset[v]);
      else where += "output";
    }
    std::snprintf(line, sizeof line, "%4zu  %-4s %-18s %-28s %s  [%s]", i, s.backend->name(), s.op.c_str(),
                  s.label.substr(0, 28).c_str(), s.shapes.c_str(), where.c_str());
    os << line;
    std::string d = s.kernel->describe();
    if (!d.empty()) os << "  " << d;
    if (s.workspace_bytes) os << "  workspace " << human_bytes(s.workspace_bytes) << " @" << s.workspace_offset;
    os << "\n";
  }
  for (size_t sp = 0; sp < spaces.size(); ++sp) {
    os << "arena";
    if (spaces.size() > 1) os << " (" << spaces[sp].backend->name() << ")";
    os << ": " << human_bytes(spaces[sp].arena_bytes) << " (" << spaces[sp].arena_bytes << " bytes; without reuse "
       << human_bytes(spaces[sp].naive_bytes) << ")\n";
  }
  if (!uploads.empty()) {
    size_t bytes = 0;
    for (const auto& u : uploads) bytes += value_bytes(graph.values[u.value]);
    os << "weights on devices: " << uploads.size() << " tensors, " << human_bytes(bytes) << "\n";
  }
  return os.str();
}

}  // namespace minirt
