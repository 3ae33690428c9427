#include "http/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/heap_release.h"

namespace stamen::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

std::string_view Request::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return {};
}

void ClientWatch::OnGone(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (disarmed_) return;
    if (!gone_.load()) {
      callback_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

void ClientWatch::MarkGone() {
  std::function<void()> callback;
  {
    std::lock_guard lock(mutex_);
    if (gone_.exchange(true)) return;
    callback = std::move(callback_);
    callback_ = nullptr;
  }
  if (callback) callback();
}

void ClientWatch::Disarm() {
  std::function<void()> dropped;
  std::lock_guard lock(mutex_);
  disarmed_ = true;
  dropped.swap(callback_);  // destroyed after the lock is released (declared first)
}

namespace {

// The most bytes of a request's head: its request line and header fields (Beast's header
// limit), and, in a chunked body, each chunk-size line with its extensions and the trailer
// after the last chunk. Beast bounds only the header itself; a chunk line or a trailer it
// reads until it ends, keeping every byte in the read buffer. So the buffer is bounded too: it
// may hold a whole header plus what one read brings after it, and a chunk line or a trailer
// that fills it fails the read (buffer_overflow) long before the body limit or the handler,
// whose API key check would otherwise come only after the whole trailer was read.
constexpr size_t kHeaderLimit = 64 * 1024;
constexpr size_t kReadBufferLimit = 2 * kHeaderLimit;
// The most bytes one read of a body asks for (Beast's own cap on a read is 64 KB).
constexpr uint64_t kBodyReadSize = 64 * 1024;

// Accept errors that mean the process (or the system) is out of a resource: accepting again at
// once fails again at once, since the pending connection stays in the backlog, so the accept
// loop waits this long between tries instead of spinning.
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};
// While accepts fail, one log line per this interval, with how many failed in it.
constexpr std::chrono::seconds kAcceptFailureLogInterval{1};
// Free heap memory below this is not worth a malloc_trim when the server goes idle.
constexpr int64_t kHeapReleaseWorthBytes = 16 << 20;

bool IsOutOfResources(const beast::error_code& error) {
  return error == boost::system::errc::too_many_files_open ||            // EMFILE: the process's limit
         error == boost::system::errc::too_many_files_open_in_system ||  // ENFILE: the system's
         error == boost::system::errc::no_buffer_space || error == boost::system::errc::not_enough_memory;
}

// The API's error shape ({"error": {"message", "type", "code"}}); fixed ASCII messages only.
std::string ErrorBody(int status, std::string_view message, std::string_view type) {
  std::string body = "{\"error\":{\"message\":\"";
  body += message;
  body += "\",\"type\":\"";
  body += type;
  body += "\",\"code\":" + std::to_string(status) + "}}";
  return body;
}

}  // namespace

class Connection;

struct Server::State : std::enable_shared_from_this<Server::State> {
  ServerOptions options;
  Handler handler;
  asio::io_context io;
  // Keeps the I/O threads running while no socket operation is pending: a handler working
  // for a client that already hung up (no watch read left) must still be able to post its
  // answer, also while Stop drains after the acceptor is closed.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;
  // On its own strand: the accept loop and Stop()'s close never run at the same time.
  tcp::acceptor acceptor{asio::make_strand(io)};
  // On the acceptor's strand: the wait before accepting again when accepts fail for want of
  // file descriptors, and the failures counted since the last log line about them.
  asio::steady_timer accept_retry{acceptor.get_executor()};
  int64_t accept_failures_unlogged = 0;
  std::chrono::steady_clock::time_point accept_failure_logged_at{};
  std::vector<std::thread> threads;
  std::atomic<int64_t> active_requests{0};
  // On its own strand: fires release_memory_after_idle after the last active request ended.
  asio::steady_timer idle_release{asio::make_strand(io)};
  std::mutex connections_mutex;
  std::set<std::weak_ptr<Connection>, std::owner_less<std::weak_ptr<Connection>>> connections;
  bool stopped = false;

  void Accept();
  // An answered request is no longer active; the last one arms the idle memory release.
  void RequestEnded();
  // Counts an accept that failed for want of resources, logs at most once per interval, and
  // accepts again after kAcceptRetryDelay.
  void RetryAcceptLater(const beast::error_code& error);
};

// One client connection: read a request, hand it to the handler, write its answer, repeat
// while the client keeps the connection alive. All socket work runs on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<Server::State> server)
      : stream_(std::move(socket)), server_(std::move(server)), buffer_(kReadBufferLimit) {}

  void Begin() { ReadHeader(); }

  void Close() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->stream_.close();
    });
  }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(server_->options.body_limit);
    parser_->header_limit(kHeaderLimit);
    head_request_ = false;
    stream_.expires_after(server_->options.idle_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = shared_from_this()](beast::error_code error, size_t) { self->OnHeader(error); });
  }

  void OnHeader(beast::error_code error) {
    if (error) return OnReadError(error);
    auto& header = parser_->get();
    if (auto length = parser_->content_length(); length && *length > server_->options.body_limit) {
      return WriteError(413, "payload too large: the body exceeds the payload limit", "invalid_request_error");
    }
    if (beast::iequals(header[bhttp::field::expect], "100-continue")) {
      auto continue_response = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, 11);
      bhttp::async_write(stream_, *continue_response,
                         [self = shared_from_this(), continue_response](beast::error_code error, size_t) {
                           if (error) return self->Close();
                           self->ReadBody();
                         });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    // Beast reads as much as the buffer's free capacity, at least 512 bytes: the header left
    // it at 512, so a 500 kB body took a thousand reads, each a trip through the reactor and
    // the strand (6 ms of CPU per body, most of a 256-client overload's refusal time). Room
    // for kBodyReadSize bytes makes each read take what the socket has, up to that.
    const uint64_t body_bytes = parser_->content_length().value_or(kBodyReadSize);
    buffer_.reserve(std::min<size_t>(buffer_.max_size(), buffer_.size() + std::min<uint64_t>(body_bytes, kBodyReadSize)));
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code error, size_t) { self->OnRequest(error); });
  }

  void OnReadError(beast::error_code error) {
    if (error == bhttp::error::body_limit) {
      return WriteError(413, "payload too large: the body exceeds the payload limit", "invalid_request_error");
    }
    if (error == bhttp::error::header_limit || error == bhttp::error::buffer_overflow) {
      return WriteError(431, "request header fields too large: the header, a chunk extension or the trailer exceeds 64 KB",
                        "invalid_request_error");
    }
    if (error == bhttp::error::end_of_stream || error == asio::error::eof || error == beast::error::timeout ||
        error == asio::error::operation_aborted || error == asio::error::connection_reset) {
      return Shutdown();
    }
    WriteError(400, "malformed HTTP request", "invalid_request_error");
  }

  void OnRequest(beast::error_code error) {
    if (error) return OnReadError(error);
    stream_.expires_never();  // the handler may take as long as the work does
    bhttp::request<bhttp::string_body> message = parser_->release();
    // An idle keep-alive connection keeps no body-sized read buffer (thousands may wait).
    if (buffer_.size() == 0) buffer_.shrink_to_fit();
    keep_alive_ = message.keep_alive();
    head_request_ = message.method() == bhttp::verb::head;
    Request request;
    request.method = std::string(message.method_string());
    const std::string_view target(message.target().data(), message.target().size());
    const size_t question = target.find('?');
    request.path = std::string(target.substr(0, question));
    if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
    for (const auto& field : message) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      request.headers.emplace_back(std::move(name), std::string(field.value()));
    }
    request.body = std::move(message.body());
    client_ = std::make_shared<ClientWatch>();
    request.client = client_;
    ++server_->active_requests;
    WatchForDisconnect();
    // The handler may answer from any thread; the answer comes back to this strand.
    server_->handler(std::move(request), [self = shared_from_this()](Response response) {
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response)]() mutable { self->Write(std::move(response), true); });
    });
  }

  // While the handler works, a read on the socket notices a client that hangs up. Bytes that
  // arrive instead (a pipelined next request) are kept for the next read.
  void WatchForDisconnect() {
    // A buffer already full of pipelined requests leaves no room to read into (prepare would
    // throw): that client is plainly there, and is not watched.
    const size_t room = std::min<size_t>(4096, buffer_.max_size() - buffer_.size());
    if (room == 0) return;
    watching_ = true;
    stream_.socket().async_read_some(
        buffer_.prepare(room), [self = shared_from_this()](beast::error_code error, size_t bytes) {
          self->watching_ = false;
          self->buffer_.commit(bytes);
          if (error && error != asio::error::operation_aborted) self->client_->MarkGone();
          if (self->read_after_watch_) {
            self->read_after_watch_ = false;
            self->ContinueAfterWrite();
          }
        });
  }

  void WriteError(int status, std::string_view message, std::string_view type) {
    keep_alive_ = false;
    Response response;
    if (server_->options.error_response) {
      std::string_view path, origin;
      if (parser_) {
        // Set once the request line is read, also when a header check (the body limit) failed.
        const auto target = parser_->get().target();
        path = std::string_view(target.data(), target.size());
        path = path.substr(0, path.find('?'));
        const auto origin_field = parser_->get()[boost::beast::http::field::origin];
        origin = std::string_view(origin_field.data(), origin_field.size());
      }
      response = server_->options.error_response(path, origin, status, message, type);
    } else {
      response.status = status;
      response.body = ErrorBody(status, message, type);
    }
    Write(std::move(response), false);
  }

  void Write(Response response, bool counted) {
    if (client_) client_->Disarm();
    if (watching_) {
      beast::error_code ignored;
      stream_.socket().cancel(ignored);  // ends the disconnect watch (operation_aborted)
    }
    auto message = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(response.status), 11);
    message->set(bhttp::field::server, "stamen");
    message->set(bhttp::field::content_type, response.content_type);
    for (auto& [name, value] : response.headers) message->set(name, value);
    message->body() = std::move(response.body);
    message->keep_alive(keep_alive_);
    message->prepare_payload();
    // A HEAD answer has the headers a GET would get, its Content-Length included, and no body
    // (RFC 9110, 9.3.2): a client reads none, so body bytes would corrupt its next answer.
    if (head_request_) message->body().clear();
    stream_.expires_after(server_->options.idle_timeout);
    bhttp::async_write(stream_, *message, [self = shared_from_this(), message, counted](beast::error_code error, size_t) {
      if (counted) self->server_->RequestEnded();
      if (error || !self->keep_alive_) return self->Shutdown();
      if (self->watching_) {
        self->read_after_watch_ = true;  // one read at a time: continue once the watch ends
      } else {
        self->ContinueAfterWrite();
      }
    });
  }

  void ContinueAfterWrite() {
    if (client_ && client_->gone()) return Shutdown();
    ReadHeader();
  }

  void Shutdown() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  std::shared_ptr<Server::State> server_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<ClientWatch> client_;
  bool keep_alive_ = true;
  bool head_request_ = false;  // the request being answered is a HEAD
  bool watching_ = false;
  bool read_after_watch_ = false;
};

