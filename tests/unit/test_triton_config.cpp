// The Triton backend's configuration logic (tools/triton/model_config.h,
// json.h): auto-completion from the ONNX model, the checks of explicit
// configurations with their sentences, the parameters, and the JSON that
// carries them. The backend against a real server: tests/triton/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <minirt/session.h>

#include <thread>

#include "tests/unit/model_builder.h"
#include "tools/triton/json.h"
#include "tools/triton/model_config.h"

namespace {

using minirt::DType;
using minirt::Model;
using minirt::testing::ModelBuilder;
using minirt::triton::autocomplete;
using minirt::triton::ConfigError;
using minirt::triton::InstanceKind;
using minirt::triton::read_config;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace json = minirt::json;

// x [N,3,4,4] -> Relu -> y [N,3,4,4]; with `batch` false the first dim is 1.
std::shared_ptr<const Model> relu_model(bool batch, DType out_dtype = DType::kFloat32) {
  ModelBuilder m;
  int64_t n = batch ? -1 : 1;
  m.input("x", DType::kFloat32, {n, 3, 4, 4}, {"N"});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", out_dtype, {n, 3, 4, 4}, {"N"});
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "relu.onnx");
}

// Two inputs, the second int64, summed after a Cast.
std::shared_ptr<const Model> two_input_model() {
  ModelBuilder m;
  m.input("a", DType::kFloat32, {-1, 5}, {"batch"});
  m.input("b", DType::kInt64, {-1, 5}, {"batch"});
  m.node("Cast", {"b"}, {"bf"}, "cast").i("to", 1);
  m.node("Add", {"a", "bf"}, {"sum"}, "add");
  m.output("sum", DType::kFloat32, {-1, 5}, {"batch"});
  std::string bytes = m.bytes();
  return Model::load_from_memory(bytes.data(), bytes.size(), "two.onnx");
}

std::string error_of(const json::Value& cfg, const Model& model) {
  try {
    read_config(cfg, model, "m");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TritonJson, RoundTripKeepsOrderNumbersAndEscapes) {
  std::string text = R"({"name":"m","dims":[-1,3,224,224],"big":9007199254740993,"f":1.5e-3,"ok":true,"none":null,)"
                     R"("s":"a\"b\\c\n\u00e9\ud83d\ude00","o":{}})";
  json::Value v = json::parse(text);
  EXPECT_EQ(v.members()[0].first, "name");
  EXPECT_EQ(v.find("big")->as_int(), 9007199254740993LL);  // not through a double
  EXPECT_EQ(v.find("dims")->items()[0].as_int(), -1);
  EXPECT_EQ(v.find("s")->text(), "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(v.find("none")->is_null());
  EXPECT_EQ(json::parse(v.dump()).dump(), v.dump());
  EXPECT_EQ(json::Value::string("\x01").dump(), "\"\\u0001\"");
}

TEST(TritonJson, Int64AsStringAndErrorsSayWhere) {
  EXPECT_EQ(json::parse(R"(["224"])").items()[0].as_int(), 224);  // protobuf's JSON writes int64 so
  EXPECT_THROW(json::parse("[1.5]").items()[0].as_int(), std::invalid_argument);
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "\"abc", "tru", "01x", "\"\\ud800\"", "[1] 2"}) {
    try {
      json::parse(bad);
      ADD_FAILURE() << "parsed: " << bad;
    } catch (const json::ParseError& e) {
      EXPECT_THAT(e.what(), HasSubstr("at byte")) << bad;
    }
  }
  std::string deep(100000, '[');
  EXPECT_THROW(json::parse(deep), json::ParseError);  // no stack overflow
}

