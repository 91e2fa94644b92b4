// The CPU backend's kernels for nodes in the channel-blocked layout
// (nchwc.h): which nodes can run blocked and what they need of their
// inputs, and Conv (the algorithm rules, the native blocked algorithms, and
// every plain lowering wrapped in reorders so the tuner can still pick it).
// The reorders and the elementwise ops on blocked tensors are
// nchwc_elementwise.cpp.
#include "kernels/cpu/conv_algorithms.h"
#include "kernels/cpu/conv_bf16.h"
#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/conv_int8.h"
#include "kernels/cpu/nchwc.h"
#include "kernels/cpu/nchwc_conv.h"
#include "kernels/cpu/nchwc_ops.h"
#include "kernels/cpu/nchwc_plan.h"
#include "kernels/cpu/nchwc_winograd.h"
#include "kernels/cpu/registry.h"
#include "runtime/ops/conv.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/shape_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace minirt::cpu {

using namespace nchwc_plan;

// ---------------------------------------------------------------- shared with nchwc_chosen.cpp (nchwc_plan.h)

namespace nchwc_plan {

int block_of(const Graph& g, int v) { return v >= 0 ? g.values[v].block : 0; }
bool is_bf16_value(const Graph& g, int v) {
  return v >= 0 && g.values[v].block > 0 && g.values[v].dtype == DType::kBFloat16;
}
bool is_u8_value(const Graph& g, int v) {
  return v >= 0 && g.values[v].block > 0 && g.values[v].dtype == DType::kUInt8;
}
const UnaryAttrs* unary_of(const Node& n) {
  return n.parsed ? dynamic_cast<const UnaryAttrs*>(n.parsed.get()) : nullptr;
}
const BinaryAttrs* binary_of(const Node& n) {
  return n.parsed ? dynamic_cast<const BinaryAttrs*>(n.parsed.get()) : nullptr;
}
bool blocked_binary_kind(BinaryKind k) {
  return k == BinaryKind::kAdd || k == BinaryKind::kSub || k == BinaryKind::kMul || k == BinaryKind::kMax ||
         k == BinaryKind::kMin || k == BinaryKind::kDiv || k == BinaryKind::kPRelu;
}

NchwcConvSpec conv_spec(const Graph& g, const Node& n) {
  const auto& a = n.attrs_as<ConvAttrs>();
  NchwcConvSpec s;
  s.q = conv_geometry(in_shape(g, n, 0), out_shape(g, n, 0), a, a.group);
  s.isa = sgemm_default_isa();
  s.block = block_of(g, n.outputs[0]);
  s.input_blocked = block_of(g, n.inputs[0]) > 0;
  // bf16 values between bf16 convolutions (nchwc_bf16_values): 32 channels per group.
  s.x_bf16 = is_bf16_value(g, n.inputs[0]);
  s.y_bf16 = is_bf16_value(g, n.outputs[0]);
  s.r_bf16 = is_bf16_value(g, n.input(3));
  if (s.y_bf16) s.block = 16;
  // int8 values between int8 convolutions (nchwc_int8_values): 64 channels per group.
  s.x_u8 = is_u8_value(g, n.inputs[0]);
  s.y_u8 = is_u8_value(g, n.outputs[0]);
  s.r_u8 = is_u8_value(g, n.input(3));
  if (s.y_u8) s.block = 16;
  if (s.x_u8)
    if (const Activation* grid = quant_grid_of(g, n.inputs[0])) s.x_grid = *grid;
  s.act = a.act;
  s.pre_act = a.pre_act;
  s.gate = a.gate;
  s.gate_out = a.gate_out;
  s.post = a.post;
  s.residual = n.input(3) >= 0;
  return s;
}

// The live node that makes value v, or null.
const Node* maker_of(const Graph& g, int v) {
  for (const Node& m : g.nodes)
    if (!m.dead && std::find(m.outputs.begin(), m.outputs.end(), v) != m.outputs.end()) return &m;
  return nullptr;
}

// The grid a QuantizeLinear -> DequantizeLinear pair put value v on
// (fold_quantize_pairs: the pair's own step, or fused into the Conv before
// it as its last activation, kQuantGrid), through reorders, reshapes and max
// pools (whose every output is one of their inputs); null when there is none.
const Activation* quant_grid_of(const Graph& g, int v) {
  for (int guard = 0; guard < 16; ++guard) {
    const Node* m = maker_of(g, v);
    if (!m) return nullptr;
    if ((m->op == "ReorderToBlocked" || m->op == "ReorderToPlain" || m->op == "MaxPool" || m->op == "Flatten" ||
         m->op == "Reshape" || m->op == "Squeeze" || m->op == "Unsqueeze") &&
        !m->inputs.empty()) {
      v = m->inputs[0];
      continue;
    }
    const Activation* a = nullptr;
    if (m->op == "Concat" && !m->inputs.empty()) {
      // One whose pair its inputs' convolutions took (ConvAttrs::post, nchwc_fuse_chosen).
      const Node* p = maker_of(g, m->inputs[0]);
      if (p && p->op == "Conv" && p->parsed && !p->attrs_as<ConvAttrs>().post.none())
        return &p->attrs_as<ConvAttrs>().post;
      return nullptr;
    }
    if (m->op == "Conv" && m->parsed)
      a = m->attrs_as<ConvAttrs>().post.none() ? &m->attrs_as<ConvAttrs>().act : &m->attrs_as<ConvAttrs>().post;
    else if (const UnaryAttrs* u = unary_of(*m); u && u->kind == UnaryKind::kActivation)
      a = &u->act;
    else if (const BinaryAttrs* b = binary_of(*m))
      a = &b->act;  // an Add or Mul that took its pair (nchwc_fuse_chosen)
    return a && a->kind == ActKind::kQuantGrid ? a : nullptr;
  }
  return nullptr;
}

std::string chosen_algorithm(const Graph& g, const std::map<int, std::string>& algorithm, int idx, int threads,
                             Bf16Isa bf16) {
  auto a = algorithm.find(idx);
  return a != algorithm.end() && !a->second.empty()
             ? a->second
             : nchwc_conv_heuristic(g, g.nodes[static_cast<size_t>(idx)], threads, bf16);
}

}  // namespace nchwc_plan

