// Fault injection on a real deployment in miniature: three `stamen worker` processes behind a
// `stamen gateway` process, all on loopback, driven over HTTP. A worker killed mid-request, a
// worker that hangs (SIGSTOP), all workers down, a worker restarted, a client that hangs up,
// SIGTERM on the gateway and on a worker: each must end with complete, correct answers (equal
// to the engine run in this process within 1e-5, each input exactly once) or the documented
// error, and the metrics must show what happened.
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <simdjson.h>

#include <boost/asio.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "tests/gateway/base64_floats.h"
#include "tests/server/test_models.h"

namespace stamen {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using gateway::testing::DecodeBase64Floats;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A `stamen` child process whose stderr goes to a log file.
struct Process {
  pid_t pid = -1;
  std::string log;

  void Start(const std::vector<std::string>& arguments) {
    ASSERT_EQ(pid, -1);
    std::ofstream(log, std::ios::trunc).close();  // no line of an earlier run may be read as this one's
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (!freopen(log.c_str(), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(126);
      std::vector<char*> argv = {const_cast<char*>(STAMEN_CLI)};
      for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
      argv.push_back(nullptr);
      execv(STAMEN_CLI, argv.data());
      _exit(127);
    }
  }
  bool running() const { return pid > 0; }
  void Signal(int signal) const {
    if (pid > 0) kill(pid, signal);
  }
  // Waits for the process to end (up to `timeout`); returns its wait status, or -1.
  int Wait(std::chrono::milliseconds timeout) {
    const auto give_up = Clock::now() + timeout;
    while (pid > 0) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return status;
      }
      if (Clock::now() > give_up) return -1;
      std::this_thread::sleep_for(5ms);
    }
    return -1;
  }
  void Kill() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  // The number that follows `marker` in the log, once it appears (0 if it does not in time).
  int NumberAfter(const std::string& marker, std::chrono::milliseconds timeout = 30s) const {
    const auto give_up = Clock::now() + timeout;
    while (Clock::now() < give_up) {
      const std::string text = ReadFile(log);
      const size_t at = text.find(marker);
      if (at != std::string::npos) {
        const int number = std::atoi(text.c_str() + at + marker.size());
        if (number > 0) return number;
      }
      std::this_thread::sleep_for(10ms);
    }
    return 0;
  }
};

struct HttpAnswer {
  int status = 0;  // 0: no answer (connection refused or closed)
  std::string body;
};

// One request on a fresh connection (Connection: close), answer read to the end.
HttpAnswer Http(int port, const std::string& method, const std::string& path, const std::string& body = "",
                std::chrono::seconds timeout = 60s) {
  HttpAnswer answer;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  boost::system::error_code error;
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)}, error);
  if (error) {
    answer.body = "connect: " + error.message();
    return answer;
  }
  timeval limit{static_cast<time_t>(timeout.count()), 0};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  if (!body.empty()) request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  request += "\r\n" + body;
  boost::asio::write(socket, boost::asio::buffer(request), error);
  if (error) {
    answer.body = "write: " + error.message();
    return answer;
  }
  std::string raw;
  char buffer[65536];
  while (true) {
    const size_t n = socket.read_some(boost::asio::buffer(buffer), error);
    raw.append(buffer, n);
    // A receive with SO_RCVTIMEO returns EINTR when this process is frozen and thawed, or a
    // signal it ignores is queued; that is no answer, so read on (CI saw it once, 0 bytes read).
    if (error == boost::asio::error::interrupted) continue;
    if (error) break;
  }
  if (raw.rfind("HTTP/1.1 ", 0) != 0) {
    answer.body = "no answer (" + error.message() + "), " + std::to_string(raw.size()) + " bytes: " + raw.substr(0, 200);
    return answer;
  }
  answer.status = std::atoi(raw.c_str() + 9);
  const size_t header_end = raw.find("\r\n\r\n");
  if (header_end != std::string::npos) answer.body = raw.substr(header_end + 4);
  return answer;
}