TEST(TritonConfig, AutocompleteFillsTensorsAndBatchFromASymbolicFirstDim) {
  auto model = relu_model(true);
  json::Value cfg = json::parse(R"({"name":"m","backend":"minirt","max_batch_size":0,"input":[],"output":[]})");
  EXPECT_TRUE(autocomplete(cfg, *model, {.default_max_batch_size = 8}));
  EXPECT_EQ(cfg.find("max_batch_size")->as_int(), 8);
  const json::Value& in = cfg.find("input")->items().at(0);
  EXPECT_EQ(in.find("name")->text(), "x");
  EXPECT_EQ(in.find("data_type")->text(), "TYPE_FP32");
  EXPECT_EQ(in.find("dims")->dump(), "[3,4,4]");  // without the batch
  EXPECT_EQ(cfg.find("output")->items().at(0).find("dims")->dump(), "[3,4,4]");
  EXPECT_NE(cfg.find("dynamic_batching"), nullptr);
  auto mc = read_config(cfg, *model, "m");
  EXPECT_EQ(mc.max_batch_size, 8);
  EXPECT_TRUE(mc.dynamic_batching);
  // A second pass changes nothing.
  EXPECT_FALSE(autocomplete(cfg, *model, {.default_max_batch_size = 8}));
}

TEST(TritonConfig, AutocompleteOfAFixedBatchModelKeepsFullDimsAndNoBatching) {
  auto model = relu_model(false);
  json::Value cfg = json::parse(R"({"name":"m","backend":"minirt"})");
  EXPECT_TRUE(autocomplete(cfg, *model));
  EXPECT_EQ(cfg.find("max_batch_size"), nullptr);
  EXPECT_EQ(cfg.find("input")->items().at(0).find("dims")->dump(), "[1,3,4,4]");
  EXPECT_EQ(cfg.find("dynamic_batching"), nullptr);
  auto mc = read_config(cfg, *model, "m");
  EXPECT_EQ(mc.max_batch_size, 0);
  EXPECT_EQ(mc.inputs.at(0).dims, (std::vector<int64_t>{1, 3, 4, 4}));
}

// A detector's tail: boxes [N, 6, 4] -> NonMaxSuppression -> [num_selected, 3].
// Its output's rows are boxes kept, not requests: no batching.
TEST(TritonConfig, AnOutputWhoseFirstDimIsAnotherSymbolIsNotBatched) {
  ModelBuilder m(11);
  m.input("boxes", DType::kFloat32, {-1, 6, 4}, {"N"});
  m.input("scores", DType::kFloat32, {-1, 1, 6}, {"N"});
  m.node("NonMaxSuppression", {"boxes", "scores"}, {"selected"}, "nms");
  m.output("selected", DType::kInt64, {-1, 3}, {"num_selected"});
  std::string bytes = m.bytes();
  auto model = Model::load_from_memory(bytes.data(), bytes.size(), "nms.onnx");
  json::Value cfg = json::parse(R"({"name":"m","backend":"minirt"})");
  EXPECT_TRUE(autocomplete(cfg, *model, {.default_max_batch_size = 8}));
  EXPECT_EQ(cfg.find("max_batch_size"), nullptr);
  EXPECT_EQ(cfg.find("output")->items().at(0).find("dims")->dump(), "[-1,3]");
  EXPECT_EQ(read_config(cfg, *model, "m").max_batch_size, 0);
  // Asked for anyway: refused, naming both symbols.
  json::Value batched = json::parse(R"({"name":"m","backend":"minirt","max_batch_size":4})");
  autocomplete(batched, *model);  // the tensors, filled as the writer's batch has them
  EXPECT_THAT(error_of(batched, *model),
              AllOf(HasSubstr("output 'selected'"), HasSubstr("'num_selected', the inputs' is 'N'"),
                    HasSubstr("set max_batch_size: 0")));
}

