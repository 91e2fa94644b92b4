// The ONNX loader: what real exporters write is accepted, and every kind of
// bad file is refused with an error naming the file (and node and op).
#include <minirt/minirt.h>

#include "loaders/onnx/onnx_loader.h"
#include "runtime/op_registry.h"
#include "runtime/ops/op_versions.h"
#include "load_error.h"
#include "model_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

namespace minirt {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::load_error;
using testing::ModelBuilder;

std::string relu_model_bytes() {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2, 3});
  m.node("Relu", {"x"}, {"y"}, "relu0");
  m.output("y");
  return m.bytes();
}

// An element type minirt has no DType for is named as ONNX names it, in a
// graph input and in a Cast.
TEST(Loader, UnsupportedElementTypesAreNamed) {
  {
    ModelBuilder m(19, 9);
    m.input("x", static_cast<DType>(17), {2});
    m.node("Identity", {"x"}, {"y"}, "id");
    m.output("y");
    EXPECT_THAT(load_error(m.bytes()).what(), HasSubstr("graph input 'x' has dtype float8e4m3fn"));
  }
  {
    ModelBuilder m(21, 10);
    m.input("x", DType::kFloat32, {2});
    m.node("Cast", {"x"}, {"y"}, "to_int4").i("to", 22);
    m.output("y");
    EXPECT_THAT(load_error(m.bytes()).what(),
                AllOf(HasSubstr("node 'to_int4' (Cast)"), HasSubstr("casting to int4 is not supported")));
  }
}

TEST(Loader, MissingFileNamesThePath) {
  try {
    Model::load("/nonexistent/dir/model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("/nonexistent/dir/model.onnx"), HasSubstr("No such file")));
  }
}

TEST(Loader, DirectoryInsteadOfFile) {
  try {
    Model::load("/tmp");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("/tmp"), HasSubstr("directory")));
  }
}

TEST(Loader, EmptyFile) {
  Error e = load_error("");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("bad.onnx"), HasSubstr("empty")));
}

TEST(Loader, TruncatedFileAtEveryLength) {
  std::string good = relu_model_bytes();
  for (size_t len = 1; len < good.size(); ++len) {
    std::string cut = good.substr(0, len);
    try {
      Model::load_from_memory(cut.data(), cut.size(), "cut.onnx");
      // A cut at a field boundary can still be a valid protobuf of a smaller
      // model; it must then be refused for what it lacks, never crash.
      ADD_FAILURE() << "length " << len << " loaded";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("cut.onnx")) << len;
      EXPECT_TRUE(e.code() == ErrorCode::kInvalidModel || e.code() == ErrorCode::kUnsupported)
          << len << ": " << e.what();
    }
  }
}

TEST(Loader, RandomBytesAreRefused) {
  std::mt19937 rng(1);
  for (int round = 0; round < 200; ++round) {
    std::string junk(1 + rng() % 300, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    try {
      Model::load_from_memory(junk.data(), junk.size(), "junk.bin");
      ADD_FAILURE() << "random bytes loaded";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("junk.bin"));
    }
  }
}

TEST(Loader, NotAProtobufSaysSo) {
  std::string text = "this is a text file, not a model\n";
  Error e = load_error(text, "notes.txt");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("notes.txt"));
}

TEST(Loader, UnsupportedOpsAreListedTogetherWithCounts) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {4});
  m.node("FancyOp", {"x"}, {"a"}, "fancy1");
  m.node("Relu", {"a"}, {"b"}, "relu");
  m.node("FancyOp", {"b"}, {"c"}, "fancy2");
  m.node("OtherOp", {"c"}, {"d"}, "other");
  m.output("d");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("FancyOp (2 nodes: fancy1, fancy2)"), HasSubstr("OtherOp (1 node: other)")));
}