namespace {

// The rules' Winograd for layers of this many input and output channels
// (F(2x2) or F(4x4) by size); thinner layers take F(4x4) by the plane
// (nchwc_conv_heuristic).
constexpr int64_t kMinWinogradChannels = 32;

bool float4d(const Graph& g, int v) {
  return v >= 0 && g.values[v].dtype == DType::kFloat32 && g.values[v].shape_known && g.values[v].shape.size() == 4;
}

// A per-channel operand of a [N, C, H, W] value: [N or 1, C, 1, 1].
bool per_channel_of(const Shape& small, const Shape& full) {
  return small.size() == 4 && (small[0] == full[0] || small[0] == 1) && small[1] == full[1] && small[2] == 1 &&
         small[3] == 1;
}

// A constant that broadcasts per channel against [N, C, H, W] (C values
// laid out along channels: [C,1,1], [1,C,1,1]) or is one value.
bool constant_channels(const Tensor& t, const Shape& full) {
  if (t.dtype() != DType::kFloat32) return false;
  if (t.numel() == 1) return true;
  const Shape& s = t.shape();
  if (t.numel() != full[1] || s.size() > 4 || s.size() < 3) return false;
  size_t lead = 4 - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    size_t axis = i + lead;
    if (s[i] != (axis == 1 ? full[1] : 1)) return false;
  }
  return true;
}

// ---- Conv

// A plain lowering run on blocked tensors: the blocked input (and residual)
// reordered to plain scratch, the plain kernel, its output reordered back.
// Costs two or three reorders; kept so that a lowering that still wins on
// some shape (Winograd on 3x3 layers) stays a candidate.
class WrappedConvKernel final : public Kernel {
 public:
  WrappedConvKernel(const Graph& g, const Node& n, int threads, const std::string& algo, bool plan_only) : algo_(algo) {
    const Shape& x = in_shape(g, n, 0);
    const Shape& y = out_shape(g, n, 0);
    n_ = x[0];
    c_ = x[1];
    hw_in_ = x[2] * x[3];
    m_ = y[1];
    hw_out_ = y[2] * y[3];
    xb_ = block_of(g, n.inputs[0]);
    yb_ = block_of(g, n.outputs[0]);
    residual_ = n.input(3) >= 0;
    has_bias_ = n.input(2) >= 0;
    if (plan_only)
      inner_ws_ = conv_workspace_bytes(g, n, threads, algo);
    else {
      inner_ = make_conv_kernel(g, n, threads, algo);
      inner_ws_ = inner_->workspace_bytes();
    }
    auto floats = [](int64_t f) { return static_cast<size_t>((f + 15) / 16 * 16); };
    size_t off = (inner_ws_ + 63) / 64 * 64;
    x_at_ = off;
    if (xb_) off += floats(n_ * c_ * hw_in_) * sizeof(float);
    r_at_ = off;
    if (residual_) off += floats(n_ * m_ * hw_out_) * sizeof(float);
    y_at_ = off;
    off += floats(n_ * m_ * hw_out_) * sizeof(float);
    ws_ = off;
  }
  size_t workspace_bytes() const override { return ws_; }
  std::string describe() const override { return inner_->describe() + " via nchw"; }
  bool packs_input(size_t input) const override { return inner_ && inner_->packs_input(input); }
  size_t packed_bytes() const override { return inner_ ? inner_->packed_bytes() : 0; }
  void run(const KernelArgs& args) override {
    char* ws = static_cast<char*>(args.workspace);
    ThreadPool& pool = *args.pool;
    // The node's inputs as it has them (the bias and residual may be absent).
    const void* in[4] = {args.inputs[0], args.inputs[1], has_bias_ ? args.inputs[2] : nullptr,
                         residual_ ? args.inputs[3] : nullptr};
    if (xb_) {
      float* xp = reinterpret_cast<float*>(ws + x_at_);
      nchwc_reorder_to_plain(static_cast<const float*>(args.inputs[0]), xp, n_, c_, hw_in_, xb_, pool);
      in[0] = xp;
    }
    if (residual_) {
      float* rp = reinterpret_cast<float*>(ws + r_at_);
      nchwc_reorder_to_plain(static_cast<const float*>(args.inputs[3]), rp, n_, m_, hw_out_, yb_, pool);
      in[3] = rp;
    }
    float* yp = reinterpret_cast<float*>(ws + y_at_);
    void* out[1] = {yp};
    KernelArgs a{in, out, ws, args.pool, args.stream};
    inner_->run(a);
    nchwc_reorder_to_blocked(yp, static_cast<float*>(args.outputs[0]), n_, m_, hw_out_, yb_, pool);
  }

