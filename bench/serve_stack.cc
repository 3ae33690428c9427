// The layers of the stack measured against each other in one process and one run:
//   engine     the engine called directly (batches cut as the worker cuts them: whole
//              sequences up to the worker's --max-batch-tokens), no scheduler, no network;
//   grpc       an in-process `stamen worker` (GrpcWorker on 127.0.0.1, port chosen freely)
//              called over loopback gRPC with the generated stub, ids pre-tokenized;
//   http-ids   an in-process `stamen gateway` in front of that worker: POST /embed with
//              token-id arrays (HTTP + JSON, no tokenization);
//   http-text  the same gateway, POST /v1/embeddings with text (HTTP + JSON + tokenization).
// Rounds alternate the layers (a few requests each, each round starting at the next layer) so that a shared machine's changing load
// falls on all of them alike; the ratios are the result.
//
// `stamen bench worker` (issue 4: engine vs grpc), `stamen bench gateway` (issue 5: grpc vs
// http), and `stamen bench knee` (engine throughput against the batch token budget).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "bench/serve_client.h"
#include "bench/serve_inputs.h"
#include "bench/serve_load.h"
#include "bench/serve_suites.h"
#include "gateway/model_router.h"
#include "server/grpc_worker.h"

namespace stamen::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = RequestSpec::Kind;

struct StackOptions {
  std::string model;
  std::string corpus;
  std::string json;
  std::vector<std::string> layers;
  std::vector<int64_t> seq = {128, 512};
  std::vector<int> batch = {1, 100};
  int rounds = 3;
  int requests = 0;  // per layer and round; 0: 20 at batch 1, else 1
  int64_t max_batch_tokens = 0;  // 0: the worker's default
  int threads = 0;
  bool rotate = true;
};

// The engine called directly: the worker's cut (whole sequences up to the token budget and
// the sequence cap), one Step after another, rows copied out as the worker scatters them.
class DirectEngine {
 public:
  DirectEngine(engine::Engine& engine, int64_t budget, int64_t max_sequences)
      : engine_(engine), budget_(budget), max_sequences_(max_sequences) {}

  Status Run(const std::vector<std::vector<int32_t>>& sequences, std::vector<float>* out) {
    out->clear();
    size_t next = 0;
    while (next < sequences.size()) {
      ids_.clear();
      offsets_.assign(1, 0);
      while (next < sequences.size()) {
        const int64_t length = static_cast<int64_t>(sequences[next].size());
        const int64_t count = static_cast<int64_t>(offsets_.size()) - 1;
        if (count > 0 && (static_cast<int64_t>(ids_.size()) + length > budget_ || count >= max_sequences_)) break;
        ids_.insert(ids_.end(), sequences[next].begin(), sequences[next].end());
        offsets_.push_back(static_cast<int32_t>(ids_.size()));
        ++next;
      }
      engine::Batch batch{ids_, offsets_, {}};
      auto result = engine_.Step(batch, {});
      if (!result.ok()) return result.status();
      STAMEN_RETURN_IF_ERROR(result->Wait());
      const auto& values = result->values();
      const float* data = values.data<float>();
      out->insert(out->end(), data, data + values.NumElements());
    }
    return Status();
  }

 private:
  engine::Engine& engine_;
  int64_t budget_, max_sequences_;
  std::vector<int32_t> ids_, offsets_;
};

int Fail(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "stamen bench %s: %s\n", command.c_str(), message.c_str());
  return 2;
}

