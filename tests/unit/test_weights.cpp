// A model's weights in memory (runtime/weight_store.h, loaders/onnx/onnx_wire.h):
// read in place from the mapped file, held once, packed, by the plans; the
// originals given back after planning and read from the file again for a
// new input shape; what Session::weight_stats() reports; and files that
// the walk over the wire format finds odd or broken load, or fail, exactly
// as from memory. The sessions take the heuristic's algorithms: with the
// default, a background tuner would hold originals while it measures and
// swap plans between the runs compared (test_background_tuning.cpp).
#include <minirt/minirt.h>

#include "kernels/cpu/cpu_backend.h"
#include "loaders/onnx/onnx_loader.h"
#include "loaders/onnx/onnx_wire.h"
#include "model_builder.h"
#include "runtime/api/model_impl.h"
#include "runtime/constant_cache.h"
#include "runtime/planner.h"
#include "runtime/thread_pool.h"
#include "runtime/weight_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

namespace minirt {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using testing::noise;

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("minirt_weights_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << bytes;
    return (dir / name).string();
  }
};

// Conv (73 KiB of weights) + BatchNormalization + Relu, plus a constant read
// as it is at run time (an Add of 64 KiB), GlobalAveragePool, and a Gemm
// whose 75 KiB of B it packs. Batch N symbolic.
constexpr size_t kAddBytes = 64 * 16 * 16 * 4;
std::string test_model() {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {-1, 32, 16, 16}, {"N"});
  m.initializer("w", noise({64, 32, 3, 3}, 1));
  m.initializer("scale", noise({64}, 2));
  m.initializer("shift", noise({64}, 3));
  m.initializer("mean", noise({64}, 4));
  Tensor var = noise({64}, 5);
  for (int64_t i = 0; i < 64; ++i) var.data<float>()[i] += 2.0f;
  m.initializer("var", var);
  m.initializer("offset", noise({1, 64, 16, 16}, 6));
  m.initializer("fc", noise({64, 300}, 7));
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"b"}, "bn");
  m.node("Relu", {"b"}, {"r"}, "relu");
  m.node("Add", {"r", "offset"}, {"a"}, "add");
  m.node("GlobalAveragePool", {"a"}, {"p"}, "pool");
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  m.node("Gemm", {"f", "fc"}, {"y"}, "fc");
  m.output("y");
  return m.bytes();
}

size_t initializer_bytes(const std::string& bytes) {
  onnx::ModelProto mp;
  EXPECT_TRUE(mp.ParseFromString(bytes));
  size_t n = 0;
  for (const auto& t : mp.graph().initializer()) n += t.raw_data().size();
  return n;
}

std::vector<float> run(Session& s, int64_t n, uint32_t seed) {
  std::vector<Tensor> y = s.run({{"x", noise({n, 32, 16, 16}, seed)}});
  return std::vector<float>(y[0].data<float>(), y[0].data<float>() + y[0].numel());
}

TEST(Weights, FromAFileTheModelKeepsOnlyWhatPlansReadAsItIsAndReadsTheRestAgainForANewShape) {
  TempDir d;
  const std::string bytes = test_model();
  auto from_file = Model::load(d.write("m.onnx", bytes));
  auto from_memory = Model::load_from_memory(bytes.data(), bytes.size(), "m.onnx");
  Session s(from_file, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});
  Session ref(from_memory, {.device = Device::kCpu, .threads = 2, .tuning = TuningMode::kHeuristic});

  WeightStats before = s.weight_stats();
  EXPECT_EQ(before.model_bytes, initializer_bytes(bytes));
  EXPECT_EQ(before.model_resident_bytes, before.model_bytes);  // nothing planned yet
  EXPECT_EQ(before.packed_bytes, 0u);

  EXPECT_EQ(run(s, 1, 10), run(ref, 1, 10));
  WeightStats w = s.weight_stats();
  EXPECT_EQ(w.model_bytes, before.model_bytes);
  // The Add reads its constant as it is: held. The convolution's weights
  // (BatchNormalization folded into a copy the kernel packed) and the
  // Gemm's B (packed) are given back; the small ones stay.
  EXPECT_GE(w.model_resident_bytes, kAddBytes);
  EXPECT_LT(w.model_resident_bytes, kAddBytes + 64 * 1024);
  EXPECT_GE(w.packed_bytes, 64 * 32 * 9 * 4 + 64 * 300 * 4);
  EXPECT_GT(w.released_constants, 0u);
  EXPECT_LT(w.plan_bytes, 64 * 1024u);  // biases, not the folded weights
  // The model loaded from memory keeps its weights.
  EXPECT_EQ(ref.weight_stats().model_resident_bytes, ref.weight_stats().model_bytes);

  // A new batch size plans again from the file's bytes.
  EXPECT_EQ(run(s, 3, 11), run(ref, 3, 11));
  EXPECT_EQ(s.weight_stats().model_resident_bytes, w.model_resident_bytes);
  // And the first plan still runs as it did.
  EXPECT_EQ(run(s, 1, 12), run(ref, 1, 12));
  // A second session on the same model plans from it too.
  Session t(from_file, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  EXPECT_EQ(run(t, 2, 13), run(ref, 2, 13));
}

