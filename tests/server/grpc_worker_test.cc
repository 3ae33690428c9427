// The worker over real gRPC on loopback: concurrent clients get what the engine gives for
// their sequences alone; bad input gets INVALID_ARGUMENT with a message; Info, Health and the
// metrics endpoint answer; a `stamen worker` process drains on SIGTERM without losing work.
#include "server/grpc_worker.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/server/test_models.h"

namespace stamen::server {
namespace {

using testing::ComputeAlone;
using testing::Pack;
using testing::RandomSequences;
using testing::UnpackFloats;

v1::TokenSequences Sequences(const std::vector<std::vector<int32_t>>& sequences) {
  v1::TokenSequences packed;
  std::vector<int32_t> ids, lengths;
  for (const auto& sequence : sequences) {
    ids.insert(ids.end(), sequence.begin(), sequence.end());
    lengths.push_back(static_cast<int32_t>(sequence.size()));
  }
  packed.set_token_ids(Pack(ids));
  packed.set_lengths(Pack(lengths));
  return packed;
}

std::unique_ptr<v1::Inference::Stub> Connect(int port) {
  return v1::Inference::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
}

// GET `path` from 127.0.0.1:`port` with a raw socket; returns the whole answer.
std::string HttpGet(int port, const std::string& path) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)});
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  boost::asio::write(socket, boost::asio::buffer(request));
  std::string answer;
  boost::system::error_code error;
  char buffer[4096];
  while (size_t n = socket.read_some(boost::asio::buffer(buffer), error)) answer.append(buffer, n);
  return answer;
}

class GrpcWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    GrpcWorkerOptions options;
    options.worker.model_dir = testing::TinyEmbedder();
    options.worker.scheduler = {.max_batch_tokens = 512, .max_batch_sequences = 64, .max_queued_tokens = 1 << 20};
    options.listen = "127.0.0.1:0";
    options.metrics_port = 0;
    auto started = GrpcWorker::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().message();
    worker_ = started.value().release();
    auto engine = engine::Engine::Load(options.worker.model_dir, {.num_threads = 1});
    ASSERT_TRUE(engine.ok());
    reference_ = engine.value().release();
  }
  static void TearDownTestSuite() {
    delete worker_;
    delete reference_;
  }

  static GrpcWorker* worker_;
  static engine::Engine* reference_;
};

GrpcWorker* GrpcWorkerTest::worker_ = nullptr;
engine::Engine* GrpcWorkerTest::reference_ = nullptr;

TEST_F(GrpcWorkerTest, ConcurrentClientsGetWhatEachSequenceGivesAlone) {
  // 16 clients of 3 requests each interleave in the worker's batches as 32 do, in half the time
  // on a 2-core machine under the sanitizers.
  constexpr int kClients = 16;
  constexpr int kRequestsPerClient = 3;
  std::vector<std::thread> clients;
  std::vector<std::string> failures(kClients);
  for (int client = 0; client < kClients; ++client) {
    clients.emplace_back([&, client] {
      std::mt19937 random(client);
      auto stub = Connect(worker_->port());
      for (int request_index = 0; request_index < kRequestsPerClient; ++request_index) {
        std::vector<int> lengths(1 + random() % 12);
        for (int& length : lengths) length = 1 + static_cast<int>(random() % 120);
        const auto sequences = RandomSequences(random, lengths);
        v1::EmbedRequest request;
        *request.mutable_sequences() = Sequences(sequences);
        v1::EmbedResponse response;
        grpc::ClientContext context;
        const grpc::Status status = stub->Embed(&context, request, &response);
        if (!status.ok()) {
          failures[client] = status.error_message();
          return;
        }
        if (response.count() != sequences.size() || response.dimensions() != 384) {
          failures[client] = "wrong shape";
          return;
        }
        // The reference engine is shared: compute it after the call, one client at a time.
        static std::mutex reference_mutex;
        std::lock_guard lock(reference_mutex);
        const auto alone = ComputeAlone(*reference_, sequences, {});
        const std::vector<float> values = UnpackFloats(response.embeddings());
        for (size_t row = 0; row < sequences.size(); ++row) {
          for (int column = 0; column < 384; ++column) {
            if (std::abs(values[row * 384 + column] - alone[row][column]) > 1e-5) {
              failures[client] = "row " + std::to_string(row) + " differs from the sequence computed alone";
              return;
            }
          }
        }
      }
    });
  }
  for (auto& thread : clients) thread.join();
  for (int client = 0; client < kClients; ++client) EXPECT_EQ(failures[client], "") << "client " << client;
  // The requests were batched together, not run one by one.
  const auto batches = worker_->worker().scheduler().RecentBatches();
  int merged = 0;
  for (const BatchRecord& batch : batches) merged += batch.requests > 1;
  EXPECT_GT(merged, 0);
}

