// What the blocked layout's planning files share (nchwc_kernels.cpp: the
// convolution kernels and the algorithm rules; nchwc_elementwise.cpp: the
// reorders and elementwise kernels; nchwc_chosen.cpp: the fusions and narrow
// values once the algorithms are chosen). Internal to kernels/cpu.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/nchwc_conv.h"
#include "runtime/backend.h"  // Kernel
#include "runtime/graph.h"
#include "runtime/ops/activation.h"
#include "runtime/ops/elementwise.h"

namespace minirt::cpu::nchwc_plan {

// The native convolution algorithms' names.
inline constexpr const char* kDirect = "nchwc_direct";
inline constexpr const char* kDepthwise = "nchwc_depthwise";
inline constexpr const char* kWinograd2 = "nchwc_winograd_f2";
inline constexpr const char* kWinograd4 = "nchwc_winograd_f4";
inline constexpr const char* kWinograd2Bf16 = "nchwc_winograd_f2_bf16";  // bf16 products (MathMode::kBf16)
inline constexpr const char* kBf16 = "nchwc_bf16";
inline constexpr const char* kInt8 = "nchwc_int8";

// Value v's channel block (0: plain, or v < 0).
int block_of(const Graph& g, int v);
// A bf16 blocked value: bfloat16 in groups of 32 channels, between bf16 convolutions.
bool is_bf16_value(const Graph& g, int v);
// An int8 blocked value: uint8 codes in groups of 64 channels, between int8 convolutions.
bool is_u8_value(const Graph& g, int v);

const UnaryAttrs* unary_of(const Node& n);
const BinaryAttrs* binary_of(const Node& n);

// Ops whose result of finite padding lanes is finite, with the same
// semantics as the plain kernel. Div only by a constant (its padding lanes
// divide by 1): a padding lane of a tensor may hold 0. Pow never.
bool blocked_binary_kind(BinaryKind k);

// Conv n as the native kernels see it: geometry, layout, narrow values, fused epilogue.
NchwcConvSpec conv_spec(const Graph& g, const Node& n);

// The live node that makes value v, or null.
const Node* maker_of(const Graph& g, int v);

// The grid a QuantizeLinear -> DequantizeLinear pair put value v on, or null.
const Activation* quant_grid_of(const Graph& g, int v);

// Conv idx's algorithm as make_nchwc_kernel will pick it: the chosen one,
// else the rules' (nchwc_conv_heuristic).
std::string chosen_algorithm(const Graph& g, const std::map<int, std::string>& algorithm, int idx, int threads,
                             Bf16Isa bf16);

// The reorders and the elementwise kernels on blocked tensors
// (nchwc_elementwise.cpp): ReorderToBlocked/ToPlain, unary and binary ops,
// BatchNormalization; null for any other op.
std::unique_ptr<Kernel> make_nchwc_elementwise_kernel(const Graph& g, const Node& n);

}  // namespace minirt::cpu::nchwc_plan
