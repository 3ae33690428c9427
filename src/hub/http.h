// A small blocking HTTP client over libcurl for the hub client: GET or HEAD, redirects
// followed, response headers of every hop kept (the hub's X-Linked-Etag is on the redirect,
// not on the CDN's answer), the final body streamed to a sink.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace stamen::hub {

struct HttpResponse;

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  bool head = false;                 // HEAD instead of GET
  bool follow_redirects = true;
  int64_t range_from = -1;           // >= 0: "Range: bytes=<range_from>-"
  // Called once, before the first byte of the final body (or after the transfer when the body
  // is empty), with the final status and the headers so far; returning false aborts the transfer.
  std::function<bool(long status, const HttpResponse& response)> on_start;
  // Receives the final body of a 2xx answer; returning false aborts the transfer. Without a
  // sink the body is kept in HttpResponse::body. Bodies of other answers always go there
  // (first 64 KiB), so error messages can quote them.
  std::function<bool(std::string_view data)> sink;
  int64_t connect_timeout_s = 30;
  int64_t stall_timeout_s = 60;  // abort when less than 1 byte/s arrives for this long
};

struct HttpResponse {
  int curl_code = 0;         // CURLcode; 0: the exchange completed
  std::string curl_error;    // curl's message when curl_code != 0
  long status = 0;           // HTTP status of the last hop
  // Lowercase names; a later hop's header replaces an earlier one of the same name.
  std::map<std::string, std::string> headers;
  std::string body;
  bool aborted_by_callback = false;
  // Worth retrying: the transfer broke off or timed out, or the server answered 408, 429 or
  // 5xx. Not: a name that does not resolve, a refused certificate, a callback's abort.
  bool transient = false;

  bool completed() const { return curl_code == 0; }
  std::string Header(const std::string& lowercase_name) const {
    const auto found = headers.find(lowercase_name);
    return found == headers.end() ? "" : found->second;
  }
};

HttpResponse HttpFetch(const HttpRequest& request);

// Percent-encodes everything but unreserved characters (RFC 3986) and, when `keep_slash`, '/'.
std::string UrlEncode(std::string_view text, bool keep_slash);

}  // namespace stamen::hub