// TEI's /embed_all and late chunking over the wire: every token's state, and vectors pooled
// over spans, equal the engine's own (rows in request order), and a weighted mean pooling
// named on the wire is the one computed.
TEST_F(GrpcWorkerTest, TokenStatesSpansAndEveryPoolingCrossTheWire) {
  std::mt19937 random(7);
  const auto sequences = RandomSequences(random, {9, 30});
  std::vector<int32_t> ids = sequences[0];
  ids.insert(ids.end(), sequences[1].begin(), sequences[1].end());
  const std::vector<int32_t> bounds = {0, 9, 39};
  auto stub = Connect(worker_->port());
  // `expected`'s rows, L2-normalised here when the worker normalises them (pooled vectors).
  auto expect_rows = [](const v1::EmbedResponse& response, const engine::LazyResult& expected, bool normalized) {
    ASSERT_EQ(response.count(), expected.values().dim(0));
    ASSERT_EQ(response.dimensions(), expected.values().dim(1));
    const std::vector<float> got = UnpackFloats(response.embeddings());
    const size_t columns = response.dimensions();
    for (size_t row = 0; row < response.count(); ++row) {
      const float* values = expected.values().data<float>() + row * columns;
      double squares = 0;
      for (size_t j = 0; j < columns; ++j) squares += double{values[j]} * values[j];
      const double norm = normalized ? std::sqrt(squares) : 1.0;
      for (size_t j = 0; j < columns; ++j) ASSERT_NEAR(got[row * columns + j], values[j] / norm, 1e-5) << row << ", " << j;
    }
  };

  v1::EmbedRequest tokens;
  *tokens.mutable_sequences() = Sequences(sequences);
  tokens.set_token_embeddings(true);
  v1::EmbedResponse token_response;
  grpc::ClientContext token_context;
  ASSERT_TRUE(stub->Embed(&token_context, tokens, &token_response).ok());
  auto token_states = reference_->Step({ids, bounds, {}}, {.output = engine::StepOutput::kTokenEmbeddings});
  ASSERT_TRUE(token_states.ok() && token_states->Wait().ok());
  expect_rows(token_response, *token_states, false);

  // Sequence 0: one span; sequence 1: two overlapping ones.
  v1::EmbedRequest spans;
  *spans.mutable_sequences() = Sequences(sequences);
  spans.set_span_counts(Pack(std::vector<int32_t>{1, 2}));
  spans.set_spans(Pack(std::vector<int32_t>{1, 8, 0, 20, 10, 30}));
  spans.set_pooling_name("weightedmean");
  v1::EmbedResponse span_response;
  grpc::ClientContext span_context;
  const grpc::Status span_status = stub->Embed(&span_context, spans, &span_response);
  ASSERT_TRUE(span_status.ok()) << span_status.error_message();
  const std::vector<int32_t> batch_spans = {1, 8, 9, 29, 19, 39};
  auto pooled = reference_->Step({ids, bounds, {}}, {.pooling = engine::ops::PoolingMode::kWeightedMean, .spans = batch_spans});
  ASSERT_TRUE(pooled.ok() && pooled->Wait().ok()) << pooled.status().message();
  expect_rows(span_response, *pooled, true);

  // A span past its sequence's end is the client's error.
  spans.set_spans(Pack(std::vector<int32_t>{1, 8, 0, 20, 10, 31}));
  grpc::ClientContext bad_context;
  const grpc::Status bad = stub->Embed(&bad_context, spans, &span_response);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("span 1 [10, 31) of sequence 1"), std::string::npos) << bad.error_message();
}

