// The channel-blocked activation layout of the CPU backend (NCHWc).
//
// A 4-D activation [N, C, H, W] in the blocked layout is stored as
// [N][ceil(C / B)][H][W][B]: B consecutive channels of one pixel are B
// consecutive floats, so one SIMD register holds one pixel of a channel
// block. B is 16 where kernels run on AVX-512 and 8 on AVX2 (nchwc_block);
// the portable build has no blocked layout. The last block of a C that is
// not a multiple of B has padding lanes: they always hold finite values
// (zero after a reorder; what a producer computed from zero-padded weights
// otherwise), are never read as data, and keep 0 * lane finite in the next
// producer. A tensor of rank other than 4 is never blocked.
//
//   int b = nchwc_block(sgemm_default_isa());       // 16, 8, or 0 (none)
//   nchwc_reorder_to_blocked(x, xb, n, c, h * w, b, pool);
//   nchwc_reorder_to_plain(xb, x, n, c, h * w, b, pool);
#pragma once

#include "kernels/cpu/cpu_caps.h"
#include "kernels/cpu/sgemm.h"
#include "runtime/backend.h"
#include "runtime/thread_pool.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace minirt::cpu {

// The channel block for kernels made with this ISA: 16 (AVX-512), 8 (AVX2),
// 0 (portable: no blocked layout).
int nchwc_block(SgemmIsa isa);
inline int64_t nchwc_blocks(int64_t c, int b) { return (c + b - 1) / b; }
// C rounded up to whole blocks: the channels a blocked tensor stores.
inline int64_t nchwc_padded(int64_t c, int b) { return nchwc_blocks(c, b) * b; }

// Plain [n][c][hw] to blocked [n][ceil(c/b)][hw][b] (padding lanes zero), and back.
void nchwc_reorder_to_blocked(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int b, ThreadPool& pool);
void nchwc_reorder_to_plain(const float* x, float* y, int64_t n, int64_t c, int64_t hw, int b, ThreadPool& pool);

// ---- The backend's side of the layout pass (nchwc_kernels.cpp)

// Whether the node can run with its outputs blocked (block b), and what it
// needs of each input; see KernelProvider::blocked_inputs.
bool nchwc_blocked_inputs(const Graph& g, const Node& n, int b, std::vector<LayoutNeed>* needs);
// The kernel of a node with blocked inputs or outputs (and of the
// ReorderToBlocked / ReorderToPlain nodes); `algo` names a Conv algorithm
// (empty: the heuristic's). Throws naming the node when there is none.
// `bf16`: the backend's bf16 instruction set under MathMode::kBf16 (kNone:
// float32 math), which makes nchwc_bf16 a candidate and the heuristic's pick
// where it can run.
std::unique_ptr<Kernel> make_nchwc_kernel(const Graph& g, const Node& n, int threads, const std::string& algo,
                                          Bf16Isa bf16 = Bf16Isa::kNone);
// The kernel the tuner times for a Conv candidate (KernelProvider::
// make_tuning_kernel): make_nchwc_kernel's, except nchwc_bf16 in the form it
// runs between bf16 values (nchwc_bf16_values) -- its input bf16 where
// another convolution makes it, its output bf16 where only convolutions,
// residual Adds, MaxPools and Concats read it -- which one layer timed alone
// with float32 values does not show: MobileNetV2's 1x1 layers at 56x56 ran
// in 0.5x the time of nchwc_direct between bf16 values and lost to it with
// float32 ones.
std::unique_ptr<Kernel> make_nchwc_tuning_kernel(const Graph& g, const Node& n, int threads, const std::string& algo,
                                                 Bf16Isa bf16);
// How much slower than the fastest candidate timed alone nchwc_bf16 (or
// nchwc_winograd_f2_bf16) may be and still be kept where the heuristic picks
// it (KernelProvider::keep_heuristic_within): 10% where a depthwise
// convolution reads its output, which it then reads as a bf16 value in
// place (dw_bf16_isa.h) -- MobileNetV2's 112x112 depthwise layer took 39 us
// so, 84 on float32 values (2 threads), while its 16->96 producer timed
// within a few percent either way; 10% wherever bf16 products outpace the
// FMAs (AMD), whose rules came out as fast as an exhaustive cache or faster
// (ResNet-18 0.94x, the other bench models 0.98-1.03x, EPYC, 2 threads): a
// layer timed alone, its values in cache, shows neither the bytes bf16
// values save nor the noise of a shared machine -- else 0.
double nchwc_bf16_margin(const Graph& g, const Node& n, int threads, Bf16Isa bf16);
// Conv in the blocked layout: its candidates, why one declines, the
// heuristic's pick, and a candidate's workspace.
const std::vector<std::string>& nchwc_conv_algorithm_names();
std::string nchwc_conv_declined(const Graph& g, const Node& n, const std::string& algo, Bf16Isa bf16 = Bf16Isa::kNone);
std::string nchwc_conv_heuristic(const Graph& g, const Node& n, int threads, Bf16Isa bf16 = Bf16Isa::kNone);
// The values between two nchwc_bf16 convolutions -- made by one, read only
// as the data input of others -- become bf16 in groups of 32 channels
// (dtype kBFloat16, block 32): half the memory traffic, and a 1x1 stride-1
// reader takes its input in place. `algorithm`: each node's chosen Conv
// algorithm (empty or absent: the rules' pick). Returns how many.
int nchwc_bf16_values(Graph& g, const std::map<int, std::string>& algorithm, int threads, Bf16Isa bf16);
// The values between two nchwc_int8 convolutions -- made by one whose last
// activation is its grid (kQuantGrid), read only as the data input or the
// residual of others -- become int8 (dtype kUInt8, block 64: uint8 codes in
// groups of 64 channels, conv_int8_isa.h): a quarter of the memory traffic,
// and a 1x1 stride-1 reader takes its input in place. Returns how many.
int nchwc_int8_values(Graph& g, const std::map<int, std::string>& algorithm, int threads, Bf16Isa bf16);
// A quantized model's residual Add after an nchwc_int8 convolution, and the
// QuantizeLinear -> DequantizeLinear step (or other activation) after the
// Add, become that convolution's epilogue: y = act(pre_act(conv) + r), with
// pre_act the pair the convolution had (ConvAttrs::pre_act). The other
// operand r must come earlier in `order` (the plan's); the Add and the
// activation step die. So does a SiLU in QDQ form after one (Sigmoid, its
// pair, Mul, the pair after): y = act(v gate(sigmoid(v))), v = pre_act(conv)
// (ConvAttrs::gate). A depthwise convolution (nchwc_depthwise) on float
// values takes such a SiLU too, and a blocked float binary op (Add, Mul,
// ...) the activation step after it (BinaryAttrs::act). Returns how many
// steps it folded away.
int nchwc_fuse_chosen(Graph& g, const std::map<int, std::string>& algorithm, const std::vector<int>& order, int threads,
                      Bf16Isa bf16);
size_t nchwc_conv_workspace_bytes(const Graph& g, const Node& n, int threads, const std::string& algo,
                                  Bf16Isa bf16 = Bf16Isa::kNone);
// The bf16 accuracy policy's "last layers" (kernels/cpu/README.md, "bf16 on the CPU"): a
// Conv, Gemm or MatMul whose result reaches the outputs through no other
// matrix product and without being averaged over pixels stays float32 --
// a detector's head -- except a Gemm or MatMul whose input is pooled over
// pixels (GlobalAveragePool, AveragePool, ReduceMean, through reshapes): a
// classifier's fully connected layer.
bool bf16_policy_keeps_float32(const Graph& g, const Node& n);

}  // namespace minirt::cpu