TEST(Loader, CustomDomainOpIsUnsupported) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {4});
  m.node("Relu", {"x"}, {"y"}, "r").i("dummy", 0);
  m.proto().mutable_graph()->mutable_node(0)->set_domain("com.example");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), HasSubstr("com.example::Relu"));
}

TEST(Loader, UnsupportedInputDtype) {
  ModelBuilder m;
  m.input("x", DType::kFloat64, {4});
  m.node("Relu", {"x"}, {"y"}, "r");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("'x'"), HasSubstr("float64")));
}

TEST(Loader, UnsupportedInitializerDtypeNamesIt) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("double_w");
  init->set_data_type(static_cast<int>(DType::kFloat64));
  init->add_dims(2);
  init->set_raw_data(std::string(16, '\0'));
  m.node("Add", {"x", "double_w"}, {"y"}, "add");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("double_w"), HasSubstr("float64")));
}

TEST(Loader, OpsetNewerThanSupported) {
  ModelBuilder m(kMaxOpset + 1);
  m.input("x", DType::kFloat32, {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(),
              AllOf(HasSubstr("opset " + std::to_string(kMaxOpset + 1)), HasSubstr(std::to_string(kMaxOpset))));
}

// Opsets 23 to 28 added only element types to the ops minirt runs (float4,
// float8e8m0, int2, float6), or behaviour each op checks: the same models
// load and run, and what is new says so.
TEST(Loader, NewestOpsetsRunWhatTheyShareWithOlderOnesAndNameWhatIsNew) {
  for (int64_t opset : {23, 24, 25, 28}) {
    ModelBuilder m(opset, 10);
    m.input("x", DType::kFloat32, {1, 4, 2, 2});
    Tensor shape = Tensor::zeros(DType::kInt64, {2});
    shape.data<int64_t>()[0] = 1;
    shape.data<int64_t>()[1] = 16;
    m.initializer("shape", shape);
    m.node("Relu", {"x"}, {"r"});
    m.node("Transpose", {"r"}, {"t"}).ints("perm", {0, 1, 3, 2});
    m.node("Reshape", {"t", "shape"}, {"y"});
    m.output("y");
    std::string bytes = m.bytes();
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "new.onnx");
    EXPECT_EQ(model->info().opset, opset);
    Session s(model, {.device = Device::kCpu, .threads = 1});
    Tensor x = testing::iota({1, 4, 2, 2}, -8.0f, 1.0f);
    auto y = s.run({{"x", x}});
    ASSERT_EQ(y[0].shape(), (Shape{1, 16}));
    // relu, then each 2x2 plane transposed: element (c, i, j) of y is x (c, j, i).
    for (int c = 0; c < 4; ++c)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
          EXPECT_EQ(y[0].data<float>()[c * 4 + i * 2 + j], std::max(0.0f, x.data<float>()[c * 4 + j * 2 + i]));
  }
  // SpaceToDepth's mode (version 28): DCR as before, CRD named.
  for (const char* mode : {"DCR", "CRD"}) {
    ModelBuilder m(28, 10);
    m.input("x", DType::kFloat32, {1, 1, 4, 4});
    m.node("SpaceToDepth", {"x"}, {"y"}, "s2d").i("blocksize", 2).s("mode", mode);
    m.output("y");
    std::string bytes = m.bytes();
    if (std::string(mode) == "DCR") {
      EXPECT_NO_THROW(Model::load_from_memory(bytes.data(), bytes.size(), "s2d.onnx"));
    } else {
      Error e = load_error(bytes);
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_THAT(e.what(), AllOf(HasSubstr("node 's2d' (SpaceToDepth)"), HasSubstr("version 28's mode CRD")));
    }
  }
  // Mod of floats with fmod=0: invalid before 28, defined (and not implemented) from 28.
  for (int64_t opset : {13, 28}) {
    ModelBuilder m(opset, 10);
    m.input("a", DType::kFloat32, {2});
    m.input("b", DType::kFloat32, {2});
    m.node("Mod", {"a", "b"}, {"y"}, "mod");
    m.output("y");
    std::string bytes = m.bytes();
    Error e = load_error(bytes);
    EXPECT_EQ(e.code(), opset < 28 ? ErrorCode::kInvalidModel : ErrorCode::kUnsupported) << opset;
    EXPECT_THAT(e.what(), HasSubstr(opset < 28 ? "before opset 28" : "Mod version 28 with fmod=0")) << opset;
  }
}

