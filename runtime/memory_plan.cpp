#include "runtime/memory_plan.h"

#include "runtime/op_registry.h"
#include "runtime/ops/shape_ops.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

namespace minirt {

namespace {

// A join whose inputs were made in place, in their slices of its output.
class ElidedKernel final : public Kernel {
 public:
  void run(const KernelArgs&) override {}
  std::string describe() const override { return "in place: each input was made in its slice"; }
};

}  // namespace

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

void plan_memory(Plan& plan, bool share_slices) {
  // Storage of every value: the caller's, a constant's own, or the arena.
  const Graph& g = plan.graph;
  const size_t nv = g.values.size();
  const size_t ns = plan.spaces.size();
  plan.storage.assign(nv, Storage::kNone);
  plan.offset.assign(nv, 0);
  std::set<int> outs(plan.output_values.begin(), plan.output_values.end());
  for (size_t v = 0; v < nv; ++v)
    if (g.values[v].constant) plan.storage[v] = Storage::kConstant;
  for (const auto& u : plan.uploads) plan.storage[u.value] = Storage::kConstant;
  for (int v : g.inputs)
    if (plan.storage[v] == Storage::kNone) plan.storage[v] = Storage::kInput;
  std::vector<int> first(nv, -1), last(nv, -1);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    for (int v : s.outputs) {
      if (v < 0) continue;
      plan.storage[v] = outs.count(v) ? Storage::kOutput : Storage::kArena;
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
  for (const Step& s : plan.steps) {
    if (s.node < 0) continue;
    const OpSchema* schema = find_schema(g.nodes[s.node].op);
    bool view = schema && schema->view;
    int in = s.inputs[0], out = s.outputs[0];
    if (view && plan.storage[in] == Storage::kArena && plan.storage[out] == Storage::kArena &&
        plan.space[in] == plan.space[out] && g.values[in].block == 0 && g.values[out].block == 0)
      root[out] = in;
  }
  // A join (Concat) whose inputs are contiguous slices of its output (batch 1
  // along channels; whole channel blocks in the blocked layout) costs
  // nothing: each input is made in its slice, and the step is left with
  // nothing to do.
  if (share_slices) {
    for (Step& s : plan.steps) {
      const OpSchema* schema = s.node < 0 ? nullptr : find_schema(g.nodes[s.node].op);
      if (!schema || !schema->joins_inputs || !g.nodes[s.node].parsed) continue;
      int out = s.outputs[0];
      const Value& ov = g.values[out];
      if (plan.storage[out] != Storage::kArena) continue;
      int64_t axis = g.nodes[s.node].attrs_as<AxisAttrs>().axis;
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= ov.shape[d];
      bool ok = outer == 1 && s.inputs.size() > 1;
      if (ov.block) ok = ok && axis == 1;
      std::set<int> seen;
      for (size_t k = 0; k < s.inputs.size() && ok; ++k) {
        int v = s.inputs[k];
        const Value& iv = g.values[v];
        ok = v >= 0 && v != out && plan.storage[v] == Storage::kArena && plan.space[v] == plan.space[out] &&
             find(v).first == v && seen.insert(v).second && iv.block == ov.block &&
             (!ov.block || k + 1 == s.inputs.size() || iv.shape[1] % ov.block == 0);
      }
      if (!ok) continue;
      // In a device's memory every slice must start where its kernels may
      // read it: cuDNN refuses a misaligned pointer
      // (CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER), tensor cores want 16
      // bytes; the device arena's blocks are kDeviceSliceAlign-aligned
      // (assign_offsets), so each slice's offset in its block must be too.
      if (plan.space[out] != 0) {
        size_t at = 0;
        for (int v : s.inputs) {
          ok = ok && at % kDeviceSliceAlign == 0;
          at += value_data_bytes(g.values[v]);
        }
        if (!ok) continue;
      }
      size_t at = 0;
      for (int v : s.inputs) {
        root[v] = out;
        delta[v] = at;
        // Slices end to end: a bf16 input's slack (value_bytes) lies in the
        // next slice, or in the output's own slack for the last.
        at += value_data_bytes(g.values[v]);
      }
      s.kernel = std::make_unique<ElidedKernel>();
      s.recipe.clear();  // its kernel does nothing: no plan takes it (PlanOptions::reuse)
      plan.stats.concats_elided++;
    }
  }
  for (size_t v = 0; v < nv; ++v) {
    if (plan.storage[v] != Storage::kArena) continue;
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
      if (plan.storage[v] != Storage::kArena || plan.space[v] != static_cast<int>(sp) ||
          find(static_cast<int>(v)).first != static_cast<int>(v))
        continue;
      Block b;
      b.size = value_bytes(g.values[v]);
      b.first = first[v];
      b.last = last[v];
      blocks.push_back(b);
      owner.push_back(static_cast<int>(v));
    }
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      if (!plan.steps[i].workspace_bytes || plan.steps[i].space != static_cast<int>(sp)) continue;
      Block b;
      b.size = plan.steps[i].workspace_bytes;
      b.first = b.last = static_cast<int>(i);
      blocks.push_back(b);
      owner.push_back(-static_cast<int>(i) - 1);
    }
    for (const Block& b : blocks) plan.spaces[sp].naive_bytes += (b.size + 63) / 64 * 64;
    plan.spaces[sp].arena_bytes = assign_offsets(blocks, sp == 0 ? 64 : kDeviceSliceAlign);
    for (size_t k = 0; k < blocks.size(); ++k) {
      if (owner[k] >= 0)
        plan.offset[owner[k]] = blocks[k].offset;
      else
        plan.steps[-owner[k] - 1].workspace_offset = blocks[k].offset;
    }
  }
  for (size_t v = 0; v < nv; ++v)
    if (plan.storage[v] == Storage::kArena) {
      auto [r, d] = find(static_cast<int>(v));
      plan.offset[v] = plan.offset[r] + d;
    }
  plan.arena_bytes = plan.spaces[0].arena_bytes;
  plan.naive_bytes = plan.spaces[0].naive_bytes;
}

}  // namespace minirt
