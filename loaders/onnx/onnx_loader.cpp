#include "loaders/onnx/onnx_loader.h"

#include "loaders/onnx/onnx_subset.pb.h"
#include "loaders/onnx/onnx_wire.h"
#include "runtime/host_resources.h"
#include "runtime/op_registry.h"
#include "runtime/weight_store.h"

#include <google/protobuf/arena.h>

#include <minirt/half.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace minirt::onnx {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_file(ErrorCode code, const std::string& file, const std::string& msg) {
  throw Error(code, file + ": " + msg);
}

// Where tensors stored outside the model file (data_location EXTERNAL) are
// looked for while one model is loaded: the model's folder; and, for a
// model read from a mapped file, the store its large initializers are
// copied into (runtime/weight_store.h). Null when the model came from memory.
struct ExternalData {
  std::string model;                                               // the model file, for messages
  fs::path dir;                                                    // its folder
  std::shared_ptr<const MappedFile> file;                          // the model file, mapped
  std::shared_ptr<WeightStore> store;                              // null: every tensor in ordinary memory
  std::map<fs::path, std::shared_ptr<const MappedFile>> external;  // external data files, mapped once each
};
thread_local ExternalData* t_external = nullptr;

// A tensor of `shape` holding the bytes at `offset` of `file`: in the
// model's weight store when it is large and the file is mapped, else in
// ordinary memory.
Tensor tensor_from_file(DType dt, Shape shape, const std::shared_ptr<const MappedFile>& file, size_t offset,
                        const std::string& where) {
  const size_t need = static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  if (t_external && t_external->store && file->mapped() && need >= WeightStore::kMinBytes)
    return t_external->store->add(dt, std::move(shape), file, offset, where);
  Tensor t = Tensor::zeros(dt, std::move(shape));
  if (need) std::memcpy(t.raw(), file->data() + offset, need);
  return t;
}

// What a file that is not an ONNX model is, by its first bytes, and what to
// do about it; empty when it may be one.
std::string not_onnx(const void* data, size_t size) {
  const auto* b = static_cast<const unsigned char*>(data);
  auto starts = [&](const char* sig, size_t n) { return size >= n && std::memcmp(b, sig, n) == 0; };
  if (starts("\x1f\x8b", 2))
    return "is a gzip archive, not an ONNX model: unpack it first (gunzip, or tar -xzf for a .tar.gz) and give "
           "the .onnx file inside";
  if (starts("PK\x03\x04", 4) || starts("PK\x05\x06", 4))
    return "is a zip archive, not an ONNX model: unzip it first and give the .onnx file inside";
  if (starts("\xfd"
             "7zXZ",
             5))
    return "is an xz archive, not an ONNX model: unpack it first (unxz, or tar -xJf)";
  if (starts("BZh", 3)) return "is a bzip2 archive, not an ONNX model: unpack it first (bunzip2, or tar -xjf)";
  if (starts("\x28\xb5\x2f\xfd", 4)) return "is a zstd archive, not an ONNX model: unpack it first (unzstd)";
  if (size > 262 && std::memcmp(b + 257, "ustar", 5) == 0)
    return "is a tar archive, not an ONNX model: unpack it first (tar -xf) and give the .onnx file inside";
  // Text: skip a byte-order mark and leading blanks.
  size_t i = size >= 3 && std::memcmp(b, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
  while (i < size && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) ++i;
  std::string head(reinterpret_cast<const char*>(b + i), std::min<size_t>(size - i, 200));
  const std::string lfs = "version https://git-lfs.github.com/spec/v1";
  if (head.compare(0, lfs.size(), lfs) == 0) {
    std::string text(reinterpret_cast<const char*>(b + i), std::min<size_t>(size - i, 1024));
    std::string real;
    if (size_t at = text.find("\nsize "); at != std::string::npos) {
      size_t end = text.find('\n', at + 6);
      real = " of " + text.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6) + " bytes";
    }
    return "is a Git LFS pointer, not the model: the real file" + real +
           " was never downloaded; run `git lfs install` and `git lfs pull` in its repository, or download the "
           "file itself";
  }
  std::string lower = head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.rfind("<!doctype html", 0) == 0 || lower.rfind("<html", 0) == 0 || lower.rfind("<head", 0) == 0)
    return "is an HTML page (a saved download or sign-in page), not an ONNX model: download the raw file (on "
           "GitHub the \"Download raw file\" button or raw.githubusercontent.com, on Hugging Face the /resolve/ "
           "URL rather than /blob/)";
  if (lower.rfind("<?xml", 0) == 0) return "is an XML document, not an ONNX model";
  if (lower.rfind("{", 0) == 0 && lower.find('"') != std::string::npos)
    return "is a JSON document, not an ONNX model (an API answer or an error message saved in its place?)";
  return "";
}