TEST(TritonConfig, AutocompleteKeepsWhatTheWriterChoseAndFillsTheGaps) {
  auto model = two_input_model();
  // The writer lists tensors with dims only: no batching is added, types are filled.
  json::Value cfg =
      json::parse(R"({"input":[{"name":"a","dims":[-1,5]},{"name":"b","data_type":"TYPE_INVALID","dims":[-1,5]}],)"
                  R"("output":[{"name":"sum","dims":[-1,5]}],"sequence_batching":{}})");
  EXPECT_TRUE(autocomplete(cfg, *model, {.default_max_batch_size = 4}));
  EXPECT_EQ(cfg.find("max_batch_size"), nullptr);
  EXPECT_EQ(cfg.find("input")->items()[1].find("data_type")->text(), "TYPE_INT64");
  auto mc = read_config(cfg, *model, "m");
  EXPECT_EQ(mc.inputs.at(1).dtype, DType::kInt64);
  // An explicit max_batch_size with an empty tensor list: dims without the batch.
  json::Value b = json::parse(R"({"max_batch_size":16,"dynamic_batching":{"max_queue_delay_microseconds":100}})");
  EXPECT_TRUE(autocomplete(b, *model, {.default_max_batch_size = 4}));
  EXPECT_EQ(b.find("max_batch_size")->as_int(), 16);
  EXPECT_EQ(b.find("input")->items()[0].find("dims")->dump(), "[5]");
  EXPECT_EQ(b.find("dynamic_batching")->dump(), R"({"max_queue_delay_microseconds":100})");
  // Batching written by hand without a scheduler: requests run as they come.
  json::Value c = json::parse(R"({"max_batch_size":16})");
  EXPECT_TRUE(autocomplete(c, *model, {.default_max_batch_size = 4}));
  EXPECT_EQ(c.find("dynamic_batching"), nullptr);
}

TEST(TritonConfig, ExplicitConfigsAreCheckedAgainstTheModelWithSentences) {
  auto model = relu_model(true);
  auto cfg = [](const std::string& in_dims, const std::string& type = "TYPE_FP32", const std::string& extra = "") {
    return json::parse(R"({"max_batch_size":4,"input":[{"name":"x","data_type":")" + type + R"(","dims":)" + in_dims +
                       R"(}],"output":[{"name":"y","data_type":"TYPE_FP32","dims":[3,4,4]}])" + extra + "}");
  };
  EXPECT_EQ(error_of(cfg("[3,4,4]"), *model), "(no error)");
  EXPECT_EQ(error_of(cfg("[3,-1,4]"), *model), "(no error)");  // -1 accepts what the model fixes; runs check it
  EXPECT_EQ(error_of(cfg("[3,5,4]"), *model),
            "model 'm', input 'x': 'dims' [3,5,4] differ from the model's [3,4,4] at dimension 2");
  EXPECT_THAT(error_of(cfg("[1,3,4,4]"), *model),
              HasSubstr("'dims' [1,3,4,4] has 4 dimensions but the model's (after the batch dimension) are [3,4,4]"));
  EXPECT_EQ(error_of(cfg("[3,4,4]", "TYPE_INT64"), *model),
            "model 'm', input 'x': 'data_type' is TYPE_INT64 but the model's is TYPE_FP32");
  EXPECT_THAT(error_of(cfg("[3,0,4]"), *model), HasSubstr("holds 0 (use -1 for any size)"));
  EXPECT_THAT(error_of(json::parse(R"({"input":[{"name":"z","data_type":"TYPE_FP32","dims":[1]}]})"), *model),
              HasSubstr("model 'm', input 'z': the model has no input of that name (its inputs: x)"));
  EXPECT_THAT(error_of(json::parse(R"({"output":[{"name":"y","data_type":"TYPE_FP32","dims":[-1,3,4,4]}]})"), *model),
              HasSubstr("the model's input 'x' (TYPE_FP32) is not in the configuration's 'input' list"));
  json::Value bad_mbs = cfg("[3,4,4]");
  bad_mbs["max_batch_size"] = json::Value::string("x");
  EXPECT_EQ(error_of(bad_mbs, *model), "model 'm': 'max_batch_size' is \"x\", not a whole number");
  json::Value twice = cfg("[3,4,4]");
  twice["input"].push_back(twice["input"].items()[0]);
  EXPECT_THAT(error_of(twice, *model), HasSubstr("input 'x': listed twice"));
  json::Value no_out = cfg("[3,4,4]");
  no_out["output"] = json::Value::array();
  EXPECT_THAT(error_of(no_out, *model), HasSubstr("lists no output"));
  // Batching where the model has none.
  auto fixed = relu_model(false);
  EXPECT_THAT(error_of(cfg("[3,4,4]"), *fixed),
              HasSubstr("max_batch_size is greater than 0 but the model's first dimension is 1, not a batch; set "
                        "max_batch_size: 0 and give the full dims [1,3,4,4]"));
}