// The value of one Prometheus series (`name` or `name{labels}`) in /metrics of `port`; -1
// when the endpoint or the series is missing.
double Metric(int port, const std::string& series) {
  const HttpAnswer answer = Http(port, "GET", "/metrics", "", 10s);
  if (answer.status != 200) return -1;
  const std::string& text = answer.body;
  for (size_t at = text.find(series + " "); at != std::string::npos; at = text.find(series + " ", at + 1)) {
    if (at == 0 || text[at - 1] == '\n') return std::atof(text.c_str() + at + series.size() + 1);
  }
  return -1;
}

// A request of token-id inputs (no tokenizer in the way: the reference is the engine alone).
struct Inputs {
  std::vector<std::vector<int32_t>> sequences;
  std::string body;  // OpenAI embeddings call, base64 answers (exact floats)
};

Inputs MakeInputs(uint32_t seed, int count, int min_length, int max_length) {
  std::mt19937 random(seed);
  std::vector<int> lengths(count);
  for (int& length : lengths) length = min_length + static_cast<int>(random() % (max_length - min_length + 1));
  Inputs inputs;
  inputs.sequences = server::testing::RandomSequences(random, lengths);
  inputs.body = R"({"encoding_format":"base64","input":[)";
  for (size_t i = 0; i < inputs.sequences.size(); ++i) {
    inputs.body += i ? ",[" : "[";
    for (size_t k = 0; k < inputs.sequences[i].size(); ++k) {
      if (k) inputs.body += ',';
      inputs.body += std::to_string(inputs.sequences[i][k]);
    }
    inputs.body += ']';
  }
  inputs.body += "]}";
  return inputs;
}

// Checks an embeddings answer: every input exactly once, in order, equal to `expected`.
void ExpectEmbeddings(const HttpAnswer& answer, const std::vector<std::vector<float>>& expected) {
  ASSERT_EQ(answer.status, 200) << answer.body.substr(0, 500);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(answer.body).get(root), simdjson::SUCCESS);
  simdjson::dom::array data;
  ASSERT_EQ(root["data"].get(data), simdjson::SUCCESS);
  ASSERT_EQ(data.size(), expected.size()) << "inputs lost or duplicated";
  std::vector<int> seen(expected.size(), 0);
  size_t position = 0;
  float worst = 0;
  for (simdjson::dom::element item : data) {
    int64_t index = -1;
    ASSERT_EQ(item["index"].get(index), simdjson::SUCCESS);
    ASSERT_EQ(index, static_cast<int64_t>(position)) << "answers out of order";
    ASSERT_LT(static_cast<size_t>(index), expected.size());
    ++seen[index];
    std::string_view encoded;
    ASSERT_EQ(item["embedding"].get(encoded), simdjson::SUCCESS);
    const std::vector<float> vector = DecodeBase64Floats(encoded);
    ASSERT_EQ(vector.size(), expected[index].size());
    for (size_t k = 0; k < vector.size(); ++k) worst = std::max(worst, std::abs(vector[k] - expected[index][k]));
    ++position;
  }
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "input " << i;
  EXPECT_LE(worst, 1e-5f);
}

class GatewayFaultsTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 3;

  static void SetUpTestSuite() {
    model_ = server::testing::TinyEmbedder();
    ASSERT_FALSE(model_.empty());
    auto engine = engine::Engine::Load(model_, {.num_threads = 1});
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    reference_ = engine.value().release();
    // The engine normalises the mean-pooled vector as the gateway's OpenAI route asks.
    for (int i = 0; i < kWorkers; ++i) {
      workers_[i].log = server::testing::ScratchFolder() + "/worker" + std::to_string(i) + ".log";
      StartWorker(i);
      ASSERT_FALSE(HasFatalFailure());
    }
  }

  static void TearDownTestSuite() {
    gateway_.Kill();
    for (auto& worker : workers_) worker.Kill();
    delete reference_;
    reference_ = nullptr;
  }

  // Starts worker `i` on its earlier ports when it had some (a restart), else on free ones.
  static void StartWorker(int i) {
    Process& worker = workers_[i];
    worker.Start({"worker", "--model", model_, "--listen", "127.0.0.1:" + std::to_string(grpc_ports_[i]),
                  "--metrics-port", std::to_string(metrics_ports_[i]), "--threads", "1", "--max-batch-tokens",
                  "256", "--log-level", "info"});
    ASSERT_FALSE(HasFatalFailure());
    const int grpc_port = worker.NumberAfter("over gRPC on 127.0.0.1:");
    const int metrics_port = worker.NumberAfter("metrics on http://127.0.0.1:");
    ASSERT_GT(grpc_port, 0) << ReadFile(worker.log);
    ASSERT_GT(metrics_port, 0) << ReadFile(worker.log);
    grpc_ports_[i] = grpc_port;
    metrics_ports_[i] = metrics_port;
  }

  static std::string WorkerAddress(int i) { return "127.0.0.1:" + std::to_string(grpc_ports_[i]); }
  static std::string ChunkSeries(int i) {
    return "stamen_gateway_worker_chunks_total{worker=\"" + WorkerAddress(i) + "\"}";
  }

  // A gateway over the three workers (a fresh process per test, so its metrics start at 0).
  // `worker_timeout`: seconds per chunk call, queueing on the worker included (all chunks of a
  // request are sent at once).
  static void StartGateway(const std::string& worker_timeout = "30", bool wait_for_workers = true) {
    gateway_.log = server::testing::ScratchFolder() + "/gateway.log";
    std::vector<std::string> arguments = {"gateway", "--model", model_, "--port", "0",
                                          "--workers", WorkerAddress(0) + "," + WorkerAddress(1) + "," + WorkerAddress(2),
                                          "--chunk-tokens", "200", "--worker-timeout", worker_timeout,
                                          "--health-interval", "1", "--request-timeout", "40",
                                          "--tokenization-workers", "2"};
    gateway_.Start(arguments);
    ASSERT_FALSE(HasFatalFailure());
    gateway_port_ = gateway_.NumberAfter("on http://127.0.0.1:");
    ASSERT_GT(gateway_port_, 0) << ReadFile(gateway_.log);
    if (!wait_for_workers) return;
    ASSERT_TRUE(WaitFor([] { return Metric(gateway_port_, "stamen_gateway_healthy_workers") == kWorkers; }, 10s))
        << ReadFile(gateway_.log);
  }

  template <typename Condition>
  static bool WaitFor(Condition condition, std::chrono::milliseconds timeout) {
    const auto give_up = Clock::now() + timeout;
    while (Clock::now() < give_up) {
      if (condition()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return condition();
  }

  // Waits until the gateway has sent worker `i` at least `chunks` chunks.
  static bool WaitForChunks(int i, double chunks) {
    return WaitFor([&] { return Metric(gateway_port_, ChunkSeries(i)) >= chunks; }, 10s);
  }

  std::vector<std::vector<float>> Expected(const Inputs& inputs) {
    return server::testing::ComputeAlone(*reference_, inputs.sequences, {});
  }

  std::future<HttpAnswer> PostAsync(const std::string& body) {
    return std::async(std::launch::async, [body] { return Http(gateway_port_, "POST", "/v1/embeddings", body); });
  }

  void SetUp() override {
    // Every test starts from three healthy, running workers.
    for (int i = 0; i < kWorkers; ++i) {
      workers_[i].Signal(SIGCONT);
      if (!workers_[i].running() || waitpid(workers_[i].pid, nullptr, WNOHANG) != 0) {
        workers_[i].pid = -1;
        StartWorker(i);
        ASSERT_FALSE(HasFatalFailure());
      }
    }
  }

  void TearDown() override {
    for (auto& worker : workers_) worker.Signal(SIGCONT);
    if (HasFailure() && gateway_.running()) std::cerr << "gateway log:\n" << ReadFile(gateway_.log);
    gateway_.Kill();
  }

  static std::string model_;
  static engine::Engine* reference_;
  static Process workers_[kWorkers];
  static int grpc_ports_[kWorkers];
  static int metrics_ports_[kWorkers];
  static Process gateway_;
  static int gateway_port_;
};

std::string GatewayFaultsTest::model_;
engine::Engine* GatewayFaultsTest::reference_ = nullptr;
Process GatewayFaultsTest::workers_[kWorkers];
int GatewayFaultsTest::grpc_ports_[kWorkers] = {0, 0, 0};
int GatewayFaultsTest::metrics_ports_[kWorkers] = {0, 0, 0};
Process GatewayFaultsTest::gateway_;
int GatewayFaultsTest::gateway_port_ = 0;

TEST_F(GatewayFaultsTest, KillNineMidRequestStillAnswersEveryInputOnceAndCorrectly) {
  StartGateway();
  ASSERT_FALSE(HasFatalFailure());
  const Inputs inputs = MakeInputs(1, 1000, 4, 16);
  const auto expected = Expected(inputs);
  // The victim holds its chunks without answering (stopped) until it is killed: it dies with
  // work in flight, whatever the machine's speed.
  workers_[0].Signal(SIGSTOP);
  auto answer = PostAsync(inputs.body);
  ASSERT_TRUE(WaitForChunks(0, 1)) << "no chunk reached worker 0";
  workers_[0].Kill();
  const HttpAnswer result = answer.get();
  ExpectEmbeddings(result, expected);
  // Chunks went to all three workers; the victim's were retried elsewhere.
  for (int i = 0; i < kWorkers; ++i) EXPECT_GT(Metric(gateway_port_, ChunkSeries(i)), 0) << "worker " << i;
  EXPECT_GT(Metric(gateway_port_, "stamen_gateway_retries_total"), 0);
  for (int i = 1; i < kWorkers; ++i) {
    EXPECT_GT(Metric(metrics_ports_[i], "stamen_worker_requests_total{status=\"ok\"}"), 0) << "worker " << i;
  }
}

TEST_F(GatewayFaultsTest, HungWorkerHitsTheCallDeadlineAndItsWorkIsRetriedElsewhere) {
  StartGateway("2");
  ASSERT_FALSE(HasFatalFailure());
  const Inputs inputs = MakeInputs(2, 300, 4, 16);
  const auto expected = Expected(inputs);
  workers_[1].Signal(SIGSTOP);
  const auto start = Clock::now();
  auto answer = PostAsync(inputs.body);
  ASSERT_TRUE(WaitForChunks(1, 1)) << "no chunk reached worker 1";
  const HttpAnswer result = answer.get();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ExpectEmbeddings(result, expected);
  EXPECT_GE(seconds, 1.9) << "answered before the 2 s --worker-timeout: was worker 1's work really held?";
  EXPECT_LT(seconds, 15) << "the hung worker held the request past its call deadline";
  EXPECT_GT(Metric(gateway_port_, "stamen_gateway_retries_total"), 0);
  workers_[1].Signal(SIGCONT);
  // It answers health checks again and is used again.
  ASSERT_TRUE(WaitFor([] { return Metric(gateway_port_, "stamen_gateway_healthy_workers") == kWorkers; }, 10s));
}

TEST_F(GatewayFaultsTest, AllWorkersDownIs503WithinTheDeadlineAndRestartedWorkersAreUsedAgain) {
  StartGateway();
  ASSERT_FALSE(HasFatalFailure());
  for (auto& worker : workers_) worker.Kill();
  const Inputs inputs = MakeInputs(3, 50, 4, 16);
  auto start = Clock::now();
  const HttpAnswer down = Http(gateway_port_, "POST", "/v1/embeddings", inputs.body);
  EXPECT_EQ(down.status, 503) << down.body;
  EXPECT_NE(down.body.find("\"error\""), std::string::npos) << down.body;
  EXPECT_LT(Clock::now() - start, 40s) << "not answered within --request-timeout";
  // Once the health checks notice, /health says so and requests fail at once.
  ASSERT_TRUE(WaitFor([] { return Http(gateway_port_, "GET", "/health").status == 503; }, 10s));
  start = Clock::now();
  EXPECT_EQ(Http(gateway_port_, "POST", "/v1/embeddings", inputs.body).status, 503);
  EXPECT_LT(Clock::now() - start, 2s);

  // Restarted on the same addresses: the gateway finds them and uses all of them again.
  for (int i = 0; i < kWorkers; ++i) {
    StartWorker(i);
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_TRUE(WaitFor([] { return Metric(gateway_port_, "stamen_gateway_healthy_workers") == kWorkers; }, 15s))
      << ReadFile(gateway_.log);
  const Inputs again = MakeInputs(4, 300, 4, 16);
  ExpectEmbeddings(Http(gateway_port_, "POST", "/v1/embeddings", again.body), Expected(again));
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_GT(Metric(metrics_ports_[i], "stamen_worker_requests_total{status=\"ok\"}"), 0)
        << "restarted worker " << i << " got no work";
  }
}

// A gateway started before its workers says what they run once one is up: /info's model_dtype
// and backend stayed "unknown" for good when no worker answered at start (issue 45, item 12).
TEST_F(GatewayFaultsTest, InfoTellsWhatAWorkerRunsOnceOneComesUpAfterTheGateway) {
  for (auto& worker : workers_) worker.Kill();
  StartGateway("30", /*wait_for_workers=*/false);
  ASSERT_FALSE(HasFatalFailure());
  const HttpAnswer before = Http(gateway_port_, "GET", "/info");
  EXPECT_EQ(before.status, 200) << before.body;
  EXPECT_NE(before.body.find("\"model_dtype\":\"unknown\""), std::string::npos) << before.body;
  StartWorker(0);
  ASSERT_FALSE(HasFatalFailure());
  HttpAnswer after;
  // /info asks at most once a second, waiting 250 ms for the connection. (Its calls used to fail
  // fast, which shut each new connection attempt down: the first true answer came 4 s after the
  // worker listened, 5-30 s under the sanitizers; now it comes within about a second: the
  // bound fails the old way in a release build.)
  const auto listening = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitFor(
      [&] {
        after = Http(gateway_port_, "GET", "/info");
        return after.body.find("\"model_dtype\":\"unknown\"") == std::string::npos;
      },
      5s))
      << after.body;
  std::cerr << "/info told the worker's facts "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - listening).count()
            << " s after it listened\n";
  EXPECT_NE(after.body.find("\"backend\":\"cpu\""), std::string::npos) << after.body;
}