TEST(Weights, OnceAPlanIsMadeTheOriginalsOfPackedWeightsAreGivenBack) {
  TempDir d;
  auto model = Model::load(d.write("m.onnx", test_model()));
  const Graph& g = model->impl().graph;
  ASSERT_TRUE(g.weights);
  EXPECT_EQ(g.weights->entries(), 3u);  // w, offset, fc: 64 KiB or more each
  EXPECT_TRUE(g.weights->releases());
  const size_t all = g.weights->bytes();
  EXPECT_EQ(g.weights->resident_bytes(), all);
  {
    Session s(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
    run(s, 1, 1);
    EXPECT_EQ(g.weights->resident_bytes(), kAddBytes);  // the plan holds the Add's constant alone
    EXPECT_EQ(g.weights->bytes(), all);
  }
  EXPECT_EQ(g.weights->resident_bytes(), 0u);  // no plan holds anything now
  Session s(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  run(s, 2, 1);
  EXPECT_EQ(g.weights->resident_bytes(), kAddBytes);
}

TEST(Weights, AFileChangedOnDiskAfterLoadIsNamedWhenANewShapeNeedsItsWeights) {
  TempDir d;
  const std::string bytes = test_model();
  const std::string path = d.write("m.onnx", bytes);
  auto model = Model::load(path);
  Session s(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  std::vector<float> y1 = run(s, 1, 1);
  // Rewritten in place (the same file, shorter): the mapping would read other bytes.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  try {
    run(s, 2, 2);
    FAIL() << "a plan read weights from a file that changed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), AllOf(HasSubstr(path), HasSubstr("truncated or rewritten after it was loaded"),
                                HasSubstr("load the model again")));
  }
  // The plan made before still runs, and the session stays usable.
  EXPECT_EQ(run(s, 1, 1), y1);
  // A file replaced by another (renamed over it) does not matter: the mapping keeps the old one's bytes.
  const std::string path2 = d.write("m2.onnx", bytes);
  auto model2 = Model::load(path2);
  Session s2(model2, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  std::vector<float> a = run(s2, 1, 3);
  d.write("other.onnx", std::string(100, 'x'));
  fs::rename(d.dir / "other.onnx", path2);
  auto ref = Model::load_from_memory(bytes.data(), bytes.size(), "m2.onnx");
  Session r(ref, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  EXPECT_EQ(run(s2, 2, 4), run(r, 2, 4));
}

TEST(Weights, ExternalDataIsMappedAndReadAgainLikeTheModelFile) {
  TempDir d;
  ModelBuilder m;
  m.input("x", DType::kFloat32, {-1, 32, 16, 16}, {"N"});
  Tensor w = noise({64, 32, 3, 3}, 1);
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(1);
  for (int64_t k : w.shape()) init->add_dims(k);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = init->add_external_data();
  loc->set_key("location");
  loc->set_value("w.bin");
  auto* off = init->add_external_data();
  off->set_key("offset");
  off->set_value("100");
  m.node("Conv", {"x", "w"}, {"y"}, "conv").ints("pads", {1, 1, 1, 1});
  m.output("y");
  d.write("w.bin", std::string(100, 'z') + std::string(static_cast<const char*>(w.raw()), w.nbytes()));
  auto model = Model::load(d.write("ext.onnx", m.bytes()));
  ModelBuilder inside;
  inside.input("x", DType::kFloat32, {-1, 32, 16, 16}, {"N"});
  inside.initializer("w", w);
  inside.node("Conv", {"x", "w"}, {"y"}, "conv").ints("pads", {1, 1, 1, 1});
  inside.output("y");
  std::string ib = inside.bytes();
  auto ref_model = Model::load_from_memory(ib.data(), ib.size(), "inside.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  Session ref(ref_model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  EXPECT_EQ(run(s, 1, 5), run(ref, 1, 5));
  EXPECT_EQ(s.weight_stats().model_bytes, w.nbytes());
  EXPECT_EQ(s.weight_stats().model_resident_bytes, 0u);  // packed, given back
  EXPECT_EQ(run(s, 2, 6), run(ref, 2, 6));
}

// ---- The walk over the wire format ----

TEST(Weights, TheWalkFindsEachInitializersBytesAndLeavesTheRestToProtobuf) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {3});
  m.initializer("a", noise({5}, 1));
  auto* typed = m.proto().mutable_graph()->add_initializer();  // float_data, no raw_data
  typed->set_name("b");
  typed->set_data_type(1);
  typed->add_dims(2);
  typed->add_float_data(1.0f);
  typed->add_float_data(2.0f);
  m.initializer("c", noise({1000}, 2));
  m.node("Identity", {"x"}, {"y"});
  m.output("y");
  const std::string bytes = m.bytes();
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  onnx::RawDataSplit split;
  ASSERT_TRUE(onnx::split_raw_data(data, bytes.size(), &split));
  ASSERT_EQ(split.spans.size(), 3u);
  EXPECT_TRUE(split.spans[0].present);
  EXPECT_FALSE(split.spans[1].present);
  EXPECT_TRUE(split.spans[2].present);
  const onnx::ModelProto& want = m.proto();
  for (int i : {0, 2}) {
    const std::string& raw = want.graph().initializer(i).raw_data();
    ASSERT_EQ(split.spans[static_cast<size_t>(i)].size, raw.size());
    EXPECT_EQ(std::memcmp(data + split.spans[static_cast<size_t>(i)].offset, raw.data(), raw.size()), 0);
  }
  EXPECT_EQ(split.raw_bytes, 5 * 4 + 1000 * 4u);
  onnx::ModelProto got;
  ASSERT_TRUE(got.ParseFromString(split.skeleton));
  EXPECT_LT(split.skeleton.size(), bytes.size() - 4000);
  // The same model but for the raw bytes, which are present and empty.
  onnx::ModelProto expect = want;
  for (int i : {0, 2}) expect.mutable_graph()->mutable_initializer(i)->set_raw_data("");
  EXPECT_EQ(got.SerializeAsString(), expect.SerializeAsString());
  // A length past the end, or a truncated tag: not split (protobuf judges the whole file).
  for (size_t cut : {size_t{1}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_FALSE(onnx::split_raw_data(data, cut, &split)) << cut;
}

std::string load_outcome(const std::function<std::shared_ptr<const Model>()>& load) {
  try {
    auto model = load();
    Session s(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
    std::vector<Tensor> y = s.run({{"x", noise({1, 32, 16, 16}, 1)}});
    std::string out = "ok";
    for (int64_t i = 0; i < y[0].numel(); ++i) out += " " + std::to_string(y[0].data<float>()[i]);
    return out;
  } catch (const Error& e) {
    return std::string(error_code_name(e.code())) + ": " + e.what();
  }
}

// Truncated, damaged and oddly encoded files: loading from the file (the
// walk, the mapped bytes) ends as loading the same bytes from memory does.
TEST(Weights, FilesLoadOrFailAsTheSameBytesFromMemory) {
  TempDir d;
  const std::string good = test_model();
  std::vector<std::pair<std::string, std::string>> cases;
  // Cut inside the header, the graph's nodes, a weight's bytes, the last byte.
  for (size_t cut : {size_t{3}, size_t{40}, good.size() / 3, good.size() / 2, good.size() - 1})
    cases.emplace_back("cut" + std::to_string(cut), good.substr(0, cut));
  // A byte flipped where a length or tag is (the walk refuses, protobuf decides).
  for (size_t at : {size_t{1}, size_t{12}, good.size() - 30}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x80);
    cases.emplace_back("flip" + std::to_string(at), bad);
  }
  {
    // raw_data written twice for one initializer (the last counts), and the
    // graph split over two fields (protobuf merges them, in order); written
    // field by field, as protobuf would not write them so.
    auto field = [](int number, const std::string& payload) {
      std::string s;
      for (uint64_t v : {static_cast<uint64_t>(number) << 3 | 2, static_cast<uint64_t>(payload.size())}) {
        for (; v >= 0x80; v >>= 7) s.push_back(static_cast<char>((v & 0x7f) | 0x80));
        s.push_back(static_cast<char>(v));
      }
      return s + payload;
    };
    onnx::ModelProto mp;
    ASSERT_TRUE(mp.ParseFromString(good));
    onnx::GraphProto a = mp.graph(), b;
    a.clear_initializer();
    std::string twice;
    for (const onnx::TensorProto& t : mp.graph().initializer()) {
      if (t.name() == "w") {
        onnx::TensorProto early;
        early.set_raw_data(std::string(t.raw_data().size(), '\x01'));
        twice = early.SerializeAsString() + t.SerializeAsString();
      } else if (a.initializer_size() < 3) {
        *a.add_initializer() = t;
      } else {
        *b.add_initializer() = t;
      }
    }
    onnx::ModelProto rest = mp;
    rest.clear_graph();
    cases.emplace_back("merged", rest.SerializeAsString() + field(7, a.SerializeAsString() + field(5, twice)) +
                                     field(7, b.SerializeAsString()));
  }
  for (const auto& c : cases) {
    const std::string &name = c.first, &bytes = c.second;
    const std::string path = d.write(name + ".onnx", bytes);
    std::string mapped = load_outcome([&] { return Model::load(path); });
    std::string memory = load_outcome([&] { return Model::load_from_memory(bytes.data(), bytes.size(), path); });
    EXPECT_EQ(mapped, memory) << name;
    if (mapped.rfind("ok", 0) != 0) {
      EXPECT_THAT(mapped, HasSubstr(path)) << name;
    }
    // Both read the raw bytes in place; protobuf's own reading of the file
    // (parsed whole, written back as it writes a model) gives the same model.
    onnx::ModelProto whole;
    if (whole.ParseFromString(bytes)) {
      const std::string canonical = whole.SerializeAsString();
      EXPECT_EQ(mapped, load_outcome([&] { return Model::load_from_memory(canonical.data(), canonical.size(), path); }))
          << name;
    }
  }
  EXPECT_EQ(load_outcome([&] { return Model::load(d.write("merged2.onnx", cases.back().second)); }),
            load_outcome([&] { return Model::load(d.write("good.onnx", good)); }));
}

// ---- Sessions planning new shapes at once from one model's store ----

TEST(Concurrency, SessionsOnOneFileModelPlanNewShapesTogether) {
  TempDir d;
  const std::string bytes = test_model();
  auto model = Model::load(d.write("m.onnx", bytes));
  auto ref_model = Model::load_from_memory(bytes.data(), bytes.size(), "m.onnx");
  Session ref(ref_model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
  std::vector<std::vector<float>> want;
  for (int64_t n = 1; n <= 4; ++n) want.push_back(run(ref, n, static_cast<uint32_t>(n)));
  std::vector<std::thread> threads;
  std::vector<int> bad(3, 0);
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      Session s(model, {.device = Device::kCpu, .threads = 1, .tuning = TuningMode::kHeuristic});
      for (int round = 0; round < 2; ++round)
        for (int64_t n = 1; n <= 4; ++n)
          if (run(s, 1 + (n + t) % 4, static_cast<uint32_t>(1 + (n + t) % 4)) != want[static_cast<size_t>((n + t) % 4)])
            ++bad[static_cast<size_t>(t)];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(3, 0));
}

// A plan made beside another of the same inputs (a tuned plan taking over)
// takes the kernels of the steps whose recipes are the same, and holds the
// model's weights only while it makes kernels of its own.
TEST(Weights, APlanMadeBesideAnotherTakesItsKernelsWhereTheRecipesAreTheSame) {
  TempDir d;
  auto model = Model::load(d.write("m.onnx", test_model()));
  const Graph& g = model->impl().graph;
  auto cpu = make_cpu_backend(1);
  ThreadPool pool(1);
  Tensor x = noise({1, 32, 16, 16}, 3);
  auto first = make_plan(g, {&x}, *cpu, pool, {});
  const size_t held = g.weights->resident_bytes();
  EXPECT_EQ(held, kAddBytes);  // the Add's constant, read as it is

  auto same = make_plan(g, {&x}, *cpu, pool, {.reuse = first.get()});
  ASSERT_EQ(same->steps.size(), first->steps.size());
  for (size_t i = 0; i < first->steps.size(); ++i) {
    const Step &a = first->steps[i], &b = same->steps[i];
    EXPECT_FALSE(a.recipe.empty()) << a.label;
    EXPECT_EQ(b.recipe, a.recipe);
    EXPECT_EQ(b.kernel, a.kernel) << b.label;
    EXPECT_TRUE(b.shared) << b.label;
  }
  EXPECT_EQ(same->stats.shared_kernels, static_cast<int>(first->steps.size()));
  EXPECT_EQ(g.weights->resident_bytes(), held);

  // The plain layout changes every blocked value: those steps make kernels
  // of their own.
  auto plain = make_plan(g, {&x}, *cpu, pool, {.blocked_layout = false, .reuse = first.get()});
  EXPECT_LT(plain->stats.shared_kernels, static_cast<int>(plain->steps.size()));
  for (const Step& s : plain->steps) {
    if (s.shared) continue;
    for (const Step& a : first->steps) EXPECT_NE(s.kernel, a.kernel) << s.label;
  }
  EXPECT_EQ(g.weights->resident_bytes(), held);

  // What the first plan held, the others hold on their own once it is gone.
  first.reset();
  EXPECT_EQ(g.weights->resident_bytes(), held);
  WeightStats w = weight_stats(g, {same.get(), plain.get()});
  EXPECT_GT(w.packed_bytes, 0u);
}

// A kernel a plan takes from another that reads a folded filter as it is at
// run time (the plain depthwise convolution) gets it in this plan too: made
// when the step is, and one copy for both plans through the constant cache.
TEST(Weights, APlanThatTakesAKernelReadingAFoldedFilterAsItIsHasTheFilterToo) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 128, 10, 10});
  m.initializer("w", noise({128, 1, 5, 5}, 5));
  m.initializer("scale", noise({128}, 6));
  m.initializer("bias", noise({128}, 7));
  m.initializer("mean", noise({128}, 8));
  Tensor var = noise({128}, 9);
  for (int64_t i = 0; i < 128; ++i) var.data<float>()[i] += 1.5f;
  m.initializer("var", var);
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {2, 2, 2, 2}).i("group", 128);
  m.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  m.output("y");
  TempDir d;
  auto model = Model::load(d.write("m.onnx", m.bytes()));
  const Graph& g = model->impl().graph;
  auto cpu = make_cpu_backend(1);
  ThreadPool pool(1);
  ConstantCache cache;
  Tensor x = noise({1, 128, 10, 10}, 3);
  const PlanOptions plain{.blocked_layout = false, .constants = &cache};
  auto filter = [](const Plan& p) -> const Tensor* {
    for (const Step& s : p.steps)
      if (s.node >= 0 && p.graph.nodes[s.node].op == "Conv")
        return p.graph.values[p.graph.nodes[s.node].inputs[1]].constant.get();
    return nullptr;
  };
  auto first = make_plan(g, {&x}, *cpu, pool, plain);
  ASSERT_NE(filter(*first), nullptr);
  ASSERT_NE(filter(*first)->raw(), nullptr);  // read at run time: made and kept
  PlanOptions beside = plain;
  beside.reuse = first.get();
  auto second = make_plan(g, {&x}, *cpu, pool, beside);
  EXPECT_EQ(second->stats.shared_kernels, static_cast<int>(second->steps.size()));
  EXPECT_EQ(filter(*second), filter(*first));  // the same tensor, not null
}

