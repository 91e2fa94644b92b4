#include "kernels/cuda/support.h"

#include <climits>
#include <iterator>

#include "runtime/ops/conv.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/linalg.h"
#include "runtime/ops/resize.h"
#include "runtime/ops/shape_ops.h"

namespace minirt::cuda {

namespace {

constexpr int kMaxMoveRank = 8;    // kernels.h kMaxRank
constexpr int kMaxOperands = 4;    // kernels.h kMaxInputs
constexpr int kMaxLinearAxes = 4;  // Resize: 2^4 corners per output element

bool is_one_of(const std::string& op, std::initializer_list<const char*> ops) {
  for (const char* o : ops)
    if (op == o) return true;
  return false;
}

bool say(std::string* why, std::string text) {
  if (why) *why = std::move(text);
  return false;
}

const Value* input(const Graph& g, const Node& n, size_t i) {
  int v = n.input(i);
  return v >= 0 ? &g.values[v] : nullptr;
}

// Every used input and output: known shape, not empty, dimensions and
// element counts cuDNN's int fields and the kernels' grids can hold.
bool shapes_fit(const Graph& g, const Node& n, std::string* why) {
  auto check = [&](int v) -> bool {
    if (v < 0) return true;
    const Value& val = g.values[v];
    if (!val.shape_known) return say(why, "shape of '" + val.name + "' unknown at plan time");
    int64_t count = 1;
    for (int64_t d : val.shape) {
      if (d > INT_MAX) return say(why, "a dimension of " + std::to_string(d) + " (cuDNN takes at most 2^31-1)");
      count *= d;
    }
    if (count == 0) return say(why, "zero-sized tensor '" + val.name + "'");
    if (count > INT_MAX)
      return say(why, "tensor '" + val.name + "' has " + std::to_string(count) + " elements (at most 2^31-1 on cuda)");
    return true;
  };
  for (int v : n.inputs)
    if (!check(v)) return false;
  for (int v : n.outputs)
    if (!check(v)) return false;
  return true;
}

// Every used input and output is float32.
bool all_float(const Graph& g, const Node& n, std::string* why) {
  for (const auto* ids : {&n.inputs, &n.outputs})
    for (int v : *ids) {
      if (v < 0) continue;
      DType t = g.values[v].dtype;
      if (t != DType::kFloat32) return say(why, std::string("float32 only on cuda, got ") + dtype_name(t));
    }
  return true;
}

bool movable_dtype(const Graph& g, int v, std::string* why) {
  if (v < 0) return true;
  size_t es = dtype_size(g.values[v].dtype);
  if (es == 1 || es == 2 || es == 4 || es == 8) return true;
  return say(why, std::string("dtype ") + dtype_name(g.values[v].dtype) + " not moved on cuda");
}

bool rank_at_most(const Graph& g, int v, int most, std::string* why) {
  if (v < 0) return true;
  if (static_cast<int>(g.values[v].shape.size()) <= most) return true;
  return say(why,
             "rank " + std::to_string(g.values[v].shape.size()) + " (at most " + std::to_string(most) + " on cuda)");
}

bool only_first_output(const Node& n, const char* what, std::string* why) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] >= 0) return say(why, std::string("its ") + what + " output");
  return true;
}

}  // namespace