int RunStack(const std::string& command, const StackOptions& options) {
  spdlog::set_level(spdlog::level::warn);
  for (const std::string& layer : options.layers) {
    if (layer != "engine" && layer != "grpc" && layer != "http-ids" && layer != "http-text") {
      return Fail(command, "unknown layer '" + layer + "' (engine, grpc, http-ids, http-text)");
    }
  }
  const bool needs_gateway = std::any_of(options.layers.begin(), options.layers.end(),
                                         [](const std::string& layer) { return layer.rfind("http", 0) == 0; });
  server::GrpcWorkerOptions worker_options;
  worker_options.listen = "127.0.0.1:0";
  worker_options.worker.model_dir = options.model;
  worker_options.worker.scheduler.max_batch_tokens = options.max_batch_tokens;
  worker_options.worker.engine.num_threads = options.threads;
  auto worker = server::GrpcWorker::Start(worker_options);
  if (!worker.ok()) return Fail(command, worker.status().message());
  const v1::InfoResponse info = (*worker)->worker().info();
  const std::string worker_address = "127.0.0.1:" + std::to_string((*worker)->port());

  metrics::Registry gateway_registry;
  std::unique_ptr<gateway::ModelRouter> gateway;
  if (needs_gateway) {
    gateway::GatewayOptions gateway_options;
    gateway_options.model_dir = options.model;
    gateway_options.port = 0;
    gateway_options.worker_addresses = {worker_address};
    gateway_options.dispatcher.chunk_tokens = static_cast<int64_t>(info.max_batch_tokens());
    // A 100 × 512-token request can take minutes on a small loaded CPU: time it, don't drop it.
    gateway_options.request_timeout = std::chrono::minutes(10);
    gateway_options.dispatcher.call_timeout = std::chrono::minutes(10);
    auto started = gateway::ModelRouter::Start({gateway_options}, gateway_registry);
    if (!started.ok()) return Fail(command, started.status().message());
    gateway = std::move(started.value());
  }

  engine::EngineOptions engine_options;
  engine_options.num_threads = options.threads;
  auto direct_engine = engine::Engine::Load(options.model, engine_options);
  if (!direct_engine.ok()) return Fail(command, direct_engine.status().message());
  DirectEngine direct(**direct_engine, static_cast<int64_t>(info.max_batch_tokens()),
                      static_cast<int64_t>(info.max_batch_requests()));

  const std::string corpus = options.corpus.empty() ? DefaultCorpusPath() : options.corpus;
  auto maker = InputMaker::Load(options.model, corpus);
  if (!maker.ok()) return Fail(command, maker.status().message());
  auto reference = Reference::Load(options.model);
  if (!reference.ok()) return Fail(command, reference.status().message());

  std::map<std::string, std::unique_ptr<Target>> targets;
  std::map<std::string, std::unique_ptr<Client>> clients;
  for (const std::string& layer : options.layers) {
    if (layer == "engine") continue;
    const std::string url =
        layer == "grpc" ? "grpc://" + worker_address : "http://127.0.0.1:" + std::to_string(gateway->port());
    auto target = Target::Open(url);
    if (!target.ok()) return Fail(command, target.status().message());
    auto client = (*target)->Connect();
    if (!client.ok()) return Fail(command, client.status().message());
    targets[layer] = std::move(target.value());
    clients[layer] = std::move(client.value());
  }

  std::printf("stamen bench %s: model %s (%s, %u dimensions, max %u tokens), worker batches up to %llu tokens; "
              "%s, %d cores, load %.2f\n",
              command.c_str(), info.model_id().c_str(), info.architecture().c_str(), info.dimensions(),
              info.max_input_length(), static_cast<unsigned long long>(info.max_batch_tokens()), CpuModel().c_str(),
              CpuCount(), LoadAverage());
  std::printf("%-10s %5s %5s %6s %9s %9s %9s %10s %9s %9s\n", "layer", "seq", "batch", "reqs", "p50 ms", "p99 ms",
              "mean ms", "emb/s", "p50 x", "mean x");
  std::fflush(stdout);

  std::vector<std::string> results;
  for (const int64_t seq : options.seq) {
    if (info.max_input_length() > 0 && seq > info.max_input_length()) {
      std::printf("seq %lld skipped: longer than the model's max_input_length %u\n", static_cast<long long>(seq),
                  info.max_input_length());
      continue;
    }
    for (const int batch : options.batch) {
      // Inputs: 8 texts of exactly `seq` tokens, rows cycling through them.
      std::vector<std::string> texts;
      std::vector<std::vector<int32_t>> variant_ids;
      std::vector<std::vector<float>> expected;
      for (int v = 0; v < 8; ++v) {
        auto text = (*maker)->Text(seq, v);
        if (!text.ok()) return Fail(command, text.status().message());
        texts.push_back(*text);
        variant_ids.emplace_back();
        (*maker)->tokenizer().Encode(*text, 0, &variant_ids.back());
        auto vector = (*reference)->Embed(variant_ids.back());
        if (!vector.ok()) return Fail(command, vector.status().message());
        expected.push_back(std::move(vector.value()));
      }
      std::vector<std::vector<int32_t>> rows_ids;
      std::vector<std::string> rows_texts;
      for (int row = 0; row < batch; ++row) {
        rows_ids.push_back(variant_ids[static_cast<size_t>(row % 8)]);
        rows_texts.push_back(texts[static_cast<size_t>(row % 8)]);
      }
      std::map<std::string, PreparedRequest> prepared;
      for (const auto& [layer, target] : targets) {
        RequestSpec spec;
        spec.kind = layer == "http-text" ? Kind::kEmbedTexts : Kind::kEmbedIds;
        spec.ids = rows_ids;
        spec.texts = rows_texts;
        prepared[layer] = target->Prepare(spec);
      }
      std::vector<float> direct_output;
      auto send = [&](const std::string& layer, std::vector<std::vector<float>>* rows) -> Status {
        if (layer == "engine") {
          STAMEN_RETURN_IF_ERROR(direct.Run(rows_ids, &direct_output));
          if (rows != nullptr) {
            const size_t columns = direct_output.size() / rows_ids.size();
            rows->clear();
            for (size_t r = 0; r < rows_ids.size(); ++r) {
              rows->emplace_back(direct_output.begin() + static_cast<std::ptrdiff_t>(r * columns),
                                 direct_output.begin() + static_cast<std::ptrdiff_t>((r + 1) * columns));
            }
          }
          return Status();
        }
        std::string answer;
        STAMEN_RETURN_IF_ERROR(clients[layer]->Send(prepared[layer], &answer));
        if (rows != nullptr) {
          auto decoded = targets[layer]->Decode(prepared[layer], answer);
          if (!decoded.ok()) return decoded.status();
          *rows = std::move(decoded.value());
        }
        return Status();
      };

      // Warm-up and check of every layer.
      std::map<std::string, double> divergence;
      for (const std::string& layer : options.layers) {
        std::vector<std::vector<float>> rows;
        const Status status = send(layer, &rows);
        if (!status.ok()) return Fail(command, layer + ": " + status.message());
        double worst = 0;
        for (size_t r = 0; r < rows.size(); ++r) worst = std::max(worst, CosineDivergence(rows[r], expected[r % 8]));
        if (rows.size() != rows_ids.size() || worst > 0.001) {
          return Fail(command, layer + " answers diverge from the CPU fp32 reference by " + std::to_string(worst * 100) +
                                   "% (gate 0.1%): refusing to time it");
        }
        divergence[layer] = worst;
      }

      const double load_before = LoadAverage();
      const int per_round = options.requests > 0 ? options.requests : (batch == 1 ? 20 : 1);
      std::map<std::string, std::vector<double>> latencies;
      for (int round = 0; round < options.rounds; ++round) {
        // Each round starts at another layer, so that no layer always runs first or last.
        std::vector<std::string> order = options.layers;
        if (options.rotate) std::rotate(order.begin(), order.begin() + round % order.size(), order.end());
        for (const std::string& layer : order) {
          for (int i = 0; i < per_round; ++i) {
            const auto start = Clock::now();
            const Status status = send(layer, nullptr);
            if (!status.ok()) return Fail(command, layer + ": " + status.message());
            latencies[layer].push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
          }
        }
        if (::isatty(2) == 1) std::fprintf(stderr, "\rseq %lld batch %d: round %d/%d ", static_cast<long long>(seq), batch, round + 1, options.rounds);
      }
      if (::isatty(2) == 1) std::fprintf(stderr, "\r%40s\r", "");
      const double load_after = LoadAverage();
      const std::string& base = options.layers.front();
      const Percentiles base_p = Summarize(latencies[base]);
      for (const std::string& layer : options.layers) {
        const Percentiles p = Summarize(latencies[layer]);
        const double embeddings_per_s = 1000.0 * batch / p.mean;
        std::printf("%-10s %5lld %5d %6lld %9.2f %9.2f %9.2f %10.1f %9.3f %9.3f\n", layer.c_str(),
                    static_cast<long long>(seq), batch, static_cast<long long>(p.count), p.p50, p.p99, p.mean,
                    embeddings_per_s, p.p50 / base_p.p50, p.mean / base_p.mean);
        Json result;
        result.Add("layer", layer).Add("seq", seq).Add("batch", batch).Add("requests", p.count);
        result.Add("p50_ms", p.p50).Add("p90_ms", p.p90).Add("p99_ms", p.p99).Add("max_ms", p.max);
        result.Add("mean_ms", p.mean).Add("embeddings_per_s", embeddings_per_s).Add("base_layer", base);
        result.Add("p50_ratio", p.p50 / base_p.p50).Add("mean_ratio", p.mean / base_p.mean);
        result.Add("p50_overhead_ms", p.p50 - base_p.p50).Add("max_divergence", divergence[layer]);
        result.Add("load_before", load_before).Add("load_after", load_after);
        results.push_back(result.str());
      }
      std::fflush(stdout);
    }
  }
  if (!options.json.empty()) {
    Json run;
    run.Add("tool", "stamen bench " + command).Add("model_id", info.model_id());
    run.Add("max_batch_tokens", static_cast<int64_t>(info.max_batch_tokens())).Add("date", UtcNow());
    run.Add("cpu", CpuModel()).Add("cores", CpuCount()).AddRaw("results", JsonArray(results));
    std::ofstream file(options.json);
    file << run.str() << "\n";
  }
  clients.clear();
  if (gateway) gateway->Shutdown(std::chrono::milliseconds(1000));
  (*worker)->Shutdown();
  return 0;
}

