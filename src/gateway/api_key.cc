#include "gateway/api_key.h"

#include <algorithm>
#include <cctype>

namespace stamen::gateway {

namespace {

// Compares secrets in time independent of where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char difference = a.size() == b.size() ? 0 : 1;
  const size_t length = std::max(a.size(), b.size());
  for (size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference |= x ^ y;
  }
  return difference == 0;
}

// The credentials of an `Authorization: Bearer <token>` header, or empty. The scheme's name is
// case-insensitive (RFC 9110, 11.1), so "bearer" and "BEARER" are taken too.
std::string_view BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() < kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  return token;
}

}  // namespace

bool CarriesApiKey(std::string_view authorization, std::string_view key) {
  return ConstantTimeEquals(BearerToken(authorization), key);
}

}  // namespace stamen::gateway