// The weights a plan made beside another reads for kernels of its own are
// in memory while it makes them (copied in again from the file), and given
// back after: here a convolution without a BatchNormalization, whose
// weights are the model's own.
TEST(Weights, APlanMadeBesideAnotherHoldsTheWeightsOfTheKernelsItMakes) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {1, 32, 16, 16});
  m.initializer("w", noise({64, 32, 3, 3}, 1));  // 73 KiB: a store entry
  m.node("Conv", {"x", "w"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y"}, "relu");
  m.output("y");
  TempDir d;
  auto model = Model::load(d.write("m.onnx", m.bytes()));
  const Graph& g = model->impl().graph;
  auto cpu = make_cpu_backend(1);
  ThreadPool pool(1);
  Tensor x = noise({1, 32, 16, 16}, 3);
  auto first = make_plan(g, {&x}, *cpu, pool, {});
  EXPECT_EQ(g.weights->resident_bytes(), 0u);  // packed, given back
  auto plain = make_plan(g, {&x}, *cpu, pool, {.blocked_layout = false, .reuse = first.get()});
  EXPECT_EQ(plain->stats.shared_kernels, 0);
  EXPECT_EQ(g.weights->resident_bytes(), 0u);
  EXPECT_GT(weight_stats(g, {plain.get()}).packed_bytes, 64u * 32 * 9 * 4 / 2);
}

}  // namespace
}  // namespace minirt
