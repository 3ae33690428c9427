#include "bench/engine_benchmark.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>

#include "engine/cpu/cpu_path.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/engine.h"
#include "engine/ops/attention.h"
#include "engine/ops/gemm.h"

namespace stamen::bench {
namespace {

struct EngineBenchmarkOptions {
  std::string model;
  std::string lengths = "128,512";
  std::string batches = "1,32";
  int threads = 0;
  std::string dtype;     // empty: the engine's default
  std::string task;      // a task adapter every sequence runs with (jina-embeddings-v3); empty: none
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

// Median seconds of `run` over at least `seconds` (and at least 3 runs). Callers run it once
// first, untimed, and check that it works.
template <typename Run>
double MedianSeconds(const Run& run, double seconds) {
  std::vector<double> times;
  const auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds || times.size() < 3) {
    const auto begin = Clock::now();
    run();
    times.push_back(std::chrono::duration<double>(Clock::now() - begin).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// (query, key) pairs one sequence of `length` tokens computes in a layer attending within
// `window` keys (0: all), causally or not: the pattern the attention kernels compute, so
// ModernBERT's 128-key local layers or a causal decoder are not credited with work they skip.
double AttendedPairs(int64_t length, int64_t window, bool causal) {
  double pairs = 0;
  for (int64_t query = 0; query < length; ++query) {
    const int64_t reach = window > 0 ? window - 1 : length;  // keys either side, |i − j| < window
    const int64_t first = std::max<int64_t>(0, query - reach);
    const int64_t last = causal ? query : std::min<int64_t>(length - 1, query + reach);
    pairs += static_cast<double>(last - first + 1);
  }
  return pairs;
}

// DeBERTa's disentangled terms per layer and sequence: each query (c2p) and each key (p2c)
// is scored against every relative-position row the sequence reaches, in every head, as the
// attention kernels compute them.
double DisentangledFlops(const engine::ModelConfig& config, int64_t length) {
  const engine::DisentangledAttentionConfig& settings = config.disentangled;
  const int terms = int{settings.content_to_position} + int{settings.position_to_content};
  if (!settings.relative_attention || terms == 0) return 0;
  engine::ops::DisentangledPositionBias bias;
  bias.span = static_cast<int32_t>(settings.RelativeSpan());
  bias.position_buckets = static_cast<int32_t>(settings.position_buckets);
  bias.max_relative_positions = static_cast<int32_t>(settings.max_relative_positions);
  const int64_t rows = engine::ops::DisentangledPositionIndex(length - 1, bias) -
                       engine::ops::DisentangledPositionIndex(-(length - 1), bias) + 1;
  return 2.0 * terms * static_cast<double>(length) * static_cast<double>(rows) *
         static_cast<double>(config.num_attention_heads * config.head_dim);
}

// Multiply-adds × 2 of one forward pass over `sequences` sequences of `length` tokens: the
// dense layers per token plus attention's two products over each layer's attended pairs
// (each layer's window as the models take it: ModelConfig::AttentionWindow), and
// DeBERTa's position terms.
double ForwardFlops(const engine::ModelConfig& config, int length, int sequences) {
  const double h = static_cast<double>(config.hidden_size);
  const double heads = static_cast<double>(config.num_attention_heads);
  const double head_dim = static_cast<double>(config.head_dim);
  const double kv = static_cast<double>(config.num_key_value_heads);
  const double ffn = static_cast<double>(config.intermediate_size);
  const bool gated = config.gated_feed_forward;
  const double projections = h * heads * head_dim + 2 * h * kv * head_dim + heads * head_dim * h;
  const double mlp = (gated ? 3 : 2) * h * ffn;
  const double per_token = 2 * (projections + mlp);
  double flops = 0;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const int64_t window = config.AttentionWindow(static_cast<size_t>(layer));
    const double attention =
        2 * 2 * AttendedPairs(length, window, config.causal) * heads * head_dim + DisentangledFlops(config, length);
    flops += sequences * (length * per_token + attention);
  }
  return flops;
}

// GFLOP/s of one [tokens, hidden] × [ffn, hidden]ᵀ GEMM, the model's largest, on this thread
// count, in the engine's compute dtype.
double GemmRate(const engine::ModelConfig& config, int64_t tokens, engine::DataType dtype, double seconds) {
  using engine::DataType;
  const engine::cpu::MatrixPrecisionScope precision(dtype == DataType::kBF16 ? engine::cpu::MatrixPrecision::kBFloat16
                                                                             : engine::cpu::MatrixPrecision::kFloat32);
  auto input = engine::Tensor::Allocate(DataType::kF32, {tokens, config.hidden_size});
  auto weight = engine::Tensor::Allocate(DataType::kF32, {config.intermediate_size, config.hidden_size});
  auto output = engine::Tensor::Allocate(DataType::kF32, {tokens, config.intermediate_size});
  if (!input.ok() || !weight.ok() || !output.ok()) return 0;
  std::mt19937 random(1);
  std::uniform_real_distribution<float> value(-1, 1);
  for (int64_t i = 0; i < input->NumElements(); ++i) input->data<float>()[i] = value(random);
  for (int64_t i = 0; i < weight->NumElements(); ++i) weight->data<float>()[i] = value(random);
  auto gemm = [&] { return engine::ops::Gemm(*input, *weight, {}, *output); };
  if (!gemm().ok()) return 0;
  const double median = MedianSeconds(gemm, seconds);
  return 2.0 * tokens * config.hidden_size * config.intermediate_size / median / 1e9;
}

int RunEngineBenchmark(const EngineBenchmarkOptions& options) {
  engine::EngineOptions engine_options{.num_threads = options.threads};
  if (!options.dtype.empty()) {
    engine_options.compute_dtype = engine::ParseComputeType(options.dtype);
    if (!engine_options.compute_dtype) {
      std::fprintf(stderr, "stamen bench engine: dtype '%s' is not float32 or bfloat16\n", options.dtype.c_str());
      return 2;
    }
  }
  auto loaded = engine::Engine::Load(options.model, engine_options);
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
  } else if (engine.sentence_transformers().multi_vector.enabled) {
    step.output = engine::StepOutput::kTokenVectors;  // a multi-vector model's forward pass and projection
  } else if (!engine.default_pooling()) {
    step.pooling = engine::ops::PoolingMode::kMean;
  }
  int32_t task = -1;
  if (!options.task.empty()) {
    const auto found = std::find(config.adapter_tasks.begin(), config.adapter_tasks.end(), options.task);
    if (found == config.adapter_tasks.end()) {
      std::fprintf(stderr, "stamen bench engine: the model has no task adapter '%s'\n", options.task.c_str());
      return 2;
    }
    task = static_cast<int32_t>(found - config.adapter_tasks.begin());
  }
  std::mt19937 random(7);
  std::uniform_int_distribution<int32_t> id(5, static_cast<int32_t>(config.vocab_size) - 1);
  if (!options.json) {
    std::printf("model %s (%s, %ld layers, hidden %ld), threads %d, %s, %s; GEMM: %s\n", options.model.c_str(),
                config.architecture.c_str(), static_cast<long>(config.num_hidden_layers),
                static_cast<long>(config.hidden_size), options.threads, std::string(engine.compute_dtype()).c_str(),
                engine::cpu::DescribeCpuPath().c_str(),
                engine::cpu::DescribeGemm(engine.compute_dtype() == "bfloat16").c_str());
  }
  const engine::cpu::CpuPath& cpu = engine::cpu::DetectCpuPath();
  std::string json = "{\"model\": \"" + options.model + "\", \"threads\": " + std::to_string(options.threads) +
                     ", \"dtype\": \"" + std::string(engine.compute_dtype()) + "\", \"cpu\": {\"kernels\": \"" +
                     cpu.kernels + "\", \"gemm\": \"" + engine::cpu::DescribeGemm(engine.compute_dtype() == "bfloat16") + "\", \"onednn_isa\": \"" + cpu.onednn_isa + "\", \"features\": \"" + cpu.features +
                     "\", \"vendor\": \"" + cpu.vendor + "\", \"bfloat16_instructions\": " +
                     (cpu.bfloat16_instructions ? "true" : "false") + "}, \"runs\": [";
  bool first = true;
  for (int length : ParseList(options.lengths)) {
    for (int batch : ParseList(options.batches)) {
      std::vector<int32_t> ids(static_cast<size_t>(length) * batch);
      for (int32_t& value : ids) value = id(random);
      std::vector<int32_t> cu_seqlens = {0};
      for (int s = 0; s < batch; ++s) cu_seqlens.push_back(cu_seqlens.back() + length);
      const std::vector<int32_t> adapters = task >= 0 ? std::vector<int32_t>(batch, task) : std::vector<int32_t>();
      auto run = [&] {
        auto result = engine.Step({.token_ids = ids, .cu_seqlens = cu_seqlens, .token_type_ids = {}, .adapters = adapters}, step);
        return result.ok() && result->Wait().ok();
      };
      if (!run()) {
        std::fprintf(stderr, "stamen bench engine: a step of %d × %d tokens failed\n", batch, length);
        return 2;
      }
      size_t steps = 0;
      const double median = MedianSeconds([&] { ++steps; run(); }, options.seconds);
      const double tokens_per_second = static_cast<double>(length) * batch / median;
      const double gflops = ForwardFlops(config, length, batch) / median / 1e9;
      const engine::DataType dtype = engine.compute_dtype() == "bfloat16" ? engine::DataType::kBF16 : engine::DataType::kF32;
      const double gemm = GemmRate(config, static_cast<int64_t>(length) * batch, dtype, std::min(options.seconds, 1.0));
      if (options.json) {
        char entry[512];
        std::snprintf(entry, sizeof(entry),
                      "%s{\"length\": %d, \"batch\": %d, \"median_ms\": %.3f, \"tokens_per_second\": %.1f, "
                      "\"gflops\": %.2f, \"gemm_gflops\": %.2f, \"steps\": %zu}",
                      first ? "" : ", ", length, batch, median * 1e3, tokens_per_second, gflops, gemm, steps);
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

struct AttentionBenchmarkOptions {
  int heads = 12;
  int kv_heads = 0;  // 0: as many as query heads
  int head_dim = 32;
  std::string lengths = "128,512,2048";
  int sequences = 1;
  bool causal = false;
  int threads = 0;
  double seconds = 1.0;
};

// ops::Attention alone on random queries, keys and values: the kernel's rate at each length,
// to compare with GEMM (the same FLOPs as two [L, d] × [d, L]-shaped products per head).
int RunAttentionBenchmark(const AttentionBenchmarkOptions& options) {
  using engine::DataType;
  if (options.threads > 0) omp_set_num_threads(options.threads);
  const engine::ops::QkvLayout layout{options.heads, options.kv_heads > 0 ? options.kv_heads : options.heads,
                                      options.head_dim};
  std::printf("attention: %d heads (%ld key/value) of %d, %d sequence(s) per call, %s, threads %d\n", options.heads,
              static_cast<long>(layout.num_kv_heads), options.head_dim, options.sequences,
              options.causal ? "causal" : "bidirectional", options.threads > 0 ? options.threads : omp_get_max_threads());
  std::mt19937 random(1);
  std::normal_distribution<float> value(0.0f, 1.0f);
  for (int length : ParseList(options.lengths)) {
    const int64_t tokens = static_cast<int64_t>(length) * options.sequences;
    auto qkv = engine::Tensor::Allocate(DataType::kF32, {tokens, layout.row_size()});
    auto output = engine::Tensor::Allocate(DataType::kF32, {tokens, layout.num_heads * layout.head_dim});
    auto cu_seqlens = engine::Tensor::Allocate(DataType::kI32, {options.sequences + 1});
    if (!qkv.ok() || !output.ok() || !cu_seqlens.ok()) {
      std::fprintf(stderr, "stamen bench attention: out of memory at %d tokens\n", length);
      return 2;
    }
    for (int64_t i = 0; i < qkv->NumElements(); ++i) qkv->data<float>()[i] = value(random);
    for (int s = 0; s <= options.sequences; ++s) cu_seqlens->data<int32_t>()[s] = s * length;
    auto attention = [&] { return engine::ops::Attention(*qkv, *cu_seqlens, layout, {.causal = options.causal}, *output); };
    if (engine::Status status = attention(); !status.ok()) {
      std::fprintf(stderr, "stamen bench attention: %s\n", status.message().c_str());
      return 2;
    }
    const double median = MedianSeconds(attention, options.seconds);
    const double flops = 4.0 * options.sequences * length * static_cast<double>(length) * options.heads *
                         options.head_dim * (options.causal ? 0.5 : 1.0);
    std::printf("length %5d: median %9.3f ms  %7.1f GFLOP/s\n", length, median * 1e3, flops / median / 1e9);
  }
  return 0;
}

}  // namespace

void AddAttentionBenchmark(CLI::App& bench) {
  auto options = std::make_shared<AttentionBenchmarkOptions>();
  CLI::App* command = bench.add_subcommand("attention", "The CPU attention kernel alone: ms and GFLOP/s per length");
  command->add_option("--heads", options->heads, "Query heads")->capture_default_str();
  command->add_option("--kv-heads", options->kv_heads, "Key/value heads (0: as many as query heads)")
      ->capture_default_str();
  command->add_option("--head-dim", options->head_dim, "Floats per head")->capture_default_str();
  command->add_option("--lengths", options->lengths, "Tokens per sequence, comma-separated")->capture_default_str();
  command->add_option("--sequences", options->sequences, "Sequences per call")->capture_default_str();
  command->add_flag("--causal", options->causal, "Causal attention (decoder models)");
  command->add_option("--threads", options->threads, "OpenMP threads (0: all cores)")->capture_default_str();
  command->add_option("--seconds", options->seconds, "Timing per length")->capture_default_str();
  command->callback([options] { std::exit(RunAttentionBenchmark(*options)); });
}

void AddEngineBenchmark(CLI::App& bench) {
  auto options = std::make_shared<EngineBenchmarkOptions>();
  CLI::App* command = bench.add_subcommand("engine", "Engine::Step tokens/s and GFLOP/s vs a bare GEMM, same run");
  command->add_option("--model", options->model, "Hugging Face model folder")->required();
  command->add_option("--lengths", options->lengths, "Sequence lengths, comma-separated")->capture_default_str();
  command->add_option("--batches", options->batches, "Sequences per step, comma-separated")->capture_default_str();
  command->add_option("--threads", options->threads, "Engine threads (0: all cores)")->capture_default_str();
  command->add_option("--dtype", options->dtype, "float32 or bfloat16 (default: the engine's for this CPU and model)");
  command->add_option("--task", options->task, "Run every sequence with this task adapter (jina-embeddings-v3)");
  command->add_option("--seconds", options->seconds, "Timing per configuration")->capture_default_str();
  command->add_flag("--json", options->json, "One JSON object on stdout");
  command->callback([options] { std::exit(RunEngineBenchmark(*options)); });
}

}  // namespace stamen::bench