// The version table: every op with a schema has its versions, in order, and
// a model's opset resolves to the newest version at or below it.
TEST(Loader, EveryOpKnowsItsVersions) {
  for (const OpSchema* s : all_schemas()) {
    const std::vector<int>* v = op_versions(s->op);
    ASSERT_NE(v, nullptr) << s->op << " has no line in runtime/ops/op_versions.cpp";
    EXPECT_TRUE(std::is_sorted(v->begin(), v->end())) << s->op;
    EXPECT_LE(v->back(), kMaxOpset) << s->op;
  }
  EXPECT_EQ(op_version_table_ops().size(), all_schemas().size()) << "a table line without a schema";
  EXPECT_EQ(op_version_at("Conv", 21), 11);
  EXPECT_EQ(op_version_at("Conv", 22), 22);
  EXPECT_EQ(op_version_at("Reshape", 28), 25);
  EXPECT_EQ(op_version_at("Gelu", 19), 0);
}

TEST(Loader, OldIrVersionRefused) {
  ModelBuilder m(7, 2);
  m.input("x", DType::kFloat32, {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), HasSubstr("IR version 2"));
}

TEST(Loader, MissingInputNamesNodeAndOp) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  m.node("Add", {"x", "nowhere"}, {"y"}, "adder");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("bad.onnx"), HasSubstr("node 'adder' (Add)"), HasSubstr("'nowhere'")));
}

TEST(Loader, CycleIsReported) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  m.node("Add", {"x", "b"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "second");
  m.output("b");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("cycle"));
  EXPECT_THAT(e.what(), ::testing::AnyOf(HasSubstr("'first'"), HasSubstr("'second'")));
}

TEST(Loader, InconsistentShapesFailAtLoadNamingTheNode) {
  ModelBuilder m;
  m.input("a", DType::kFloat32, {2, 3});
  m.input("b", DType::kFloat32, {4, 5});
  m.node("Add", {"a", "b"}, {"y"}, "bad_add");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'bad_add' (Add)"), HasSubstr("2x3"), HasSubstr("4x5")));
}

TEST(Loader, WrongArityNamesNode) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  m.node("Relu", {"x", "x"}, {"y"}, "two_in");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'two_in' (Relu)"), HasSubstr("2 inputs")));
}

TEST(Loader, DeclaredSizeLargerThanDataIsRefusedBeforeAllocating) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("huge");
  init->set_data_type(1);
  init->add_dims(1 << 20);
  init->add_dims(1 << 20);  // 2^40 floats claimed, 8 bytes present
  init->set_raw_data(std::string(8, '\0'));
  m.node("Add", {"x", "huge"}, {"y"});
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), HasSubstr("huge"));
}

TEST(Loader, DeclaredTypedDataLargerThanPresentIsRefusedBeforeAllocating) {
  // Found by fuzz_model: dims claiming 32 Gi floats with three float_data
  // entries made the loader allocate 128 GiB before comparing the counts.
  ModelBuilder m;
  m.input("x", DType::kFloat32, {2});
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("typed");
  init->set_data_type(1);
  init->add_dims(1 << 20);
  init->add_dims(1 << 15);
  for (float v : {1.0f, 2.0f, 3.0f}) init->add_float_data(v);
  m.node("Add", {"x", "typed"}, {"y"});
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();  // not kOutOfMemory: nothing was allocated
  EXPECT_THAT(e.what(), AllOf(HasSubstr("'typed'"), HasSubstr("float_data holds 3")));
}

