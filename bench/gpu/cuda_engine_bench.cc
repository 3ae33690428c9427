// stamen_cuda_bench: the engine-level GPU benchmarks of docs/mission.md on one model folder,
// one JSON object per line on stdout. Pre-tokenized random ids; every timed run is preceded by
// warm-up steps (which also capture the CUDA graphs). Suites:
//   latency     batch 1, sequential, lengths 128, 512, 4096 → p50/p90/p99/max ms
//   scoring     5, 25, 50 sequences of 512 tokens per step → p50/p90/p99/max ms
//   throughput  4 client threads (one engine each) × 100 inputs per step, lengths 512, 1024,
//               4096 → embeddings per second
//   graphs      batch 1 @128: graph replay vs eager (graphs disabled) p50 → speed-up
//   gemm        bf16 cuBLASLt gemm 8192×4096×4096 → TFLOP/s (the reference for throughput)
// The high-concurrency suite goes through the gateway and the network hop and is not here.
// The gemm, graph and graph-statistics lines come first (cheap, and what a short GPU session
// needs most), then latency, scoring and throughput, each line flushed as it is made.
//
// Usage: stamen_cuda_bench MODEL_DIR [--quick] [--max-tokens N]
//   --max-tokens N: leave out every case whose step has more than N tokens (default: none)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/ops/gemm.h"

#if STAMEN_WITH_CUDA
#include "engine/cuda/context.h"
#endif

namespace stamen::engine {
namespace {

using Clock = std::chrono::steady_clock;

struct Input {
  std::vector<int32_t> ids;
  std::vector<int32_t> bounds;
};

Input MakeInput(int64_t sequences, int64_t length, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(std::min<int64_t>(vocab, 30000) - 1));
  Input input;
  input.bounds.push_back(0);
  for (int64_t s = 0; s < sequences; ++s) {
    for (int64_t t = 0; t < length; ++t) input.ids.push_back(id(rng));
    input.bounds.push_back(static_cast<int32_t>(input.ids.size()));
  }
  return input;
}

double RunOnce(Engine& engine, const Input& input, const StepOptions& options) {
  const auto begin = Clock::now();
  auto result = engine.Step({input.ids, input.bounds, {}}, options);
  if (!result.ok() || !result->Wait().ok()) {
    std::fprintf(stderr, "step failed: %s\n", result.ok() ? "wait" : result.status().message().c_str());
    std::exit(1);
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
}

void PrintPercentiles(const char* suite, const std::string& label, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * (ms.size() - 1) + 0.5))]; };
  std::printf("{\"suite\":\"%s\",\"case\":\"%s\",\"runs\":%zu,\"p50_ms\":%.4f,\"p90_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f}\n",
              suite, label.c_str(), ms.size(), at(0.5), at(0.9), at(0.99), ms.back());
  std::fflush(stdout);
}

std::vector<double> Time(Engine& engine, const Input& input, const StepOptions& options, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) RunOnce(engine, input, options);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) ms.push_back(RunOnce(engine, input, options));
  return ms;
}

void PrintGraphStats(const Engine& engine) {
  const DeviceStats stats = engine.device_stats();
  std::printf("{\"suite\":\"graph_stats\",\"captures\":%lld,\"replays\":%lld,\"eager_runs\":%lld,\"capture_failures\":%lld,"
              "\"graphs\":%lld,\"graph_bytes\":%zu,\"capture_seconds\":%.4f,\"inflection_tokens\":%lld}\n",
              static_cast<long long>(stats.graph_captures), static_cast<long long>(stats.graph_replays),
              static_cast<long long>(stats.eager_runs), static_cast<long long>(stats.capture_failures),
              static_cast<long long>(stats.graphs), stats.graph_bytes, stats.capture_seconds,
              static_cast<long long>(stats.inflection_tokens));
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stamen_cuda_bench MODEL_DIR [--quick] [--max-tokens N]\n");
    return 2;
  }
  const std::string folder = argv[1];
  bool quick = false;
  int64_t max_tokens = int64_t{1} << 40;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--max-tokens") == 0 && i + 1 < argc) {
      max_tokens = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "stamen_cuda_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  const int runs = quick ? 20 : 200;
  auto loaded = Engine::Load(folder, {.device = Device::kCuda});
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
    return 1;
  }
  Engine& engine = **loaded;
  const int64_t vocab = engine.config().vocab_size;
  const int64_t longest = engine.config().max_position_embeddings > 0 ? engine.config().max_position_embeddings : 1 << 20;
  const bool scores = engine.config().head == ModelHead::kSequenceClassification;
  const StepOptions options = scores ? StepOptions{.output = StepOutput::kScores}
                                     : StepOptions{.pooling = engine.default_pooling().value_or(ops::PoolingMode::kMean)};

