// minirt/weights.h: what a session's weights take in host memory, apart
// from the activations' memory pool (minirt::MemoryStats).
//
//   minirt::WeightStats w = session.weight_stats();
//   // w.model_bytes as loaded, w.model_resident_bytes of them in memory now,
//   // w.packed_bytes in the kernels' own forms, w.plan_bytes folded
#pragma once

#include <cstddef>

namespace minirt {

struct WeightStats {
  // The model's initializers as loaded (float16 and bfloat16 ones as the
  // float32 they were converted to at load), in bytes.
  size_t model_bytes = 0;
  // Of those, the bytes in memory now. A model loaded from a file keeps a
  // large initializer in memory only while a plan is being made and while a
  // plan's kernel reads it as it is at run time; one that every kernel
  // packed into a form of its own is given back, and read from the file
  // again when a new input shape is planned. A model loaded from memory
  // keeps all of them.
  size_t model_resident_bytes = 0;
  // Constants the session's plans made themselves (weights with a
  // BatchNormalization folded in, biases, folded values) and hold because a
  // kernel reads them as they are at run time.
  size_t plan_bytes = 0;
  // Weights in the kernels' own forms: packed for the products, transformed
  // for Winograd (4 times the weights' bytes for F(4x4), 16/9 for F(2x2)).
  size_t packed_bytes = 0;
  // Constants the plans let go because every step reading them packed its own form.
  size_t released_constants = 0;
};

}  // namespace minirt
