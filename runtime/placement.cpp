#include "runtime/placement.h"

#include <map>

namespace minirt {

bool cpu_alone(const Graph& g, const std::vector<const KernelProvider*>& devices) {
  std::string why;
  for (const KernelProvider* d : devices)
    for (const Node& n : g.nodes)
      if (!n.dead && d->supports(g, n, &why)) return false;
  return true;
}

Placement place_nodes(const Graph& g, const std::vector<int>& order, const KernelProvider& cpu,
                      const std::vector<const KernelProvider*>& devices) {
  const size_t ns = devices.size() + 1;
  Placement p;
  p.node_space.assign(g.nodes.size(), 0);
  p.placed.assign(ns, 0);
  std::map<std::string, int> fallback_reasons;  // "op: why" -> nodes
  for (int idx : order) {
    const Node& n = g.nodes[idx];
    std::string first_why;
    for (size_t sp = 1; sp < ns && !p.node_space[idx]; ++sp) {
      std::string why;
      if (devices[sp - 1]->supports(g, n, &why))
        p.node_space[idx] = static_cast<int>(sp);
      else if (first_why.empty())
        first_why = why.empty() ? "not supported" : why;
    }
    if (!p.node_space[idx]) {
      std::string why;
      if (!cpu.supports(g, n, &why)) node_fail(ErrorCode::kUnsupported, g, n, why);
      if (ns > 1) fallback_reasons[n.op + ": " + first_why]++;
    }
    p.placed[p.node_space[idx]]++;
  }
  if (ns == 1) return p;
  std::string line = "placed";
  for (size_t sp = ns; sp-- > 0;) {
    if (!p.placed[sp] && sp != 0) continue;
    const KernelProvider* b = sp == 0 ? &cpu : devices[sp - 1];
    line += (line == "placed" ? " " : ", ") + std::to_string(p.placed[sp]) + " node" + (p.placed[sp] == 1 ? "" : "s") +
            " on " + b->name();
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
  p.summary = line;
  return p;
}

}  // namespace minirt