#if STAMEN_WITH_CUDA
  {
    auto context = cuda::Context::Create(0);
    if (context.ok()) {
      cuda::ScopedContext scope(context->get());
      const int64_t m = 8192, n = 4096, k = 4096;
      auto x = Tensor::Allocate(DataType::kBF16, {m, k}, Device::kCuda);
      auto w = Tensor::Allocate(DataType::kBF16, {n, k}, Device::kCuda);
      auto y = Tensor::Allocate(DataType::kBF16, {m, n}, Device::kCuda);
      if (x.ok() && w.ok() && y.ok()) {
        for (int i = 0; i < 3; ++i) (void)ops::Gemm(*x, *w, Tensor(), *y);
        (void)(*context)->Synchronize();
        const int iterations = 20;
        const auto begin = Clock::now();
        for (int i = 0; i < iterations; ++i) (void)ops::Gemm(*x, *w, Tensor(), *y);
        (void)(*context)->Synchronize();
        const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
        std::printf("{\"suite\":\"gemm\",\"case\":\"bf16 %lldx%lldx%lld\",\"tflops\":%.1f}\n", static_cast<long long>(m),
                    static_cast<long long>(n), static_cast<long long>(k), 2.0 * m * n * k * iterations / seconds / 1e12);
        std::fflush(stdout);
      }
    }
  }
#endif
  {
    CudaGraphOptions no_graphs;
    no_graphs.enabled = false;
    auto eager = Engine::Load(folder, {.device = Device::kCuda, .cuda_graphs = no_graphs});
    if (eager.ok()) {
      const Input input = MakeInput(1, 128, vocab, 3);
      std::vector<double> with = Time(engine, input, options, 5, runs);
      std::vector<double> without = Time(**eager, input, options, 5, runs);
      std::sort(with.begin(), with.end());
      std::sort(without.begin(), without.end());
      std::printf("{\"suite\":\"graphs\",\"case\":\"batch1@128\",\"replay_p50_ms\":%.4f,\"eager_p50_ms\":%.4f,\"speedup\":%.3f}\n",
                  with[with.size() / 2], without[without.size() / 2], without[without.size() / 2] / with[with.size() / 2]);
      std::fflush(stdout);
    }
  }
  PrintGraphStats(engine);
  for (int64_t length : {128, 512, 4096}) {
    if (length > longest - 2 || length > max_tokens) continue;
    PrintPercentiles("latency", "batch1@" + std::to_string(length),
                     Time(engine, MakeInput(1, length, vocab, 1), options, 5, runs));
  }
  for (int64_t pairs : {5, 25, 50}) {
    if (512 > longest - 2 || 512 * pairs > max_tokens) continue;
    PrintPercentiles("scoring", std::to_string(pairs) + "x512",
                     Time(engine, MakeInput(pairs, 512, vocab, 2), options, 5, runs / 2));
  }
  for (int64_t length : {512, 1024, 4096}) {
    if (length > longest - 2 || 100 * length > max_tokens) continue;
    const int clients = 4;
    const int requests = quick ? 3 : 10;
    std::vector<std::unique_ptr<Engine>> engines;
    for (int c = 0; c < clients; ++c) {
      auto client = Engine::Load(folder, {.device = Device::kCuda});
      if (!client.ok()) return 1;
      engines.push_back(std::move(client.value()));
    }
    const Input input = MakeInput(100, length, vocab, 4);
    for (auto& client : engines) RunOnce(*client, input, options);  // warm-up
    const auto begin = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        for (int r = 0; r < requests; ++r) RunOnce(*engines[c], input, options);
      });
    }
    for (auto& thread : threads) thread.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    const double embeddings = static_cast<double>(clients) * requests * 100;
    std::printf("{\"suite\":\"throughput\",\"case\":\"4x100x%lld\",\"embeddings_per_second\":%.1f,\"tokens_per_second\":%.0f}\n",
                static_cast<long long>(length), embeddings / seconds, embeddings * length / seconds);
    std::fflush(stdout);
  }
  PrintGraphStats(engine);
  return 0;
}

}  // namespace
}  // namespace stamen::engine

int main(int argc, char** argv) { return stamen::engine::Main(argc, argv); }