TEST_F(GatewayFaultsTest, ClientThatHangsUpHasItsQueuedWorkDropped) {
  StartGateway();
  ASSERT_FALSE(HasFatalFailure());
  // About 64k tokens: seconds of work for three one-thread workers, so most of it is queued
  // when the client goes.
  const Inputs inputs = MakeInputs(5, 1000, 48, 80);
  auto sum = [](const std::string& series) {
    double total = 0;
    for (int i = 0; i < kWorkers; ++i) total += std::max(0.0, Metric(metrics_ports_[i], series));
    return total;
  };
  const double dropped_before = sum("stamen_dropped_sequences_total");
  // Chunks go out progressively (two per worker), so most of the request never leaves the
  // gateway: its sequences not computed are dropped there or queued at a worker.
  const double computed_before = sum("stamen_sequences_total");
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(gateway_port_)});
    const std::string request = "POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(inputs.body.size()) + "\r\n\r\n" + inputs.body;
    boost::asio::write(socket, boost::asio::buffer(request));
    ASSERT_TRUE(WaitFor([] { return Metric(gateway_port_, "stamen_gateway_chunks_total") > 0; }, 10s));
    socket.close();  // hangs up without reading the answer
  }
  ASSERT_TRUE(WaitFor([] { return Metric(gateway_port_, "stamen_gateway_client_disconnects_total") == 1; }, 10s))
      << ReadFile(gateway_.log);
  // The workers are idle again soon: nothing of the request is left queued.
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_TRUE(WaitFor([&] { return Metric(metrics_ports_[i], "stamen_queue_sequences") == 0; }, 10s)) << i;
  }
  std::this_thread::sleep_for(300ms);  // a batch computing at the cancellation finishes
  const double dropped = sum("stamen_dropped_sequences_total") - dropped_before +
                        Metric(gateway_port_, "stamen_gateway_unsent_sequences_total");
  const double computed = sum("stamen_sequences_total") - computed_before;
  EXPECT_GT(dropped, 0) << "no queued sequence was dropped";
  EXPECT_LT(computed, 500) << computed << " of the 1000 sequences were computed for a client that had gone";
  std::cerr << "client gone: " << dropped << " queued sequences dropped, " << computed << " computed\n";
  const Inputs next = MakeInputs(6, 20, 4, 16);
  ExpectEmbeddings(Http(gateway_port_, "POST", "/v1/embeddings", next.body), Expected(next));
}

