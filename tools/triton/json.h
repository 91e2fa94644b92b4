// A small JSON value for the Triton backend: Triton hands a model's
// configuration to a backend as JSON text and takes the auto-completed one
// back the same way. Objects keep their members in order; numbers keep their
// text, so an int64 such as a dimension survives the round trip exactly.
//
//   minirt::json::Value v = minirt::json::parse(text);    // throws json::ParseError
//   const minirt::json::Value* mbs = v.find("max_batch_size");
//   v["max_batch_size"] = minirt::json::Value::integer(8);
//   std::string back = v.dump();
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace minirt::json {

class ParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Value() = default;
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value string(std::string s);
  static Value array();
  static Value object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_bool() const { return kind_ == Kind::kBool; }

  // The text of a string, or of a number as written.
  const std::string& text() const { return text_; }
  bool as_bool() const { return b_; }
  // A number, or a string holding one (protobuf's JSON writes int64 as
  // strings); throws std::invalid_argument when it is neither or not whole.
  int64_t as_int() const;

  // Arrays.
  const std::vector<Value>& items() const { return items_; }
  std::vector<Value>& items() { return items_; }
  void push_back(Value v) { items_.push_back(std::move(v)); }

  // Objects: members in the order they were read or added.
  const std::vector<std::pair<std::string, Value>>& members() const { return members_; }
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  // The member `key`, added as null when absent (the value becomes an object
  // when it was null).
  Value& operator[](const std::string& key);
  void erase(const std::string& key);

  std::string dump() const;

 private:
  friend class Parser;
  Kind kind_ = Kind::kNull;
  bool b_ = false;
  std::string text_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> members_;
};

// Parses one JSON document (RFC 8259); throws ParseError saying where.
Value parse(const std::string& text);

}  // namespace minirt::json