// Reads a tensor of `dt` and `shape` stored outside the model (data_location
// EXTERNAL), from the file its external_data names, relative to the model's
// folder and never outside it.
Tensor read_external(const TensorProto& tp, const std::string& where, DType dt, const Shape& shape) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    auto number = [&](const char* what) {
      char* end = nullptr;
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end || v < 0)
        throw Error(ErrorCode::kInvalidModel,
                    where + ": external data " + what + " '" + kv.value() + "' is not a byte count");
      return static_cast<int64_t>(v);
    };
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = number("offset");
    else if (kv.key() == "length")
      length = number("length");
  }
  if (location.empty())
    throw Error(ErrorCode::kInvalidModel, where + ": data_location is EXTERNAL but external_data names no location");
  if (!t_external)
    throw Error(ErrorCode::kUnsupported, where + ": its data is in the external file '" + location +
                                             "', which a model loaded from memory cannot reach; load the model "
                                             "from its file (Model::load), with '" +
                                             location + "' beside it");
  ExternalData& ext = *t_external;
  fs::path rel(location);
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(ext.dir.empty() ? fs::path(".") : ext.dir, ec);
  const fs::path full = fs::weakly_canonical(dir / rel, ec);
  auto inside = [&] {
    if (rel.is_absolute()) return false;
    auto d = dir.begin(), f = full.begin();
    for (; d != dir.end(); ++d, ++f)
      if (f == full.end() || *d != *f) return false;
    return f != full.end();
  };
  if (!inside())
    throw Error(ErrorCode::kInvalidModel, where + ": its external data location '" + location +
                                              "' points outside the model's folder " + dir.string() +
                                              "; minirt reads external data only from beside the model");
  const size_t need = static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  if (length >= 0 && static_cast<size_t>(length) != need)
    throw Error(ErrorCode::kInvalidModel, where + ": external data length " + std::to_string(length) +
                                              " bytes, but shape " + shape_str(shape) + " of " + dtype_name(dt) +
                                              " needs " + std::to_string(need));
  std::shared_ptr<const MappedFile>& f = ext.external[full];
  if (!f) {
    if (!fs::exists(full, ec))
      throw Error(ErrorCode::kNotFound, where + ": its data is in the external file '" + location +
                                            "', which is missing (looked for " + full.string() +
                                            "); download it with the model and put it beside " + ext.model);
    try {
      f = MappedFile::open(full.string());
    } catch (const Error& e) {
      throw Error(ErrorCode::kNotFound,
                  where + ": could not read the external file '" + location + "' (" + e.what() + ")");
    }
  }
  const auto end = static_cast<int64_t>(f->size());
  if (offset > end || static_cast<size_t>(end - offset) < need)
    throw Error(ErrorCode::kInvalidModel, where + ": the external file '" + location + "' holds " +
                                              std::to_string(end) + " bytes, too few for " + std::to_string(need) +
                                              " at offset " + std::to_string(offset) + " (truncated download?)");
  return tensor_from_file(dt, shape, f, static_cast<size_t>(offset), where);
}

const unsigned char* base_of(const TensorProto& tp) {
  return reinterpret_cast<const unsigned char*>(tp.raw_data().data());
}

// float16 and bfloat16 load as they are stored; the half lowering
// (runtime/passes/half.cpp) turns them into float32 at load.
bool loadable_dtype(DType d) { return dtype_supported(d) || is_half_dtype(d); }

