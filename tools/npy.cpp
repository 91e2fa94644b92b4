#include "tools/npy.h"

#include <minirt/error.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace minirt::tools {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, path + ": " + why);
}

DType dtype_of_descr(const std::string& d, const std::string& path) {
  if (d == "<f4") return DType::kFloat32;
  if (d == "<i8") return DType::kInt64;
  if (d == "<i4") return DType::kInt32;
  if (d == "|b1") return DType::kBool;
  if (d == "|u1") return DType::kUInt8;
  if (d == "|i1") return DType::kInt8;
  if (d == "<f2") return DType::kFloat16;
  bad(path, "unsupported .npy dtype '" + d + "' (float32, float16, int64, int32, bool, uint8, int8 are supported)");
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "<f4";
    case DType::kInt64:
      return "<i8";
    case DType::kInt32:
      return "<i4";
    case DType::kBool:
      return "|b1";
    case DType::kUInt8:
      return "|u1";
    case DType::kInt8:
      return "|i1";
    case DType::kFloat16:
      return "<f2";
    default:
      return nullptr;
  }
}

// The value text after 'key': in the header dict.
std::string field(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) bad(path, "the .npy header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) bad(path, "malformed .npy header");
  size_t s = header.find_first_not_of(' ', colon + 1);
  if (s == std::string::npos) bad(path, "malformed .npy header");
  if (header[s] == '(') {
    size_t e = header.find(')', s);
    if (e == std::string::npos) bad(path, "malformed .npy header");
    return header.substr(s, e - s + 1);
  }
  if (header[s] == '\'') {
    size_t e = header.find('\'', s + 1);
    if (e == std::string::npos) bad(path, "malformed .npy header");
    return header.substr(s + 1, e - s - 1);
  }
  size_t e = header.find_first_of(",}", s);
  return header.substr(s, e - s);
}

}  // namespace

Shape parse_shape(const std::string& text) {
  Shape s;
  if (text.empty() || text == "scalar") return s;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0)
      throw Error(ErrorCode::kInvalidArgument, "bad shape '" + text + "': expected dimensions like 1x3x224x224");
    s.push_back(v);
  }
  return s;
}

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kNotFound, path + ": cannot open the file");
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad(path, "not a .npy file (bad magic)");
  uint8_t major = static_cast<uint8_t>(magic[6]);
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) bad(path, "truncated .npy header");
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) bad(path, "truncated .npy header");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    bad(path, "unsupported .npy version " + std::to_string(major));
  }
  if (hlen > (1u << 20)) bad(path, ".npy header is implausibly long");
  std::string header(hlen, '\0');
  if (!f.read(header.data(), hlen)) bad(path, "truncated .npy header");
  DType dt = dtype_of_descr(field(header, "descr", path), path);
  if (field(header, "fortran_order", path).find("True") != std::string::npos)
    bad(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  std::string tuple = field(header, "shape", path);
  Shape shape;
  std::string num;
  for (char c : tuple) {
    if (c >= '0' && c <= '9')
      num += c;
    else if (!num.empty()) {
      shape.push_back(std::stoll(num));
      num.clear();
    }
  }
  Tensor t = Tensor::zeros(dt, shape);
  if (t.nbytes() && !f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes())))
    bad(path, "the .npy data is shorter than its shape " + shape_str(shape) + " needs");
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  if (!descr) throw Error(ErrorCode::kUnsupported, path + ": cannot write dtype " + dtype_name(t.dtype()) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kNotFound, path + ": cannot create the file");
  f.write("\x93NUMPY\x01\x00", 8);
  unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                          static_cast<unsigned char>(header.size() >> 8)};
  f.write(reinterpret_cast<char*>(len), 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!f) throw Error(ErrorCode::kNotFound, path + ": write failed");
}

}  // namespace minirt::tools