TEST(TritonConfig, ParametersBecomeSessionOptions) {
  auto model = relu_model(true);
  json::Value cfg =
      json::parse(R"({"max_batch_size":4,"input":[{"name":"x","data_type":"TYPE_FP32","dims":[3,4,4]}],)"
                  R"("output":[{"name":"y","data_type":"TYPE_FP32","dims":[3,4,4]}],)"
                  R"("instance_group":[{"kind":"KIND_CPU","count":2},{"kind":"KIND_GPU","count":1,"gpus":[0]}],)"
                  R"("parameters":{"threads":{"string_value":"3"},"tuning":{"string_value":"winograd_f4x4"},)"
                  R"("algo_cache":{"string_value":"/tmp/a.txt"},"memory_limit":{"string_value":"256M"},)"
                  R"("memory_policy":{"string_value":"preallocate:0.5"},"math":{"string_value":"tf32"},)"
                  R"("run_timeout_ms":{"string_value":"250"},"tune_in_background":{"string_value":"false"}}})");
  auto mc = read_config(cfg, *model, "m");
  EXPECT_EQ(mc.cpu_instances, 2);
  minirt::SessionOptions o = minirt::triton::instance_options(mc, InstanceKind::kCpu, 0, 16);
  EXPECT_FALSE(o.tune_in_background);
  EXPECT_EQ(o.device, minirt::Device::kCpu);
  EXPECT_EQ(o.threads, 3);
  EXPECT_EQ(o.tuning, minirt::TuningMode::kFixed);
  EXPECT_EQ(o.tuning_algorithm, "winograd_f4x4");
  EXPECT_EQ(o.algo_cache_path, "/tmp/a.txt");
  EXPECT_EQ(o.memory_limit, 256u << 20);
  EXPECT_EQ(o.memory_policy, minirt::MemoryPolicy::kPreallocate);
  EXPECT_DOUBLE_EQ(o.preallocate_fraction, 0.5);
  EXPECT_EQ(o.math, minirt::MathMode::kTf32);
  EXPECT_DOUBLE_EQ(o.run_timeout_seconds, 0.25);
  // KIND_GPU means CUDA on that GPU (an error when there is none), unless device is auto.
  o = minirt::triton::instance_options(mc, InstanceKind::kGpu, 3, 16);
  EXPECT_EQ(o.device, minirt::Device::kCuda);
  EXPECT_EQ(o.device_id, 3);
  cfg["parameters"]["device"] = json::parse(R"({"string_value":"auto"})");
  cfg["parameters"].erase("threads");
  mc = read_config(cfg, *model, "m");
  EXPECT_EQ(minirt::triton::instance_options(mc, InstanceKind::kGpu, 1, 16).device, minirt::Device::kAuto);
  // No threads given: the cores shared among the CPU instances.
  EXPECT_EQ(minirt::triton::instance_options(mc, InstanceKind::kCpu, 0, 16).threads, 8);
  EXPECT_EQ(minirt::triton::instance_options(mc, InstanceKind::kCpu, 0, 1).threads, 1);
  cfg["parameters"]["device"]["string_value"] = json::Value::string("cpu");
  mc = read_config(cfg, *model, "m");
  try {
    minirt::triton::instance_options(mc, InstanceKind::kGpu, 0, 16);
    ADD_FAILURE() << "KIND_GPU with device cpu was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("KIND_GPU asks for a GPU but parameter 'device' is cpu"));
  }
}