namespace rules {

bool conv(const Graph& g, const Node& n, std::string* why) {
  if (!all_float(g, n, why)) return false;
  size_t r = g.values[n.inputs[0]].shape.size();
  // 3-D windows run on the CPU (kernels/cpu/conv.cpp's Conv3dKernel).
  if (r < 3 || r > 4) return say(why, std::to_string(r - 2) + "-D convolution (1-D and 2-D on cuda; 3-D on the CPU)");
  if (n.input(3) >= 0) return say(why, "a fused residual input (the CPU's fusion)");
  return true;
}

bool pool(const Graph& g, const Node& n, std::string* why) {
  if (!all_float(g, n, why)) return false;
  size_t r = g.values[n.inputs[0]].shape.size();
  if (r < 3 || r > 4) return say(why, std::to_string(r - 2) + "-D pooling (1-D and 2-D on cuda; 3-D on the CPU)");
  return true;
}

bool lrn(const Graph& g, const Node& n, std::string* why) {
  if (!all_float(g, n, why)) return false;
  if (g.values[n.inputs[0]].shape.size() != 4) return say(why, "LRN of rank other than 4 (cuDNN's LRN is 4-D)");
  const auto& a = n.attrs_as<LrnAttrs>();
  // cudnnSetLRNDescriptor's window is [c - floor((n-1)/2), c + n - 1 -
  // floor((n-1)/2)], ONNX's [c - floor((size-1)/2), c + ceil((size-1)/2)]:
  // the same for even sizes too. Its limits (CUDNN_LRN_MIN_N, _MAX_N,
  // _MIN_BETA, _MIN_K in cudnn_ops.h) are doubles, and the attributes reach
  // it as doubles: 0.01f is 0.0099999998 and 1e-5f 9.9999997e-6, below them.
  if (a.size < 1 || a.size > 16)
    return say(why, "size " + std::to_string(a.size) + " (cuDNN's LRN takes sizes from 1 to 16)");
  if (static_cast<double>(a.beta) < 0.01) return say(why, "beta below 0.01 (cuDNN's minimum)");
  if (static_cast<double>(a.bias) < 1e-5) return say(why, "bias below 1e-5 (cuDNN's minimum)");
  return true;
}

bool batchnorm(const Graph& g, const Node& n, std::string* why) {
  if (!all_float(g, n, why) || !only_first_output(n, "training statistics", why)) return false;
  size_t r = g.values[n.inputs[0]].shape.size();
  if (r < 2 || r > 5) return say(why, "rank " + std::to_string(r) + " (2 to 5 on cuda)");
  int64_t c = g.values[n.inputs[0]].shape[1];
  for (size_t i = 1; i < 5; ++i) {
    const Value* p = input(g, n, i);
    if (!p || p->shape != Shape{c}) return say(why, "per-channel parameters not of shape [C]");
  }
  return true;
}

bool softmax(const Graph& g, const Node& n, std::string* why) {
  if (!all_float(g, n, why)) return false;
  if (g.values[n.inputs[0]].shape.empty()) return say(why, "a scalar input");
  return true;
}

bool unary(const Graph& g, const Node& n, std::string* why) {
  const auto& a = n.attrs_as<UnaryAttrs>();
  if (a.kind == UnaryKind::kCopy) {
    if (n.op == "Dropout" && !only_first_output(n, "mask", why)) return false;
    return movable_dtype(g, n.inputs[0], why);
  }
  // Clip's min and max beyond the data input are plan-time constants in the attributes.
  for (int v : n.outputs)
    if (v >= 0 && g.values[v].dtype != DType::kFloat32)
      return say(why, std::string("float32 only on cuda, got ") + dtype_name(g.values[v].dtype));
  if (g.values[n.inputs[0]].dtype != DType::kFloat32)
    return say(why, std::string("float32 only on cuda, got ") + dtype_name(g.values[n.inputs[0]].dtype));
  return true;
}

bool broadcast(const Graph& g, const Node& n, std::string* why) {
  if (n.op == "Pow" && g.values[n.inputs[1]].dtype != DType::kFloat32)
    return say(why,
               std::string("exponent of dtype ") + dtype_name(g.values[n.inputs[1]].dtype) + " (float32 only on cuda)");
  if (!all_float(g, n, why)) return false;
  if (n.inputs.size() > static_cast<size_t>(kMaxOperands))
    return say(why, std::to_string(n.inputs.size()) + " inputs (at most " + std::to_string(kMaxOperands) + " on cuda)");
  for (int v : n.inputs)
    if (v < 0) return say(why, "a missing input");
  return rank_at_most(g, n.outputs[0], kMaxMoveRank, why);
}

bool resize(const Graph& g, const Node& n, std::string* why) {
  const Value& x = g.values[n.inputs[0]];
  const Value& y = g.values[n.outputs[0]];
  if (x.dtype != DType::kFloat32) return say(why, std::string("float32 only on cuda, got ") + dtype_name(x.dtype));
  if (!rank_at_most(g, n.inputs[0], kMaxMoveRank, why)) return false;
  if (x.shape.empty()) return say(why, "a scalar input");
  const auto& a = n.attrs_as<ResizeAttrs>();
  if (a.scales.size() != x.shape.size()) return say(why, "scales not resolved per axis");
  if (a.mode == ResizeMode::kCubic) return say(why, "cubic mode (the CPU runs it)");
  if (a.antialias) return say(why, "antialias (the CPU runs it)");
  if (a.coord == CoordMode::kTfCropAndResize) return say(why, "tf_crop_and_resize (the CPU runs it)");
  if (a.mode == ResizeMode::kLinear) {
    int blended = 0;
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (!(a.scales[d] == 1.0f && x.shape[d] == y.shape[d])) ++blended;
    if (blended > kMaxLinearAxes)
      return say(why, "linear over " + std::to_string(blended) + " axes (at most " + std::to_string(kMaxLinearAxes) +
                          " on cuda)");
  }
  return true;
}

bool movement(const Graph& g, const Node& n, std::string* why) {
  if (!movable_dtype(g, n.inputs[0], why)) return false;
  if (is_one_of(n.op, {"Transpose", "Slice", "Expand", "Pad"})) {
    if (!rank_at_most(g, n.inputs[0], kMaxMoveRank, why) || !rank_at_most(g, n.outputs[0], kMaxMoveRank, why))
      return false;
  }
  if (n.op == "Gather") {
    DType t = g.values[n.inputs[1]].dtype;
    if (t != DType::kInt64 && t != DType::kInt32) return say(why, std::string("indices of dtype ") + dtype_name(t));
  }
  if (n.op == "Pad" && n.input(2) >= 0 && !g.values[n.inputs[2]].constant)
    return say(why, "a constant_value computed at run time");
  if (n.op == "Pad" && n.attrs_as<PadAttrs>().mode == PadMode::kWrap)
    return say(why, "pad mode 'wrap' (the CPU has it)");
  if (n.op == "Concat")
    for (int v : n.inputs)
      if (v >= 0 && g.values[v].dtype != g.values[n.inputs[0]].dtype) return say(why, "inputs of mixed dtypes");
  if (n.op == "Concat" || n.op == "Split") {
    // One cudaMemcpy2DAsync per part, with the whole tensor's rows as its
    // pitch: a pitch over cudaDevAttrMaxPitch (2^31-1 bytes) fails.
    const Value& whole = g.values[n.op == "Concat" ? n.outputs[0] : n.inputs[0]];
    int64_t axis = n.attrs_as<AxisAttrs>().axis;
    int64_t row = static_cast<int64_t>(dtype_size(whole.dtype));
    for (size_t i = static_cast<size_t>(axis); i < whole.shape.size(); ++i) row *= whole.shape[i];
    if (row > INT_MAX)
      return say(why, "rows of " + std::to_string(row) + " bytes (cudaMemcpy2D takes pitches up to 2^31-1)");
  }
  return true;
}

bool global_pool(const Graph& g, const Node& n, std::string* why) {
  if (!all_float(g, n, why)) return false;
  if (g.values[n.inputs[0]].shape.size() < 3) return say(why, "rank below 3");
  return true;
}

bool float32_only(const Graph& g, const Node& n, std::string* why) { return all_float(g, n, why); }

// Between float32, int64, int32, int8, uint8 and bool, converting as the CPU
// kernel does (kernels/cpu/shape.cpp). float16 and bfloat16 stay on the CPU,
// and so do the Casts the half lowering made (rounding float32 to half precision).
bool cast(const Graph& g, const Node& n, std::string* why) {
  for (int v : {n.inputs[0], n.outputs[0]}) {
    DType t = g.values[v].dtype;
    if (t != DType::kFloat32 && t != DType::kInt64 && t != DType::kInt32 && t != DType::kInt8 && t != DType::kUInt8 &&
        t != DType::kBool)
      return say(why, std::string("a cast from or to ") + dtype_name(t) + " (the CPU runs it)");
  }
  if (n.attrs_as<CastAttrs>().round != DType::kUndefined)
    return say(why, "rounding to half precision (the CPU runs it)");
  return true;
}

}  // namespace rules

