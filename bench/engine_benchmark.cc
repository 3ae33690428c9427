#include "bench/engine_benchmark.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/ops/gemm.h"

namespace stamen::bench {
namespace {

struct EngineBenchmarkOptions {
  std::string model;
  std::string lengths = "128,512";
  std::string batches = "1,32";
  int threads = 0;
  double seconds = 3.0;  // per configuration
  bool json = false;
};

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> values;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) values.push_back(std::stoi(item));
  }
  return values;
}

using Clock = std::chrono::steady_clock;

// Multiply-adds × 2 of one forward pass over `sequences` sequences of `length` tokens: the
// dense layers per token plus attention's two products per sequence.
double ForwardFlops(const engine::ModelConfig& config, int length, int sequences) {
  const double h = static_cast<double>(config.hidden_size);
  const double heads = static_cast<double>(config.num_attention_heads);
  const double head_dim = static_cast<double>(config.head_dim);
  const double kv = static_cast<double>(config.num_key_value_heads);
  const double ffn = static_cast<double>(config.intermediate_size);
  const bool gated = config.family == engine::ModelFamily::kQwen2 || config.family == engine::ModelFamily::kQwen3;
  const double projections = h * heads * head_dim + 2 * h * kv * head_dim + heads * head_dim * h;
  const double mlp = (gated ? 3 : 2) * h * ffn;
  const double per_token = 2 * (projections + mlp);
  const double attention = 2 * 2 * static_cast<double>(length) * static_cast<double>(length) * heads * head_dim;
  return static_cast<double>(config.num_hidden_layers) * sequences * (length * per_token + attention);
}

// GFLOP/s of one [tokens, hidden] × [ffn, hidden]ᵀ GEMM, the model's largest, on this thread count.
double GemmRate(const engine::ModelConfig& config, int64_t tokens, double seconds) {
  using engine::DataType;
  auto input = engine::Tensor::Allocate(DataType::kF32, {tokens, config.hidden_size});
  auto weight = engine::Tensor::Allocate(DataType::kF32, {config.intermediate_size, config.hidden_size});
  auto output = engine::Tensor::Allocate(DataType::kF32, {tokens, config.intermediate_size});
  if (!input.ok() || !weight.ok() || !output.ok()) return 0;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> value(-1, 1);
  for (int64_t i = 0; i < input->NumElements(); ++i) input->data<float>()[i] = value(random);
  for (int64_t i = 0; i < weight->NumElements(); ++i) weight->data<float>()[i] = value(random);
  (void)engine::ops::Gemm(*input, *weight, {}, *output);
  int runs = 0;
  const auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    (void)engine::ops::Gemm(*input, *weight, {}, *output);
    ++runs;
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return 2.0 * tokens * config.hidden_size * config.intermediate_size * runs / elapsed / 1e9;
}

int RunEngineBenchmark(const EngineBenchmarkOptions& options) {
  auto loaded = engine::Engine::Load(options.model, {.num_threads = options.threads});
  if (!loaded.ok()) {
    std::fprintf(stderr, "stamen bench engine: %s\n", loaded.status().message().c_str());
    return 2;
  }
  engine::Engine& engine = **loaded;
  const engine::ModelConfig& config = engine.config();
  const bool scores = config.head == engine::ModelHead::kSequenceClassification;
  engine::StepOptions step;
  if (scores) {
    step.output = engine::StepOutput::kScores;
  } else if (!engine.default_pooling()) {
    step.pooling = engine::ops::PoolingMode::kMean;
  }
  std::mt19937 random(7);
  std::uniform_int_distribution<int32_t> id(5, static_cast<int32_t>(config.vocab_size) - 1);
  if (!options.json) {
    std::printf("model %s (%s, %ld layers, hidden %ld), threads %d\n", options.model.c_str(),
                config.architecture.c_str(), static_cast<long>(config.num_hidden_layers),
                static_cast<long>(config.hidden_size), options.threads);
  }
  std::string json = "{\"model\": \"" + options.model + "\", \"threads\": " + std::to_string(options.threads) +
                     ", \"runs\": [";
  bool first = true;
  for (int length : ParseList(options.lengths)) {
    for (int batch : ParseList(options.batches)) {
      std::vector<int32_t> ids(static_cast<size_t>(length) * batch);
      for (int32_t& value : ids) value = id(random);
      std::vector<int32_t> cu_seqlens = {0};
      for (int s = 0; s < batch; ++s) cu_seqlens.push_back(cu_seqlens.back() + length);
      auto run = [&] {
        auto result = engine.Step({ids, cu_seqlens, {}}, step);
        return result.ok() && result->Wait().ok();
      };
      if (!run()) {
        std::fprintf(stderr, "stamen bench engine: a step of %d × %d tokens failed\n", batch, length);
        return 2;
      }
      std::vector<double> times;
      const auto start = Clock::now();
      while (std::chrono::duration<double>(Clock::now() - start).count() < options.seconds || times.size() < 3) {
        const auto begin = Clock::now();
        run();
        times.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
      }
      std::sort(times.begin(), times.end());
      const double median = times[times.size() / 2];
      const double tokens_per_second = static_cast<double>(length) * batch / median;
      const double gflops = ForwardFlops(config, length, batch) / median / 1e9;
      const double gemm = GemmRate(config, static_cast<int64_t>(length) * batch, std::min(options.seconds, 1.0));
      if (options.json) {
        char entry[512];
        std::snprintf(entry, sizeof(entry),
                      "%s{\"length\": %d, \"batch\": %d, \"median_ms\": %.3f, \"tokens_per_second\": %.1f, "
                      "\"gflops\": %.2f, \"gemm_gflops\": %.2f, \"steps\": %zu}",
                      first ? "" : ", ", length, batch, median * 1e3, tokens_per_second, gflops, gemm, times.size());
        json += entry;
        first = false;
      } else {
        std::printf("seq %5d batch %3d: median %9.3f ms  %10.1f tokens/s  %7.2f GFLOP/s  (bare GEMM %7.2f GFLOP/s: %.0f%%)\n",
                    length, batch, median * 1e3, tokens_per_second, gflops, gemm, 100 * gflops / gemm);
      }
    }
  }
  if (options.json) std::printf("%s]}\n", json.c_str());
  return 0;
}

}  // namespace

void AddEngineBenchmark(CLI::App& bench) {
  auto options = std::make_shared<EngineBenchmarkOptions>();
  CLI::App* command = bench.add_subcommand("engine", "Engine::Step tokens/s and GFLOP/s vs a bare GEMM, same run");
  command->add_option("--model", options->model, "Hugging Face model folder")->required();
  command->add_option("--lengths", options->lengths, "Sequence lengths, comma-separated")->capture_default_str();
  command->add_option("--batches", options->batches, "Sequences per step, comma-separated")->capture_default_str();
  command->add_option("--threads", options->threads, "Engine threads (0: all cores)")->capture_default_str();
  command->add_option("--seconds", options->seconds, "Timing per configuration")->capture_default_str();
  command->add_flag("--json", options->json, "One JSON object on stdout");
  command->callback([options] { std::exit(RunEngineBenchmark(*options)); });
}

}  // namespace stamen::bench