 private:
  std::string algo_;
  std::unique_ptr<Kernel> inner_;
  int64_t n_ = 0, c_ = 0, hw_in_ = 0, m_ = 0, hw_out_ = 0;
  int xb_ = 0, yb_ = 0;
  bool residual_ = false, has_bias_ = false;
  size_t inner_ws_ = 0, x_at_ = 0, r_at_ = 0, y_at_ = 0, ws_ = 0;
};

// The native blocked lowerings (nchwc_conv.h, nchwc_winograd.h), as named algorithms.

bool is_native(const std::string& a) {
  return a == kDirect || a == kDepthwise || a == kWinograd2 || a == kWinograd4 || a == kWinograd2Bf16 || a == kBf16 ||
         a == kInt8;
}
int winograd_tile(const std::string& a) { return a == kWinograd2 || a == kWinograd2Bf16 ? 2 : a == kWinograd4 ? 4 : 0; }
bool winograd_bf16(const std::string& a) { return a == kWinograd2Bf16; }

// What a walk over the readers of a value does at each live node that reads
// a value it reached.
enum class Reach { kFound, kStop, kGoOn };

// Walks from value v through the live nodes that read it, and their
// outputs: true once `at` says kFound of a node (or `found_value` of a value
// reached), and false when the walk ends without; kStop ends the walk past
// that node.
template <typename AtNode, typename AtValue>
bool walk_readers(const Graph& g, int v, AtNode at, AtValue found_value) {
  std::vector<int> todo = {v};
  std::vector<char> seen(g.values.size(), 0);
  while (!todo.empty()) {
    int cur = todo.back();
    todo.pop_back();
    if (cur < 0 || seen[static_cast<size_t>(cur)]) continue;
    seen[static_cast<size_t>(cur)] = 1;
    if (found_value(cur)) return true;
    for (const Node& m : g.nodes) {
      if (m.dead || std::find(m.inputs.begin(), m.inputs.end(), cur) == m.inputs.end()) continue;
      const Reach r = at(m);
      if (r == Reach::kFound) return true;
      if (r == Reach::kStop) continue;
      for (int o : m.outputs) todo.push_back(o);
    }
  }
  return false;
}

// Whether value v reaches another matrix product (Conv, ConvTranspose, Gemm,
// MatMul) through the live nodes that read it. A convolution whose result
// does not -- a detector's or segmenter's head, read by reshapes, sigmoids
// and box decoding only -- is one of "the model's last layers" that the bf16
// accuracy policy keeps in float32: its rounding would reach the outputs
// undamped, and it is cheap.
bool feeds_product(const Graph& g, int v) {
  return walk_readers(
      g, v,
      [](const Node& m) {
        return m.op == "Conv" || m.op == "ConvTranspose" || m.op == "Gemm" || m.op == "MatMul" ? Reach::kFound
                                                                                               : Reach::kGoOn;
      },
      [](int) { return false; });
}

// Whether value v reaches a graph output without being averaged over pixels
// on the way (GlobalAveragePool, AveragePool, ReduceMean). A classifier's
// last convolution whose map is averaged into the logits -- SqueezeNet's
// 1000-channel 1x1, a third of that model's time -- has its rounding
// averaged too, and runs bf16; a detector's head does not.
bool reaches_outputs_unaveraged(const Graph& g, int v) {
  return walk_readers(
      g, v,
      [](const Node& m) {
        return m.op == "GlobalAveragePool" || m.op == "AveragePool" || m.op == "ReduceMean" ? Reach::kStop
                                                                                            : Reach::kGoOn;
      },
      [&](int cur) { return std::find(g.outputs.begin(), g.outputs.end(), cur) != g.outputs.end(); });
}

