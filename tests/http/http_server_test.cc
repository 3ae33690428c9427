// The HTTP server over raw loopback sockets, so that a test can send what no HTTP client
// library would: trailers and chunk extensions megabytes long, chunk sizes that are no sizes,
// pipelined HEAD requests, requests in turn on one kept-alive connection, and connections that
// wait in the backlog while the process has no file descriptor left.
#include "http/http_server.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace stamen::http {
namespace {

using Clock = std::chrono::steady_clock;

// A server whose handler answers 200 "hello world" and counts the requests it was handed.
class TestServer {
 public:
  explicit TestServer(size_t body_limit = 16 * 1024 * 1024) {
    ServerOptions options;
    options.body_limit = body_limit;
    auto server = Server::Start(options, [this](Request, Respond respond) {
      ++handled_;
      Response response;
      response.body = "hello world";
      respond(std::move(response));
    });
    EXPECT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(server.value());
  }
  ~TestServer() { server_->Stop(std::chrono::milliseconds(0)); }
  uint16_t port() const { return server_->port(); }
  int handled() const { return handled_.load(); }

 private:
  std::atomic<int> handled_{0};
  std::unique_ptr<Server> server_;
};

// A TCP socket (not connected yet) whose sends and receives give up after 5 s, with a small
// send buffer so that a peer that stops reading stops the sender soon.
int NewSocket() {
  const int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const timeval timeout{5, 0};
  setsockopt(socket_fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  setsockopt(socket_fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  const int send_buffer = 64 * 1024;
  setsockopt(socket_fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof(send_buffer));
  return socket_fd;
}

bool Connect(int socket_fd, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return ::connect(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
}

// Sends all of `bytes`; false when the connection fails first.
bool SendAll(int socket_fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(socket_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

// Everything the peer sends until it closes the connection (or 5 s pass without a byte).
std::string ReceiveAll(int socket_fd) {
  std::string received;
  char block[4096];
  ssize_t count;
  while ((count = ::recv(socket_fd, block, sizeof(block), 0)) > 0) received.append(block, static_cast<size_t>(count));
  return received;
}

long MaxResidentKilobytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

struct Refusal {
  size_t bytes_sent = 0;
  std::string answer;
  double seconds = 0;
};

// Sends `head`, then `filler` repeated up to `total` bytes, then `tail`, stopping when the
// server stops reading (it refused the request and closed the connection); then reads the
// answer, if any came back before the connection was reset.
Refusal SendOversizedPart(uint16_t port, const std::string& head, const std::string& filler, size_t total,
                          const std::string& tail) {
  Refusal refusal;
  const Clock::time_point start = Clock::now();
  const int socket_fd = NewSocket();
  EXPECT_TRUE(Connect(socket_fd, port));
  std::string block;
  while (!filler.empty() && block.size() < 64 * 1024) block += filler;
  bool open = SendAll(socket_fd, head);
  refusal.bytes_sent = head.size();
  while (open && refusal.bytes_sent < total) {
    open = SendAll(socket_fd, block);
    if (open) refusal.bytes_sent += block.size();
  }
  if (open) SendAll(socket_fd, tail);
  refusal.answer = ReceiveAll(socket_fd);
  ::close(socket_fd);
  refusal.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return refusal;
}

constexpr size_t kOversized = 32 * 1024 * 1024;

// A chunked body's trailer (after the last chunk) counts against the 64 KB header limit: 32 MB
// of trailer lines are refused once the read buffer is full, before the handler (and so the
// API key check) sees the request, and the server's memory does not grow with them.
TEST(HttpServerTest, ChunkedTrailerBeyondTheHeaderLimitIsRefused) {
  TestServer server;
  const long resident_before = MaxResidentKilobytes();
  const Refusal refusal = SendOversizedPart(
      server.port(), "POST /health HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n",
      "X-Padding: " + std::string(1000, 'a') + "\r\n", kOversized, "\r\n");
  EXPECT_EQ(server.handled(), 0) << "the handler was given the request";
  EXPECT_LT(refusal.bytes_sent, kOversized) << "the server read the whole trailer";
  if (!refusal.answer.empty()) {
    EXPECT_EQ(refusal.answer.substr(0, 12), "HTTP/1.1 431") << refusal.answer;
  }
  EXPECT_LT(refusal.seconds, 5.0);
  EXPECT_LT(MaxResidentKilobytes() - resident_before, 16 * 1024) << "kilobytes";
  // Another client is served as before.
  const Refusal fine = SendOversizedPart(server.port(), "GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
                                         "", 0, "");
  EXPECT_EQ(fine.answer.substr(0, 12), "HTTP/1.1 200") << fine.answer;
}

// So does a chunk-size line's extension: a 32 MB one is refused while it is read.
TEST(HttpServerTest, ChunkExtensionBeyondTheHeaderLimitIsRefused) {
  TestServer server;
  const long resident_before = MaxResidentKilobytes();
  const Refusal refusal = SendOversizedPart(
      server.port(), "POST /health HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n5;name=", "a", kOversized,
      "\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(server.handled(), 0) << "the handler was given the request";
  EXPECT_LT(refusal.bytes_sent, kOversized) << "the server read the whole extension";
  if (!refusal.answer.empty()) {
    EXPECT_EQ(refusal.answer.substr(0, 12), "HTTP/1.1 431") << refusal.answer;
  }
  EXPECT_LT(refusal.seconds, 5.0);
  EXPECT_LT(MaxResidentKilobytes() - resident_before, 16 * 1024) << "kilobytes";
}

// The parsing limits, each at its edge: a body of the payload limit is read, one byte more is
// 413 before the handler runs, whether the Content-Length declares it (refused before any of
// the body is read) or chunks carry it (refused while reading); a header section over 64 KB is
// 431, and bytes that are not HTTP are 400.
TEST(HttpServerTest, ABodyOfThePayloadLimitIsReadAndOneByteMoreIsRefused) {
  constexpr size_t kLimit = 1000;
  TestServer server(kLimit);
  const auto post = [](size_t bytes) {
    return "POST /x HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: " + std::to_string(bytes) +
           "\r\n\r\n" + std::string(bytes, 'a');
  };
  const Refusal fits = SendOversizedPart(server.port(), post(kLimit), "", 0, "");
  EXPECT_EQ(fits.answer.substr(0, 12), "HTTP/1.1 200") << fits.answer;
  EXPECT_EQ(server.handled(), 1);
  const Refusal over = SendOversizedPart(server.port(), post(kLimit + 1), "", 0, "");
  EXPECT_EQ(over.answer.substr(0, 12), "HTTP/1.1 413") << over.answer;
  EXPECT_EQ(server.handled(), 1) << "the handler was given the oversized request";
}

TEST(HttpServerTest, ADeclaredBodyOverTheLimitIsRefusedBeforeItIsSent) {
  TestServer server(1000);
  // The body never comes: the answer must not wait for it.
  const Refusal refusal = SendOversizedPart(
      server.port(), "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: 1000000000\r\n\r\n", "", 0, "");
  EXPECT_EQ(refusal.answer.substr(0, 12), "HTTP/1.1 413") << refusal.answer;
  EXPECT_LT(refusal.seconds, 4.0) << "the server waited for the body";
  EXPECT_EQ(server.handled(), 0);
}

TEST(HttpServerTest, AChunkedBodyOverTheLimitIsRefusedWhileItIsRead) {
  TestServer server(64 * 1024);
  const std::string chunk = "1000\r\n" + std::string(0x1000, 'a') + "\r\n";  // 4 KB a chunk
  const Refusal refusal = SendOversizedPart(
      server.port(), "POST /x HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n", chunk, kOversized,
      "0\r\n\r\n");
  EXPECT_EQ(server.handled(), 0) << "the handler was given the request";
  EXPECT_LT(refusal.bytes_sent, kOversized) << "the server read the whole body";
  if (!refusal.answer.empty()) {
    EXPECT_EQ(refusal.answer.substr(0, 12), "HTTP/1.1 413") << refusal.answer;
  }
}

TEST(HttpServerTest, AHeaderSectionOver64KilobytesIsRefused) {
  TestServer server;
  const Refusal refusal = SendOversizedPart(server.port(), "GET / HTTP/1.1\r\nHost: test\r\n",
                                            "X-Padding: " + std::string(1000, 'a') + "\r\n", 70 * 1024, "\r\n");
  EXPECT_EQ(server.handled(), 0) << "the handler was given the request";
  if (!refusal.answer.empty()) {
    EXPECT_EQ(refusal.answer.substr(0, 12), "HTTP/1.1 431") << refusal.answer;
  }
  // Just under the limit is read.
  const Refusal fits = SendOversizedPart(
      server.port(), "GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\nX-Padding: " + std::string(60 * 1024, 'a') +
                         "\r\n\r\n", "", 0, "");
  EXPECT_EQ(fits.answer.substr(0, 12), "HTTP/1.1 200") << fits.answer;
}

TEST(HttpServerTest, BytesThatAreNotHttpAreRefused) {
  TestServer server;
  const Refusal refusal = SendOversizedPart(server.port(), "HELLO THERE\r\n\r\n", "", 0, "");
  EXPECT_EQ(refusal.answer.substr(0, 12), "HTTP/1.1 400") << refusal.answer;
  EXPECT_EQ(server.handled(), 0);
}

// Small trailers and extensions are still fine.
TEST(HttpServerTest, SmallTrailersAndExtensionsAreRead) {
  TestServer server;
  const Refusal answer = SendOversizedPart(
      server.port(),
      "POST /x HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5;name=value\r\nhello\r\n0\r\nX-Checksum: 1234\r\n\r\n",
      "", 0, "");
  EXPECT_EQ(answer.answer.substr(0, 12), "HTTP/1.1 200") << answer.answer;
  EXPECT_EQ(server.handled(), 1);
}

// A HEAD answer has the GET answer's headers, Content-Length included, and no body: the next
// answer on the connection follows its blank line at once.
TEST(HttpServerTest, HeadAnswersCarryNoBody) {
  TestServer server;
  const Refusal answers = SendOversizedPart(
      server.port(),
      "HEAD /x HTTP/1.1\r\nHost: test\r\n\r\nGET /x HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n", "", 0, "");
  const std::string& text = answers.answer;
  ASSERT_EQ(text.substr(0, 12), "HTTP/1.1 200") << text;
  const size_t head_end = text.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << text;
  EXPECT_NE(text.substr(0, head_end).find("Content-Length: 11"), std::string::npos) << text;
  EXPECT_EQ(text.substr(head_end + 4, 12), "HTTP/1.1 200") << text;
  EXPECT_EQ(text.find("hello world"), text.rfind("hello world")) << "one body, the GET's: " << text;
  EXPECT_EQ(text.substr(text.size() - 11), "hello world") << text;
}

// The status line's code of the first answer in `answer` ("" when there is none).
std::string StatusCode(const std::string& answer) {
  return answer.starts_with("HTTP/1.1 ") && answer.size() >= 12 ? answer.substr(9, 3) : "";
}

// A chunked body the parser cannot read is a malformed request (400), whether the chunk size
// is not hexadecimal, is signed, overflows 64 bits or is missing, or the chunk's data runs past
// its size; a size beyond the payload limit is 413 as soon as it is read. A Content-Length that
// is not a number is 400 too. None reaches the handler, and the connection is closed after.
TEST(HttpServerTest, ChunkedBodiesWithBadSizesAreRefused) {
  TestServer server(1000);
  const std::string head = "POST /x HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n";
  const struct {
    const char* name;
    std::string body;
    const char* status;
  } cases[] = {
      {"not hexadecimal", "zz\r\nhello\r\n0\r\n\r\n", "400"},
      {"signed", "-5\r\nhello\r\n0\r\n\r\n", "400"},
      {"past 64 bits", "1ffffffffffffffff\r\nhello\r\n0\r\n\r\n", "400"},
      {"missing", "\r\nhello\r\n0\r\n\r\n", "400"},
      {"data longer than its size", "3\r\nhello\r\n0\r\n\r\n", "400"},
      {"no CRLF after the data", "5\r\nhelloXX0\r\n\r\n", "400"},
      {"over the payload limit", "3e9\r\n", "413"},  // 1001 bytes, one past the limit
      {"over the payload limit in 64 bits", "ffffffffffffffff\r\n", "413"},
  };
  for (const auto& test : cases) {
    const Refusal refusal = SendOversizedPart(server.port(), head + test.body, "", 0, "");
    EXPECT_EQ(StatusCode(refusal.answer), test.status) << test.name << ": " << refusal.answer;
    EXPECT_LT(refusal.seconds, 4.0) << test.name << ": the server waited for more";
  }
  for (const char* length : {"abc", "-1", "1e3", "99999999999999999999999"}) {
    const Refusal refusal = SendOversizedPart(
        server.port(), std::string("POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: ") + length + "\r\n\r\nhello", "",
        0, "");
    EXPECT_EQ(StatusCode(refusal.answer), "400") << "Content-Length " << length << ": " << refusal.answer;
  }
  EXPECT_EQ(server.handled(), 0) << "the handler was given a request it could not have read";
  // The limit itself is read: chunks that add up to 1000 bytes.
  const Refusal fits = SendOversizedPart(
      server.port(), head.substr(0, head.size() - 2) + "Connection: close\r\n\r\n1f4\r\n" + std::string(500, 'a') +
                         "\r\n1F4\r\n" + std::string(500, 'b') + "\r\n0\r\n\r\n",
      "", 0, "");
  EXPECT_EQ(StatusCode(fits.answer), "200") << fits.answer;
  EXPECT_EQ(server.handled(), 1);
}

// Reads one answer from `socket_fd`: its head and the Content-Length bytes of body after it;
// what the server sent beyond them is left unread. "" when the connection ends first.
std::string ReceiveOneAnswer(int socket_fd) {
  std::string received;
  char byte;
  while (received.find("\r\n\r\n") == std::string::npos) {
    if (::recv(socket_fd, &byte, 1, 0) != 1) return "";
    received += byte;
  }
  const size_t field = received.find("Content-Length: ");
  size_t body = field == std::string::npos ? 0 : std::stoul(received.substr(field + 16));
  while (body > 0) {
    if (::recv(socket_fd, &byte, 1, 0) != 1) return "";
    received += byte;
    --body;
  }
  return received;
}

// The connection is closed from the server's side: a read ends (0) at once instead of waiting
// for the 5 s receive timeout.
bool ClosedByServer(int socket_fd) {
  char byte;
  const Clock::time_point start = Clock::now();
  const ssize_t count = ::recv(socket_fd, &byte, 1, 0);
  return count == 0 && Clock::now() - start < std::chrono::seconds(4);
}

// An HTTP/1.1 connection stays open after each answer until the client says
// "Connection: close"; an HTTP/1.0 one closes after its answer unless it asks for keep-alive;
// an error the server finds itself closes the connection whatever the client asked.
TEST(HttpServerTest, KeepAliveServesRequestsInTurnUntilTheClientCloses) {
  TestServer server(1000);
  const int socket_fd = NewSocket();
  ASSERT_TRUE(Connect(socket_fd, server.port()));
  for (int request = 1; request <= 3; ++request) {
    ASSERT_TRUE(SendAll(socket_fd, "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\nhi"));
    const std::string answer = ReceiveOneAnswer(socket_fd);
    EXPECT_EQ(StatusCode(answer), "200") << "request " << request << ": " << answer;
    EXPECT_EQ(answer.find("Connection: close"), std::string::npos) << answer;
    EXPECT_EQ(answer.substr(answer.size() - 11), "hello world");
    EXPECT_EQ(server.handled(), request);
  }
  ASSERT_TRUE(SendAll(socket_fd, "GET /x HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"));
  const std::string last = ReceiveOneAnswer(socket_fd);
  EXPECT_EQ(StatusCode(last), "200") << last;
  EXPECT_NE(last.find("Connection: close"), std::string::npos) << last;
  EXPECT_TRUE(ClosedByServer(socket_fd));
  ::close(socket_fd);
  EXPECT_EQ(server.handled(), 4);

  const int old_client = NewSocket();
  ASSERT_TRUE(Connect(old_client, server.port()));
  ASSERT_TRUE(SendAll(old_client, "GET /x HTTP/1.0\r\nHost: test\r\n\r\n"));
  EXPECT_NE(ReceiveOneAnswer(old_client).find("hello world"), std::string::npos);
  EXPECT_TRUE(ClosedByServer(old_client)) << "HTTP/1.0 without keep-alive left open";
  ::close(old_client);
  const int old_keep_alive = NewSocket();
  ASSERT_TRUE(Connect(old_keep_alive, server.port()));
  for (int request = 0; request < 2; ++request) {
    ASSERT_TRUE(SendAll(old_keep_alive, "GET /x HTTP/1.0\r\nHost: test\r\nConnection: keep-alive\r\n\r\n"));
    EXPECT_NE(ReceiveOneAnswer(old_keep_alive).find("hello world"), std::string::npos) << "request " << request;
  }
  ::close(old_keep_alive);
  EXPECT_EQ(server.handled(), 7);

  const int refused = NewSocket();
  ASSERT_TRUE(Connect(refused, server.port()));
  ASSERT_TRUE(SendAll(refused, "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: 1001\r\n\r\n"));
  const std::string too_large = ReceiveOneAnswer(refused);
  EXPECT_EQ(StatusCode(too_large), "413") << too_large;
  EXPECT_NE(too_large.find("Connection: close"), std::string::npos) << too_large;
  EXPECT_TRUE(ClosedByServer(refused)) << "a refused request's connection left open";
  ::close(refused);
  EXPECT_EQ(server.handled(), 7);
}

// Keeps the log lines that mention failed accepts (a count, and the last few), as the server
// writes them through spdlog's default logger.
class AcceptLogSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  int count() {
    std::lock_guard lock(mutex_);
    return count_;
  }
  std::string last() {
    std::lock_guard lock(mutex_);
    return last_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    const std::string text(message.payload.data(), message.payload.size());
    if (text.find("accept failed") == std::string::npos) return;
    ++count_;
    last_ = text;
  }
  void flush_() override {}

 private:
  int count_ = 0;
  std::string last_;
};

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// With no file descriptor left (RLIMIT_NOFILE at the lowest free one), connections wait in the
// backlog and every accept fails with EMFILE. The server must wait between tries and log once
// per interval, not spin and log each failure; and once descriptors are free it serves the
// waiting connections.
TEST(HttpServerTest, AcceptBacksOffWhileFileDescriptorsRunOut) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's own descriptors and its reports need free descriptors of the process.
  GTEST_SKIP() << "not under AddressSanitizer: the test exhausts the process's file descriptors";
#endif
  auto sink = std::make_shared<AcceptLogSink>();
  const auto previous_logger = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("accept_test", sink));
  {
    TestServer server;
    std::vector<int> clients;
    for (int i = 0; i < 4; ++i) clients.push_back(NewSocket());
    rlimit limit{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
    const int lowest_free = ::open("/dev/null", O_RDONLY);
    ASSERT_GE(lowest_free, 0);
    ::close(lowest_free);
    rlimit exhausted = limit;
    exhausted.rlim_cur = static_cast<rlim_t>(lowest_free);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &exhausted), 0);
    const double cpu_before = ProcessCpuSeconds();
    bool connected = true;
    for (int client : clients) connected = Connect(client, server.port()) && connected;  // the backlog takes them
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const double cpu_seconds = ProcessCpuSeconds() - cpu_before;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
    EXPECT_TRUE(connected);
    EXPECT_GE(sink->count(), 1);
    EXPECT_LE(sink->count(), 3) << "the accept loop logs each failure: " << sink->last();
    EXPECT_NE(sink->last().find("times since the last such line"), std::string::npos) << sink->last();
    EXPECT_LT(cpu_seconds, 0.5) << "the accept loop spins";
    // Descriptors are free again: each waiting connection is accepted and served.
    for (int client : clients) {
      ASSERT_TRUE(SendAll(client, "GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"));
      const std::string answer = ReceiveAll(client);
      EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 200") << answer;
      ::close(client);
    }
    EXPECT_EQ(server.handled(), 4);
  }
  spdlog::set_default_logger(previous_logger);
}


// A server whose handler answers the body's size, and runs `work` first.
std::unique_ptr<Server> SizeEchoServer(ServerOptions options, std::function<void()> work = {}) {
  auto server = Server::Start(options, [work](Request request, Respond respond) {
    if (work) work();
    Response response;
    response.body = std::to_string(request.body.size());
    respond(std::move(response));
  });
  EXPECT_TRUE(server.ok()) << server.status().message();
  return std::move(server.value());
}

double ProcessCpuSeconds();

// A 1 MB body is read whole, and a request pipelined right behind it in the same send is kept
// and answered after it. Reading the body took a thousand 512-byte reads once (the header left
// the read buffer that small), each a trip through the reactor: 16 MB cost about 0.2 s of CPU.
// Now each read takes what the socket holds, up to 64 KB (the process, sending included, spends
// 0.02 to 0.03 s of CPU on 16 MB; 0.09 s with 512-byte reads, on a Xeon with AMX).
TEST(HttpServerTest, ALargeBodyIsReadInLargeReadsAndWhatFollowsItIsKept) {
  ServerOptions options;
  options.body_limit = 32 * 1024 * 1024;
  auto server = SizeEchoServer(options);
  const int socket_fd = NewSocket();
  ASSERT_TRUE(Connect(socket_fd, server->port()));
  const std::string body(1 << 20, 'x');
  ASSERT_TRUE(SendAll(socket_fd, "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) +
                                     "\r\n\r\n" + body + "POST /y HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\n\r\nabc"));
  const std::string first = ReceiveOneAnswer(socket_fd);
  EXPECT_EQ(StatusCode(first), "200") << first;
  EXPECT_EQ(first.substr(first.size() - 7), "1048576") << first;
  const std::string second = ReceiveOneAnswer(socket_fd);
  EXPECT_EQ(StatusCode(second), "200") << second;
  EXPECT_EQ(second.substr(second.size() - 1), "3") << second;
  ::close(socket_fd);

#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the CPU time of a read is not measured under AddressSanitizer";
#endif
  // 16 MB sent in 64 KB pieces from this process: the sending and the server's reading together.
  const std::string big(16 << 20, 'y');
  const double cpu_before = ProcessCpuSeconds();
  const int big_socket = NewSocket();
  ASSERT_TRUE(Connect(big_socket, server->port()));
  ASSERT_TRUE(SendAll(big_socket, "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(big.size()) +
                                      "\r\nConnection: close\r\n\r\n"));
  for (size_t at = 0; at < big.size(); at += 64 * 1024) {
    ASSERT_TRUE(SendAll(big_socket, std::string_view(big).substr(at, 64 * 1024)));
  }
  const std::string answer = ReceiveOneAnswer(big_socket);
  const double cpu_seconds = ProcessCpuSeconds() - cpu_before;
  ::close(big_socket);
  EXPECT_EQ(answer.substr(answer.size() - 8), "16777216") << answer;
  EXPECT_LT(cpu_seconds, 0.06) << "16 MB took many small reads";
}

long ResidentKilobytes() {
  long pages = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(statm);
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

// A handler that allocated and freed 96 MB in small blocks leaves them in the allocator's arena,
// counted in RSS (a block it keeps, allocated after them, stops glibc from trimming them off
// the arena's top by itself); once the server has been idle for release_memory_after_idle,
// they go back to the system.
TEST(HttpServerTest, AnIdleServerGivesTheFreedHeapBack) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer has its own allocator; malloc_trim releases glibc's";
#endif
  ServerOptions options;
  options.release_memory_after_idle = std::chrono::milliseconds(100);
  std::unique_ptr<char[]> kept;
  auto server = SizeEchoServer(options, [&kept] {
    std::vector<std::unique_ptr<char[]>> blocks;
    for (int i = 0; i < 96 * 64; ++i) {  // 16 KB each: from the arena, not mmapped
      blocks.emplace_back(new char[16 * 1024]);
      std::memset(blocks.back().get(), 1, 16 * 1024);
    }
    kept.reset(new char[16 * 1024]);
  });
  const int socket_fd = NewSocket();
  ASSERT_TRUE(Connect(socket_fd, server->port()));
  ASSERT_TRUE(SendAll(socket_fd, "GET /x HTTP/1.1\r\nHost: test\r\n\r\n"));
  EXPECT_EQ(StatusCode(ReceiveOneAnswer(socket_fd)), "200");
  const long after_answer = ResidentKilobytes();
  long resident = after_answer;
  for (int wait = 0; wait < 40 && after_answer - resident < 32 * 1024; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    resident = ResidentKilobytes();
  }
  ::close(socket_fd);
  EXPECT_GE(after_answer - resident, 32 * 1024) << "RSS " << after_answer << " kB after the answer, " << resident
                                                 << " kB after 2 s idle";
}

}  // namespace
}  // namespace stamen::http
