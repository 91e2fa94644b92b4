// The op table of the activations and the unary math: one row per kind, from
// which the kinds' enums (ActKind, UnaryKind), their names, the ONNX schemas
// and opset versions, the default attributes, the CPU kernel registrations,
// the GPU module's and cuDNN's registrations and support rules, the GPU
// tolerance and the vector forms' accuracy bounds are all derived. Adding an
// activation is one row of MINIRT_ACTIVATIONS plus its math:
//
//   1. a row here;
//   2. its reference, Activation::apply (activation.h; its switch has no
//      default, so -Wswitch, an error under -Werror, names a kind without one);
//   3. and 4. its AVX-512 and AVX2 forms, act_kind_avx512/act_kind_avx2 in
//      kernels/cpu/vmath.h (each ends in a static_assert naming a kind
//      without a form);
//   5. its device form, act_form in kernels/cuda/elementwise.cu (the same
//      static_assert);
//   6. its op case in tests/op_cases/make_op_cases.py (ops.coverage fails
//      for an op without one).
//
// tests/unit/test_op_table.cpp checks the derived places against this table
// (the schema registered with its versions and defaults, a CPU kernel, a GPU
// kernel and support rule, a tolerance family, a vector form within its
// bound), so forgetting any one of them fails a build or a test; `tests/
// README.md` walks through an addition.
//
// This header includes nothing: the CUDA module's device code (compiled by
// nvcc) switches on the kinds it declares.
#pragma once