// Whether value v is pooled over pixels: made by GlobalAveragePool,
// AveragePool or ReduceMean, through nodes that only reshape or move it.
bool pooled_over_pixels(const Graph& g, int v) {
  for (int guard = 0; v >= 0 && guard < 64; ++guard) {
    const Node* maker = nullptr;
    for (const Node& m : g.nodes)
      if (!m.dead && std::find(m.outputs.begin(), m.outputs.end(), v) != m.outputs.end()) maker = &m;
    if (!maker) return false;
    const std::string& op = maker->op;
    if (op == "GlobalAveragePool" || op == "AveragePool" || op == "ReduceMean") return true;
    if (op != "Flatten" && op != "Reshape" && op != "Squeeze" && op != "Unsqueeze" && op != "Identity" &&
        op != "Dropout" && op != "ReorderToPlain")
      return false;
    v = maker->inputs.empty() ? -1 : maker->inputs[0];
  }
  return false;
}

}  // namespace

bool bf16_policy_keeps_float32(const Graph& g, const Node& n) {
  if (n.outputs.empty() || n.inputs.empty()) return false;
  if (feeds_product(g, n.outputs[0]) || !reaches_outputs_unaveraged(g, n.outputs[0])) return false;
  return !((n.op == "Gemm" || n.op == "MatMul") && pooled_over_pixels(g, n.inputs[0]));
}

namespace {

// The quantization of Conv n's operands as the int8 convolution reads them,
// or why there is none: the input's grid (and an int8 residual's); the
// weights a DequantizeLinear of int8 codes folded into floats
// (mark_dequantized_constants), one scale or one per output channel.
std::string int8_operands(const Graph& g, const Node& n, Int8ConvQuant* q) {
  const Activation& in_grid = n.attrs_as<ConvAttrs>().in_grid;
  const Activation* grid = in_grid.none() ? quant_grid_of(g, n.inputs[0]) : &in_grid;
  if (!grid) return "reads no value that a QuantizeLinear -> DequantizeLinear pair put on an 8-bit grid";
  if (is_u8_value(g, n.input(3))) {
    const Activation* rg = quant_grid_of(g, n.input(3));
    if (!rg) return "adds an int8 residual whose grid is unknown";
    q->r_scale = rg->alpha;
    q->r_lo = static_cast<int32_t>(rg->beta);
  }
  q->x_scale = grid->alpha;
  q->x_off_grid = !in_grid.none();
  q->lo = static_cast<int32_t>(grid->beta);
  q->hi = static_cast<int32_t>(grid->gamma);
  const Value& w = g.values[n.inputs[1]];
  const int64_t m = g.values[n.inputs[1]].shape.empty() ? 0 : g.values[n.inputs[1]].shape[0];
  if (!w.quant_scales ||
      !(w.quant_axis == -1 || (w.quant_axis == 0 && static_cast<int64_t>(w.quant_scales->size()) == m)))
    return "has weights that are not a DequantizeLinear of 8-bit codes (per tensor or per output channel)";
  q->w_scales = *w.quant_scales;
  return {};
}

std::string native_declined(const Graph& g, const Node& n, const std::string& algo, Bf16Isa bf16) {
  NchwcConvSpec s = conv_spec(g, n);
  if (s.block == 0 || nchwc_block(s.isa) != s.block)
    return "needs its output in the blocked layout of the ISA kernels are made for";
  if (s.x_bf16 || s.y_bf16 || s.r_bf16) {
    if (algo != kBf16 && algo != kDepthwise)
      return "reads or writes a bf16 value, which only nchwc_bf16 and nchwc_depthwise do";
  } else if (s.x_u8 || s.y_u8 || s.r_u8) {
    if (algo != kInt8 && algo != kDepthwise)
      return "reads or writes an int8 value, which only nchwc_int8 and nchwc_depthwise do";
  } else if (s.input_blocked && block_of(g, n.inputs[0]) != s.block) {
    return "needs its input in the same block as its output";
  }
  if (algo == kDirect) return nchwc_direct_declined(s);
  if (algo == kDepthwise) return nchwc_depthwise_declined(s);
  // bf16 products follow bf16 math's accuracy policy, as nchwc_bf16 does.
  const char* kept_float32 =
      "is one of the model's last layers (its result reaches the outputs through no other product and "
      "is not averaged over pixels on the way: float32 by the accuracy policy)";
  if (int t = winograd_tile(algo)) {
    if (!winograd_bf16(algo)) return nchwc_winograd_declined(s, t);
    if (bf16 == Bf16Isa::kNone)
      return "needs bf16 math (SessionOptions::math = MathMode::kBf16) on a CPU with AVX512_BF16";
    std::string why = nchwc_winograd_declined(s, t, true);
    if (why.empty() && bf16_policy_keeps_float32(g, n)) why = kept_float32;
    return why;
  }
  if (algo == kInt8) {
    std::string why;
    if (int8_conv_isa(&why) == Int8ConvIsa::kReference) return "needs AMX-INT8 or AVX512-VNNI: " + why;
    Int8ConvQuant q;
    if (why = int8_operands(g, n, &q); !why.empty()) return why;
    // The weights are codes times their scales by mark_dequantized_constants;
    // the kernel checks each when it is made.
    return int8_conv_declined(s, q, nullptr);
  }
  if (algo == kBf16) {
    if (bf16 == Bf16Isa::kNone)
      return "needs bf16 math (SessionOptions::math = MathMode::kBf16) on a CPU with AVX512_BF16 or AMX";
    std::string why = bf16_conv_declined(s, bf16);
    if (why.empty() && bf16_policy_keeps_float32(g, n)) why = kept_float32;
    return why;
  }
  return "is not a CPU Conv algorithm";
}

class NativeConvKernel final : public Kernel {
 public:
  // plan_only: the workspace sized, the weights neither read nor packed.
  // spec: the node's (conv_spec) unless given.
  NativeConvKernel(const Graph& g, const Node& n, int threads, const std::string& algo, Bf16Isa bf16,
                   bool plan_only = false, const NchwcConvSpec* spec = nullptr)
      : residual_(n.input(3) >= 0) {
    NchwcConvSpec s = spec ? *spec : conv_spec(g, n);
    const float* w = plan_only ? nullptr : in_const(g, n, 1)->data<float>();
    const float* b = !plan_only && n.input(2) >= 0 ? in_const(g, n, 2)->data<float>() : nullptr;
    if (algo == kInt8) {
      Int8ConvQuant q;
      int8_operands(g, n, &q);  // checked by native_declined
      if (std::string why = int8_conv_declined(s, q, w); !why.empty())
        node_fail(ErrorCode::kInternal, g, n, "nchwc_int8 cannot run this node: " + why);
      int8_ = std::make_unique<Int8Conv>(s, int8_conv_isa(), q, w, b);
    } else if (algo == kBf16) {
      bf16_ = std::make_unique<Bf16Conv>(s, bf16, w, b);
    } else if (algo == kDepthwise)
      dw_ = std::make_unique<NchwcDepthwiseConv>(s, w, b, threads);
    else if (int t = winograd_tile(algo))
      wino_ = std::make_unique<NchwcWinogradConv>(s, t, w, b, threads, winograd_bf16(algo));
    else
      direct_ = std::make_unique<NchwcDirectConv>(s, w, b, threads);
  }
  void run(const KernelArgs& args) override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    const float* r = residual_ ? static_cast<const float*>(args.inputs[3]) : nullptr;
    float* y = static_cast<float*>(args.outputs[0]);
    float* ws = static_cast<float*>(args.workspace);
    if (int8_)
      int8_->run(x, r, y, ws, *args.pool);
    else if (bf16_)
      bf16_->run(args.inputs[0], residual_ ? args.inputs[3] : nullptr, args.outputs[0], ws, *args.pool);
    else if (dw_)
      dw_->run(x, r, y, 0, ws, *args.pool);
    else if (wino_)
      wino_->run(x, r, y, 0, ws, *args.pool);
    else
      direct_->run(x, r, y, 0, ws, *args.pool);
  }
  size_t workspace_bytes() const override {
    return on_algorithm([](const auto& k) { return k.workspace_bytes(); });
  }
  std::string describe() const override {
    // "nchwc_direct isa=avx512 nb=2 ur=12 ...", as the kernel describes itself.
    return "algo=" + on_algorithm([](const auto& k) { return k.describe(); });
  }
  const char* precision() const override {
    return int8_ ? "int8" : bf16_ || (wino_ && wino_->bf16_products()) ? "bf16" : "fp32";
  }
  // Every algorithm packs the weights and the bias when it is made.
  bool packs_input(size_t input) const override { return input == 1 || input == 2; }
  size_t packed_bytes() const override {
    return on_algorithm([](const auto& k) { return k.weight_bytes(); });
  }

