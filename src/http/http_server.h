// A small HTTP/1.1 server on Boost.Beast: keep-alive connections served by a few I/O threads
// (no thread per connection), a body limit enforced while reading, and handlers that answer
// asynchronously from any thread. The gateway's routes and the worker's /metrics use it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace stamen::http {

// Whether the client of one request is still connected. The server marks it gone when the
// client hangs up before the answer is written, and then runs the callback registered with
// OnGone (once, on an I/O thread; it must not block) so that the handler can drop long work.
class ClientWatch {
 public:
  bool gone() const { return gone_.load(); }
  // Registers what to run when the client goes (replacing an earlier callback); runs it at
  // once, on this thread, when the client is already gone.
  void OnGone(std::function<void()> callback);
  // --- the server's side ---
  void MarkGone();
  // The answer is being written: the callback is dropped (it may hold the request's state)
  // and later ones are ignored.
  void Disarm();

 private:
  std::atomic<bool> gone_{false};
  bool disarmed_ = false;
  std::mutex mutex_;
  std::function<void()> callback_;
};

struct Request {
  std::string method;  // "GET", "POST", …
  std::string path;    // the target without its query
  std::string query;   // after '?', or empty
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  // Notices a client that closes its connection before the answer is written (the server
  // watches the socket while the handler works), so long work can be dropped. Never null for
  // requests the server hands to a handler.
  std::shared_ptr<ClientWatch> client;

  // The first header named `name` (lower case), or empty.
  std::string_view Header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Call exactly once per request, from any thread.
using Respond = std::function<void(Response)>;
using Handler = std::function<void(Request, Respond)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port (see Server::port)
  int threads = 1;
  size_t body_limit = 2 * 1024 * 1024;  // larger bodies get 413 before they are read
  std::chrono::seconds idle_timeout{60};  // a keep-alive connection with no request is closed
  // This long after the last active request is answered, with none begun since, the heap's
  // free memory goes back to the system (ReleaseFreeHeapMemory): a burst's RSS does not stay.
  // Zero: never.
  std::chrono::milliseconds release_memory_after_idle{1000};
  // Writes the answer to the errors the server finds itself (413 payload too large, 400
  // malformed request) for the request's path and Origin header (each empty when not read),
  // so that each route's clients get its API's error shape, and a browser its CORS headers.
  // Unset: {"error": {"message", "type", "code"}}.
  std::function<Response(std::string_view path, std::string_view origin, int status, std::string_view message,
                         std::string_view type)>
      error_response;
};

class Connection;

class Server {
 public:
  static StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options, Handler handler);
  ~Server();  // Stop(0)

  uint16_t port() const;
  // Requests whose handler has been called but whose answer is not written yet.
  int64_t active_requests() const;
  // Stops accepting connections, waits up to `drain` for the active requests' answers to be
  // written, then closes every connection and joins the I/O threads.
  void Stop(std::chrono::milliseconds drain);

 private:
  friend class Connection;
  struct State;
  explicit Server(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace stamen::http
