#include "tools/triton/json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "tools/cli_util.h"

namespace minirt::json {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kNumber;
  v.text_ = std::to_string(i);
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.text_ = std::move(s);
  return v;
}

Value Value::array() {
  Value v;
  v.kind_ = Kind::kArray;
  return v;
}

Value Value::object() {
  Value v;
  v.kind_ = Kind::kObject;
  return v;
}

int64_t Value::as_int() const {
  if (kind_ != Kind::kNumber && kind_ != Kind::kString) throw std::invalid_argument("not a number");
  const char* s = text_.c_str();
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE) throw std::invalid_argument("'" + text_ + "' is not a whole number");
  return static_cast<int64_t>(i);
}

const Value* Value::find(const std::string& key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

Value* Value::find(const std::string& key) {
  for (auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

Value& Value::operator[](const std::string& key) {
  if (kind_ == Kind::kNull) kind_ = Kind::kObject;
  if (Value* v = find(key)) return *v;
  members_.emplace_back(key, Value());
  return members_.back().second;
}

void Value::erase(const std::string& key) {
  for (auto it = members_.begin(); it != members_.end(); ++it)
    if (it->first == key) {
      members_.erase(it);
      return;
    }
}

namespace {

void dump_string(const std::string& s, std::string& out) { out += tools::json_str(s); }

void dump_value(const Value& v, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::kNull:
      out += "null";
      break;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      break;
    case Value::Kind::kNumber:
      out += v.text();
      break;
    case Value::Kind::kString:
      dump_string(v.text(), out);
      break;
    case Value::Kind::kArray: {
      out += '[';
      bool first = true;
      for (const Value& e : v.items()) {
        if (!first) out += ',';
        first = false;
        dump_value(e, out);
      }
      out += ']';
      break;
    }
    case Value::Kind::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [k, e] : v.members()) {
        if (!first) out += ',';
        first = false;
        dump_string(k, out);
        out += ':';
        dump_value(e, out);
      }
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string Value::dump() const {
  std::string out;
  dump_value(*this, out);
  return out;
}

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("text after the end of the document");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 256;

  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError("JSON: " + what + " at byte " + std::to_string(pos_));
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }

  void literal(const char* word) {
    for (const char* p = word; *p; ++p, ++pos_)
      if (pos_ >= s_.size() || s_[pos_] != *p) fail(std::string("expected '") + word + "'");
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end of text");
    char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Value::string(string());
    if (c == 't') {
      literal("true");
      return Value::boolean(true);
    }
    if (c == 'f') {
      literal("false");
      return Value::boolean(false);
    }
    if (c == 'n') {
      literal("null");
      return Value();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(std::string("unexpected character '") + c + "'");
  }

  Value object(int depth) {
    ++pos_;  // '{'
    Value v = Value::object();
    if (eat('}')) return v;
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a member name");
      std::string key = string();
      expect(':');
      Value e = value(depth + 1);
      v.members_.emplace_back(std::move(key), std::move(e));
    } while (eat(','));
    expect('}');
    return v;
  }

  Value array(int depth) {
    ++pos_;  // '['
    Value v = Value::array();
    if (eat(']')) return v;
    do v.items_.push_back(value(depth + 1));
    while (eat(','));
    expect(']');
    return v;
  }

  Value number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == d) fail("expected a digit");
    };
    if (s_[pos_] == '-') ++pos_;
    digits();
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    Value v;
    v.kind_ = Value::Kind::kNumber;
    v.text_ = s_.substr(start, pos_ - start);
    return v;
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("short \\u escape");
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      u <<= 4;
      if (c >= '0' && c <= '9')
        u |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        u |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        u |= static_cast<unsigned>(c - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return u;
  }

  static void utf8(unsigned cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') fail("lone surrogate");
            pos_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("lone surrogate");
          }
          utf8(cp, out);
          break;
        }
        default:
          fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

Value parse(const std::string& text) { return Parser(text).document(); }

}  // namespace minirt::json