// Converts a TensorProto, checking declared sizes against the data present
// before allocating anything. `span`, when present, says where its raw_data
// lies in the model's bytes at `base` (the parsed proto's raw_data is then
// empty).
Tensor tensor_from_proto(const TensorProto& tp, const std::string& where, const unsigned char* base = nullptr,
                         const RawSpan* span = nullptr) {
  const bool external = tp.has_data_location() && tp.data_location() == TensorProto::EXTERNAL;
  if (tp.has_segment()) throw Error(ErrorCode::kUnsupported, where + ": segmented tensors are not supported");
  DType dt = static_cast<DType>(tp.data_type());
  if (!loadable_dtype(dt))
    throw Error(ErrorCode::kUnsupported, where + ": dtype " + dtype_name(dt) + " (ONNX type " +
                                             std::to_string(tp.data_type()) + ") is not supported");
  Shape shape(tp.dims().begin(), tp.dims().end());
  unsigned __int128 count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorCode::kInvalidModel, where + ": negative dimension in " + shape_str(shape));
    count *= static_cast<unsigned __int128>(d);
    if (count > (static_cast<unsigned __int128>(1) << 40))
      throw Error(ErrorCode::kInvalidModel, where + ": declared shape " + shape_str(shape) + " is impossibly large");
  }
  size_t n = static_cast<size_t>(count);
  size_t es = dtype_size(dt);
  auto mismatch = [&](size_t have, const char* field) {
    throw Error(ErrorCode::kInvalidModel, where + ": shape " + shape_str(shape) + " needs " + std::to_string(n) +
                                              " elements but " + field + " holds " + std::to_string(have));
  };
  if (external) return read_external(tp, where, dt, shape);
  // Every size is checked against the data actually present in the file
  // before anything is allocated.
  const bool in_place = base && span && span->present;
  if (tp.has_raw_data() || in_place) {
    const size_t raw = in_place ? span->size : tp.raw_data().size();
    if (raw % es != 0)
      throw Error(ErrorCode::kInvalidModel, where + ": raw_data holds " + std::to_string(raw) +
                                                " bytes, not a whole number of " + std::to_string(es) + "-byte " +
                                                dtype_name(dt) + " elements (shape " + shape_str(shape) + " needs " +
                                                std::to_string(n * es) + " bytes)");
    if (raw != n * es) mismatch(raw / es, "raw_data");
    if (in_place && t_external && t_external->file && t_external->file->data() == base)
      return tensor_from_file(dt, shape, t_external->file, span->offset, where);
    Tensor t = Tensor::zeros(dt, shape);
    if (n) std::memcpy(t.raw(), in_place ? base + span->offset : base_of(tp), n * es);
    return t;
  }
  size_t present = 0;
  const char* field = "";
  switch (dt) {
    case DType::kFloat32:
      present = static_cast<size_t>(tp.float_data_size());
      field = "float_data";
      break;
    case DType::kInt64:
      present = static_cast<size_t>(tp.int64_data_size());
      field = "int64_data";
      break;
    case DType::kInt32:
    case DType::kBool:
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kFloat16:
    case DType::kBFloat16:
      // Narrow types are stored one per int32_data entry (float16 and
      // bfloat16 as their 16-bit patterns, in the low bits).
      present = static_cast<size_t>(tp.int32_data_size());
      field = "int32_data";
      break;
    default:
      throw Error(ErrorCode::kUnsupported, where + ": dtype " + dtype_name(dt) + " is not supported");
  }
  if (present != n) mismatch(present, field);
  Tensor t = Tensor::zeros(dt, shape);
  switch (dt) {
    case DType::kFloat32:
      std::copy(tp.float_data().begin(), tp.float_data().end(), t.data<float>());
      break;
    case DType::kInt64:
      std::copy(tp.int64_data().begin(), tp.int64_data().end(), t.data<int64_t>());
      break;
    case DType::kInt32:
      std::copy(tp.int32_data().begin(), tp.int32_data().end(), t.data<int32_t>());
      break;
    case DType::kFloat16:
    case DType::kBFloat16:
      for (size_t i = 0; i < n; ++i) {
        const int32_t bits = tp.int32_data(static_cast<int>(i));
        if (bits < 0 || bits > 0xffff)
          throw Error(ErrorCode::kInvalidModel, where + ": int32_data[" + std::to_string(i) + "] is " +
                                                    std::to_string(bits) + ", not a 16-bit " + dtype_name(dt) +
                                                    " bit pattern (0 to 65535)");
        t.data<uint16_t>()[i] = static_cast<uint16_t>(bits);
      }
      break;
    default:
      for (size_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(tp.int32_data(static_cast<int>(i)));
      break;
  }
  return t;
}