 private:
  // f(the algorithm's kernel), whichever was made.
  template <typename F>
  std::invoke_result_t<F, const NchwcDirectConv&> on_algorithm(F&& f) const {
    return int8_ ? f(*int8_) : bf16_ ? f(*bf16_) : dw_ ? f(*dw_) : wino_ ? f(*wino_) : f(*direct_);
  }
  bool residual_;
  std::unique_ptr<NchwcDirectConv> direct_;
  std::unique_ptr<NchwcDepthwiseConv> dw_;
  std::unique_ptr<NchwcWinogradConv> wino_;
  std::unique_ptr<Bf16Conv> bf16_;
  std::unique_ptr<Int8Conv> int8_;
};

bool conv_blocked_ok(const Graph& g, const Node& n) {
  if (!float4d(g, n.inputs[0]) || !float4d(g, n.outputs[0]) || !in_const(g, n, 1)) return false;
  if (n.input(2) >= 0 && !in_const(g, n, 2)) return false;
  return true;
}

}  // namespace

bool nchwc_blocked_inputs(const Graph& g, const Node& n, int b, std::vector<LayoutNeed>* needs) {
  if (b <= 0 || n.dead) return false;
  needs->assign(n.inputs.size(), LayoutNeed::kPlain);
  const std::string& op = n.op;
  if (op == "Conv") {
    if (!conv_blocked_ok(g, n)) return false;
    // A few plain input channels (the image) are read in place; more are
    // worth one reorder.
    int64_t c = in_shape(g, n, 0)[1];
    (*needs)[0] = c <= b / 2 ? LayoutNeed::kEither : LayoutNeed::kBlocked;
    if (n.input(3) >= 0) (*needs)[3] = LayoutNeed::kBlocked;
    return true;
  }
  if (const UnaryAttrs* u = unary_of(n)) {
    if (n.outputs.size() > 1 && n.outputs[1] >= 0) return false;  // Dropout's mask
    if (u->kind != UnaryKind::kActivation && u->kind != UnaryKind::kCopy) return false;
    if (!float4d(g, n.inputs[0])) return false;
    (*needs)[0] = LayoutNeed::kBlocked;
    return true;
  }
  if (const BinaryAttrs* ba = binary_of(n)) {
    if (!blocked_binary_kind(ba->kind) || n.inputs.size() != 2 || !float4d(g, n.outputs[0])) return false;
    const Shape& y = out_shape(g, n, 0);
    int full = 0;
    for (int s = 0; s < 2; ++s) {
      int v = n.inputs[s];
      if (v < 0 || g.values[v].dtype != DType::kFloat32) return false;
      const Value& val = g.values[v];
      if (val.constant) {
        if (!constant_channels(*val.constant, y)) return false;
        (*needs)[s] = LayoutNeed::kPlain;
      } else if ((ba->kind == BinaryKind::kDiv || ba->kind == BinaryKind::kPRelu) && s == 1) {
        return false;  // a divisor's padding lanes may be 0; PRelu's slope: constant only
      } else if (val.shape == y) {
        ++full;
        (*needs)[s] = LayoutNeed::kBlocked;
      } else if (per_channel_of(val.shape, y)) {
        (*needs)[s] = LayoutNeed::kBlocked;
      } else {
        return false;
      }
    }
    return full >= 1;
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "Resize" ||
      op == "Upsample" || op == "Concat") {
    if (!nchwc_data_supports(g, n, b, nullptr)) return false;
    if (op == "Concat")
      for (int v : n.inputs)
        if (v < 0 || g.values[v].constant) return false;  // the kernel reads every input blocked
    // Activations blocked; the rest (Resize's roi, scales, sizes) are
    // constants the kernel reads when it is made.
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (float4d(g, n.inputs[k]) && !g.values[n.inputs[k]].constant) (*needs)[k] = LayoutNeed::kBlocked;
    return true;
  }
  if (op == "BatchNormalization") {
    if (!float4d(g, n.inputs[0])) return false;
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (n.outputs[k] >= 0) return false;  // training statistics
    for (size_t k = 1; k < 5; ++k)
      if (!in_const(g, n, k) || in_const(g, n, k)->dtype() != DType::kFloat32) return false;
    (*needs)[0] = LayoutNeed::kBlocked;
    return true;
  }
  return false;
}