TEST_F(GatewayFaultsTest, SigtermOnTheGatewayFinishesAcceptedRequests) {
  StartGateway();
  ASSERT_FALSE(HasFatalFailure());
  const Inputs inputs = MakeInputs(7, 500, 4, 16);
  const auto expected = Expected(inputs);
  // Held by stopped workers, the request is surely in flight when the signal lands.
  for (auto& worker : workers_) worker.Signal(SIGSTOP);
  auto answer = PostAsync(inputs.body);
  ASSERT_TRUE(WaitFor([] { return Metric(gateway_port_, "stamen_gateway_chunks_total") > 0; }, 10s));
  gateway_.Signal(SIGTERM);
  ASSERT_TRUE(WaitFor([] { return ReadFile(gateway_.log).find("SIGTERM received") != std::string::npos; }, 5s));
  for (auto& worker : workers_) worker.Signal(SIGCONT);
  ExpectEmbeddings(answer.get(), expected);
  const int status = gateway_.Wait(30s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(gateway_.log);
  const std::string log = ReadFile(gateway_.log);
  EXPECT_NE(log.find("finishing 1 requests in flight"), std::string::npos) << log;
  EXPECT_NE(log.find("gateway: stopped"), std::string::npos) << log;
}

TEST_F(GatewayFaultsTest, SigtermOnAWorkerFinishesItsAcceptedWorkAndTheRequestCompletes) {
  StartGateway();
  ASSERT_FALSE(HasFatalFailure());
  const Inputs inputs = MakeInputs(8, 1000, 8, 32);
  const auto expected = Expected(inputs);
  auto answer = PostAsync(inputs.body);
  // Once worker 2 has work queued, ask it to stop.
  ASSERT_TRUE(WaitFor([] { return Metric(metrics_ports_[2], "stamen_queue_sequences") > 0; }, 10s));
  workers_[2].Signal(SIGTERM);
  ExpectEmbeddings(answer.get(), expected);
  const int status = workers_[2].Wait(30s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(workers_[2].log);
  const std::string log = ReadFile(workers_[2].log);
  EXPECT_NE(log.find("draining"), std::string::npos) << log;
  EXPECT_NE(log.find("worker: stopped"), std::string::npos) << log;
}

// `stamen serve` (gateway and worker in one process): the same hook cancels the in-process
// scheduler's queued work.
TEST(ServeDisconnectTest, ClientThatHangsUpHasItsQueuedWorkDropped) {
  Process serve;
  serve.log = server::testing::ScratchFolder() + "/serve.log";
  serve.Start({"serve", "--model", server::testing::TinyEmbedder(), "--port", "0", "--threads", "1",
               "--max-batch-tokens", "256", "--tokenization-workers", "1"});
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  struct Reaper {
    Process& process;
    ~Reaper() { process.Kill(); }
  } reaper{serve};
  const int port = serve.NumberAfter("on http://127.0.0.1:");
  ASSERT_GT(port, 0) << ReadFile(serve.log);
  const Inputs inputs = MakeInputs(9, 1000, 48, 80);
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)});
    const std::string request = "POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(inputs.body.size()) + "\r\n\r\n" + inputs.body;
    boost::asio::write(socket, boost::asio::buffer(request));
    const auto give_up = Clock::now() + 10s;
    while (Metric(port, "stamen_gateway_chunks_total") <= 0 && Clock::now() < give_up) std::this_thread::sleep_for(5ms);
    ASSERT_GT(Metric(port, "stamen_gateway_chunks_total"), 0);
  }
  // Queued at the worker or never sent by the gateway (chunks go out two at a time).
  auto not_computed = [port] {
    return std::max(0.0, Metric(port, "stamen_dropped_sequences_total")) +
           std::max(0.0, Metric(port, "stamen_gateway_unsent_sequences_total"));
  };
  const auto give_up = Clock::now() + 10s;
  while (not_computed() <= 100 && Clock::now() < give_up) std::this_thread::sleep_for(10ms);
  EXPECT_GT(not_computed(), 100) << ReadFile(serve.log);
  EXPECT_LT(Metric(port, "stamen_sequences_total"), 500);
  EXPECT_EQ(Metric(port, "stamen_gateway_client_disconnects_total"), 1);
  serve.Signal(SIGTERM);
  const int status = serve.Wait(30s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(serve.log);
}

}  // namespace
}  // namespace stamen