// --- the knee of the batch token budget ---

struct KneeOptions {
  std::string model;
  std::string corpus;
  std::string json;
  std::vector<int64_t> seq = {128};
  std::vector<int64_t> budgets = {256, 512, 1024, 2048, 4096, 8192};
  int repeats = 3;
  int threads = 0;
};

int RunKnee(const KneeOptions& options) {
  engine::EngineOptions engine_options;
  engine_options.num_threads = options.threads;
  auto engine = engine::Engine::Load(options.model, engine_options);
  if (!engine.ok()) return Fail("knee", engine.status().message());
  const std::string corpus = options.corpus.empty() ? DefaultCorpusPath() : options.corpus;
  auto maker = InputMaker::Load(options.model, corpus);
  if (!maker.ok()) return Fail("knee", maker.status().message());
  std::printf("stamen bench knee: %s; %s, %d cores, load %.2f\n", options.model.c_str(), CpuModel().c_str(),
              CpuCount(), LoadAverage());
  std::vector<std::string> results;
  for (const int64_t seq : options.seq) {
    std::vector<std::vector<int32_t>> variants;
    for (int v = 0; v < 8; ++v) {
      auto ids = (*maker)->Ids(seq, v);
      if (!ids.ok()) return Fail("knee", ids.status().message());
      variants.push_back(std::move(ids.value()));
    }
    struct Budget {
      int64_t budget, sequences;
      std::vector<int32_t> ids, offsets;
      std::vector<double> tokens_per_s;
    };
    std::vector<Budget> budgets;
    for (const int64_t budget : options.budgets) {
      Budget b{budget, std::max<int64_t>(1, budget / seq), {}, {0}, {}};
      for (int64_t s = 0; s < b.sequences; ++s) {
        const auto& ids = variants[static_cast<size_t>(s % 8)];
        b.ids.insert(b.ids.end(), ids.begin(), ids.end());
        b.offsets.push_back(static_cast<int32_t>(b.ids.size()));
      }
      budgets.push_back(std::move(b));
    }
    // Interleaved: each repeat times every budget once (a step, repeated up to ≥ 0.3 s).
    const double load_before = LoadAverage();
    for (int repeat = -1; repeat < options.repeats; ++repeat) {
      for (Budget& b : budgets) {
        engine::Batch batch{b.ids, b.offsets, {}};
        int steps = 0;
        const auto start = Clock::now();
        double elapsed = 0;
        do {
          auto result = (*engine)->Step(batch, {});
          if (!result.ok()) return Fail("knee", result.status().message());
          if (!result->Wait().ok()) return Fail("knee", "step failed");
          ++steps;
          elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        } while (elapsed < 0.3);
        if (repeat >= 0) b.tokens_per_s.push_back(static_cast<double>(b.ids.size()) * steps / elapsed);
      }
    }
    const double load_after = LoadAverage();
    double best = 0;
    for (Budget& b : budgets) {
      std::sort(b.tokens_per_s.begin(), b.tokens_per_s.end());
      best = std::max(best, b.tokens_per_s[b.tokens_per_s.size() / 2]);
    }
    std::printf("%5s %8s %10s %12s %12s %8s\n", "seq", "budget", "sequences", "tokens/s", "emb/s", "of best");
    for (const Budget& b : budgets) {
      const double median = b.tokens_per_s[b.tokens_per_s.size() / 2];
      std::printf("%5lld %8lld %10lld %12.0f %12.1f %7.1f%%\n", static_cast<long long>(seq),
                  static_cast<long long>(b.budget), static_cast<long long>(b.sequences), median,
                  median / static_cast<double>(seq), 100 * median / best);
      Json result;
      result.Add("seq", seq).Add("budget", b.budget).Add("sequences", b.sequences).Add("tokens_per_s", median);
      result.Add("tokens_per_s_min", b.tokens_per_s.front()).Add("tokens_per_s_max", b.tokens_per_s.back());
      result.Add("fraction_of_best", median / best).Add("load_before", load_before).Add("load_after", load_after);
      results.push_back(result.str());
    }
    std::fflush(stdout);
  }
  if (!options.json.empty()) {
    Json run;
    run.Add("tool", "stamen bench knee").Add("model", options.model).Add("date", UtcNow());
    run.Add("cpu", CpuModel()).Add("cores", CpuCount()).AddRaw("results", JsonArray(results));
    std::ofstream file(options.json);
    file << run.str() << "\n";
  }
  return 0;
}

