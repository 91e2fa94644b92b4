// A model cut into plan stages at the nodes whose outputs' shapes follow from
// data (OpSchema::value_sized: NonZero, NonMaxSuppression). A plan needs every
// shape before it runs, so it cannot hold such a node; the session plans each
// stage on its own, runs them in order, and between two stages runs the cut
// nodes on the host (ValueSizedKernel::evaluate), whose outputs, now sized,
// are inputs of the later stages:
//
//   stage 0 (Conv ... scores) -> NonMaxSuppression -> stage 1 (Gather ... boxes)
//
// Each stage is planned per input signature like a whole model, so a stage
// after NonMaxSuppression gets one plan per number of boxes kept. A model
// without value-sized nodes is one stage: the model graph itself.
#pragma once

#include "runtime/graph.h"

#include <vector>

namespace minirt {

// One part of a cut model: a plan stage, or one value-sized node.
struct Stage {
  // >= 0: the model node (value-sized) this part runs, on the host.
  int cut = -1;
  // A plan stage (cut < 0): the model graph with only this stage's nodes
  // live; its inputs are the values the stage reads that the caller, earlier
  // stages or cut nodes make, and its outputs the values it makes that later
  // parts or the caller read. Value ids are the model graph's.
  Graph graph;
};

// The parts of `model` in run order: plan stages and cut nodes, a stage's
// cut nodes right after it. Empty when the model has no value-sized node
// (plan the model graph as it is). Stages without nodes are left out.
std::vector<Stage> split_stages(const Graph& model);

}  // namespace minirt