Attribute attribute_from_proto(const AttributeProto& ap, const std::string& where) {
  Attribute a;
  auto type = ap.type();
  if (!ap.has_type() || type == AttributeProto::UNDEFINED) {
    // IR before 0.0.2 left the type out; tell it by the field that is set.
    if (ap.has_f())
      type = AttributeProto::FLOAT;
    else if (ap.has_i())
      type = AttributeProto::INT;
    else if (ap.has_s())
      type = AttributeProto::STRING;
    else if (ap.has_t())
      type = AttributeProto::TENSOR;
    else if (ap.floats_size())
      type = AttributeProto::FLOATS;
    else if (ap.ints_size())
      type = AttributeProto::INTS;
    else if (ap.strings_size())
      type = AttributeProto::STRINGS;
  }
  switch (type) {
    case AttributeProto::FLOAT:
      a.kind = Attribute::Kind::kFloat;
      a.f = ap.f();
      break;
    case AttributeProto::INT:
      a.kind = Attribute::Kind::kInt;
      a.i = ap.i();
      break;
    case AttributeProto::STRING:
      a.kind = Attribute::Kind::kString;
      a.s = ap.s();
      break;
    case AttributeProto::TENSOR:
      a.kind = Attribute::Kind::kTensor;
      a.t = tensor_from_proto(ap.t(), where + ", attribute '" + ap.name() + "'");
      break;
    case AttributeProto::FLOATS:
      a.kind = Attribute::Kind::kFloats;
      a.floats.assign(ap.floats().begin(), ap.floats().end());
      break;
    case AttributeProto::INTS:
      a.kind = Attribute::Kind::kInts;
      a.ints.assign(ap.ints().begin(), ap.ints().end());
      break;
    case AttributeProto::STRINGS:
      a.kind = Attribute::Kind::kStrings;
      a.strings.assign(ap.strings().begin(), ap.strings().end());
      break;
    case AttributeProto::GRAPH:
    case AttributeProto::GRAPHS:
      a.kind = Attribute::Kind::kGraph;
      break;
    default:
      a.kind = Attribute::Kind::kOther;
      break;
  }
  return a;
}

void read_value_info(const ValueInfoProto& vi, Value& v) {
  if (!vi.has_type() || !vi.type().has_tensor_type()) return;
  const auto& tt = vi.type().tensor_type();
  v.dtype = static_cast<DType>(tt.elem_type());
  if (!tt.has_shape()) return;
  v.shape.clear();
  v.dim_params.clear();
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      v.shape.push_back(d.dim_value());
      v.dim_params.emplace_back();
    } else {
      // A dim_param, a dim_value of -1, or nothing: bound at run time.
      v.shape.push_back(-1);
      v.dim_params.push_back(d.has_dim_param() ? d.dim_param() : std::string());
    }
  }
  bool all_known = true;
  for (int64_t d : v.shape) all_known = all_known && d >= 0;
  v.shape_known = all_known;
}

