// The gateway's route table: each route's path, method, API family (which error shape its
// clients parse) and handler, and the answer a handler writes through (Reply), which puts
// its errors in the route's family's shape.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "gateway/api.h"
#include "http/http_server.h"
#include "server/work_request.h"

namespace stamen::gateway {

http::Response JsonResponse(int status, std::string body);
http::Response ErrorResponse(const ApiError& error, ApiFamily family);
// How a failed dispatch to the workers is answered.
ApiError DispatchError(const Status& status);
// A 200 JSON answer to inference work with TEI's x-tokenization-time, x-queue-time and
// x-inference-time headers.
http::Response TimedResponse(std::string body, double tokenization_ms, const server::WorkTiming& timing);

// How a handler answers one request: exactly once, from any thread.
class Reply {
 public:
  Reply(http::Respond respond, ApiFamily family) : respond_(std::move(respond)), family_(family) {}
  void operator()(http::Response response) const { respond_(std::move(response)); }
  void Error(const ApiError& error) const { respond_(ErrorResponse(error, family_)); }
  ApiFamily family() const { return family_; }

 private:
  http::Respond respond_;
  ApiFamily family_;
};

using RouteHandler = std::function<void(const http::Request& request, Reply reply)>;

struct Route {
  std::string path;    // exact, or ending in "/{id}": any rest of the path (ids may hold '/')
  std::string method;  // "GET" (HEAD too) or "POST"
  ApiFamily family;
  bool work;  // inference work: counts toward --max-concurrent-requests
  bool open;  // answered without the API key (health probes)
  RouteHandler handler;
};

class RouteTable {
 public:
  RouteTable() = default;
  explicit RouteTable(std::vector<Route> routes) : routes_(std::move(routes)) {}
  // A handler may hold its table (TEI's catch-all answers as another route): it stays put.
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;
  // Adds `routes` after those added before: of two that match a request, Find picks the first.
  void Add(std::vector<Route> routes);
  // The route for `path` and `method`, or null.
  const Route* Find(std::string_view path, std::string_view method) const;
  // The first route of `path` whatever its method (the family of a 405 or 413), or null.
  const Route* FindPath(std::string_view path) const;
  // The methods `path` takes, comma-separated (a 405's Allow header).
  std::string Methods(std::string_view path) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// The {id} of `path` for the route `pattern`, percent-decoded: "/v1/models/{id}" and
// "/v1/models/org%2Fname" → "org/name".
std::string PathParameter(std::string_view pattern, std::string_view path);

}  // namespace stamen::gateway
