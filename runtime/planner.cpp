#include "runtime/planner.h"

#include "runtime/op_registry.h"
#include "runtime/passes/passes.h"

#include <algorithm>
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
    s += shape_str(g.values[v].shape);
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
    st.activations = fuse_activations(g);
  }
  st.dead = remove_dead_nodes(g);
  plan->output_values = g.outputs;

  // Steps, one kernel each.
  for (int idx : g.topo_order()) {
    const Node& n = g.nodes[idx];
    std::string why;
    if (!cpu.supports(g, n, &why)) node_fail(ErrorCode::kUnsupported, g, n, why);
    Step s;
    s.node = idx;
    s.backend = &cpu;
    s.kernel = cpu.make_kernel(g, n);
    s.inputs = n.inputs;
    s.outputs = n.outputs;
    s.workspace_bytes = s.kernel->workspace_bytes();
    s.label = n.name;
    s.op = n.op;
    for (const auto& f : n.fused) s.label += "+" + f;
    for (const auto& f : n.fused_ops) s.op += "+" + f;
    s.shapes = join_shapes(g, n.inputs) + " -> " + join_shapes(g, n.outputs);
    plan->steps.push_back(std::move(s));
  }

  // Storage of every value.
  size_t nv = g.values.size();
  plan->storage.assign(nv, Storage::kNone);
  plan->offset.assign(nv, 0);
  std::set<int> outs(g.outputs.begin(), g.outputs.end());
  for (size_t v = 0; v < nv; ++v) {
    if (g.values[v].constant) plan->storage[v] = Storage::kConstant;
  }
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
  // block (the kernel then sees the same pointer and copies nothing).
  std::vector<int> root(nv);
  for (size_t v = 0; v < nv; ++v) root[v] = static_cast<int>(v);
  auto find = [&](int v) {
    while (root[v] != v) v = root[v];
    return v;
  };
  for (const Step& s : plan->steps) {
    const std::string& op = g.nodes[s.node].op;
    bool view = op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
    int in = s.inputs[0], out = s.outputs[0];
    if (view && plan->storage[in] == Storage::kArena && plan->storage[out] == Storage::kArena) root[out] = find(in);
  }
  for (size_t v = 0; v < nv; ++v) {
    if (plan->storage[v] != Storage::kArena) continue;
    int r = find(static_cast<int>(v));
    if (r == static_cast<int>(v)) continue;
    first[r] = std::min(first[r], first[v]);
    last[r] = std::max(last[r], last[v]);
  }
  std::vector<Block> blocks;
  std::vector<int> owner;  // value id, or -(step+1) for a workspace
  for (size_t v = 0; v < nv; ++v) {
    if (plan->storage[v] != Storage::kArena || find(static_cast<int>(v)) != static_cast<int>(v)) continue;
    Block b;
    b.size = static_cast<size_t>(shape_numel(g.values[v].shape)) * dtype_size(g.values[v].dtype);
    b.first = first[v];
    b.last = last[v];
    blocks.push_back(b);
    owner.push_back(static_cast<int>(v));
  }
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    if (!plan->steps[i].workspace_bytes) continue;
    Block b;
    b.size = plan->steps[i].workspace_bytes;
    b.first = b.last = static_cast<int>(i);
    blocks.push_back(b);
    owner.push_back(-static_cast<int>(i) - 1);
  }
  for (const Block& b : blocks) plan->naive_bytes += (b.size + 63) / 64 * 64;
  plan->arena_bytes = assign_offsets(blocks);
  for (size_t k = 0; k < blocks.size(); ++k) {
    if (owner[k] >= 0) plan->offset[owner[k]] = blocks[k].offset;
    else plan->steps[-owner[k] - 1].workspace_offset = blocks[k].offset;
  }
  for (size_t v = 0; v < nv; ++v)
    if (plan->storage[v] == Storage::kArena) plan->offset[v] = plan->offset[find(static_cast<int>(v))];
  return plan;
}

std::string Plan::report() const {
  std::ostringstream os;
  os << "plan: " << steps.size() << " steps";
  os << " (passes: " << stats.folded << " folded, " << stats.identities << " identities removed, " << stats.batchnorms
     << " BatchNormalization folded, " << stats.bias_adds << " bias Add folded, " << stats.activations
     << " activations fused, " << stats.dead << " dead removed)\n";
  char line[512];
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    std::string where;
    for (int v : s.outputs) {
      if (v < 0) continue;
      if (!where.empty()) where += ",";
      if (storage[v] == Storage::kArena) where += "@" + std::to_string(offset[v]);
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
  os << "arena: " << human_bytes(arena_bytes) << " (" << arena_bytes << " bytes; without reuse "
     << human_bytes(naive_bytes) << ")\n";
  return os.str();
}

}  // namespace minirt