TEST_F(GrpcWorkerTest, BadInputIsInvalidArgumentWithAMessage) {
  auto stub = Connect(worker_->port());
  auto call = [&](const v1::TokenSequences& sequences, uint32_t dimensions = 0) {
    v1::EmbedRequest request;
    *request.mutable_sequences() = sequences;
    request.set_dimensions(dimensions);
    v1::EmbedResponse response;
    grpc::ClientContext context;
    return stub->Embed(&context, request, &response);
  };
  grpc::Status status = call(Sequences({{5, 1000}}));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("outside the vocabulary"), std::string::npos) << status.error_message();
  status = call(Sequences({std::vector<int32_t>(600, 5)}));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("at most 256"), std::string::npos) << status.error_message();
  v1::TokenSequences ragged = Sequences({{5, 6}});
  ragged.set_lengths("\x02\x00\x00");  // not whole int32s
  status = call(ragged);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("packed int32"), std::string::npos);
  status = call(Sequences({{5, 6}}), 1000);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  {
    v1::EmbedRequest request;
    *request.mutable_sequences() = Sequences({{5, 6}});
    request.set_priority(static_cast<v1::Priority>(7));
    v1::EmbedResponse response;
    grpc::ClientContext context;
    status = stub->Embed(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("unknown priority 7"), std::string::npos) << status.error_message();
    request.set_priority(v1::PRIORITY_HIGH);
    grpc::ClientContext high_context;
    EXPECT_TRUE(stub->Embed(&high_context, request, &response).ok());
  }

  v1::ScoreRequest score_request;
  *score_request.mutable_sequences() = Sequences({{5, 6}});
  v1::ScoreResponse score_response;
  grpc::ClientContext context;
  status = stub->Score(&context, score_request, &score_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("no classification head"), std::string::npos);

  // Still serving.
  EXPECT_TRUE(call(Sequences({{5, 6}})).ok());
}