TEST(Loader, MissingShapeOperandIsAnErrorNotAnOutOfBoundsRead) {
  // Found by fuzz_model: Pad-13 with its pads input left out read the value
  // table at index -1 while writing the error.
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3});
  m.node("Pad", {"x"}, {"y"}, "pad_without_pads");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(),
              AllOf(HasSubstr("node 'pad_without_pads' (Pad)"), HasSubstr("pads input (input 1) is required")));
}

TEST(Loader, PadWrapNeedsVersion19AndNoCrop) {
  auto pad = [](int opset, std::vector<int64_t> pads) {
    ModelBuilder m(opset);
    m.input("x", DType::kFloat32, {2, 3});
    m.initializer("pads", testing::ints64(pads));
    m.node("Pad", {"x", "pads"}, {"y"}, "wrapping").s("mode", "wrap");
    m.output("y");
    return m.bytes();
  };
  Error old = load_error(pad(18, {0, 1, 0, 2}));
  EXPECT_EQ(old.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(old.what(), AllOf(HasSubstr("node 'wrapping' (Pad)"), HasSubstr("'wrap' came with Pad version 19")));
  Error crop = load_error(pad(19, {0, -1, 0, 2}));
  EXPECT_EQ(crop.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(crop.what(), AllOf(HasSubstr("node 'wrapping' (Pad)"), HasSubstr("wrap padding with negative pads")));
  // Version 19 with added elements only loads (the op grid checks its values against onnxruntime).
  std::string ok = pad(19, {0, 1, 0, 2});
  EXPECT_NO_THROW(Model::load_from_memory(ok.data(), ok.size(), "wrap.onnx"));
}

TEST(Loader, ResizeAntialiasNeedsVersion18) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 8, 8});
  m.initializer("scales", testing::iota({4}, 1.0f, 0.0f));
  m.node("Resize", {"x", "", "scales"}, {"y"}, "shrink").s("mode", "linear").i("antialias", 1);
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'shrink' (Resize)"), HasSubstr("antialias came with Resize version 18")));
}

TEST(Loader, TfCropAndResizeNeedsARoiPerAxis) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {1, 1, 8, 8});
  m.initializer("roi", testing::iota({4}, 0.0f, 0.25f));  // 2 axes' worth for a 4-D input
  m.initializer("sizes", testing::ints64({1, 1, 4, 4}));
  m.node("Resize", {"x", "roi", "", "sizes"}, {"y"}, "crop").s("coordinate_transformation_mode", "tf_crop_and_resize");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'crop' (Resize)"), HasSubstr("roi has 4 entries"), HasSubstr("needs 8")));
}

TEST(Loader, ShapeArithmeticThatWouldOverflowIsAnError) {
  // Found by fuzz_model: a Reshape target of huge dimensions overflowed the
  // element count (signed overflow is undefined behaviour).
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {2, 3});
  m.initializer("target", testing::ints64({int64_t{1} << 40, int64_t{1} << 40, 6}));
  m.initializer("reps", testing::ints64({int64_t{1} << 62, 2}));
  m.node("Reshape", {"x", "target"}, {"y"}, "huge_reshape");
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'huge_reshape' (Reshape)"), HasSubstr("overflows")));

  ModelBuilder t(13);
  t.input("x", DType::kFloat32, {2, 3});
  t.initializer("reps", testing::ints64({int64_t{1} << 62, 2}));
  t.node("Tile", {"x", "reps"}, {"y"}, "huge_tile");
  t.output("y");
  Error e2 = load_error(t.bytes());
  EXPECT_THAT(e2.what(), AllOf(HasSubstr("node 'huge_tile' (Tile)"), HasSubstr("overflows")));
}

