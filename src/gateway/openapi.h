// The OpenAPI 3.1 description of every gateway route (src/gateway/openapi.json) and the /docs
// page that renders it (openapi_docs.html), both compiled into the binary.
#pragma once

#include <string>
#include <string_view>

namespace stamen::gateway {

// openapi.json with ${MODEL_ID} and ${STAMEN_VERSION} replaced by the served model's id and
// stamen's version (JSON-escaped).
std::string OpenApiDocument(std::string_view model_id, std::string_view version);

// The /docs page (HTML; it loads /openapi.json itself).
std::string_view DocsPage();

}  // namespace stamen::gateway