const std::vector<std::string>& nchwc_conv_algorithm_names() {
  // The native ones, then every plain lowering run through reorders.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {kDirect, kDepthwise, kWinograd2, kWinograd4, kWinograd2Bf16, kBf16, kInt8};
    for (const std::string& a : conv_algorithm_names()) v.push_back(a);
    return v;
  }();
  return names;
}

std::string nchwc_conv_declined(const Graph& g, const Node& n, const std::string& algo, Bf16Isa bf16) {
  // The residual Add or SiLU fused after the choice (nchwc_fuse_chosen):
  // nchwc_int8 takes each form, nchwc_depthwise the SiLU (its spec says).
  const auto& ca = n.attrs_as<ConvAttrs>();
  if (!ca.post.none() && algo != kInt8)
    return "writes a Concat's slice on the Concat's grid, which only nchwc_int8 does";
  if ((!ca.pre_act.none() || !ca.gate.none() || !ca.gate_out.none()) && algo != kInt8 && algo != kDepthwise)
    return "has a residual Add or a SiLU fused after an activation of its own, which only nchwc_int8 and "
           "nchwc_depthwise do";
  // A quantized convolution runs on its codes wherever nchwc_int8 takes it:
  // its epilogue then takes the residual Add or SiLU after it and the values
  // between int8 convolutions stay int8, which no measurement of one layer
  // sees (and a cached float pick from before is measured again).
  if (algo != kInt8 && native_declined(g, n, kInt8, bf16).empty())
    return "is a quantized convolution, which nchwc_int8 runs on its codes here";
  if (is_native(algo)) return native_declined(g, n, algo, bf16);
  return conv_algorithm_declined(g, n, algo);
}

