// Reading request fields with simdjson, each malformed field answered with the 400 that names
// it: what every API family's parser (api.cc, tei_api.cc) shares.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/api.h"

namespace stamen::gateway {

ApiError Invalid(std::string message);  // 400 invalid_request_error
ApiError EmptyBatch(std::string message);  // 400 invalid_request_error, TEI's "Empty"
const char* TypeName(simdjson::dom::element_type type);  // "an array", "a string", …

// Parses `body` into an object (the parser must outlive it).
std::variant<simdjson::dom::object, ApiError> ParseObject(simdjson::dom::parser& parser, std::string_view body);

// Parses `body` as a JSON object and has `read(fields, call)` fill a Call from its fields
// (returning the first error).
template <typename Call, typename Read>
std::variant<Call, ApiError> ParseCall(std::string_view body, Read read) {
  simdjson::dom::parser parser;
  auto parsed = ParseObject(parser, body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  Call call;
  if (std::optional<ApiError> error = read(std::get<simdjson::dom::object>(parsed), call)) return *error;
  return call;
}

// The field `key` (`name` in messages), which must be present and not null.
std::optional<ApiError> ReadRequired(simdjson::dom::object fields, const char* key, const std::string& name,
                                     simdjson::dom::element* out);

// Each reads the field `key` when present and not null, and leaves `out` alone otherwise.
std::optional<ApiError> ReadBool(simdjson::dom::object fields, const char* key, bool* out);
std::optional<ApiError> ReadOptionalBool(simdjson::dom::object fields, const char* key, std::optional<bool>* out);
std::optional<ApiError> ReadString(simdjson::dom::object fields, const char* key, std::string* out);
std::optional<ApiError> ReadPositive(simdjson::dom::object fields, const char* key, std::optional<int64_t>* out);
std::optional<ApiError> ReadTruncationDirection(simdjson::dom::object fields, Truncation* out);
// "priority": "high", "normal" or "low" (any route; stamen's own field); on Cohere's routes
// (`cohere`) also Cohere's integer (0, its default: normal; larger: low).
std::optional<ApiError> ReadPriority(simdjson::dom::object fields, std::optional<server::Priority>* out,
                                     bool cohere = false);

// Token ids: an array of integers in int32 range; nullopt when one is not.
std::optional<std::vector<int32_t>> ReadIds(simdjson::dom::array values);

}  // namespace stamen::gateway
