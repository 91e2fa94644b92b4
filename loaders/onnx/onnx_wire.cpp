#include "loaders/onnx/onnx_wire.h"

#include <cstdint>

namespace minirt::onnx {

namespace {

// Official field numbers (onnx.proto, as loaders/onnx/onnx_subset.proto has them).
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorRawData = 9;
constexpr uint32_t kLengthDelimited = 2;

bool read_varint(const unsigned char*& p, const unsigned char* end, uint64_t* v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (p == end) return false;
    const unsigned char b = *p++;
    x |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

void put_varint(std::string& s, uint64_t v) {
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
}

// One field of a message: its number and wire type, where it starts (the
// tag) and ends, and for a length-delimited one its payload.
struct Field {
  uint32_t number = 0, type = 0;
  const unsigned char *start = nullptr, *end = nullptr, *payload = nullptr;
};

bool next_field(const unsigned char*& p, const unsigned char* end, Field* f) {
  f->start = p;
  uint64_t tag = 0;
  if (!read_varint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return false;
  f->number = static_cast<uint32_t>(tag >> 3);
  f->type = static_cast<uint32_t>(tag & 7);
  uint64_t v = 0;
  switch (f->type) {
    case 0:
      if (!read_varint(p, end, &v)) return false;
      break;
    case 1:
      if (end - p < 8) return false;
      p += 8;
      break;
    case kLengthDelimited:
      if (!read_varint(p, end, &v) || v > static_cast<uint64_t>(end - p)) return false;
      f->payload = p;
      p += v;
      break;
    case 5:
      if (end - p < 4) return false;
      p += 4;
      break;
    default:  // groups (3, 4; no ONNX message has one) and invalid types
      return false;
  }
  f->end = p;
  return true;
}

class Splitter {
 public:
  Splitter(const unsigned char* base, RawDataSplit* out) : base_(base), out_(out) {}

  bool model(const unsigned char* p, const unsigned char* end, std::string& s) {
    return message(p, end, s, kModelGraph, [this](const Field& f, std::string& o) { return graph(f, o); });
  }

 private:
  template <typename Inner>
  bool message(const unsigned char* p, const unsigned char* end, std::string& s, uint32_t descend, Inner inner) {
    Field f;
    while (p < end) {
      if (!next_field(p, end, &f)) return false;
      if (f.number == descend && f.type == kLengthDelimited) {
        if (!inner(f, s)) return false;
      } else {
        s.append(reinterpret_cast<const char*>(f.start), static_cast<size_t>(f.end - f.start));
      }
    }
    return true;
  }

  // A length-delimited field whose payload is rewritten by `body`.
  template <typename Body>
  bool rewrite(const Field& f, std::string& s, Body body) {
    std::string inner;
    if (!body(inner)) return false;
    put_varint(s, (static_cast<uint64_t>(f.number) << 3) | kLengthDelimited);
    put_varint(s, inner.size());
    s += inner;
    return true;
  }

  bool graph(const Field& g, std::string& s) {
    return rewrite(g, s, [&](std::string& o) {
      return message(g.payload, g.end, o, kGraphInitializer,
                     [this](const Field& t, std::string& to) { return tensor(t, to); });
    });
  }

  bool tensor(const Field& t, std::string& s) {
    RawSpan span;
    bool ok = rewrite(t, s, [&](std::string& o) {
      const unsigned char* p = t.payload;
      Field f;
      while (p < t.end) {
        if (!next_field(p, t.end, &f)) return false;
        if (f.number == kTensorRawData && f.type == kLengthDelimited) {
          // The last occurrence wins, as protobuf merges a singular field.
          span = {static_cast<size_t>(f.payload - base_), static_cast<size_t>(f.end - f.payload), true};
          continue;
        }
        o.append(reinterpret_cast<const char*>(f.start), static_cast<size_t>(f.end - f.start));
      }
      if (span.present) {  // present, empty: the bytes are read from the span
        put_varint(o, (static_cast<uint64_t>(kTensorRawData) << 3) | kLengthDelimited);
        put_varint(o, 0);
      }
      return true;
    });
    if (!ok) return false;
    out_->spans.push_back(span);
    out_->raw_bytes += span.size;
    return true;
  }

  const unsigned char* base_;
  RawDataSplit* out_;
};

}  // namespace

bool split_raw_data(const unsigned char* data, size_t size, RawDataSplit* out) {
  *out = RawDataSplit{};
  Splitter sp(data, out);
  std::string s;
  if (!sp.model(data, data + size, s)) {
    *out = RawDataSplit{};
    return false;
  }
  out->skeleton = std::move(s);
  return true;
}

}  // namespace minirt::onnx
