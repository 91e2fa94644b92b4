// minirt-make-models: writes standard CNN topologies as ONNX files with
// deterministic random weights, for the model-level tests against
// onnxruntime (tests/run_model_tests.sh) and for benchmarks.
//
//   minirt-make-models --out build/models                 # all of them, seed 1
//   minirt-make-models --out /tmp/m --seed 7 resnet18 mnist_cnn
//
// The layer structures are torchvision's (ResNet-18/50 v1.5, MobileNetV2
// width 1.0, SqueezeNet 1.1, EfficientNet-B0), a YOLOv5s-like detector
// (ultralytics' v5.0 layout at 416x416), a PP-OCR-like text detector (DBNet
// at 320x320) and a small MNIST CNN. Conv, BatchNormalization
// and activations are separate nodes, as an exporter writes them (SiLU as
// Mul(x, Sigmoid(x)), as torch exports it), so minirt's folding and fusion
// passes have work to do. Weights come from a counter-free
// generator seeded by (seed, tensor name): the same seed gives byte-identical
// files on any machine. See models/README.md.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loaders/onnx/onnx_subset.pb.h"

namespace fs = std::filesystem;
namespace po = minirt::onnx;

namespace {

constexpr int64_t kOpset = 13;
constexpr int64_t kIrVersion = 8;
constexpr const char* kProducer = "minirt-make-models";
constexpr const char* kProducerVersion = "1";

// ---------------------------------------------------------------------------
// Deterministic random numbers: splitmix64 seeded by the model seed and a
// hash of the tensor's name, so each tensor's values depend on nothing else
// (adding a layer or a model never changes the others' weights).

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

class Rng {
 public:
  Rng(uint64_t seed, const std::string& stream) : state_(seed * 0x9E3779B97F4A7C15ull ^ fnv1a(stream)) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1), exactly representable (24 random bits).
  double symmetric() { return static_cast<double>(next() >> 40) * (2.0 / 16777216.0) - 1.0; }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------------------
// Graph building.

class Builder {
 public:
  Builder(std::string name, uint64_t seed) : seed_(seed) {
    model_.set_ir_version(kIrVersion);
    model_.set_producer_name(kProducer);
    model_.set_producer_version(kProducerVersion);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(kOpset);
    graph()->set_name(std::move(name));
  }

  po::GraphProto* graph() { return model_.mutable_graph(); }

  // A graph input or output of float type; a negative dim is the symbolic "N".
  void declare(bool input, const std::string& name, const std::vector<int64_t>& dims) {
    po::ValueInfoProto* v = input ? graph()->add_input() : graph()->add_output();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(po::TensorProto::FLOAT);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }

  // A float initializer stored little-endian in raw_data.
  const std::string& initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& v) {
    po::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(po::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    std::string raw(v.size() * 4, '\0');
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t bits = std::bit_cast<uint32_t>(v[i]);
      for (int b = 0; b < 4; ++b) raw[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);
    }
    t->set_raw_data(std::move(raw));
    return t->name();
  }

  // Uniform in [center - spread, center + spread), from the tensor's own stream.
  std::vector<float> uniform(const std::string& stream, int64_t n, double center, double spread) {
    Rng rng(seed_, stream);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<float>(center + spread * rng.symmetric());
    return v;
  }