void Server::State::Accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code error, tcp::socket socket) {
    if (!acceptor.is_open()) return;  // stopping: Stop() closed the acceptor
    if (error) {
      if (error == asio::error::operation_aborted) return;
      if (IsOutOfResources(error)) return RetryAcceptLater(error);
      spdlog::warn("http: accept failed: {}", error.message());
    } else {
      socket.set_option(tcp::no_delay(true));
      // The state outlives every connection: Stop() joins the I/O threads before it goes.
      auto connection = std::make_shared<Connection>(std::move(socket), shared_from_this());
      {
        std::lock_guard lock(connections_mutex);
        std::erase_if(connections, [](const auto& weak) { return weak.expired(); });
        connections.insert(connection);
      }
      connection->Begin();
    }
    Accept();
  });
}

void Server::State::RequestEnded() {
  if (--active_requests > 0 || options.release_memory_after_idle.count() == 0) return;
  asio::post(idle_release.get_executor(), [this] {
    idle_release.expires_after(options.release_memory_after_idle);  // a later end restarts the wait
    idle_release.async_wait([this](beast::error_code error) {
      if (error || active_requests.load() > 0) return;  // cancelled, restarted or busy again
      if (const int64_t released = ReleaseFreeHeapMemory(kHeapReleaseWorthBytes); released > 0) {
        spdlog::debug("http: idle, gave the heap's {} MB of free memory back to the system", released >> 20);
      }
    });
  });
}