TEST(Loader, ResizeScalesThatAreNotFiniteOrTooLargeAreErrors) {
  // Found by fuzz_model in CI: a scale of NaN or 1e30 made the float-to-int
  // conversion of the output extent undefined behaviour.
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e30f};
  for (float scale : bad) {
    ModelBuilder m(13);
    m.input("x", DType::kFloat32, {1, 1, 2, 2});
    Tensor scales = testing::iota({4}, 1.0f, 0.0f);
    scales.data<float>()[3] = scale;
    m.initializer("scales", scales);
    m.node("Resize", {"x", "", "scales"}, {"y"}, "bad_resize");
    m.output("y");
    Error e = load_error(m.bytes());
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << scale;
    EXPECT_THAT(e.what(), AllOf(HasSubstr("node 'bad_resize' (Resize)"), HasSubstr("scales"))) << scale;
  }
}

TEST(Loader, RawDataSizeMismatch) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {3});
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(1);
  init->add_dims(3);
  init->set_raw_data(std::string(8, '\0'));
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  Error e = load_error(m.bytes());
  EXPECT_THAT(e.what(), AllOf(HasSubstr("'w'"), HasSubstr("3 elements")));
}

// ---- Weights in external data files ----

namespace fs = std::filesystem;

// x + w, with w's three floats in an external file.
std::string external_model(const std::string& location, int64_t offset = -1, int64_t length = -1) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {3});
  auto* init = m.proto().mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(1);
  init->add_dims(3);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = init->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  if (!location.empty()) add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  return m.bytes();
}

struct ExternalDir {
  fs::path dir = fs::temp_directory_path() / ("minirt_external_" + std::to_string(::getpid()));
  ExternalDir() {
    fs::remove_all(dir);
    fs::create_directories(dir / "sub");
  }
  ~ExternalDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  }
};

std::string floats_bytes(std::initializer_list<float> v) {
  std::string b(v.size() * 4, '\0');
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

Error load_file_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "loading " << path << " succeeded";
  return Error(ErrorCode::kInternal, "");
}

TEST(Loader, ExternalDataBesideTheModelLoads) {
  ExternalDir d;
  // 8 bytes of something else, then w: offset and length as exporters write them.
  d.write("weights.bin", std::string(8, 'x') + floats_bytes({1.5f, -2.0f, 4.0f}));
  std::string path = d.write("m.onnx", external_model("weights.bin", 8, 12));
  auto model = Model::load(path);
  Session s(model, {.device = Device::kCpu, .threads = 1});
  Tensor x = testing::iota({3}, 1.0f, 1.0f);
  auto y = s.run({{"x", x}});
  EXPECT_EQ(std::vector<float>(y[0].data<float>(), y[0].data<float>() + 3), (std::vector<float>{2.5f, 0.0f, 7.0f}));
  // A location in a sub-folder of the model's, without offset and length.
  d.write("sub/w.bin", floats_bytes({0.0f, 0.0f, 1.0f}));
  EXPECT_NO_THROW(Model::load(d.write("m2.onnx", external_model("sub/w.bin"))));
}

TEST(Loader, ExternalDataProblemsAreNamed) {
  ExternalDir d;
  d.write("w.bin", floats_bytes({1.0f, 2.0f, 3.0f}));
  Error e = load_file_error(d.write("missing.onnx", external_model("missing.data")));
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("missing.onnx: initializer 'w'"), HasSubstr("external file 'missing.data'"),
                              HasSubstr("which is missing"), HasSubstr("put it beside")));
  for (const std::string& outside :
       {std::string("../w.bin"), std::string("sub/../../w.bin"), (d.dir / "w.bin").string()}) {
    e = load_file_error(d.write("escape.onnx", external_model(outside)));
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << outside;
    EXPECT_THAT(e.what(), HasSubstr("points outside the model's folder")) << outside;
  }
  e = load_file_error(d.write("short.onnx", external_model("w.bin", 4)));
  EXPECT_THAT(e.what(), AllOf(HasSubstr("holds 12 bytes, too few for 12 at offset 4"), HasSubstr("truncated")));
  e = load_file_error(d.write("length.onnx", external_model("w.bin", 0, 8)));
  EXPECT_THAT(e.what(), HasSubstr("external data length 8 bytes, but shape 3 of float32 needs 12"));
  e = load_file_error(d.write("noloc.onnx", external_model("")));
  EXPECT_THAT(e.what(), HasSubstr("external_data names no location"));
  // From memory there is no folder to look in.
  std::string bytes = external_model("w.bin");
  e = load_error(bytes);
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(e.what(), AllOf(HasSubstr("external file 'w.bin'"), HasSubstr("Model::load")));
}

