// The planner's placement stage: each node on the first device backend that
// supports it, in the order the devices are given, else on the CPU; a node
// the CPU cannot run either fails the plan with its reason. The summary says
// how many nodes each backend took and why each op that stayed on the CPU
// did (the line runmodel, --compare and Session::placement() show).
//
//   Placement p = place_nodes(g, g.topo_order(), cpu, {&cuda});
//   p.node_space[idx];   // 0: the host (CPU), k: devices[k - 1]
//   p.summary;           // "placed 61 nodes on cuda, 2 nodes on cpu (Softmax: ...)"
#pragma once

#include "runtime/backend.h"
#include "runtime/graph.h"

#include <string>
#include <vector>

namespace minirt {

struct Placement {
  std::vector<int> node_space;  // per node of the graph (dead ones stay 0)
  std::vector<int> placed;      // nodes per space: [0] the CPU, then each device
  std::string summary;          // empty when there is no device
};

// `order`: the live nodes in topological order.
Placement place_nodes(const Graph& g, const std::vector<int>& order, const KernelProvider& cpu,
                      const std::vector<const KernelProvider*>& devices);

// True when no device would take any live node of g: the plan runs on the
// CPU alone, and the CPU-only passes (residual fusion, blocked layout) apply
// as if no device had been added.
bool cpu_alone(const Graph& g, const std::vector<const KernelProvider*>& devices);

}  // namespace minirt