void Server::State::RetryAcceptLater(const beast::error_code& error) {
  ++accept_failures_unlogged;
  const auto now = std::chrono::steady_clock::now();
  if (now - accept_failure_logged_at >= kAcceptFailureLogInterval) {
    spdlog::warn("http: accept failed {} times since the last such line: {}; accepting again every {} ms until it succeeds",
                 accept_failures_unlogged, error.message(), kAcceptRetryDelay.count());
    accept_failures_unlogged = 0;
    accept_failure_logged_at = now;
  }
  accept_retry.expires_after(kAcceptRetryDelay);
  accept_retry.async_wait([this](beast::error_code wait_error) {
    if (wait_error || !acceptor.is_open()) return;  // stopping
    Accept();
  });
}

StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, Handler handler) {
  auto state = std::make_shared<State>();
  state->options = options;
  state->handler = std::move(handler);
  beast::error_code error;
  const auto address = asio::ip::make_address(options.host, error);
  if (error) return Status::Error("http: bad listen address '" + options.host + "': " + error.message());
  const tcp::endpoint endpoint(address, options.port);
  state->acceptor.open(endpoint.protocol(), error);
  if (!error) state->acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) state->acceptor.bind(endpoint, error);
  if (!error) state->acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    return Status::Error("http: cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " +
                         error.message());
  }
  state->Accept();
  state->keep_running.emplace(state->io.get_executor());
  for (int i = 0; i < std::max(options.threads, 1); ++i) {
    state->threads.emplace_back([raw = state.get()] { raw->io.run(); });
  }
  return std::unique_ptr<Server>(new Server(std::move(state)));
}