std::string node_label(const NodeProto& n, int index) {
  return n.name().empty() ? "#" + std::to_string(index) : n.name();
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail_file(ErrorCode::kNotFound, path, "is a directory, not a model file");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail_file(ErrorCode::kNotFound, path, std::string("cannot open the file: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail_file(ErrorCode::kNotFound, path, "cannot read the file");
  return ss.str();
}

Graph load_file(const std::string& path) {
  // Mapped, not read: the weights are copied once, from the file's pages
  // into tensors (large ones into the model's weight store), and protobuf
  // parses only the rest (onnx_wire.h).
  std::shared_ptr<const MappedFile> file = MappedFile::open(path);
  ExternalData ext{path, fs::path(path).parent_path(), file, nullptr, {}};
  if (file->mapped()) ext.store = std::make_shared<WeightStore>(path);
  struct Scope {
    ExternalData* saved = t_external;
    explicit Scope(ExternalData* e) { t_external = e; }
    ~Scope() { t_external = saved; }
  } scope(&ext);
  Graph g = load_bytes(file->data(), file->size(), path);
  if (ext.store && ext.store->entries()) g.weights = ext.store;
  return g;
}

Graph load_bytes(const void* data, size_t size, const std::string& name) {
  if (size == 0) fail_file(ErrorCode::kInvalidModel, name, "the file is empty; it is not an ONNX model");
  if (size > static_cast<size_t>(INT32_MAX))
    fail_file(ErrorCode::kUnsupported, name,
              "a single file larger than 2 GiB cannot be an ONNX model (protobuf's limit); large models keep their "
              "weights in external data files beside the .onnx (onnx.save_model(..., save_as_external_data=True))");
  // The parsed proto lives in an arena, freed as a whole when the graph is made.
  google::protobuf::Arena arena;
  ModelProto& mp = *google::protobuf::Arena::CreateMessage<ModelProto>(&arena);
  // Protobuf parses the model without its initializers' raw bytes, which
  // are read where they lie (in the mapped file, or the caller's memory);
  // when the walk finds the bytes malformed, protobuf parses them whole, for
  // its verdict.
  RawDataSplit split;
  const auto* base = static_cast<const unsigned char*>(data);
  bool parsed = false;
  if (split_raw_data(base, size, &split)) {
    parsed = mp.ParseFromString(split.skeleton) && mp.has_graph() &&
             static_cast<size_t>(mp.graph().initializer_size()) == split.spans.size();
    split.skeleton = std::string();
    if (!parsed) mp.Clear();
  }
  if (!parsed) {
    split = RawDataSplit{};
    parsed = mp.ParseFromArray(data, static_cast<int>(size));
  }
  // A file that is not a model says what it is instead (checked only when
  // it does not parse as one, so that no model is ever taken for something else).
  if (!parsed || !mp.has_graph() || !mp.has_ir_version())
    if (std::string what = not_onnx(data, size); !what.empty()) fail_file(ErrorCode::kInvalidModel, name, what);
  if (!parsed)
    fail_file(ErrorCode::kInvalidModel, name,
              "not a valid ONNX model: the protobuf could not be parsed (the file is truncated, damaged or not "
              "an ONNX file)");
  if (!mp.has_graph() || !mp.has_ir_version())
    fail_file(ErrorCode::kInvalidModel, name,
              std::string("not a valid ONNX model: it has no ") + (mp.has_graph() ? "ir_version" : "graph") +
                  " (is this an ONNX file?)");
  if (mp.ir_version() < 3)
    fail_file(ErrorCode::kUnsupported, name,
              "IR version " + std::to_string(mp.ir_version()) + " is too old; minirt reads IR version 3 and later");

  Graph g;
  g.source = name;
  g.ir_version = mp.ir_version();
  g.producer = mp.producer_name() + (mp.producer_version().empty() ? "" : " " + mp.producer_version());
  bool have_default = false;
  for (const auto& os : mp.opset_import()) {
    if (os.domain().empty() || os.domain() == "ai.onnx") {
      g.opset = os.version();
      have_default = true;
    }
  }
  if (have_default && g.opset > kMaxOpset)
    fail_file(ErrorCode::kUnsupported, name,
              "opset " + std::to_string(g.opset) + " is newer than minirt supports (" + std::to_string(kMinOpset) +
                  " to " + std::to_string(kMaxOpset) + "); re-export the model with opset " +
                  std::to_string(kMaxOpset) + " or older");
  if (have_default && g.opset < kMinOpset)
    fail_file(ErrorCode::kInvalidModel, name,
              "opset " + std::to_string(g.opset) + " is not an ONNX opset (they are numbered from " +
                  std::to_string(kMinOpset) + ")");

  // Weights larger than what this process can get are refused before any is copied.
  if (split.raw_bytes >= kHostRoomCheckBytes) check_host_room(split.raw_bytes, "the weights of " + name);

  const GraphProto& gp = mp.graph();
  std::unordered_map<std::string, int> ids;
  auto value_id = [&](const std::string& n) {
    auto it = ids.find(n);
    if (it != ids.end()) return it->second;
    int id = g.add_value(n);
    ids.emplace(n, id);
    return id;
  };

  // Initializers (weights); some files also list them as graph inputs.
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const TensorProto& tp = gp.initializer(i);
    if (tp.name().empty())
      fail_file(ErrorCode::kInvalidModel, name, "initializer " + std::to_string(i) + " has no name");
    int id = value_id(tp.name());
    if (g.values[id].constant)
      fail_file(ErrorCode::kInvalidModel, name, "initializer '" + tp.name() + "' appears twice");
    const RawSpan* span = split.spans.empty() ? nullptr : &split.spans[static_cast<size_t>(i)];
    auto t = std::make_shared<Tensor>(tensor_from_proto(tp, name + ": initializer '" + tp.name() + "'", base, span));
    g.values[id].dtype = t->dtype();
    g.values[id].shape = t->shape();
    g.values[id].shape_known = true;
    g.values[id].constant = std::move(t);
  }
  for (const auto& vi : gp.input()) {
    int id = value_id(vi.name());
    Value& v = g.values[id];
    if (v.constant) continue;  // an initializer listed as input (IR < 4 style)
    read_value_info(vi, v);
    if (vi.type().has_sequence_type() || vi.type().has_map_type() || vi.type().has_optional_type() ||
        vi.type().has_sparse_tensor_type())
      fail_file(ErrorCode::kUnsupported, name,
                "graph input '" + vi.name() +
                    "' is a sequence, map, optional or sparse tensor; minirt takes dense tensors only");
    if (v.dtype == DType::kUndefined)
      fail_file(ErrorCode::kInvalidModel, name, "graph input '" + vi.name() + "' has no tensor type");
    if (!loadable_dtype(v.dtype))
      fail_file(ErrorCode::kUnsupported, name,
                "graph input '" + vi.name() + "' has dtype " + dtype_name(v.dtype) + ", which minirt does not support");
    if (!vi.type().tensor_type().has_shape())
      fail_file(ErrorCode::kInvalidModel, name, "graph input '" + vi.name() + "' has no shape");
    g.inputs.push_back(id);
  }

  // Unsupported ops are reported all at once, with counts and node names.
  std::map<std::string, std::vector<std::string>> unsupported;
  for (int i = 0; i < gp.node_size(); ++i) {
    const NodeProto& np = gp.node(i);
    std::string key = np.op_type();
    bool default_domain = np.domain().empty() || np.domain() == "ai.onnx";
    if (!default_domain) key = np.domain() + "::" + np.op_type();
    const OpSchema* schema = find_schema(np.op_type());
    const bool known = schema && (default_domain ? schema->domain.empty() : schema->domain == np.domain());
    if (!known) unsupported[key].push_back(node_label(np, i));
  }
  if (!unsupported.empty()) {
    std::string msg = "unsupported op" + std::string(unsupported.size() > 1 ? "s" : "") + ": ";
    bool first = true;
    for (const auto& [op, nodes] : unsupported) {
      msg += first ? "" : "; ";
      first = false;
      msg += op + " (" + std::to_string(nodes.size()) + " node" + (nodes.size() > 1 ? "s" : "") + ": ";
      for (size_t k = 0; k < nodes.size() && k < 5; ++k) msg += (k ? ", " : "") + nodes[k];
      if (nodes.size() > 5) msg += ", ...";
      msg += ")";
    }
    fail_file(ErrorCode::kUnsupported, name, msg);
  }
  if (!have_default && gp.node_size() > 0)
    fail_file(ErrorCode::kInvalidModel, name, "the model imports no default-domain (ai.onnx) opset");

  // Nodes.
  std::set<std::string> produced;
  for (int i = 0; i < gp.node_size(); ++i) {
    const NodeProto& np = gp.node(i);
    Node n;
    n.name = node_label(np, i);
    n.op = np.op_type();
    n.domain = np.domain();
    for (const auto& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(-1);
        continue;
      }
      int id = value_id(out);
      if (g.values[id].constant || !produced.insert(out).second ||
          std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end())
        node_fail(ErrorCode::kInvalidModel, g, n, "output '" + out + "' is also produced elsewhere");
      n.outputs.push_back(id);
    }
    for (const auto& in : np.input()) n.inputs.push_back(in.empty() ? -1 : value_id(in));
    for (const auto& ap : np.attribute())
      n.attrs[ap.name()] = attribute_from_proto(ap, node_context(g, n).substr(0, node_context(g, n).size() - 2));
    g.nodes.push_back(std::move(n));
  }
  for (const auto& vi : gp.output()) {
    auto it = ids.find(vi.name());
    if (it == ids.end())
      fail_file(ErrorCode::kInvalidModel, name, "graph output '" + vi.name() + "' is not produced by any node");
    g.outputs.push_back(it->second);
    Value& v = g.values[it->second];
    if (v.dtype == DType::kUndefined && vi.type().has_tensor_type())
      v.dtype = static_cast<DType>(vi.type().tensor_type().elem_type());
    Value declared;
    declared.name = vi.name();
    read_value_info(vi, declared);
    g.declared_outputs.push_back(std::move(declared));
  }
  if (g.outputs.empty()) fail_file(ErrorCode::kInvalidModel, name, "the graph has no outputs");

  // Every input of every node must come from somewhere.
  std::set<int> available(g.inputs.begin(), g.inputs.end());
  for (size_t id = 0; id < g.values.size(); ++id)
    if (g.values[id].constant) available.insert(static_cast<int>(id));
  for (const auto& n : g.nodes)
    for (int o : n.outputs)
      if (o >= 0) available.insert(o);
  for (const auto& n : g.nodes)
    for (int in : n.inputs)
      if (in >= 0 && !available.count(in))
        node_fail(ErrorCode::kInvalidModel, g, n,
                  "input '" + g.values[in].name + "' is not a graph input, an initializer or any node's output");
  for (int o : g.outputs)
    if (!available.count(o))
      fail_file(ErrorCode::kInvalidModel, name, "graph output '" + g.values[o].name + "' is never computed");

  // Arity and attributes, op by op.
  for (auto& n : g.nodes) {
    const OpSchema* s = find_schema(n.op);
    int nin = static_cast<int>(n.inputs.size());
    while (nin > 0 && n.inputs[nin - 1] < 0) --nin;  // trailing skipped optionals
    int nout = static_cast<int>(n.outputs.size());
    if (nin < s->min_inputs || nin > s->max_inputs)
      node_fail(ErrorCode::kInvalidModel, g, n,
                "has " + std::to_string(nin) + " inputs; " + n.op + " takes " + std::to_string(s->min_inputs) +
                    (s->max_inputs != s->min_inputs ? " to " + std::to_string(s->max_inputs) : ""));
    for (int k = 0; k < s->min_inputs && k < nin; ++k)
      if (n.inputs[k] < 0)
        node_fail(ErrorCode::kInvalidModel, g, n, "required input " + std::to_string(k) + " is empty");
    if (nout < s->min_outputs || nout > s->max_outputs || n.outputs[0] < 0)
      node_fail(ErrorCode::kInvalidModel, g, n,
                "has " + std::to_string(nout) + " outputs; " + n.op + " produces " + std::to_string(s->min_outputs) +
                    " to " + std::to_string(s->max_outputs));
    if (s->parse) {
      ParseContext pc(g, n, g.opset);
      n.parsed = s->parse(pc);
    } else {
      n.parsed = std::make_shared<OpAttrs>();
    }
  }
  g.topo_order();  // throws on a cycle
  g.link_producers();
  return g;
}

Tensor parse_tensor_bytes(const void* data, size_t size, const std::string& context, std::string* name) {
  TensorProto tp;
  if (size > static_cast<size_t>(INT32_MAX) || !tp.ParseFromArray(data, static_cast<int>(size)))
    throw Error(ErrorCode::kInvalidModel, context + ": not a serialized ONNX TensorProto");
  if (name) *name = tp.name();
  return tensor_from_proto(tp, context);
}

Tensor load_tensor_file(const std::string& path, std::string* name) {
  std::string bytes = read_file_bytes(path);
  return parse_tensor_bytes(bytes.data(), bytes.size(), path, name);
}

std::string serialize_tensor(const Tensor& t, const std::string& name) {
  TensorProto tp;
  tp.set_name(name);
  tp.set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) tp.add_dims(d);
  tp.set_raw_data(t.raw(), t.nbytes());
  return tp.SerializeAsString();
}

}  // namespace minirt::onnx
