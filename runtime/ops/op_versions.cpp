#include "runtime/ops/op_versions.h"

#include <map>

#include "runtime/ops/op_table.h"

namespace minirt {

namespace {

// The ops listed below, and the activation and unary math ops with the
// versions their rows in runtime/ops/op_table.h give.
std::map<std::string, std::vector<int>> with_op_table_rows(std::map<std::string, std::vector<int>> t) {
  auto add = [&](const char* op, const int(&versions)[8]) {
    if (!op) return;
    std::vector<int>& v = t[op];
    for (int x : versions)
      if (x != 0) v.push_back(x);
  };
  for (const ActInfo& e : kActInfo) add(e.op, e.versions);
  for (const UnaryInfo& e : kUnaryInfo) add(e.op, e.versions);
  return t;
}

// clang-format off
const std::map<std::string, std::vector<int>>& table() {
  static const std::map<std::string, std::vector<int>> t = with_op_table_rows({
    {"Add", {1, 6, 7, 13, 14}},
    {"And", {1, 7}},
    {"ArgMax", {1, 11, 12, 13}},
    {"ArgMin", {1, 11, 12, 13}},
    {"AveragePool", {1, 7, 10, 11, 19, 22}},
    {"BatchNormalization", {1, 6, 7, 9, 14, 15}},
    {"Cast", {1, 6, 9, 13, 19, 21, 23, 24, 25, 28}},
    {"CastLike", {15, 19, 21, 23, 24, 25}},
    {"CenterCropPad", {18}},
    {"Compress", {9, 11, 28}},
    {"Concat", {1, 4, 11, 13}},
    {"Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}},
    {"ConstantOfShape", {9, 20, 21, 23, 24, 25}},
    {"Conv", {1, 11, 22}},
    {"ConvInteger", {10}},
    {"ConvTranspose", {1, 11, 22}},
    {"DepthToSpace", {1, 11, 13, 28}},
    {"DequantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28}},
    {"Div", {1, 6, 7, 13, 14}},
    {"Dropout", {1, 6, 7, 10, 12, 13, 22}},
    {"DynamicQuantizeLinear", {11}},
    {"Equal", {1, 7, 11, 13, 19}},
    {"Expand", {8, 13}},
    {"Flatten", {1, 9, 11, 13, 21, 23, 24, 25}},
    {"Gather", {1, 11, 13}},
    {"GatherElements", {11, 13}},
    {"GatherND", {11, 12, 13}},
    {"Gemm", {1, 6, 7, 9, 11, 13}},
    {"GlobalAveragePool", {1, 22}},
    {"GlobalMaxPool", {1, 22}},
    {"Greater", {1, 7, 9, 13}},
    {"GreaterOrEqual", {12, 16}},
    {"GridSample", {16, 20, 22}},
    {"GroupNormalization", {18, 21}},
    {"Hardmax", {1, 11, 13}},
    {"Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}},
    {"InstanceNormalization", {1, 6, 22}},
    {"IsInf", {10, 20}},
    {"IsNaN", {9, 13, 20}},
    {"LRN", {1, 13}},
    {"LayerNormalization", {17}},
    {"Less", {1, 7, 9, 13}},
    {"LessOrEqual", {12, 16}},
    {"LogSoftmax", {1, 11, 13}},
    {"LpNormalization", {1, 22}},
    {"LpPool", {1, 2, 11, 18, 22}},
    {"MatMul", {1, 9, 13}},
    {"MatMulInteger", {10}},
    {"Max", {1, 6, 8, 12, 13}},
    {"MaxPool", {1, 8, 10, 11, 12, 22}},
    {"Mean", {1, 6, 8, 13}},
    {"Min", {1, 6, 8, 12, 13}},
    {"Mod", {10, 13, 28}},
    {"Mul", {1, 6, 7, 13, 14}},
    {"NonMaxSuppression", {10, 11}},
    {"NonZero", {9, 13}},
    {"Not", {1}},
    {"OneHot", {9, 11, 28}},
    {"Or", {1, 7}},
    {"PRelu", {1, 6, 7, 9, 16}},
    {"Pad", {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}},
    {"Pow", {1, 7, 12, 13, 15}},
    {"QLinearConv", {10}},
    {"QLinearMatMul", {10, 21}},
    {"QuantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28}},
    {"Range", {11, 27}},
    {"ReduceL1", {1, 11, 13, 18}},
    {"ReduceL2", {1, 11, 13, 18}},
    {"ReduceLogSum", {1, 11, 13, 18, 28}},
    {"ReduceLogSumExp", {1, 11, 13, 18, 28}},
    {"ReduceMax", {1, 11, 12, 13, 18, 20}},
    {"ReduceMean", {1, 11, 13, 18}},
    {"ReduceMin", {1, 11, 12, 13, 18, 20}},
    {"ReduceProd", {1, 11, 13, 18}},
    {"ReduceSum", {1, 11, 13}},
    {"ReduceSumSquare", {1, 11, 13, 18}},
    {"Reshape", {1, 5, 13, 14, 19, 21, 23, 24, 25}},
    {"Resize", {10, 11, 13, 18, 19}},
    {"RoiAlign", {10, 16, 22}},
    {"Scatter", {9, 11}},
    {"ScatterElements", {11, 13, 16, 18}},
    {"ScatterND", {11, 13, 16, 18}},
    {"Shape", {1, 13, 15, 19, 21, 23, 24, 25}},
    {"Size", {1, 13, 19, 21, 23, 24, 25}},
    {"Slice", {1, 10, 11, 13}},
    {"Softmax", {1, 11, 13}},
    {"SpaceToDepth", {1, 13, 28}},
    {"Split", {1, 2, 11, 13, 18}},
    {"Squeeze", {1, 11, 13, 21, 23, 24, 25}},
    {"Sub", {1, 6, 7, 13, 14}},
    {"Sum", {1, 6, 8, 13}},
    {"Tile", {1, 6, 13}},
    {"TopK", {1, 10, 11, 24}},
    {"Transpose", {1, 13, 21, 23, 24, 25}},
    {"Trilu", {14}},
    {"Unique", {11, 28}},
    {"Unsqueeze", {1, 11, 13, 21, 23, 24, 25}},
    {"Upsample", {1, 7, 9, 10}},
    {"Where", {9, 16}},
    {"Xor", {1, 7}},
    // com.microsoft:begin (onnxruntime's contrib ops: version 1 of that domain)
    {"QGemm", {1}},
    {"QLinearAdd", {1}},
    {"QLinearAveragePool", {1}},
    {"QLinearConcat", {1}},
    {"QLinearGlobalAveragePool", {1}},
    {"QLinearLeakyRelu", {1}},
    {"QLinearMul", {1}},
    {"QLinearSigmoid", {1}},
    {"QLinearSoftmax", {1}},
    // com.microsoft:end
  });
  return t;
}
// clang-format on

}  // namespace

const std::vector<int>* op_versions(const std::string& op) {
  auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

int op_version_at(const std::string& op, int64_t opset) {
  const std::vector<int>* v = op_versions(op);
  int at = 0;
  if (v)
    for (int x : *v)
      if (x <= opset) at = x;
  return at;
}

std::vector<std::string> op_version_table_ops() {
  std::vector<std::string> out;
  for (const auto& [op, v] : table()) out.push_back(op);
  return out;
}

}  // namespace minirt
