#include "gateway/routes.h"

#include <cmath>

namespace stamen::gateway {

namespace {

constexpr std::string_view kParameter = "/{id}";

bool PathMatches(std::string_view pattern, std::string_view path) {
  if (pattern.size() < kParameter.size() || pattern.substr(pattern.size() - kParameter.size()) != kParameter) {
    return pattern == path;
  }
  const std::string_view prefix = pattern.substr(0, pattern.size() - kParameter.size() + 1);  // with its '/'
  return path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

http::Response JsonResponse(int status, std::string body) {
  http::Response response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

http::Response ErrorResponse(const ApiError& error, ApiFamily family) {
  return JsonResponse(ErrorStatus(error, family), ErrorBody(error, family));
}

ApiError DispatchError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return {422, status.message(), "invalid_request_error"};
    case StatusCode::kResourceExhausted: return {429, "overloaded: " + status.message(), "overloaded"};
    case StatusCode::kUnavailable: return {503, status.message(), "unavailable"};
    case StatusCode::kDeadlineExceeded: return {504, "the request timed out: " + status.message(), "timeout"};
    // Only a client that hung up cancels work (the gateway then cancels its dispatch): nobody
    // reads this answer; 499 (nginx's "client closed request") keeps the metrics honest.
    case StatusCode::kCancelled: return {499, "the client closed the connection: " + status.message(), "cancelled"};
    default: return {500, "inference failed: " + status.message(), "server_error"};
  }
}

http::Response TimedResponse(std::string body, double tokenization_ms, const server::WorkTiming& timing) {
  http::Response response = JsonResponse(200, std::move(body));
  // Whole milliseconds, as Text Embeddings Inference writes them.
  response.headers.emplace_back("x-tokenization-time", std::to_string(std::llround(tokenization_ms)));
  response.headers.emplace_back("x-queue-time", std::to_string(timing.queue_microseconds / 1000));
  response.headers.emplace_back("x-inference-time", std::to_string(timing.compute_microseconds / 1000));
  return response;
}

void RouteTable::Add(std::vector<Route> routes) {
  for (Route& route : routes) routes_.push_back(std::move(route));
}

const Route* RouteTable::Find(std::string_view path, std::string_view method) const {
  const std::string_view wanted = method == "HEAD" ? "GET" : method;
  for (const Route& route : routes_) {
    if (route.method == wanted && PathMatches(route.path, path)) return &route;
  }
  return nullptr;
}

const Route* RouteTable::FindPath(std::string_view path) const {
  for (const Route& route : routes_) {
    if (PathMatches(route.path, path)) return &route;
  }
  return nullptr;
}

std::string RouteTable::Methods(std::string_view path) const {
  std::string methods;
  for (const Route& route : routes_) {
    if (PathMatches(route.path, path)) methods += (methods.empty() ? "" : ", ") + route.method;
  }
  return methods;
}

std::string PathParameter(std::string_view pattern, std::string_view path) {
  const std::string_view encoded = path.substr(pattern.size() - kParameter.size() + 1);
  std::string decoded;
  for (size_t i = 0; i < encoded.size(); ++i) {
    const int high = encoded[i] == '%' && i + 2 < encoded.size() ? HexValue(encoded[i + 1]) : -1;
    const int low = high >= 0 ? HexValue(encoded[i + 2]) : -1;
    if (low >= 0) {
      decoded += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      decoded += encoded[i];
    }
  }
  return decoded;
}

}  // namespace stamen::gateway