void AddStackCommand(CLI::App& bench, const std::string& name, const std::string& description,
                     std::vector<std::string> layers, std::vector<int64_t> seq) {
  auto options = std::make_shared<StackOptions>();
  options->layers = std::move(layers);
  options->seq = std::move(seq);
  CLI::App* command = bench.add_subcommand(name, description);
  command->add_option("--model", options->model, "Model folder")->required();
  command->add_option("--layers", options->layers, "engine, grpc, http-ids, http-text (the first is the base)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--seq", options->seq, "Sequence lengths")->delimiter(',')->capture_default_str();
  command->add_option("--batch", options->batch, "Inputs per request")->delimiter(',')->capture_default_str();
  command->add_option("--rounds", options->rounds, "Rounds alternating the layers")->capture_default_str();
  command->add_option("--requests", options->requests, "Requests per layer and round (0: 20 at batch 1, else 1)")
      ->capture_default_str();
  command->add_option("--max-batch-tokens", options->max_batch_tokens, "The worker's token budget (0: its default)")
      ->capture_default_str();
  command->add_option("--threads", options->threads, "Engine threads (0: all cores)")->capture_default_str();
  command->add_flag("!--fixed-order", options->rotate,
                    "Run the layers in the same order every round (default: each round starts at the next layer)");
  command->add_option("--corpus", options->corpus, "Text the inputs are cut from");
  command->add_option("--json", options->json, "Write the results here");
  command->callback([options, name] {
    const int code = RunStack(name, *options);
    if (code != 0) std::exit(code);
  });
}

}  // namespace