// ---- Files that are not models say what they are ----

TEST(Loader, DownloadsThatAreNotModelsSayWhatTheyAre) {
  const std::string model = relu_model_bytes();
  std::string tar(1024, '\0');
  std::memcpy(tar.data(), "relu.onnx", 9);
  std::memcpy(tar.data() + 257, "ustar", 5);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\n<!DOCTYPE html>\n<html><body>Sign in</body></html>", "is an HTML page"},
      {"<html><head><title>resnet.onnx</title></head></html>", "Download raw file"},
      {"version https://git-lfs.github.com/spec/v1\noid sha256:0123456789abcdef\nsize 102400\n",
       "is a Git LFS pointer, not the model: the real file of 102400 bytes was never downloaded; run `git lfs install` "
       "and `git lfs pull`"},
      {std::string("\x1f\x8b\x08\x00", 4) + model, "is a gzip archive"},
      {std::string("PK\x03\x04", 4) + model, "is a zip archive, not an ONNX model: unzip it first"},
      {tar, "is a tar archive"},
      {"{\"error\": \"not found\"}", "is a JSON document"},
  };
  for (const auto& [bytes, says] : cases) {
    Error e = load_error(bytes, "download.onnx");
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << says;
    EXPECT_THAT(e.what(), AllOf(HasSubstr("download.onnx: "), HasSubstr(says)));
  }
  // A real model is never taken for one of those.
  EXPECT_NO_THROW(Model::load_from_memory(model.data(), model.size(), "relu.onnx"));
}

// ---- What real exporters write ----

std::vector<float> run_one(const std::string& bytes, const std::string& input, Tensor x) {
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "m.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1});
  auto out = s.run({{input, x}});
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + out[0].numel());
}

TEST(Loader, TypedFloatDataAndRawDataAgree) {
  for (bool raw : {true, false}) {
    ModelBuilder m;
    m.input("x", DType::kFloat32, {3});
    auto* init = m.proto().mutable_graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(1);
    init->add_dims(3);
    std::vector<float> w = {1.5f, -2.0f, 4.0f};
    if (raw)
      init->set_raw_data(w.data(), 12);
    else
      for (float v : w) init->add_float_data(v);
    m.node("Add", {"x", "w"}, {"y"});
    m.output("y");
    auto y = run_one(m.bytes(), "x", testing::iota({3}));
    EXPECT_EQ(y, (std::vector<float>{1.5f, -1.0f, 6.0f})) << "raw=" << raw;
  }
}

