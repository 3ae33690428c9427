#include "gateway/json_read.h"

#include <cctype>

namespace stamen::gateway {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

ApiError Invalid(std::string message) { return ApiError{400, std::move(message), "invalid_request_error"}; }
ApiError EmptyBatch(std::string message) {
  ApiError error = Invalid(std::move(message));
  error.empty_batch = true;
  return error;
}

const char* TypeName(element_type type) {
  switch (type) {
    case element_type::ARRAY: return "an array";
    case element_type::OBJECT: return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: return "a number";
    case element_type::STRING: return "a string";
    case element_type::BOOL: return "a boolean";
    case element_type::NULL_VALUE: return "null";
  }
  return "a value";
}

// Parses `body` into an object (the parser must outlive it).
std::variant<object, ApiError> ParseObject(simdjson::dom::parser& parser, std::string_view body) {
  element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) {
    return Invalid("the request body is not valid JSON");
  }
  object fields;
  if (root.get(fields) != simdjson::SUCCESS) return Invalid(std::string("the request body must be a JSON object, not ") + TypeName(root.type()));
  return fields;
}

std::optional<ApiError> ReadRequired(object fields, const char* key, const std::string& name, element* out) {
  if (fields[key].get(*out) != simdjson::SUCCESS || out->is_null()) return Invalid("missing '" + name + "'");
  return std::nullopt;
}

std::optional<ApiError> ReadBool(object fields, const char* key, bool* out) {
  element value;
  if (fields[key].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  if (value.get(*out) != simdjson::SUCCESS) return Invalid(std::string("'") + key + "' must be a boolean");
  return std::nullopt;
}

std::optional<ApiError> ReadOptionalBool(object fields, const char* key, std::optional<bool>* out) {
  element value;
  if (fields[key].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  bool flag;
  if (value.get(flag) != simdjson::SUCCESS) return Invalid(std::string("'") + key + "' must be a boolean");
  *out = flag;
  return std::nullopt;
}

std::optional<ApiError> ReadString(object fields, const char* key, std::string* out) {
  element value;
  if (fields[key].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  std::string_view text;
  if (value.get(text) != simdjson::SUCCESS) return Invalid(std::string("'") + key + "' must be a string");
  *out = std::string(text);
  return std::nullopt;
}

std::optional<ApiError> ReadPositive(object fields, const char* key, std::optional<int64_t>* out) {
  element value;
  if (fields[key].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  int64_t number;
  if (value.get(number) != simdjson::SUCCESS || number < 1) {
    return Invalid(std::string("'") + key + "' must be a positive integer");
  }
  *out = number;
  return std::nullopt;
}

std::optional<ApiError> ReadTruncationDirection(object fields, Truncation* out) {
  std::string direction;
  if (auto error = ReadString(fields, "truncation_direction", &direction)) return error;
  if (direction.empty()) return std::nullopt;
  for (char& c : direction) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (direction == "right") {
    *out = Truncation::kRight;
  } else if (direction == "left") {
    *out = Truncation::kLeft;
  } else {
    return Invalid("'truncation_direction' must be \"left\" or \"right\"");
  }
  return std::nullopt;
}

std::optional<ApiError> ReadPriority(object fields, std::optional<server::Priority>* out, bool cohere) {
  // Cohere's form: an integer, lower first, its default 0 the highest. Cohere's numbers can
  // only lower a request: 0 is stamen's normal, any larger number low.
  element value;
  if (cohere && fields["priority"].get(value) == simdjson::SUCCESS && value.is_number()) {
    int64_t number;
    if (value.get(number) != simdjson::SUCCESS || number < 0) {
      return Invalid("'priority' must be \"high\", \"normal\", \"low\" or a non-negative integer (Cohere's: 0 first)");
    }
    *out = number == 0 ? server::Priority::kNormal : server::Priority::kLow;
    return std::nullopt;
  }
  std::string name;
  if (auto error = ReadString(fields, "priority", &name)) return error;
  if (name.empty()) return std::nullopt;
  if (const std::optional<server::Priority> priority = server::ParsePriority(name)) {
    *out = priority;
    return std::nullopt;
  }
  return Invalid("'priority' must be \"high\", \"normal\" or \"low\"");
}

// Token ids: an array of integers in int32 range.
std::optional<std::vector<int32_t>> ReadIds(array values) {
  std::vector<int32_t> ids;
  for (element value : values) {
    int64_t id;
    if (value.get(id) != simdjson::SUCCESS || id < INT32_MIN || id > INT32_MAX) return std::nullopt;
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

}  // namespace stamen::gateway