  po::NodeProto* node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs) {
    po::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }

  static void attr_int(po::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(po::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_float(po::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(po::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_ints(po::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(po::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_string(po::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(po::AttributeProto::STRING);
    a->set_s(v);
  }

  // An int64 initializer (shapes, slice bounds), little-endian in raw_data.
  const std::string& initializer_i64(const std::string& name, const std::vector<int64_t>& v) {
    po::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(po::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    std::string raw(v.size() * 8, '\0');
    for (size_t i = 0; i < v.size(); ++i) {
      uint64_t bits = static_cast<uint64_t>(v[i]);
      for (int b = 0; b < 8; ++b) raw[i * 8 + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);
    }
    t->set_raw_data(std::move(raw));
    return t->name();
  }

  // Conv with Kaiming-uniform weights (gain sqrt(2), fan_in = cin/groups*k*k),
  // so a Conv+ReLU chain keeps the second moment of its activations.
  // Returns the output value's name, which is the node's name.
  // `gain` scales the weights' range (1: Kaiming).
  std::string conv(const std::string& name, const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                   int64_t pad, int64_t groups = 1, bool bias = false, double gain = 1.0) {
    int64_t fan_in = cin / groups * k * k;
    double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in));
    std::vector<std::string> ins = {x, initializer(name + ".weight", {cout, cin / groups, k, k},
                                                   uniform(name + ".weight", cout * (cin / groups) * k * k, 0, bound))};
    if (bias) ins.push_back(initializer(name + ".bias", {cout}, uniform(name + ".bias", cout, 0, 0.05)));
    po::NodeProto* n = node("Conv", name, ins, {name});
    attr_ints(n, "dilations", {1, 1});
    attr_int(n, "group", groups);
    attr_ints(n, "kernel_shape", {k, k});
    attr_ints(n, "pads", {pad, pad, pad, pad});
    attr_ints(n, "strides", {stride, stride});
    return name;
  }

  // BatchNormalization near identity: scale = gain * (1 +- 0.1), bias and mean
  // +- 0.05, variance 1 +- 0.1 (always positive). `gain` < 1 damps a residual
  // branch so that the sum grows slowly through deep networks.
  std::string batchnorm(const std::string& name, const std::string& x, int64_t c, double gain = 1.0) {
    std::vector<std::string> ins = {
        x, initializer(name + ".weight", {c}, uniform(name + ".weight", c, gain, 0.1 * gain)),
        initializer(name + ".bias", {c}, uniform(name + ".bias", c, 0, 0.05)),
        initializer(name + ".running_mean", {c}, uniform(name + ".running_mean", c, 0, 0.05)),
        initializer(name + ".running_var", {c}, uniform(name + ".running_var", c, 1.0, 0.1))};
    po::NodeProto* n = node("BatchNormalization", name, ins, {name});
    attr_float(n, "epsilon", 1e-5f);
    attr_float(n, "momentum", 0.9f);
    return name;
  }

  std::string relu(const std::string& name, const std::string& x) {
    node("Relu", name, {x}, {name});
    return name;
  }

  // ReLU6 as an exporter writes it at opset 13: Clip with min and max inputs.
  std::string relu6(const std::string& name, const std::string& x) {
    if (!have_relu6_bounds_) {
      initializer("relu6.min", {}, {0.0f});
      initializer("relu6.max", {}, {6.0f});
      have_relu6_bounds_ = true;
    }
    node("Clip", name, {x, "relu6.min", "relu6.max"}, {name});
    return name;
  }

  std::string add(const std::string& name, const std::string& a, const std::string& b) {
    node("Add", name, {a, b}, {name});
    return name;
  }

  std::string mul(const std::string& name, const std::string& a, const std::string& b) {
    node("Mul", name, {a, b}, {name});
    return name;
  }

  std::string sigmoid(const std::string& name, const std::string& x) {
    node("Sigmoid", name, {x}, {name});
    return name;
  }

  // SiLU as torch exports nn.SiLU: Mul(x, Sigmoid(x)), the Sigmoid named
  // NAME.sigmoid and the Mul NAME.
  std::string silu(const std::string& name, const std::string& x) {
    return mul(name, x, sigmoid(name + ".sigmoid", x));
  }

  std::string concat(const std::string& name, const std::vector<std::string>& xs, int64_t axis = 1) {
    attr_int(node("Concat", name, xs, {name}), "axis", axis);
    return name;
  }

  std::string maxpool(const std::string& name, const std::string& x, int64_t k, int64_t stride, int64_t pad,
                      bool ceil) {
    po::NodeProto* n = node("MaxPool", name, {x}, {name});
    if (ceil) attr_int(n, "ceil_mode", 1);
    attr_ints(n, "kernel_shape", {k, k});
    attr_ints(n, "pads", {pad, pad, pad, pad});
    attr_ints(n, "strides", {stride, stride});
    return name;
  }

  std::string global_avgpool(const std::string& name, const std::string& x) {
    node("GlobalAveragePool", name, {x}, {name});
    return name;
  }

  std::string flatten(const std::string& name, const std::string& x) {
    attr_int(node("Flatten", name, {x}, {name}), "axis", 1);
    return name;
  }

  // Dropout at opset 13 with its ratio as an input; inference makes it a copy.
  std::string dropout(const std::string& name, const std::string& x, float ratio) {
    node("Dropout", name, {x, initializer(name + ".ratio", {}, {ratio})}, {name});
    return name;
  }

  // Gemm as torch exports nn.Linear: weight [out, in], transB = 1, with
  // torch's default init range (uniform +- 1/sqrt(in)).
  std::string linear(const std::string& name, const std::string& x, int64_t in, int64_t out,
                     const std::string& y = "") {
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    std::string w = initializer(name + ".weight", {out, in}, uniform(name + ".weight", out * in, 0, bound));
    std::string b = initializer(name + ".bias", {out}, uniform(name + ".bias", out, 0, bound));
    std::string yname = y.empty() ? name : y;
    po::NodeProto* n = node("Gemm", name, {x, w, b}, {yname});
    attr_float(n, "alpha", 1.0f);
    attr_float(n, "beta", 1.0f);
    attr_int(n, "transB", 1);
    return yname;
  }

  std::string conv_bn(const std::string& conv_name, const std::string& bn_name, const std::string& x, int64_t cin,
                      int64_t cout, int64_t k, int64_t stride, int64_t pad, int64_t groups = 1, double gain = 1.0) {
    return batchnorm(bn_name, conv(conv_name, x, cin, cout, k, stride, pad, groups), cout, gain);
  }

  std::string serialize() const { return model_.SerializeAsString(); }

 private:
  po::ModelProto model_;
  uint64_t seed_;
  bool have_relu6_bounds_ = false;
};

// The scale of the last BatchNormalization of every residual branch. With
// near-identity BatchNormalization nothing re-normalizes the activations, so
// each residual add grows their second moment by about 1 + gain^2; 0.5 keeps
// ResNet-50's 16 blocks within a small factor (torchvision's
// zero_init_residual is the gain-0 extreme, which would hide the branches).
constexpr double kResidualGain = 0.5;

// ---------------------------------------------------------------------------
// ResNet (torchvision resnet.py, v1.5: the stride sits on the 3x3 conv).

std::string basic_block(Builder& b, const std::string& p, const std::string& x, int64_t inplanes, int64_t planes,
                        int64_t stride) {
  std::string y = b.relu(p + ".relu1", b.conv_bn(p + ".conv1", p + ".bn1", x, inplanes, planes, 3, stride, 1));
  y = b.conv_bn(p + ".conv2", p + ".bn2", y, planes, planes, 3, 1, 1, 1, kResidualGain);
  std::string identity = x;
  if (stride != 1 || inplanes != planes)
    identity = b.conv_bn(p + ".downsample.0", p + ".downsample.1", x, inplanes, planes, 1, stride, 0);
  return b.relu(p + ".relu2", b.add(p + ".add", y, identity));
}

std::string bottleneck(Builder& b, const std::string& p, const std::string& x, int64_t inplanes, int64_t planes,
                       int64_t stride) {
  const int64_t out = planes * 4;
  std::string y = b.relu(p + ".relu1", b.conv_bn(p + ".conv1", p + ".bn1", x, inplanes, planes, 1, 1, 0));
  y = b.relu(p + ".relu2", b.conv_bn(p + ".conv2", p + ".bn2", y, planes, planes, 3, stride, 1));
  y = b.conv_bn(p + ".conv3", p + ".bn3", y, planes, out, 1, 1, 0, 1, kResidualGain);
  std::string identity = x;
  if (stride != 1 || inplanes != out)
    identity = b.conv_bn(p + ".downsample.0", p + ".downsample.1", x, inplanes, out, 1, stride, 0);
  return b.relu(p + ".relu3", b.add(p + ".add", y, identity));
}

std::string resnet(const std::string& name, bool use_bottleneck, const std::vector<int>& blocks, uint64_t seed) {
  Builder b(name, seed);
  b.declare(true, "input", {-1, 3, 224, 224});
  std::string x = b.relu("relu", b.conv_bn("conv1", "bn1", "input", 3, 64, 7, 2, 3));
  x = b.maxpool("maxpool", x, 3, 2, 1, false);
  const int64_t expansion = use_bottleneck ? 4 : 1;
  int64_t inplanes = 64;
  for (int layer = 0; layer < 4; ++layer) {
    int64_t planes = int64_t{64} << layer;
    for (int i = 0; i < blocks[layer]; ++i) {
      std::string p = "layer" + std::to_string(layer + 1) + "." + std::to_string(i);
      int64_t stride = (layer > 0 && i == 0) ? 2 : 1;
      x = use_bottleneck ? bottleneck(b, p, x, inplanes, planes, stride)
                         : basic_block(b, p, x, inplanes, planes, stride);
      inplanes = planes * expansion;
    }
  }
  x = b.flatten("flatten", b.global_avgpool("avgpool", x));
  b.linear("fc", x, 512 * expansion, 1000, "logits");
  b.declare(false, "logits", {-1, 1000});
  return b.serialize();
}

// ---------------------------------------------------------------------------
// MobileNetV2 (torchvision mobilenetv2.py, width 1.0).

std::string mobilenet_v2(uint64_t seed) {
  Builder b("mobilenetv2", seed);
  b.declare(true, "input", {-1, 3, 224, 224});
  // features.0: Conv2dNormActivation(3, 32, stride 2).
  std::string x = b.relu6("features.0.2", b.conv_bn("features.0.0", "features.0.1", "input", 3, 32, 3, 2, 1));
  struct Setting {
    int64_t t, c, n, s;
  };
  const Setting settings[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t cin = 32;
  int feature = 1;
  for (const auto& st : settings) {
    for (int64_t i = 0; i < st.n; ++i, ++feature) {
      const int64_t stride = i == 0 ? st.s : 1;
      const int64_t hidden = cin * st.t;
      const bool residual = stride == 1 && cin == st.c;
      const std::string p = "features." + std::to_string(feature) + ".conv.";
      std::string y = x;
      int idx = 0;
      if (st.t != 1) {  // expand: 1x1 conv + BN + ReLU6
        std::string q = p + std::to_string(idx++);
        y = b.relu6(q + ".2", b.conv_bn(q + ".0", q + ".1", y, cin, hidden, 1, 1, 0));
      }
      {  // depthwise 3x3
        std::string q = p + std::to_string(idx++);
        y = b.relu6(q + ".2", b.conv_bn(q + ".0", q + ".1", y, hidden, hidden, 3, stride, 1, hidden));
      }
      // linear projection: 1x1 conv + BN, no activation
      std::string conv = p + std::to_string(idx), bn = p + std::to_string(idx + 1);
      y = b.conv_bn(conv, bn, y, hidden, st.c, 1, 1, 0, 1, residual ? kResidualGain : 1.0);
      x = residual ? b.add("features." + std::to_string(feature) + ".add", x, y) : y;
      cin = st.c;
    }
  }
  // features.18: 1x1 conv to 1280 + BN + ReLU6.
  x = b.relu6("features.18.2", b.conv_bn("features.18.0", "features.18.1", x, cin, 1280, 1, 1, 0));
  x = b.flatten("flatten", b.global_avgpool("avgpool", x));
  x = b.dropout("classifier.0", x, 0.2f);
  b.linear("classifier.1", x, 1280, 1000, "logits");
  b.declare(false, "logits", {-1, 1000});
  return b.serialize();
}

// ---------------------------------------------------------------------------
// SqueezeNet 1.1 (torchvision squeezenet.py): no BatchNormalization; convs
// carry biases.

std::string fire(Builder& b, const std::string& p, const std::string& x, int64_t cin, int64_t squeeze, int64_t e1,
                 int64_t e3) {
  std::string s = b.relu(p + ".squeeze_activation", b.conv(p + ".squeeze", x, cin, squeeze, 1, 1, 0, 1, true));
  std::string a = b.relu(p + ".expand1x1_activation", b.conv(p + ".expand1x1", s, squeeze, e1, 1, 1, 0, 1, true));
  std::string c = b.relu(p + ".expand3x3_activation", b.conv(p + ".expand3x3", s, squeeze, e3, 3, 1, 1, 1, true));
  b.attr_int(b.node("Concat", p + ".cat", {a, c}, {p + ".cat"}), "axis", 1);
  return p + ".cat";
}

std::string squeezenet1_1(uint64_t seed) {
  Builder b("squeezenet1_1", seed);
  b.declare(true, "input", {-1, 3, 224, 224});
  std::string x = b.relu("features.1", b.conv("features.0", "input", 3, 64, 3, 2, 0, 1, true));
  x = b.maxpool("features.2", x, 3, 2, 0, true);
  x = fire(b, "features.3", x, 64, 16, 64, 64);
  x = fire(b, "features.4", x, 128, 16, 64, 64);
  x = b.maxpool("features.5", x, 3, 2, 0, true);
  x = fire(b, "features.6", x, 128, 32, 128, 128);
  x = fire(b, "features.7", x, 256, 32, 128, 128);
  x = b.maxpool("features.8", x, 3, 2, 0, true);
  x = fire(b, "features.9", x, 256, 48, 192, 192);
  x = fire(b, "features.10", x, 384, 48, 192, 192);
  x = fire(b, "features.11", x, 384, 64, 256, 256);
  x = fire(b, "features.12", x, 512, 64, 256, 256);
  x = b.dropout("classifier.0", x, 0.5f);
  x = b.relu("classifier.2", b.conv("classifier.1", x, 512, 1000, 1, 1, 0, 1, true));
  x = b.global_avgpool("classifier.3", x);
  b.attr_int(b.node("Flatten", "flatten", {x}, {"logits"}), "axis", 1);
  b.declare(false, "logits", {-1, 1000});
  return b.serialize();
}

// ---------------------------------------------------------------------------
// SiLU networks. SiLU is close to ReLU for large inputs (E[silu(z)^2] is
// 0.49 Var(z) at a standard deviation of 8, ReLU's 0.5) but nearly linear
// with slope 1/2 near zero (0.29 Var(z) at 0.5). With Kaiming weights and
// near-identity BatchNormalization, activations of order 1 therefore shrink
// layer after layer until the BN biases hold them at about 0.1, where the
// logits are tiny and every squeeze-excitation gate sits at 0.5; a slightly
// larger gain instead makes some seeds blow up. So the stem's
// BatchNormalization gets a scale x 8 (kStemGain): the activations start in
// the ReLU-like range and the Kaiming init keeps them there, as it keeps a
// ReLU network's, for every seed tried (1-7).
constexpr double kStemGain = 8.0;

// Squeeze-excitation: its first 1x1 conv sees the pooled activations at
// that x 8 scale, so its weights are scaled back by 1 / kStemGain and the
// gates' pre-activations are of order 1 (gates spread over about 0.3-0.7, as
// in a trained network). Left at Kaiming's range they would be of order 50:
// gates pinned at 0 or 1 except for a few whose argument is near zero, and
// there a rounding difference of 1e-6 relative in the argument moves the
// gate by 1e-5 -- onnxruntime's own optimized and unoptimized graphs then
// differ by 16x the test's tolerance.
constexpr double kSqueezeGain = 1.0 / kStemGain;
// The gated product has about half the second moment of its input (gates
// average 0.5), so the projection after it gets a BN scale x sqrt(2).
constexpr double kSeGain = 1.41421356;
// EfficientNet's last BatchNormalization (features.8.1) scaled by 1/4, so that
// the logits have a standard deviation of 0.3-3.6 (seeds 1-7; 0.68 with
// seed 1) like the other models', rather than 1-15: the test's absolute
// tolerance is meant for outputs at that scale.
constexpr double kClassifierGain = 0.25;

// Conv (no bias) + BatchNormalization + SiLU, the unit both networks are built of.
std::string conv_bn_silu(Builder& b, const std::string& conv_name, const std::string& bn_name,
                         const std::string& act_name, const std::string& x, int64_t cin, int64_t cout, int64_t k,
                         int64_t stride, int64_t groups = 1, double gain = 1.0) {
  return b.silu(act_name, b.conv_bn(conv_name, bn_name, x, cin, cout, k, stride, k / 2, groups, gain));
}

// ---------------------------------------------------------------------------
// EfficientNet-B0 (torchvision efficientnet.py): MBConv blocks with
// squeeze-excitation; stochastic depth is the identity at inference.

std::string efficientnet_b0(uint64_t seed) {
  Builder b("efficientnet_b0", seed);
  b.declare(true, "input", {1, 3, 224, 224});
  // features.0: Conv2dNormActivation(3, 32, 3x3, stride 2, SiLU).
  std::string x = conv_bn_silu(b, "features.0.0", "features.0.1", "features.0.2", "input", 3, 32, 3, 2, 1, kStemGain);
  struct Stage {
    int64_t expand, kernel, stride, channels, repeats;
  };
  // The B0 table: width and depth multipliers 1.0.
  const Stage stages[] = {{1, 3, 1, 16, 1},  {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2}, {6, 3, 2, 80, 3},
                          {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}};
  int64_t cin = 32;
  int stage_index = 1;
  for (const auto& st : stages) {
    for (int64_t i = 0; i < st.repeats; ++i) {
      const std::string blk = "features." + std::to_string(stage_index) + "." + std::to_string(i);
      const std::string p = blk + ".block.";
      const int64_t stride = i == 0 ? st.stride : 1;
      const int64_t hidden = cin * st.expand;
      const int64_t squeeze = std::max<int64_t>(1, cin / 4);  // of the block's input channels
      const bool residual = stride == 1 && cin == st.channels;
      std::string y = x;
      int idx = 0;
      if (st.expand != 1) {  // expand: 1x1 conv + BN + SiLU
        std::string q = p + std::to_string(idx++);
        y = conv_bn_silu(b, q + ".0", q + ".1", q + ".2", y, cin, hidden, 1, 1);
      }
      {  // depthwise kxk with the block's stride
        std::string q = p + std::to_string(idx++);
        y = conv_bn_silu(b, q + ".0", q + ".1", q + ".2", y, hidden, hidden, st.kernel, stride, hidden);
      }
      {  // squeeze-excitation: scale = sigmoid(fc2(silu(fc1(avgpool(y))))), y * scale
        std::string q = p + std::to_string(idx++);
        std::string s = b.global_avgpool(q + ".avgpool", y);
        s = b.silu(q + ".activation", b.conv(q + ".fc1", s, hidden, squeeze, 1, 1, 0, 1, true, kSqueezeGain));
        s = b.sigmoid(q + ".scale_activation", b.conv(q + ".fc2", s, squeeze, hidden, 1, 1, 0, 1, true));
        y = b.mul(q + ".mul", s, y);
      }
      {  // linear projection: 1x1 conv + BN, no activation
        std::string q = p + std::to_string(idx);
        y = b.conv_bn(q + ".0", q + ".1", y, hidden, st.channels, 1, 1, 0, 1,
                      kSeGain * (residual ? kResidualGain : 1.0));
      }
      x = residual ? b.add(blk + ".add", y, x) : y;
      cin = st.channels;
    }
    ++stage_index;
  }
  // features.8: 1x1 conv to 1280 + BN + SiLU.
  x = conv_bn_silu(b, "features.8.0", "features.8.1", "features.8.2", x, cin, 1280, 1, 1, 1, kClassifierGain);
  x = b.flatten("flatten", b.global_avgpool("avgpool", x));
  x = b.dropout("classifier.0", x, 0.2f);
  b.linear("classifier.1", x, 1280, 1000, "logits");
  b.declare(false, "logits", {1, 1000});
  return b.serialize();
}

// ---------------------------------------------------------------------------
// A YOLOv5s-like detector (ultralytics yolov5s.yaml of v5.0: width multiple
// 0.5, depth multiple 0.33) at 416x416, exported as torch writes it: Focus
// as four strided Slices + Concat, nn.Upsample as Resize with scales, the
// Detect heads reshaped to [1, 3, 85, H, W], transposed to [1, 3, H, W, 85]
// and sigmoided.

// The Detect convs' weight range relative to Kaiming's: their inputs have a
// standard deviation of 5-25 (kStemGain), and 0.1 brings the pre-sigmoid
// outputs to a standard deviation of about 0.6-2.6 (seeds 1-7), so that the
// sigmoids are not saturated at 0 or 1 (where float32 would hide any error
// before them).
constexpr double kDetectGain = 0.1;

// ultralytics' Conv: conv (no bias, pad k/2) + BN + SiLU, named P.conv, P.bn, P.act.
std::string yconv(Builder& b, const std::string& p, const std::string& x, int64_t cin, int64_t cout, int64_t k,
                  int64_t stride, double gain = 1.0) {
  return conv_bn_silu(b, p + ".conv", p + ".bn", p + ".act", x, cin, cout, k, stride, 1, gain);
}

// C3: cv3(cat(m(cv1(x)), cv2(x))) with n Bottlenecks (1x1 then 3x3, plus
// the input when `shortcut`) in m, at half the output's channels.
std::string c3(Builder& b, const std::string& p, const std::string& x, int64_t cin, int64_t cout, int n,
               bool shortcut) {
  const int64_t c = cout / 2;
  std::string m = yconv(b, p + ".cv1", x, cin, c, 1, 1);
  for (int i = 0; i < n; ++i) {
    const std::string q = p + ".m." + std::to_string(i);
    std::string y = yconv(b, q + ".cv1", m, c, c, 1, 1);
    // The residual branch's last BN damped like the other models' (kResidualGain).
    y = yconv(b, q + ".cv2", y, c, c, 3, 1, shortcut ? kResidualGain : 1.0);
    m = shortcut ? b.add(q + ".add", m, y) : y;
  }
  std::string side = yconv(b, p + ".cv2", x, cin, c, 1, 1);
  return yconv(b, p + ".cv3", b.concat(p + ".cat", {m, side}), 2 * c, cout, 1, 1);
}

// SPP: cv2(cat(y, maxpool5(y), maxpool9(y), maxpool13(y))) with y = cv1(x);
// the pools have stride 1 and pad k/2, so all four keep y's size.
std::string spp(Builder& b, const std::string& p, const std::string& x, int64_t cin, int64_t cout) {
  const int64_t c = cin / 2;
  std::string y = yconv(b, p + ".cv1", x, cin, c, 1, 1);
  std::vector<std::string> parts = {y};
  for (int64_t k : {5, 9, 13}) parts.push_back(b.maxpool(p + ".m." + std::to_string(k), y, k, 1, k / 2, false));
  return yconv(b, p + ".cv2", b.concat(p + ".cat", parts), 4 * c, cout, 1, 1);
}

// nn.Upsample(scale_factor=2, mode="nearest") as torch exports it at opset
// 11 and later: Resize(x, roi = empty constant, scales = [1, 1, 2, 2]).
std::string upsample(Builder& b, const std::string& name, const std::string& x, float factor) {
  std::string roi = b.initializer(name + ".roi", {0}, {});
  std::string scales = b.initializer(name + ".scales", {4}, {1.0f, 1.0f, factor, factor});
  po::NodeProto* n = b.node("Resize", name, {x, roi, scales}, {name});
  Builder::attr_string(n, "coordinate_transformation_mode", "asymmetric");
  Builder::attr_float(n, "cubic_coeff_a", -0.75f);
  Builder::attr_string(n, "mode", "nearest");
  Builder::attr_string(n, "nearest_mode", "floor");
  return name;
}
std::string upsample2(Builder& b, const std::string& name, const std::string& x) { return upsample(b, name, x, 2.0f); }

std::string yolov5s_like(uint64_t seed) {
  constexpr int64_t kSize = 416, kAnchors = 3, kOutputs = 5 + 80;
  Builder b("yolov5s_like", seed);
  b.declare(true, "input", {1, 3, kSize, kSize});

  // model.0 Focus: x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2],
  // x[..., 1::2, 1::2] concatenated on channels, then a 3x3 Conv.
  const int64_t kEnd = INT64_MAX;  // torch's "to the end"
  std::string axes = b.initializer_i64("model.0.slice.axes", {2, 3});
  std::string steps = b.initializer_i64("model.0.slice.steps", {2, 2});
  std::string ends = b.initializer_i64("model.0.slice.ends", {kEnd, kEnd});
  const int64_t offsets[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};  // (H, W) start of each piece
  std::vector<std::string> pieces;
  for (int i = 0; i < 4; ++i) {
    const std::string n = "model.0.slice" + std::to_string(i);
    std::string starts = b.initializer_i64(n + ".starts", {offsets[i][0], offsets[i][1]});
    b.node("Slice", n, {"input", starts, ends, axes, steps}, {n});
    pieces.push_back(n);
  }
  std::string x = yconv(b, "model.0.conv", b.concat("model.0.cat", pieces), 12, 32, 3, 1, kStemGain);

  // Backbone.
  x = yconv(b, "model.1", x, 32, 64, 3, 2);
  x = c3(b, "model.2", x, 64, 64, 1, true);
  x = yconv(b, "model.3", x, 64, 128, 3, 2);
  const std::string p3 = c3(b, "model.4", x, 128, 128, 3, true);  // stride 8
  x = yconv(b, "model.5", p3, 128, 256, 3, 2);
  const std::string p4 = c3(b, "model.6", x, 256, 256, 3, true);  // stride 16
  x = yconv(b, "model.7", p4, 256, 512, 3, 2);
  x = spp(b, "model.8", x, 512, 512);
  x = c3(b, "model.9", x, 512, 512, 1, false);  // stride 32

  // PAN neck: top-down with upsampling, then bottom-up with strided convs.
  const std::string h10 = yconv(b, "model.10", x, 512, 256, 1, 1);
  x = b.concat("model.12", {upsample2(b, "model.11", h10), p4});
  x = c3(b, "model.13", x, 512, 256, 1, false);
  const std::string h14 = yconv(b, "model.14", x, 256, 128, 1, 1);
  x = b.concat("model.16", {upsample2(b, "model.15", h14), p3});
  const std::string out3 = c3(b, "model.17", x, 256, 128, 1, false);  // P3/8
  x = b.concat("model.19", {yconv(b, "model.18", out3, 128, 128, 3, 2), h14});
  const std::string out4 = c3(b, "model.20", x, 256, 256, 1, false);  // P4/16
  x = b.concat("model.22", {yconv(b, "model.21", out4, 256, 256, 3, 2), h10});
  const std::string out5 = c3(b, "model.23", x, 512, 512, 1, false);  // P5/32

  // model.24 Detect: per level a 1x1 conv (with bias) to 3 * 85 channels,
  // Reshape [1, 3, 85, H, W], Transpose to [1, 3, H, W, 85], Sigmoid.
  const std::string levels[3] = {out3, out4, out5};
  const int64_t channels[3] = {128, 256, 512};
  for (int i = 0; i < 3; ++i) {
    const int64_t hw = kSize / (int64_t{8} << i);
    const std::string p = "model.24.m." + std::to_string(i);
    std::string y = b.conv(p, levels[i], channels[i], kAnchors * kOutputs, 1, 1, 0, 1, true, kDetectGain);
    std::string shape = b.initializer_i64(p + ".shape", {1, kAnchors, kOutputs, hw, hw});
    b.node("Reshape", p + ".reshape", {y, shape}, {p + ".reshape"});
    Builder::attr_ints(b.node("Transpose", p + ".transpose", {p + ".reshape"}, {p + ".transpose"}), "perm",
                       {0, 1, 3, 4, 2});
    const std::string out = "output" + std::to_string(i);
    b.node("Sigmoid", p + ".sigmoid", {p + ".transpose"}, {out});
    b.declare(false, out, {1, kAnchors, hw, hw, kOutputs});
  }
  return b.serialize();
}

// ---------------------------------------------------------------------------
// A PP-OCR-like text detector at 320x320 (DBNet, the layout of PaddleOCR's
// det models): a MobileNetV2-style backbone at width 0.5 (features at
// strides 4, 8, 16 and 32), an FPN (1x1 convs to 96 channels, nearest 2x
// upsampling and adds, a 3x3 conv to 24 channels per level, each upsampled
// to stride 4 and concatenated) and the DB head: 3x3 conv + BN + ReLU,
// ConvTranspose 2x2 stride 2 + BN + ReLU, ConvTranspose 2x2 stride 2 +
// Sigmoid -- the text probability map at the input's size. The head is
// what issue 24's detector row measures: its ConvTranspose steps.

std::string conv_transpose2x2(Builder& b, const std::string& name, const std::string& x, int64_t cin, int64_t cout,
                              bool bias, double gain = 1.0) {
  // Each output pixel reads one tap of each input channel: fan-in cin.
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(cin));
  std::vector<std::string> ins = {
      x, b.initializer(name + ".weight", {cin, cout, 2, 2}, b.uniform(name + ".weight", cin * cout * 4, 0, bound))};
  if (bias) ins.push_back(b.initializer(name + ".bias", {cout}, b.uniform(name + ".bias", cout, 0, 0.05)));
  po::NodeProto* n = b.node("ConvTranspose", name, ins, {name});
  Builder::attr_ints(n, "kernel_shape", {2, 2});
  Builder::attr_ints(n, "strides", {2, 2});
  return name;
}

std::string dbnet_like(uint64_t seed) {
  constexpr int64_t kSize = 320;
  Builder b("dbnet_like", seed);
  b.declare(true, "x", {1, 3, kSize, kSize});
  std::string x = b.relu("backbone.stem.act", b.conv_bn("backbone.stem.conv", "backbone.stem.bn", "x", 3, 16, 3, 2, 1));
  // (expansion, channels, blocks, stride): MobileNetV2's settings at width 0.5.
  struct Setting {
    int64_t t, c, n, s;
  };
  const Setting settings[] = {{1, 8, 1, 1},  {6, 12, 2, 2}, {6, 16, 3, 2}, {6, 32, 4, 2},
                              {6, 48, 3, 1}, {6, 80, 3, 2}, {6, 160, 1, 1}};
  int64_t cin = 16;
  int block = 0;
  std::vector<std::pair<std::string, int64_t>> levels;  // strides 4, 8, 16, 32
  for (size_t si = 0; si < std::size(settings); ++si) {
    const Setting& st = settings[si];
    for (int64_t i = 0; i < st.n; ++i, ++block) {
      const int64_t stride = i == 0 ? st.s : 1, hidden = cin * st.t;
      const bool residual = stride == 1 && cin == st.c;
      const std::string p = "backbone.blocks." + std::to_string(block);
      std::string y = x;
      if (st.t != 1)
        y = b.relu6(p + ".expand.act", b.conv_bn(p + ".expand", p + ".expand.bn", y, cin, hidden, 1, 1, 0));
      y = b.relu6(p + ".dw.act", b.conv_bn(p + ".dw", p + ".dw.bn", y, hidden, hidden, 3, stride, 1, hidden));
      y = b.conv_bn(p + ".project", p + ".project.bn", y, hidden, st.c, 1, 1, 0, 1, residual ? kResidualGain : 1.0);
      x = residual ? b.add(p + ".add", x, y) : y;
      cin = st.c;
    }
    // The last block of the stride-4, 8, 16 stages, and the end (stride 32).
    if (si == 1 || si == 2 || si == 4 || si == 6) levels.push_back({x, cin});
  }
  // FPN, top-down.
  constexpr int64_t kInner = 96, kOut = 24;
  std::string in[4];
  for (int i = 0; i < 4; ++i)
    in[i] = b.conv("neck.in" + std::to_string(i), levels[static_cast<size_t>(i)].first,
                   levels[static_cast<size_t>(i)].second, kInner, 1, 1, 0);
  std::string up = in[3];
  std::string merged[4];
  merged[3] = in[3];
  for (int i = 2; i >= 0; --i) {
    up = b.add("neck.add" + std::to_string(i), upsample2(b, "neck.up" + std::to_string(i), up), in[i]);
    merged[i] = up;
  }
  std::vector<std::string> maps;
  for (int i = 0; i < 4; ++i) {
    std::string p = b.conv("neck.out" + std::to_string(i), merged[i], kInner, kOut, 3, 1, 1);
    if (i > 0) p = upsample(b, "neck.out" + std::to_string(i) + ".up", p, static_cast<float>(1 << i));
    maps.push_back(p);
  }
  std::string f = b.concat("neck.cat", maps);  // 96 channels at stride 4
  // DB head (the probability branch).
  std::string h = b.relu("head.conv.act", b.conv_bn("head.conv", "head.conv.bn", f, 4 * kOut, kOut, 3, 1, 1));
  h = b.relu("head.up1.act", b.batchnorm("head.up1.bn", conv_transpose2x2(b, "head.up1", h, kOut, kOut, true), kOut));
  // The map's logits damped (as YOLO's kDetectGain) so that it is not all 0 or 1.
  h = conv_transpose2x2(b, "head.up2", h, kOut, 1, true, kDetectGain);
  b.node("Sigmoid", "head.sigmoid", {h}, {"maps"});
  b.declare(false, "maps", {1, 1, kSize, kSize});
  return b.serialize();
}

// ---------------------------------------------------------------------------
// A small MNIST CNN at a fixed 1x1x28x28.

std::string mnist_cnn(uint64_t seed) {
  Builder b("mnist_cnn", seed);
  b.declare(true, "input", {1, 1, 28, 28});
  std::string x = b.relu("relu1", b.conv("conv1", "input", 1, 16, 5, 1, 2, 1, true));
  x = b.maxpool("pool1", x, 2, 2, 0, false);
  x = b.relu("relu2", b.conv("conv2", x, 16, 32, 5, 1, 2, 1, true));
  x = b.maxpool("pool2", x, 2, 2, 0, false);
  x = b.flatten("flatten", x);
  x = b.relu("relu3", b.linear("fc1", x, 32 * 7 * 7, 128));
  b.linear("fc2", x, 128, 10, "logits");
  b.declare(false, "logits", {1, 10});
  return b.serialize();
}

const std::map<std::string, std::function<std::string(uint64_t)>>& makers() {
  static const std::map<std::string, std::function<std::string(uint64_t)>> m = {
      {"resnet18",
       [](uint64_t s) {
         return resnet("resnet18", false, {2, 2, 2, 2}, s);
       }},
      {"resnet50",
       [](uint64_t s) {
         return resnet("resnet50", true, {3, 4, 6, 3}, s);
       }},
      {"mobilenetv2", mobilenet_v2},
      {"squeezenet1_1", squeezenet1_1},
      {"mnist_cnn", mnist_cnn},
      {"efficientnet_b0", efficientnet_b0},
      {"yolov5s_like", yolov5s_like},
      {"dbnet_like", dbnet_like},
  };
  return m;
}

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: minirt-make-models --out DIR [--seed N] [NAME...]\n"
               "Writes DIR/NAME.onnx for each NAME (default: all) with deterministic random weights.\n"
               "  --out DIR    output folder (created if missing)\n"
               "  --seed N     weight seed (default 1); the same seed gives byte-identical files\n"
               "models:");
  for (const auto& [name, fn] : makers()) std::fprintf(f, " %s", name.c_str());
  std::fprintf(f, "\nexit status: 0 success, 1 a file could not be written, 2 bad usage\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  uint64_t seed = 1;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--out" || a == "--seed") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "minirt-make-models: %s needs a value\n", a.c_str());
        return 2;
      }
      std::string v = argv[++i];
      if (a == "--out") {
        out = v;
      } else {
        char* end = nullptr;
        seed = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0') {
          std::fprintf(stderr, "minirt-make-models: --seed wants a non-negative integer, got '%s'\n", v.c_str());
          return 2;
        }
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "minirt-make-models: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    } else if (!makers().count(a)) {
      std::fprintf(stderr, "minirt-make-models: unknown model '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    } else {
      names.push_back(a);
    }
  }
  if (out.empty()) {
    usage(stderr);
    return 2;
  }
  if (names.empty())
    for (const auto& [name, fn] : makers()) names.push_back(name);

  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) {
    std::fprintf(stderr, "minirt-make-models: cannot create %s: %s\n", out.c_str(), ec.message().c_str());
    return 1;
  }
  for (const auto& name : names) {
    std::string bytes = makers().at(name)(seed);
    fs::path path = fs::path(out) / (name + ".onnx");
    fs::path tmp = path;
    tmp += ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!f) {
        std::fprintf(stderr, "minirt-make-models: cannot write %s\n", tmp.c_str());
        return 1;
      }
    }
    fs::rename(tmp, path, ec);
    if (ec) {
      std::fprintf(stderr, "minirt-make-models: cannot rename %s to %s: %s\n", tmp.c_str(), path.c_str(),
                   ec.message().c_str());
      return 1;
    }
    std::printf("%s (%.1f MB)\n", path.c_str(), static_cast<double>(bytes.size()) / 1e6);
  }
  return 0;
}
