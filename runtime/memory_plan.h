// The planner's last stage: where every value of a plan lives. Graph inputs
// and outputs are the caller's memory, constants their own; every other
// value gets an offset in its memory space's arena, by liveness over the
// steps: values alive at the same time never overlap, the others reuse
// memory. A view step (OpSchema::view: Reshape, Flatten, ...) shares its
// input's block, and a step that joins its inputs (OpSchema::joins_inputs:
// Concat along channels at batch 1) has each input made in its slice of the
// output and is left with nothing to do.
//
//   plan_memory(plan, /*share_slices=*/true);   // fills storage, offset, arena sizes
#pragma once

#include "runtime/planner.h"

#include <cstddef>
#include <vector>

namespace minirt {

// Fills plan.storage, plan.offset, each space's arena_bytes and naive_bytes,
// the steps' workspace offsets and plan.arena_bytes; with share_slices,
// elides the joins whose inputs can be made in place (stats.concats_elided).
// plan.space (each value's memory space) and the steps must be set.
void plan_memory(Plan& plan, bool share_slices);

// Assigns offsets to blocks given sizes and [first, last] step intervals so
// that blocks alive at the same time do not overlap; returns the total size.
// Greedy by size, best fit.
struct Block {
  size_t size = 0;
  int first = 0, last = 0;
  size_t offset = 0;
};
size_t assign_offsets(std::vector<Block>& blocks, size_t alignment = 64);

// The alignment of values in a device's arena (and of Concat slices made in
// place there): what cudaMalloc gives and cuDNN's strictest pointer rule.
constexpr size_t kDeviceSliceAlign = 256;

}  // namespace minirt