namespace {

// Every op in one family only, so an op has one rule and one kernel.
template <typename Table>
constexpr bool in_one_family(const Table& table) {
  for (const SupportEntry& e : table)
    if (count_op(kDnnSupport, e.op) + count_op(kBlasSupport, e.op) + count_op(kSimpleSupport, e.op) != 1) return false;
  return true;
}
static_assert(in_one_family(kDnnSupport) && in_one_family(kBlasSupport) && in_one_family(kSimpleSupport),
              "an op is listed twice in the CUDA support tables (kernels/cuda/support.h)");

constexpr size_t kOpCount = std::size(kDnnSupport) + std::size(kBlasSupport) + std::size(kSimpleSupport);

struct Table {
  const char* names[kOpCount] = {};
  const SupportEntry* entries[kOpCount] = {};
  Table() {
    size_t i = 0;
    for (const SupportEntry& e : kDnnSupport) add(i, e);
    for (const SupportEntry& e : kBlasSupport) add(i, e);
    for (const SupportEntry& e : kSimpleSupport) add(i, e);
  }
  void add(size_t& i, const SupportEntry& e) {
    names[i] = e.op;
    entries[i++] = &e;
  }
  const SupportEntry* find(const std::string& op) const {
    for (const SupportEntry* e : entries)
      if (op == e->op) return e;
    return nullptr;
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

const char* const* cuda_ops(size_t* count) {
  *count = kOpCount;
  return table().names;
}

bool cuda_supports(const Graph& g, const Node& n, std::string* why) {
  const SupportEntry* e = table().find(n.op);
  if (!e || !n.domain.empty()) return say(why, "not implemented on cuda");
  if (n.inputs.empty() || n.inputs[0] < 0) return say(why, "no data input");
  if (!shapes_fit(g, n, why)) return false;
  return e->supports(g, n, why);
}

}  // namespace minirt::cuda