TEST(TritonConfig, BadParametersNameTheParameterAndTheValue) {
  auto model = relu_model(true);
  auto with = [&](const std::string& key, const std::string& value) {
    json::Value cfg =
        json::parse(R"({"max_batch_size":4,"input":[{"name":"x","data_type":"TYPE_FP32","dims":[3,4,4]}],)"
                    R"("output":[{"name":"y","data_type":"TYPE_FP32","dims":[3,4,4]}]})");
    cfg["parameters"][key] = json::Value::object();
    cfg["parameters"][key]["string_value"] = json::Value::string(value);
    return error_of(cfg, *model);
  };
  EXPECT_EQ(with("device", "tpu"), "model 'm': parameter 'device' must be auto, cpu or cuda, got 'tpu'");
  const std::string ceiling = std::to_string(minirt::max_threads());
  EXPECT_THAT(with("threads", "-2"), HasSubstr("parameter 'threads' must be a whole number from 0 to " + ceiling));
  EXPECT_THAT(with("threads", "100000"),
              AllOf(HasSubstr("from 0 to " + ceiling), HasSubstr(std::to_string(minirt::usable_cores()) + " cores"),
                    HasSubstr("got '100000'")));
  EXPECT_EQ(with("threads", ceiling), "(no error)");
  EXPECT_THAT(with("run_timeout_ms", "-5"), HasSubstr("parameter 'run_timeout_ms' must be milliseconds, 0 or more"));
  EXPECT_THAT(with("run_timeout_ms", "soon"), HasSubstr("got 'soon'"));
  EXPECT_EQ(with("run_timeout_ms", "250"), "(no error)");
  EXPECT_THAT(with("threads", "2x"), HasSubstr("got '2x'"));
  EXPECT_THAT(with("memory_limit", "lots"), HasSubstr("parameter 'memory_limit' must be a size"));
  EXPECT_THAT(with("memory_policy", "preallocate:1.5"), HasSubstr("needs a fraction in (0, 1]"));
  EXPECT_THAT(with("math", "fp8"), HasSubstr("parameter 'math' must be fp32, tf32, fp16 or bf16, got 'fp8'"));
  EXPECT_THAT(with("tuning", ""),
              HasSubstr("parameter 'tuning' must be cached, exhaustive, heuristic or an algorithm name, got ''"));
  EXPECT_THAT(with("tuning", "no way"), HasSubstr("got 'no way'"));
  EXPECT_THAT(with("thread", "2"), HasSubstr("unknown parameter 'thread' (minirt's parameters: device, threads"));
  EXPECT_EQ(with("tuning", "exhaustive"), "(no error)");
  EXPECT_EQ(with("warmup", "false"), "(no error)");
  EXPECT_THAT(with("warmup", "no"), HasSubstr("parameter 'warmup' must be true or false, got 'no'"));
  EXPECT_EQ(with("tune_in_background", "false"), "(no error)");
  EXPECT_THAT(with("tune_in_background", "later"),
              HasSubstr("parameter 'tune_in_background' must be true or false, got 'later'"));
}

TEST(TritonConfig, ConfigurationAndDataTypeNamesRoundTrip) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kInt32, DType::kBool, DType::kUInt8}) {
    EXPECT_EQ(minirt::triton::dtype_from_config_name(minirt::triton::config_type_name(t)), t);
  }
  EXPECT_STREQ(minirt::triton::config_type_name(DType::kUndefined), "TYPE_INVALID");
  EXPECT_EQ(minirt::triton::dtype_from_config_name("TYPE_STRINGS"), DType::kUndefined);
}

// The library's errors name SessionOptions' fields; the backend reports them
// with the model config parameter that sets each.
TEST(TritonConfig, LibraryErrorsNameTheParameterBesideTheField) {
  EXPECT_EQ(minirt::triton::with_parameter_names(
                "raise the memory limit (SessionOptions::memory_limit), or the grow policy "
                "(SessionOptions::memory_policy = MemoryPolicy::kGrow); use fewer threads (SessionOptions::threads)"),
            "raise the memory limit (parameter memory_limit, SessionOptions::memory_limit), or the grow policy "
            "(parameter memory_policy grow, SessionOptions::memory_policy = MemoryPolicy::kGrow); use fewer threads "
            "(parameter threads, SessionOptions::threads)");
}

}  // namespace