std::string nchwc_conv_heuristic(const Graph& g, const Node& n, int threads, Bf16Isa bf16) {
  // Under bf16 math on AMX, every convolution it takes (the accuracy policy
  // in bf16_conv_declined and native_declined). On Intel's cores vdpbf16ps
  // alone does no more multiply-adds per cycle than the float32 FMAs
  // (bench/bf16_bench.cpp), so without AMX the rules keep the float32
  // kernels and nchwc_bf16 is left to measurement (it wins where the
  // weights' memory traffic dominates); on AMD's it does twice as many
  // (bf16_dot_outpaces_fma), and the rules take it after Winograd below.
  // A quantized model's convolution on its int8 codes wherever AMX-INT8 takes it
  // (twice AMX-BF16's products per cycle, and exact sums).
  if (native_declined(g, n, kInt8, bf16).empty()) return kInt8;
  if (bf16 == Bf16Isa::kAmx && native_declined(g, n, kBf16, bf16).empty()) return kBf16;
  if (native_declined(g, n, kDepthwise, bf16).empty()) return kDepthwise;
  // Winograd where it was measured to win (bench NchwcWinograd, AVX-512 and
  // AVX2, 1 and 2 threads; convprof --conv grids): every 3x3 stride-1 layer
  // of 32 channels and more; F(4x4) up to 256 channels on planes of 14 and
  // more and up to 128 on planes of 7 and more, F(2x2) on the 512-channel
  // 7x7 and 13x13 ones (F(4x4)'s transformed weights, 4x the direct
  // kernel's, no longer stream fast enough there).
  const NchwcConvSpec spec = conv_spec(g, n);
  const Geometry& q = spec.q;
  const int64_t plane = std::min(q.oh, q.ow);
  // Where bf16 products outpace the FMAs (AMD), F(2x2) with bf16 products
  // from 128 input channels, and from 64 on planes under 28 (measured on an
  // EPYC, 2 threads: it wins every 3x3 layer of ResNet-18/50 and YOLOv5s
  // from 128 channels, 28x28 down to 7x7, and SqueezeNet's 64->256 on
  // 13x13; F(4x4) in float32 keeps the 32-96-channel layers on planes of 40
  // and more, ResNet's 64-channel 56x56 ones by 334-379 us against 378-474).
  if (q.c >= kMinWinogradChannels && q.m >= kMinWinogradChannels && native_declined(g, n, kWinograd4, bf16).empty()) {
    if (bf16_dot_outpaces_fma(bf16) && (q.c >= 128 || (q.c >= 64 && plane < 28)) &&
        native_declined(g, n, kWinograd2Bf16, bf16).empty())
      return kWinograd2Bf16;
    // F(4x4) also on planes of 7 to 13 up to 128 channels (EPYC, 2 threads,
    // convprof --conv: 0.51-0.81 of the direct kernel's time against
    // F(2x2)'s 0.82-1.27 at 32, 64 and 128 channels; its transformed
    // weights, at most 2.4 MB there, stay in cache).
    if ((q.c <= 256 && plane >= 14) || (q.c <= 128 && plane >= 7)) return kWinograd4;
    return kWinograd2;
  }
  // bf16 products at twice the FMAs' rate, wherever the channel pairs they
  // fill (the last group's pairs past its channels are skipped; a folded
  // stem's pairs hold its C x kw window columns, or its whole window) leave
  // them at least 1.25x the float32 kernel's 16-channel blocks: every
  // convolution but a 1x1 on a one-channel image (half a pair against a
  // whole FMA lane). bf16 values also halve the bytes a memory-bound
  // convolution moves (MobileNetV2's 16->96 1x1 on 112x112, EPYC with a busy
  // neighbour: 669 -> 343 us).
  if (bf16_dot_outpaces_fma(bf16) && native_declined(g, n, kBf16, bf16).empty()) {
    const int64_t window = q.c * q.kh * q.kw;
    const int64_t c = spec.input_blocked ? q.c : window <= 32 ? window : q.c * q.kw;
    const double bf16_lanes = static_cast<double>(c) / static_cast<double>(ceil_div(c, 2) * 2);
    const double fp32_lanes =
        spec.input_blocked ? static_cast<double>(q.c) / static_cast<double>(ceil_div(q.c, 16) * 16) : 1.0;
    if (2.0 * bf16_lanes >= 1.25 * fp32_lanes) return kBf16;
  }
  // Thin layers, under 32 input or output channels, where F(4x4) takes them
  // (12 input channels and more): its 4x fewer products beat the direct
  // kernel, whose 16-channel blocks a thin layer half fills, on planes of 14
  // and more, and of 7 from 48 input channels (EPYC, 2 threads, convprof
  // --conv over 12-192 in and 8-64 out on planes of 7-112: 0.36-0.98 of the
  // direct kernel's time there, at worst 1.06; on planes of 7 at 32 in and
  // 16 out 1.26). DBNet's 96->24 heads 1.6 -> 0.57 ms, SqueezeNet's 16->64
  // expands 0.24 -> 0.09 ms.
  if ((q.c < kMinWinogradChannels || q.m < kMinWinogradChannels) && (plane >= 14 || (plane >= 7 && q.c >= 48)) &&
      native_declined(g, n, kWinograd4, bf16).empty())
    return kWinograd4;
  if (native_declined(g, n, kDirect, bf16).empty()) return kDirect;
  return conv_heuristic_algorithm(g, n, threads);
}

size_t nchwc_conv_workspace_bytes(const Graph& g, const Node& n, int threads, const std::string& algo, Bf16Isa bf16) {
  if (is_native(algo)) return NativeConvKernel(g, n, threads, algo, bf16, /*plan_only=*/true).workspace_bytes();
  return WrappedConvKernel(g, n, threads, algo, /*plan_only=*/true).workspace_bytes();
}

