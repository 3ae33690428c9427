#include "gateway/openapi.h"

#include <cstddef>

#include "gateway/api.h"

namespace stamen::gateway {

// Written by openapi_embed.cmake at build time (openapi_files.cc in the build folder).
// Bytes, not chars: UTF-8 bytes above 127 do not fit a signed char's initialiser.
extern const unsigned char kOpenApiJson[];
extern const size_t kOpenApiJsonSize;
extern const unsigned char kDocsPage[];
extern const size_t kDocsPageSize;

namespace {

// `text` as it goes between a JSON string's quotes.
std::string JsonEscaped(std::string_view text) {
  std::string quoted;
  AppendJsonString(quoted, text);
  return quoted.substr(1, quoted.size() - 2);
}

void ReplaceAll(std::string& text, std::string_view placeholder, const std::string& value) {
  for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size())) {
    text.replace(at, placeholder.size(), value);
  }
}

}  // namespace

std::string OpenApiDocument(std::string_view model_id, std::string_view version) {
  std::string document(reinterpret_cast<const char*>(kOpenApiJson), kOpenApiJsonSize);
  ReplaceAll(document, "${MODEL_ID}", JsonEscaped(model_id));
  ReplaceAll(document, "${STAMEN_VERSION}", JsonEscaped(version));
  return document;
}

std::string_view DocsPage() { return {reinterpret_cast<const char*>(kDocsPage), kDocsPageSize}; }

}  // namespace stamen::gateway
