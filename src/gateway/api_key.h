// The API key check (--api-key): whether a request's Authorization header carries the key.
#pragma once

#include <string_view>

namespace stamen::gateway {

// True when `authorization` is `Bearer <key>` (the scheme's name in any case, RFC 9110 11.1),
// compared in time independent of where a wrong key differs.
bool CarriesApiKey(std::string_view authorization, std::string_view key);

}  // namespace stamen::gateway