double nchwc_bf16_margin(const Graph& g, const Node& n, int threads, Bf16Isa bf16) {
  const std::string h = nchwc_conv_heuristic(g, n, threads, bf16);
  if (h != kBf16 && h != kWinograd2Bf16) return 0.0;
  if (bf16_dot_outpaces_fma(bf16)) return 0.10;
  const int out = n.outputs[0];
  for (const Node& r : g.nodes) {
    if (r.dead || r.op != "Conv" || !r.domain.empty() || r.inputs.empty() || r.inputs[0] != out) continue;
    if (native_declined(g, r, kDepthwise, bf16).empty()) return 0.10;
  }
  return 0.0;
}

std::unique_ptr<Kernel> make_nchwc_tuning_kernel(const Graph& g, const Node& n, int threads, const std::string& algo,
                                                 Bf16Isa bf16) {
  if (algo != kBf16 || bf16 == Bf16Isa::kNone || !nchwc_conv_declined(g, n, algo, bf16).empty())
    return make_nchwc_kernel(g, n, threads, algo, bf16);
  NchwcConvSpec s = conv_spec(g, n);
  if (s.x_bf16 || s.y_bf16 || s.x_u8 || s.y_u8) return make_nchwc_kernel(g, n, threads, algo, bf16);
  std::vector<char> is_output(g.values.size(), 0);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = 1;
  // Whether convolution c would run on bf16 values beside this one: a
  // depthwise one always can; a dense one where the rules pick nchwc_bf16
  // for it (its own measurement, made before or after this one, is not
  // known here; the rules' pick is what a measurement must beat).
  auto bf16_neighbour = [&](const Node& c) {
    return native_declined(g, c, kDepthwise, bf16).empty() || nchwc_conv_heuristic(g, c, threads, bf16) == kBf16;
  };
  // The input made by a live convolution that runs on bf16 (the graph's
  // inputs and constants are float32); the output read only by such
  // convolutions (as data) and by the ops that pass bf16 values on. A
  // float32 neighbour would leave the value float32 in the plan
  // (nchwc_bf16_values), so the form timed is the one that runs.
  const int in = n.inputs[0], out = n.outputs[0];
  bool readers = false, all = !is_output[static_cast<size_t>(out)];
  for (const Node& r : g.nodes) {
    if (r.dead) continue;
    if (r.op == "Conv" && r.domain.empty() && !r.outputs.empty() && r.outputs[0] == in)
      s.x_bf16 = !g.values[static_cast<size_t>(in)].constant && block_of(g, in) == s.block &&
                 !is_output[static_cast<size_t>(in)] && bf16_neighbour(r);
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      if (r.inputs[k] != out) continue;
      readers = true;
      const bool data = k == 0 && r.op == "Conv" && r.domain.empty();
      all = all && ((data && bf16_neighbour(r)) || r.op == "Add" || r.op == "MaxPool" || r.op == "Concat");
    }
  }
  s.y_bf16 = readers && all;
  if (!s.x_bf16 && !s.y_bf16) return make_nchwc_kernel(g, n, threads, algo, bf16);
  if (!bf16_conv_declined(s, bf16).empty()) return make_nchwc_kernel(g, n, threads, algo, bf16);
  return std::make_unique<NativeConvKernel>(g, n, threads, algo, bf16, false, &s);
}

std::unique_ptr<Kernel> make_nchwc_kernel(const Graph& g, const Node& n, int threads, const std::string& algo,
                                          Bf16Isa bf16) {
  const std::string& op = n.op;
  if (op == "Conv") {
    std::string a = algo.empty() ? nchwc_conv_heuristic(g, n, threads, bf16) : algo;
    std::string why = nchwc_conv_declined(g, n, a, bf16);
    if (!why.empty())
      node_fail(ErrorCode::kInvalidArgument, g, n, "Conv algorithm " + a + " cannot run this node: " + why);
    if (is_native(a)) return std::make_unique<NativeConvKernel>(g, n, threads, a, bf16);
    return std::make_unique<WrappedConvKernel>(g, n, threads, a, false);
  }
  if ((op == "MaxPool" || op == "Concat") && is_bf16_value(g, n.outputs[0]))
    return make_nchwc_bf16_data_kernel(g, n, threads);
  if ((op == "MaxPool" || op == "Concat") && is_u8_value(g, n.outputs[0]))
    return make_nchwc_u8_data_kernel(g, n, threads);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool" || op == "Resize" ||
      op == "Upsample" || op == "Concat")
    return make_nchwc_data_kernel(g, n, threads, block_of(g, n.outputs[0]));
  if (auto k = make_nchwc_elementwise_kernel(g, n)) return k;
  node_fail(ErrorCode::kUnsupported, g, n, "the CPU backend has no channel-blocked kernel for " + op);
}

}  // namespace minirt::cpu