uint16_t Server::port() const { return state_->acceptor.local_endpoint().port(); }

int64_t Server::active_requests() const { return state_->active_requests.load(); }

void Server::Stop(std::chrono::milliseconds drain) {
  if (state_->stopped) return;
  state_->stopped = true;
  asio::post(state_->acceptor.get_executor(), [state = state_.get()] {
    beast::error_code ignored;
    state->acceptor.close(ignored);
    state->accept_retry.cancel();
  });
  asio::post(state_->idle_release.get_executor(), [state = state_.get()] { state->idle_release.cancel(); });
  const auto give_up = std::chrono::steady_clock::now() + drain;
  while (state_->active_requests.load() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    std::lock_guard lock(state_->connections_mutex);
    for (const auto& weak : state_->connections) {
      if (auto connection = weak.lock()) connection->Close();
    }
  }
  // Let the closes run (each connection ends when its last handler returns), then stop.
  const auto close_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < close_deadline) {
    std::lock_guard lock(state_->connections_mutex);
    std::erase_if(state_->connections, [](const auto& weak) { return weak.expired(); });
    if (state_->connections.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  state_->keep_running.reset();
  state_->io.stop();
  for (auto& thread : state_->threads) thread.join();
  state_->threads.clear();
  // Handlers still queued hold their connections, which hold this state: run them to the end
  // (their sockets are closed) so nothing is left referring to it.
  state_->io.restart();
  state_->io.poll();
}

Server::~Server() { Stop(std::chrono::milliseconds(0)); }

}  // namespace stamen::http