namespace minirt {

// Which GPU path runs an activation op: cuDNN's activation (kernels/cuda/
// dnn_ops.cpp), the module's own kernel (kernels/cuda/simple_ops.cpp), or
// no op at all (a kind that only the graph passes make, fused into a
// convolution or a product, where the module's device form runs it).
enum class ActGpu : unsigned char { kDnn, kModule, kFusedOnly };

// The family of tools/gpu_tolerance.h that bounds the GPU against the CPU.
enum class GpuTolFamily : unsigned char { kExact, kUlps, kLibrary };

// The element types a unary op takes: float32 only, or float32, int64 and int32.
enum class UnaryTypes : unsigned char { kFloat, kSigned };

// clang-format off

// X(Kind, Name, Op, Versions, AlphaAttr, AlphaDefault, BetaAttr, BetaDefault, Gpu, Tol, Ulps, AbsX)
//   Kind      ActKind::k<Kind>
//   Name      Activation::name(), as --print-plan shows a fused activation
//   Op        the ONNX op that parses to the kind, or nullptr
//   Versions  the op's opset versions (onnx.defs), () for no op
//   Alpha...  the ONNX attribute read into Activation::alpha / beta and its
//             default (nullptr: none); Clip, Gelu and Selu before opset 6
//             have their own rules in runtime/ops/elementwise_ops.cpp
//   Gpu, Tol  ActGpu::k<Gpu>, GpuTolFamily::k<Tol>
//   Ulps,AbsX the CPU vector forms' bound against Activation::apply: Ulps
//             units in the last place of the reference plus AbsX * max(1, |x|)
#define MINIRT_ACTIVATIONS(X)                                                                                             \
  X(None,            "",                   nullptr,           (),             nullptr, 0.0f,  nullptr, 0.0f,  FusedOnly, Exact,   0, 0)     \
  X(Relu,            "Relu",               "Relu",            (1, 6, 13, 14), nullptr, 0.0f,  nullptr, 0.0f,  Dnn,       Ulps,    0, 0)     \
  X(LeakyRelu,       "LeakyRelu",          "LeakyRelu",       (1, 6, 16),     "alpha", 0.01f, nullptr, 0.0f,  Module,    Ulps,    0, 0)     \
  X(Clip,            "Clip",               "Clip",            (1, 6, 11, 12, 13), nullptr, 0.0f, nullptr, 0.0f, Dnn,     Exact,   0, 0)     \
  X(Sigmoid,         "Sigmoid",            "Sigmoid",         (1, 6, 13),     nullptr, 0.0f,  nullptr, 0.0f,  Dnn,       Library, 4, 0)     \
  X(HardSigmoid,     "HardSigmoid",        "HardSigmoid",     (1, 6, 22),     "alpha", 0.2f,  "beta",  0.5f,  Module,    Ulps,    1, 0)     \
  X(HardSwish,       "HardSwish",          "HardSwish",       (14, 22),       nullptr, 0.0f,  nullptr, 0.0f,  Module,    Ulps,    2, 1e-7)  \
  X(Tanh,            "Tanh",               "Tanh",            (1, 6, 13),     nullptr, 0.0f,  nullptr, 0.0f,  Dnn,       Library, 4, 0)     \
  X(Elu,             "Elu",                "Elu",             (1, 6, 22),     "alpha", 1.0f,  nullptr, 0.0f,  Dnn,       Library, 4, 0)     \
  X(Selu,            "Selu",               "Selu",            (1, 6, 22),     "alpha", 1.67326319217681884765625f,                              \
                                                                              "gamma", 1.05070102214813232421875f, Module, Ulps, 4, 0)     \
  X(Celu,            "Celu",               "Celu",            (12, 28),       "alpha", 1.0f,  nullptr, 0.0f,  Module,    Ulps,    4, 0)     \
  X(Softplus,        "Softplus",           "Softplus",        (1, 22),        nullptr, 0.0f,  nullptr, 0.0f,  Module,    Ulps,    4, 0)     \
  X(Softsign,        "Softsign",           "Softsign",        (1, 22),        nullptr, 0.0f,  nullptr, 0.0f,  Module,    Ulps,    0, 0)     \
  X(ThresholdedRelu, "ThresholdedRelu",    "ThresholdedRelu", (10, 22),       "alpha", 1.0f,  nullptr, 0.0f,  Module,    Ulps,    0, 0)     \
  X(Mish,            "Mish",               "Mish",            (18, 22),       nullptr, 0.0f,  nullptr, 0.0f,  Module,    Ulps,    8, 0)     \
  X(Gelu,            "Gelu",               "Gelu",            (20),           nullptr, 0.0f,  nullptr, 0.0f,  Module,    Ulps,    8, 1e-7)  \
  X(GeluTanh,        "Gelu(tanh)",         nullptr,           (),             nullptr, 0.0f,  nullptr, 0.0f,  FusedOnly, Ulps,    8, 1e-7)  \
  X(Silu,            "Silu",               nullptr,           (),             nullptr, 0.0f,  nullptr, 0.0f,  FusedOnly, Ulps,    6, 0)     \
  X(QuantGrid,       "QuantizeDequantize", nullptr,           (),             nullptr, 0.0f,  nullptr, 0.0f,  FusedOnly, Exact,   0, 0)

// X(Kind, Op, Versions, Math, Types)
//   Kind      UnaryKind::k<Kind>
//   Op        the ONNX op, or nullptr (the activations' kind; the copy,
//             which Identity and Dropout parse to with rules of their own)
//   Versions  the op's opset versions, () for none
//   Math      the name of its vector function (kernels/cpu/vmath.h,
//             math_fn_name), or nullptr where libm or another kernel runs it
//   Types     UnaryTypes::k<Types>
// Every unary op runs on the GPU module's unary kernel, within the
// elementwise tolerance (kGpuUlps).
#define MINIRT_UNARY_KINDS(X)                                           \
  X(Activation, nullptr,      (),         nullptr,      Float)          \
  X(Exp,        "Exp",        (1, 6, 13), "exp",        Float)          \
  X(Log,        "Log",        (1, 6, 13), "log",        Float)          \
  X(Sqrt,       "Sqrt",       (1, 6, 13), "sqrt",       Float)          \
  X(Neg,        "Neg",        (1, 6, 13), "neg",        Signed)         \
  X(Abs,        "Abs",        (1, 6, 13), "abs",        Signed)         \
  X(Reciprocal, "Reciprocal", (1, 6, 13), "reciprocal", Float)          \
  X(Floor,      "Floor",      (1, 6, 13), "floor",      Float)          \
  X(Ceil,       "Ceil",       (1, 6, 13), "ceil",       Float)          \
  X(Erf,        "Erf",        (9, 13),    "erf",        Float)          \
  X(Sin,        "Sin",        (7, 22),    nullptr,      Float)          \
  X(Cos,        "Cos",        (7, 22),    nullptr,      Float)          \
  X(Sign,       "Sign",       (9, 13),    "sign",       Signed)         \
  X(Copy,       nullptr,      (),         nullptr,      Float)

// clang-format on

#define MINIRT_OP_TABLE_KIND(Kind, ...) k##Kind,

// The activation kinds, in the table's order; kCount is their number.
enum class ActKind : unsigned char { MINIRT_ACTIVATIONS(MINIRT_OP_TABLE_KIND) kCount };
inline constexpr int kActKindCount = static_cast<int>(ActKind::kCount);

// The unary math kinds, in the table's order.
enum class UnaryKind { MINIRT_UNARY_KINDS(MINIRT_OP_TABLE_KIND) kCount };
inline constexpr int kUnaryKindCount = static_cast<int>(UnaryKind::kCount);

// ---- the rows as data, for the code that derives from them

#define MINIRT_OP_TABLE_UNPAREN(...) \
  { __VA_ARGS__ }

struct OpAttrDefault {
  const char* attr;  // nullptr: the kind has no such attribute
  float value;
};

struct ActInfo {
  ActKind kind;
  const char* name;
  const char* op;
  int versions[8];  // ascending, 0-terminated
  OpAttrDefault alpha, beta;
  ActGpu gpu;
  GpuTolFamily tol;
  double ulps, abs_x;
};

#define MINIRT_OP_TABLE_ACT_INFO(Kind, Name, Op, Versions, AlphaAttr, AlphaDefault, BetaAttr, BetaDefault, Gpu, Tol, \
                                 Ulps, AbsX)                                                                         \
  {ActKind::k##Kind,                                                                                                 \
   Name,                                                                                                             \
   Op,                                                                                                               \
   MINIRT_OP_TABLE_UNPAREN Versions,                                                                                 \
   {AlphaAttr, AlphaDefault},                                                                                        \
   {BetaAttr, BetaDefault},                                                                                          \
   ActGpu::k##Gpu,                                                                                                   \
   GpuTolFamily::k##Tol,                                                                                             \
   Ulps,                                                                                                             \
   AbsX},