// Hand-encodes a TensorProto with dims and int64_data either packed or not,
// since protobuf's own writer picks one encoding per field.
std::string encode_int64_tensor(const std::vector<int64_t>& dims, const std::vector<int64_t>& data, bool packed) {
  auto varint = [](std::string& s, uint64_t v) {
    while (v >= 0x80) {
      s += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    s += static_cast<char>(v);
  };
  auto repeated = [&](std::string& s, int field, const std::vector<int64_t>& vals) {
    if (packed) {
      std::string body;
      for (int64_t v : vals) varint(body, static_cast<uint64_t>(v));
      varint(s, static_cast<uint64_t>(field << 3 | 2));
      varint(s, body.size());
      s += body;
    } else {
      for (int64_t v : vals) {
        varint(s, static_cast<uint64_t>(field << 3 | 0));
        varint(s, static_cast<uint64_t>(v));
      }
    }
  };
  std::string s;
  repeated(s, 1, dims);   // dims
  varint(s, 2 << 3 | 0);  // data_type
  varint(s, 7);           // INT64
  repeated(s, 7, data);   // int64_data
  return s;
}

TEST(Loader, PackedAndUnpackedRepeatedFields) {
  for (bool packed : {true, false}) {
    std::string bytes = encode_int64_tensor({2, 2}, {5, -6, 7, 1LL << 40}, packed);
    Tensor t = onnx::parse_tensor_bytes(bytes.data(), bytes.size(), "t.pb");
    ASSERT_EQ(t.shape(), (Shape{2, 2}));
    ASSERT_EQ(t.dtype(), DType::kInt64);
    EXPECT_EQ(t.data<int64_t>()[1], -6);
    EXPECT_EQ(t.data<int64_t>()[3], 1LL << 40);
  }
}

TEST(Loader, InitializerListedAsInputIsAConstant) {
  // IR version 3 files list every initializer among the graph inputs.
  ModelBuilder m(8, 3);
  m.input("x", DType::kFloat32, {3});
  m.input("w", DType::kFloat32, {3});
  m.initializer("w", testing::iota({3}, 10.0f));
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  auto model = Model::load_from_memory(m.bytes().data(), m.bytes().size(), "ir3.onnx");
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].name, "x");
  auto y = run_one(m.bytes(), "x", testing::iota({3}));
  EXPECT_EQ(y, (std::vector<float>{10, 12, 14}));
}

TEST(Loader, WeightsAsConstantNodes) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {3});
  m.node("Constant", {}, {"w"}, "const_w").tensor("value", testing::iota({3}, 1.0f));
  m.node("Mul", {"x", "w"}, {"y"});
  m.output("y");
  auto y = run_one(m.bytes(), "x", testing::iota({3}, 2.0f));
  EXPECT_EQ(y, (std::vector<float>{2, 6, 12}));
}

TEST(Loader, EmptyNameSkipsAnOptionalInput) {
  ModelBuilder m(13);
  m.input("x", DType::kFloat32, {4});
  Tensor hi = Tensor::zeros(DType::kFloat32, {});
  *hi.data<float>() = 2.0f;
  m.initializer("hi", hi);
  m.node("Clip", {"x", "", "hi"}, {"y"}, "clip");  // min left out
  m.output("y");
  Tensor x = testing::iota({4}, -1.0f, 1.0f);  // -1 0 1 2 -> min stays -inf
  auto y = run_one(m.bytes(), "x", x);
  EXPECT_EQ(y, (std::vector<float>{-1, 0, 1, 2}));
  Tensor x2 = testing::iota({4}, 1.0f, 1.0f);  // 1 2 3 4
  EXPECT_EQ(run_one(m.bytes(), "x", x2), (std::vector<float>{1, 2, 2, 2}));
}

TEST(Loader, SymbolicAndMinusOneDimsBindAtRunTime) {
  ModelBuilder m;
  m.input("x", DType::kFloat32, {-1, 3}, {"batch_size", ""});
  m.proto()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-1);
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  auto model = Model::load_from_memory(m.bytes().data(), m.bytes().size(), "sym.onnx");
  EXPECT_EQ(model->inputs()[0].dims[0], -1);
  Session s(model, {.device = Device::kCpu, .threads = 1});
  for (int64_t n : {1, 4, 2}) {
    auto out = s.run({{"x", testing::iota({n, 3}, -3.0f)}});
    EXPECT_EQ(out[0].shape(), (Shape{n, 3}));
  }
}

