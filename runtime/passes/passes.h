// Graph passes. Each takes a graph whose shapes are all known (after
// infer_and_fold) and rewrites it in place, marking removed nodes dead.
//
//   infer_and_fold(g, cpu, pool);   // shapes, and constant folding
//   remove_identities(g);
//   fold_batchnorm(g);
//   fold_bias_add(g);
//   fuse_gated_activations(g);
//   fuse_activations(g);
//   fuse_residual_add(g);  fuse_activations(g);
//   remove_dead_nodes(g);
#pragma once

#include "runtime/backend.h"
#include "runtime/graph.h"
#include "runtime/thread_pool.h"
#include "runtime/weight_store.h"

namespace minirt {

// float16 and bfloat16 models computed in float32 (runs once, at load, before
// any plan): every half initializer and Constant value becomes float32;
// Cast (and CastLike with a like-input of known half type) to a half type
// becomes a float32 Cast that rounds each value to that type's precision;
// a half graph input keeps its type at the API and a Cast to float32 reads
// it; a half graph output is made by a Cast from float32 at the end. What it
// did is in g.half. Returns true when the graph had anything of half type.
bool lower_half_precision(Graph& g);

// The QOperator ops (runs once, at load, before the half lowering):
// QLinearConv, QLinearMatMul and the com.microsoft QLinear ops and QGemm each
// become DequantizeLinear of its quantized inputs (an int32 bias with scale
// x_scale * w_scale), the float op under the node's name, and QuantizeLinear
// of the result; 8-bit values fed to float-only data movement (MaxPool,
// Resize) are dequantized and quantized again with their scale.
// Returns the number of nodes rewritten. runtime/passes/quant.cpp.
int lower_qoperator_ops(Graph& g);

// Marks the output of each DequantizeLinear of constant 8-bit values with a
// constant per-tensor or per-axis scale (Value::quant_scales) whose every
// q - zero_point is an int8 code, before folding turns it into floats
// (exactly float(code) * scale); run ahead of infer_and_fold. Returns the
// number marked. runtime/passes/quant.cpp.
int mark_dequantized_constants(Graph& g);

// A QuantizeLinear whose every reader is a DequantizeLinear with the same
// per-tensor scale and zero point (known at plan time) becomes, in each
// reader, one activation step "QuantizeDequantize" (domain minirt,
// ActKind::kQuantGrid): the value rounded to the scale's grid within the
// 8-bit range, in float32, with no 8-bit tensor between (several readers
// share one step). As an activation it fuses into the Conv or Gemm before
// it and runs in the blocked layout.
// Returns the number of pairs folded. runtime/passes/quant.cpp.
int fold_quantize_pairs(Graph& g);

// Runs every live node's shape inference in topological order. A node whose
// inputs are all known at plan time (initializers, Constant nodes, Shape of
// a known shape, and what follows from them) is evaluated with `folder`'s
// kernel and its outputs become constants; the node is then dead.
// Returns the number of nodes folded.
int infer_and_fold(Graph& g, const KernelProvider& folder, ThreadPool& pool, bool fold = true);

// Identity, Dropout (inference) and Cast to its input's own type are
// bypassed. Returns the number removed.
int remove_identities(Graph& g);

// Conv followed by BatchNormalization with constant parameters becomes one
// Conv with scaled weights and a new bias; so does each Conv of a Concat (on
// channels) that a BatchNormalization follows, with its slice of the
// parameters (the CSP blocks of YOLO-style detectors). A Conv's folded
// filters are made when its kernel is made (LazyConstant), so that a plan
// never holds every folded weight beside the model's.
int fold_batchnorm(Graph& g);

// Conv followed by Add of a constant per-channel tensor (1xCx1x1, Cx1x1)
// folds the constant into the Conv's bias.
int fold_bias_add(Graph& g);

// Conv or Gemm followed by an activation (any ActKind: Relu, LeakyRelu,
// Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Silu, ...) carries it fused;
// an activation after a Concat of Convs goes into each of them.
int fuse_activations(Graph& g);

// Mul(x, Sigmoid(x)) becomes the Sigmoid node computing Silu (x * sigmoid(x)),
// Mul(x, HardSigmoid(x)) with alpha 1/6 and beta 1/2 HardSwish, and
// Mul(x, Tanh(Softplus(x))) Mish, x * Clip(x + 3, 0, 6) / 6 (or times
// 1/6) HardSwish, and x * 0.5 * (1 + Erf(x / sqrt 2)) Gelu, so that
// fuse_activations can carry them into the Conv or Gemm that makes x.
int fuse_gated_activations(Graph& g);
// The x * Clip(x + 3, 0, 6) / 6 part of it (called by fuse_gated_activations).
int fuse_relu6_hardswish(Graph& g);
// The GELU part of it: the Erf node becomes the Gelu activation of x.
int fuse_decomposed_gelu(Graph& g);

// Add(Conv(...), r) with r of the same shape becomes the Conv with r as its
// fourth input (the residual): y = act(conv + bias + r), where a later
// fuse_activations supplies act. The Conv must have no activation yet (an
// activation before the Add is another computation) and be the Add's only
// reader. Only for plans without device backends.
int fuse_residual_add(Graph& g);

// The channel-blocked layout (Value::block) for the values of the nodes
// `cpu` can run blocked, and ReorderToBlocked / ReorderToPlain nodes (domain
// "minirt") where a reader needs the other layout; graph outputs are plain.
// Nothing happens when the backend has no blocked layout. Returns the
// number of reorders inserted. See layout.cpp.
int assign_layouts(Graph& g, const KernelProvider& cpu);

// Nodes whose outputs nobody reads are removed.
int remove_dead_nodes(Graph& g);

// Evaluates one node whose inputs are all constants; for folding and tests.
std::vector<Tensor> evaluate_node(const Graph& g, const Node& n, const KernelProvider& backend, ThreadPool& pool);

}  // namespace minirt