inline constexpr ActInfo kActInfo[] = {MINIRT_ACTIVATIONS(MINIRT_OP_TABLE_ACT_INFO)};

struct UnaryInfo {
  UnaryKind kind;
  const char* op;
  int versions[8];
  const char* math;
  UnaryTypes types;
};

#define MINIRT_OP_TABLE_UNARY_INFO(Kind, Op, Versions, Math, Types) \
  {UnaryKind::k##Kind, Op, MINIRT_OP_TABLE_UNPAREN Versions, Math, UnaryTypes::k##Types},

inline constexpr UnaryInfo kUnaryInfo[] = {MINIRT_UNARY_KINDS(MINIRT_OP_TABLE_UNARY_INFO)};

#undef MINIRT_OP_TABLE_ACT_INFO
#undef MINIRT_OP_TABLE_UNARY_INFO
#undef MINIRT_OP_TABLE_UNPAREN
#undef MINIRT_OP_TABLE_KIND

static_assert(sizeof(kActInfo) / sizeof(kActInfo[0]) == kActKindCount, "one row per ActKind");
static_assert(sizeof(kUnaryInfo) / sizeof(kUnaryInfo[0]) == kUnaryKindCount, "one row per UnaryKind");

// The row of a kind (the rows are in the enums' order).
constexpr const ActInfo& act_info(ActKind k) { return kActInfo[static_cast<int>(k)]; }
constexpr const UnaryInfo& unary_info(UnaryKind k) { return kUnaryInfo[static_cast<int>(k)]; }

}  // namespace minirt