TEST(Loader, SymbolicNamesMustAgreeAcrossInputs) {
  ModelBuilder m;
  m.input("a", DType::kFloat32, {-1, 2}, {"N"});
  m.input("b", DType::kFloat32, {-1, 2}, {"N"});
  m.node("Add", {"a", "b"}, {"y"}, "add");
  m.output("y");
  auto model = Model::load_from_memory(m.bytes().data(), m.bytes().size(), "sym.onnx");
  Session s(model, {.device = Device::kCpu, .threads = 1});
  try {
    s.run({{"a", testing::iota({3, 2})}, {"b", testing::iota({1, 2})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("'N'"));
  }
}

TEST(Loader, RealExporterFilesLoadWhenPresent) {
  std::filesystem::path dir = std::filesystem::path(MINIRT_SOURCE_DIR) / ".." / "shared" / "models";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared models not found at " << dir;
  for (const char* f : {"mnist-8.onnx", "ultraface-slim-320.onnx", "ppocr-mobile-v2-cls.onnx"}) {
    auto model = Model::load((dir / f).string());
    EXPECT_FALSE(model->inputs().empty()) << f;
  }
}

}  // namespace
}  // namespace minirt

namespace minirt {
namespace {

// Scatter indices that arrive at run time and point outside the data stop
// the run with the node, the index and the valid range; nothing is written
// out of bounds (the sanitizer builds would see it), and the session runs
// the next, valid request.
TEST(Loader, ScatterIndicesOutOfRangeAtRunTimeNameTheNode) {
  for (const char* op : {"ScatterElements", "ScatterND"}) {
    bool nd = std::string(op) == "ScatterND";
    ModelBuilder m(18);
    m.input("data", DType::kFloat32, {4, 3});
    m.input("idx", DType::kInt64, nd ? Shape{2, 1} : Shape{2, 3});
    m.input("upd", DType::kFloat32, {2, 3});
    m.node(op, {"data", "idx", "upd"}, {"y"}, "boxes_scatter");
    m.output("y");
    std::string bytes = m.bytes();
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "scatter.onnx");
    Session s(model, {.device = Device::kCpu, .threads = 2});
    Tensor data = testing::iota({4, 3}, 0.0f, 1.0f);
    Tensor upd = testing::iota({2, 3}, 100.0f, 1.0f);
    Tensor idx = Tensor::zeros(DType::kInt64, nd ? Shape{2, 1} : Shape{2, 3});
    int64_t n = idx.numel();
    for (int64_t i = 0; i < n; ++i) idx.data<int64_t>()[i] = i % 2 == 0 ? 1 : -1;  // rows 1 and 3
    idx.data<int64_t>()[n - 1] = 4;                                                // one past the end
    try {
      s.run({{"data", data}, {"idx", idx}, {"upd", upd}});
      ADD_FAILURE() << op << ": an index of 4 into 4 rows ran";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_THAT(e.what(), ::testing::HasSubstr("boxes_scatter"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr(op));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("index 4 is out of range"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("-4 to 3"));
    }
    idx.data<int64_t>()[n - 1] = -4;  // valid again: row 0
    auto y = s.run({{"data", data}, {"idx", idx}, {"upd", upd}});
    const float* v = y[0].data<float>();
    if (nd) {  // rows 1 and 0 replaced by the update rows
      EXPECT_EQ(v[3], 100.0f);
      EXPECT_EQ(v[0], 103.0f);
      EXPECT_EQ(v[9], 9.0f);
    } else {  // (r, c) = (idx[r][c], c): 1, -1, 1 / -1, 1, -4
      EXPECT_EQ(v[1 * 3 + 0], 100.0f);
      EXPECT_EQ(v[3 * 3 + 1], 101.0f);
      EXPECT_EQ(v[1 * 3 + 2], 102.0f);
      EXPECT_EQ(v[3 * 3 + 0], 103.0f);
      EXPECT_EQ(v[1 * 3 + 1], 104.0f);
      EXPECT_EQ(v[0 * 3 + 2], 105.0f);
    }
  }
}

}  // namespace
}  // namespace minirt