TEST_F(GrpcWorkerTest, InfoHealthAndMetrics) {
  auto stub = Connect(worker_->port());
  v1::InfoResponse info;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Info(&context, {}, &info).ok());
  }
  EXPECT_EQ(info.model_id(), "all-MiniLM-L6-v2-1000");
  EXPECT_EQ(info.architecture(), "BertModel");
  EXPECT_EQ(info.model_kind(), "embedding");
  EXPECT_EQ(info.dimensions(), 384u);
  EXPECT_EQ(info.max_input_length(), 256u);  // sentence-transformers' max_seq_length
  EXPECT_EQ(info.pooling(), "mean");
  EXPECT_EQ(info.backend(), "cpu");
  EXPECT_EQ(info.dtype(), "float32");          // the CPU engine's compute type
  EXPECT_EQ(info.version(), STAMEN_VERSION);   // CMake's project version, not a literal
  EXPECT_EQ(info.max_batch_tokens(), 512u);
  v1::HealthResponse health;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Health(&context, {}, &health).ok());
  }
  EXPECT_EQ(health.state(), v1::HealthResponse::SERVING);

  {
    v1::EmbedRequest request;
    *request.mutable_sequences() = Sequences({{5, 6, 7}});
    v1::EmbedResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Embed(&context, request, &response).ok());
  }
  const std::string metrics = HttpGet(worker_->metrics_port(), "/metrics");
  EXPECT_NE(metrics.find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(metrics.find("stamen_batch_tokens_bucket"), std::string::npos);
  EXPECT_NE(metrics.find("stamen_queue_tokens 0"), std::string::npos);
  EXPECT_NE(metrics.find("stamen_worker_requests_total{status=\"ok\"}"), std::string::npos);
  EXPECT_NE(HttpGet(worker_->metrics_port(), "/other").find("HTTP/1.1 404"), std::string::npos);
  EXPECT_NE(HttpGet(worker_->metrics_port(), "/live").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(HttpGet(worker_->metrics_port(), "/ready").find("HTTP/1.1 200"), std::string::npos);
}

// Kubernetes' probes on the metrics port: a draining worker is alive and not ready.
TEST(GrpcWorkerProbesTest, DrainingIsAliveAndNotReady) {
  GrpcWorkerOptions options;
  options.worker.model_dir = testing::TinyEmbedder();
  options.worker.engine.num_threads = 1;
  options.listen = "127.0.0.1:0";
  options.metrics_port = 0;
  auto worker = GrpcWorker::Start(options);
  ASSERT_TRUE(worker.ok()) << worker.status().message();
  EXPECT_NE(HttpGet((*worker)->metrics_port(), "/ready").find("HTTP/1.1 200"), std::string::npos);
  (*worker)->worker().scheduler().Drain();
  const std::string ready = HttpGet((*worker)->metrics_port(), "/ready");
  EXPECT_NE(ready.find("HTTP/1.1 503"), std::string::npos) << ready;
  EXPECT_NE(HttpGet((*worker)->metrics_port(), "/live").find("HTTP/1.1 200"), std::string::npos);
}

TEST(GrpcRerankerTest, ScoresEqualTheEngineAlone) {
  GrpcWorkerOptions options;
  options.worker.model_dir = testing::TinyReranker();
  options.listen = "127.0.0.1:0";
  auto worker = GrpcWorker::Start(options);
  ASSERT_TRUE(worker.ok()) << worker.status().message();
  auto engine = engine::Engine::Load(options.worker.model_dir, {.num_threads = 1});
  ASSERT_TRUE(engine.ok());
  std::mt19937 random(3);
  const auto sequences = RandomSequences(random, {17, 40, 3});
  v1::ScoreRequest request;
  *request.mutable_sequences() = Sequences(sequences);
  v1::ScoreResponse response;
  grpc::ClientContext context;
  const grpc::Status status = Connect((*worker)->port())->Score(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.count(), 3u);
  ASSERT_EQ(response.num_labels(), 1u);
  const auto alone = ComputeAlone(**engine, sequences, {.output = engine::StepOutput::kScores});
  const std::vector<float> scores = UnpackFloats(response.scores());
  for (size_t i = 0; i < sequences.size(); ++i) EXPECT_NEAR(scores[i], alone[i][0], 1e-5);
}

// --- a `stamen worker` process ---

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(WorkerProcessTest, SigtermFinishesAcceptedRequestsAndExitsZero) {
  const std::string log = testing::ScratchFolder() + "/worker.log";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen(log.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execl(STAMEN_CLI, STAMEN_CLI, "worker", "--model", testing::TinyEmbedder().c_str(), "--listen", "127.0.0.1:0",
          "--max-batch-tokens", "256", "--threads", "1", nullptr);
    _exit(127);
  }
  struct Reaper {  // never leave the worker running when an assertion fails
    pid_t pid;  // -1 once the worker has been waited for: its pid may belong to another process then
    ~Reaper() {
      if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
  } reaper{pid};
  int port = 0;
  for (int attempt = 0; attempt < 600 && port == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string text = ReadFile(log);
    const size_t at = text.find("over gRPC on 127.0.0.1:");
    if (at != std::string::npos) port = std::atoi(text.c_str() + at + std::strlen("over gRPC on 127.0.0.1:"));
  }
  ASSERT_GT(port, 0) << ReadFile(log);

  // Eight requests of 16 × 100 tokens: about 50 batches of 256 tokens, still queued when
  // SIGTERM arrives.
  constexpr int kRequests = 8;
  constexpr int kSequences = 16;
  auto stub = Connect(port);
  std::vector<grpc::Status> statuses(kRequests);
  std::vector<v1::EmbedResponse> responses(kRequests);
  std::vector<std::thread> clients;
  std::atomic<int> sent{0};
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      std::mt19937 random(i);
      v1::EmbedRequest request;
      *request.mutable_sequences() = Sequences(RandomSequences(random, std::vector<int>(kSequences, 100)));
      grpc::ClientContext context;
      ++sent;
      statuses[i] = stub->Embed(&context, request, &responses[i]);
    });
  }
  // SIGTERM once every request is queued (Health reports the queue).
  for (int attempt = 0; attempt < 400; ++attempt) {
    v1::HealthResponse health;
    grpc::ClientContext context;
    if (stub->Health(&context, {}, &health).ok() && health.queued_sequences() >= static_cast<uint32_t>((kRequests - 1) * kSequences)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGTERM);
  for (auto& thread : clients) thread.join();
  int status = 0;
  waitpid(pid, &status, 0);
  reaper.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(log);
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
    EXPECT_EQ(responses[i].count(), static_cast<uint32_t>(kSequences));
  }
  const std::string text = ReadFile(log);
  EXPECT_NE(text.find("SIGTERM received"), std::string::npos) << text;
  EXPECT_NE(text.find("draining"), std::string::npos) << text;
  EXPECT_NE(text.find("worker: stopped"), std::string::npos) << text;
}

}  // namespace
}  // namespace stamen::server