void AddStackBenchmarks(CLI::App& bench) {
  AddStackCommand(bench, "worker",
                  "Worker overhead: the engine called directly vs an in-process gRPC worker, same run (issue 4)",
                  {"engine", "grpc"}, {128, 512});
  AddStackCommand(bench, "gateway",
                  "Gateway overhead: gRPC worker direct vs HTTP gateway (ids, text), same run (issue 5)",
                  {"grpc", "http-ids", "http-text"}, {512});

  auto knee = std::make_shared<KneeOptions>();
  CLI::App* command = bench.add_subcommand("knee", "Engine throughput against the batch token budget (--max-batch-tokens)");
  command->add_option("--model", knee->model, "Model folder")->required();
  command->add_option("--seq", knee->seq, "Sequence lengths")->delimiter(',')->capture_default_str();
  command->add_option("--budgets", knee->budgets, "Token budgets")->delimiter(',')->capture_default_str();
  command->add_option("--repeats", knee->repeats, "Interleaved repeats (median reported)")->capture_default_str();
  command->add_option("--threads", knee->threads, "Engine threads (0: all cores)")->capture_default_str();
  command->add_option("--corpus", knee->corpus, "Text the inputs are cut from");
  command->add_option("--json", knee->json, "Write the results here");
  command->callback([knee] {
    const int code = RunKnee(*knee);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::bench
