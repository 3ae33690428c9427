// A parsed JSON file and typed field access whose errors name the file and the key, for
// the config readers (config.json, sentence-transformers files).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "common/status.h"

namespace stamen::engine {

// One JSON object of a file. Optional reads leave the value unchanged when the key is absent
// or null; a present value of the wrong type is an error ("<file>: key 'k' must be …").
class JsonObject {
 public:
  JsonObject(std::string_view file, simdjson::dom::object object) : file_(file), object_(object) {}

  const std::string& file() const { return file_; }
  simdjson::dom::object raw() const { return object_; }
  bool Has(std::string_view key) const;

  Status Optional(std::string_view key, int64_t* value) const;
  Status Optional(std::string_view key, double* value) const;
  Status Optional(std::string_view key, bool* value) const;
  Status Optional(std::string_view key, std::string* value) const;
  // Fails when the key is absent or null, too.
  template <typename T>
  Status Required(std::string_view key, T* value) const {
    if (!Has(key)) return Error(key, "is missing");
    return Optional(key, value);
  }
  // Reads a nested object; absent or null gives `found` false.
  Status OptionalObject(std::string_view key, JsonObject* value, bool* found) const;
  // "<file>: key '<key>' <problem>".
  Status Error(std::string_view key, std::string_view problem) const;

 private:
  std::string file_;
  simdjson::dom::object object_;
};

// Owns the parser memory the objects point into.
class JsonDocument {
 public:
  // Reads and parses `path`; fails unless it holds a JSON object.
  static StatusOr<std::unique_ptr<JsonDocument>> Load(const std::string& path);
  JsonObject root() const { return JsonObject(path_, root_); }

 private:
  std::string path_;
  simdjson::dom::parser parser_;
  simdjson::dom::object root_;
};

}  // namespace stamen::engine
