// `stamen bench serve`: the four serving suites of issue 7 (mission.md, "Benchmarks") against
// a running server, over HTTP or gRPC, after a warm-up that checks the served answers against
// the engine run in this process (CPU, fp32) and refuses to time a server that is wrong.
#include "bench/serve_suites.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include "bench/serve_client.h"
#include "bench/serve_inputs.h"
#include "bench/serve_load.h"
#include "model_folder/model_tokenizer.h"

namespace stamen::bench {
namespace {

using Kind = RequestSpec::Kind;

constexpr double kDivergenceGate = 0.001;  // cosine divergence ≤ 0.1%, the published gate

struct ServeOptions {
  std::string target;
  std::string suite;
  std::string model;
  std::string corpus;
  std::string json;
  std::string label;           // names this target in reports (default: the target URL)
  std::string inputs = "auto";  // latency/throughput: ids (pre-tokenized), text, or auto
  int64_t requests = 0;  // per step; 0: the suite's default
  double duration_s = 0;
  std::vector<int64_t> seq;      // overrides the suite's sequence lengths
  std::vector<int> clients;      // overrides the suite's client counts
  std::vector<int> batch;        // overrides the suite's inputs (or pairs) per request
  int variants = 8;
};

struct Step {
  Kind kind = Kind::kEmbedIds;
  int64_t seq = 0;
  int rows = 1;
  int clients = 1;
  int64_t requests = 0;
  std::string skipped;  // why it is not run, or empty
};

std::string KindName(Kind kind) {
  switch (kind) {
    case Kind::kEmbedIds: return "embed-ids";
    case Kind::kEmbedTexts: return "embed-text";
    case Kind::kScoreIds: return "score-ids";
    case Kind::kScoreTexts: return "score-text";
  }
  return "";
}

template <typename T>
std::vector<T> Or(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? fallback : given;
}

StatusOr<std::vector<Step>> PlanSuite(const ServeOptions& options, const Target& target, const TargetInfo& info) {
  std::vector<Step> steps;
  const bool reranker = info.kind == "reranker";
  const std::string& suite = options.suite;
  // The pre-tokenized suites send ids; text puts the server's tokenization in the timing, the
  // only way to time a server that takes no ids (the OpenAI-API peers), and so also the way
  // to compare stamen with them.
  Kind embed = Kind::kEmbedIds;
  if (options.inputs == "text" || (options.inputs == "auto" && !target.Supports(Kind::kEmbedIds))) {
    embed = Kind::kEmbedTexts;
  } else if (options.inputs != "ids" && options.inputs != "auto") {
    return Status::Error("unknown --inputs '" + options.inputs + "' (ids, text, auto)");
  }
  auto add = [&](Kind kind, int64_t seq, int rows, int clients, int64_t default_requests) {
    Step step{kind, seq, rows, clients, options.requests > 0 ? options.requests : default_requests, ""};
    if (info.max_input_length > 0 && seq > info.max_input_length) {
      step.skipped = "longer than the model's max_input_length " + std::to_string(info.max_input_length);
    } else if (!target.Supports(kind)) {
      step.skipped = "the target's API does not take " + KindName(kind);
    } else if ((kind == Kind::kScoreIds || kind == Kind::kScoreTexts) != reranker) {
      step.skipped = reranker ? "the model is a reranker (use --suite scoring)" : "the model is not a reranker";
    }
    steps.push_back(step);
  };
  if (suite == "latency") {
    for (int64_t seq : Or(options.seq, {128, 512, 4096})) {
      for (int rows : Or(options.batch, {1})) add(embed, seq, rows, 1, 50);
    }
  } else if (suite == "scoring") {
    // gRPC takes the pairs pre-tokenized; the HTTP API takes (query, documents) as text.
    const Kind kind = target.is_grpc() ? Kind::kScoreIds : Kind::kScoreTexts;
    for (int64_t seq : Or(options.seq, {512})) {
      for (int rows : Or(options.batch, {5, 25, 50})) add(kind, seq, rows, 1, 20);
    }
  } else if (suite == "throughput") {
    for (int64_t seq : Or(options.seq, {512, 1024, 4096})) {
      for (int rows : Or(options.batch, {100})) {
        for (int clients : Or(options.clients, {4})) add(embed, seq, rows, clients, 2 * clients);
      }
    }
  } else if (suite == "concurrency") {
    // Text, so that the gateway's tokenization is timed; a gRPC worker takes ids only.
    const Kind kind = target.is_grpc() ? Kind::kEmbedIds : Kind::kEmbedTexts;
    for (int64_t seq : Or(options.seq, {512})) {
      for (int clients : Or(options.clients, {1, 2, 4, 8, 16})) {
        for (int rows : Or(options.batch, {1})) add(kind, seq, rows, clients, std::max(16, 4 * clients));
      }
    }
  } else {
    return Status::Error("unknown --suite '" + suite + "' (latency, scoring, throughput, concurrency)");
  }
  return steps;
}

// The inputs of one step and their reference answers.
struct Inputs {
  std::vector<RequestSpec> requests;       // distinct requests, sent round-robin
  std::vector<std::vector<int>> variants;  // per request: the variant of each row
  std::vector<std::vector<float>> reference;  // per variant
};

StatusOr<Inputs> MakeInputs(const Step& step, int variant_count, InputMaker& maker, Reference& reference) {
  Inputs inputs;
  const int variants = std::max(1, variant_count);
  std::vector<std::string> texts(static_cast<size_t>(variants));
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(variants)), type_ids(static_cast<size_t>(variants));
  std::string query;
  for (int v = 0; v < variants; ++v) {
    const size_t i = static_cast<size_t>(v);
    if (step.kind == Kind::kScoreIds || step.kind == Kind::kScoreTexts) {
      auto pair = maker.MakePair(step.seq, v);
      if (!pair.ok()) return pair.status();
      query = pair->query;
      texts[i] = pair->document;
      ids[i] = pair->ids;
      type_ids[i] = pair->type_ids;
      auto scores = reference.Score(ids[i], type_ids[i]);
      if (!scores.ok()) return scores.status();
      inputs.reference.push_back(std::move(scores.value()));
    } else {
      auto text = maker.Text(step.seq, v);
      if (!text.ok()) return text.status();
      texts[i] = *text;
      maker.tokenizer().Encode(texts[i], 0, &ids[i]);
      auto vector = reference.Embed(ids[i]);
      if (!vector.ok()) return vector.status();
      inputs.reference.push_back(std::move(vector.value()));
    }
  }
  // Large requests: one distinct request is enough (its rows already cycle through the variants).
  const int distinct = step.rows >= 50 ? 1 : 4;
  for (int r = 0; r < distinct; ++r) {
    RequestSpec spec;
    spec.kind = step.kind;
    spec.query = query;
    std::vector<int> row_variants;
    for (int row = 0; row < step.rows; ++row) {
      const size_t v = static_cast<size_t>((r + row) % variants);
      row_variants.push_back(static_cast<int>(v));
      switch (step.kind) {
        case Kind::kEmbedIds: spec.ids.push_back(ids[v]); break;
        case Kind::kEmbedTexts: spec.texts.push_back(texts[v]); break;
        case Kind::kScoreIds:
          spec.ids.push_back(ids[v]);
          spec.type_ids.push_back(type_ids[v]);
          break;
        case Kind::kScoreTexts: spec.texts.push_back(texts[v]); break;
      }
    }
    inputs.requests.push_back(std::move(spec));
    inputs.variants.push_back(std::move(row_variants));
  }
  return inputs;
}

std::string StepName(const std::string& suite, const Step& step) {
  std::string name = suite + " seq " + std::to_string(step.seq);
  name += (step.kind == Kind::kScoreIds || step.kind == Kind::kScoreTexts ? " pairs " : " batch ") +
          std::to_string(step.rows);
  name += " clients " + std::to_string(step.clients);
  return name;
}

int RunServe(const ServeOptions& options) {
  auto target = Target::Open(options.target);
  if (!target.ok()) {
    std::fprintf(stderr, "stamen bench serve: %s\n", target.status().message().c_str());
    return 2;
  }
  auto info = (*target)->Info();
  if (!info.ok()) {
    std::fprintf(stderr, "stamen bench serve: %s does not answer: %s\n", options.target.c_str(),
                 info.status().message().c_str());
    return 2;
  }
  auto reference = Reference::Load(options.model);
  if (!reference.ok()) {
    std::fprintf(stderr, "stamen bench serve: %s\n", reference.status().message().c_str());
    return 2;
  }
  if (info->max_input_length == 0) {  // a peer: the model folder's own limit
    const engine::Engine& engine = (*reference)->engine();
    info->max_input_length = engine::MaxSequenceLength(engine.config(), engine.sentence_transformers());
  }
  auto steps = PlanSuite(options, **target, *info);
  if (!steps.ok()) {
    std::fprintf(stderr, "stamen bench serve: %s\n", steps.status().message().c_str());
    return 2;
  }
  const std::string corpus = options.corpus.empty() ? DefaultCorpusPath() : options.corpus;
  auto maker = InputMaker::Load(options.model, corpus);
  if (!maker.ok()) {
    std::fprintf(stderr, "stamen bench serve: %s\n", maker.status().message().c_str());
    return 2;
  }

  std::printf("stamen bench serve --suite %s --target %s: model %s (%s, max %lld tokens); %s, %d cores, load %.2f\n",
              options.suite.c_str(), options.target.c_str(), info->model_id.c_str(), info->kind.c_str(),
              static_cast<long long>(info->max_input_length), CpuModel().c_str(), CpuCount(), LoadAverage());
  std::fflush(stdout);
  std::vector<std::string> results;
  int failures = 0;
  for (const Step& step : *steps) {
    const std::string name = StepName(options.suite, step);
    Json result;
    result.Add("name", name).Add("kind", KindName(step.kind)).Add("seq", step.seq).Add("batch", step.rows);
    result.Add("clients", step.clients);
    if (!step.skipped.empty()) {
      std::printf("%-46s skipped: %s\n", name.c_str(), step.skipped.c_str());
      results.push_back(result.Add("skipped", step.skipped).str());
      continue;
    }
    auto inputs = MakeInputs(step, options.variants, **maker, **reference);
    if (!inputs.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), inputs.status().message().c_str());
      ++failures;
      continue;
    }
    std::vector<PreparedRequest> prepared;
    for (const RequestSpec& spec : inputs->requests) prepared.push_back((*target)->Prepare(spec));

    // Warm-up and check: every distinct request once, every row against the reference.
    const double load_before = LoadAverage();
    double divergence = 0;
    Status check;
    {
      auto client = (*target)->Connect();
      if (!client.ok()) check = client.status();
      for (size_t r = 0; check.ok() && r < prepared.size(); ++r) {
        std::string answer;
        check = (*client)->Send(prepared[r], &answer);
        if (!check.ok()) break;
        auto rows = (*target)->Decode(prepared[r], answer);
        if (!rows.ok()) {
          check = rows.status();
          break;
        }
        for (size_t row = 0; row < rows->size(); ++row) {
          const auto& expected = inputs->reference[static_cast<size_t>(inputs->variants[r][row])];
          const bool scores = step.kind == Kind::kScoreIds || step.kind == Kind::kScoreTexts;
          // TEI-style /rerank answers one score per pair: the first logit.
          std::vector<float> wanted = expected;
          if (scores && (*rows)[row].size() == 1 && wanted.size() > 1) wanted.resize(1);
          divergence = std::max(divergence, scores ? ScoreDivergence((*rows)[row], wanted)
                                                   : CosineDivergence((*rows)[row], wanted));
        }
      }
    }
    if (check.ok() && divergence > kDivergenceGate) {
      check = Status::Error("the served answers diverge from the CPU fp32 reference by " +
                            std::to_string(divergence * 100) + "% (gate 0.1%): refusing to time this server");
    }
    if (!check.ok()) {
      std::fprintf(stderr, "%s: warm-up check failed: %s\n", name.c_str(), check.message().c_str());
      results.push_back(result.Add("error", check.message()).str());
      ++failures;
      continue;
    }

    // One connection per client, opened before timing.
    std::vector<std::unique_ptr<Client>> clients;
    Status connected;
    for (int c = 0; c < step.clients && connected.ok(); ++c) {
      auto client = (*target)->Connect();
      if (client.ok()) {
        clients.push_back(std::move(client.value()));
      } else {
        connected = client.status();
      }
    }
    StatusOr<LoadResult> load = connected;
    if (connected.ok()) {
      LoadOptions load_options{name, step.clients, step.requests, options.duration_s};
      load = RunLoad(load_options, [&](int client, int64_t index) {
        std::string answer;
        return clients[static_cast<size_t>(client)]->Send(prepared[static_cast<size_t>(index) % prepared.size()],
                                                          &answer);
      });
    }
    if (!load.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), load.status().message().c_str());
      results.push_back(result.Add("error", load.status().message()).str());
      ++failures;
      continue;
    }
    const Percentiles p = Summarize(load->milliseconds);
    const double requests_per_s = static_cast<double>(p.count) / load->wall_s;
    const double embeddings_per_s = requests_per_s * step.rows;
    std::printf("%-46s p50 %8.2f  p90 %8.2f  p99 %8.2f  max %8.2f ms  %8.2f req/s  %9.1f %s/s  (%lld req, "
                "divergence %.1e, load %.2f)\n",
                name.c_str(), p.p50, p.p90, p.p99, p.max, requests_per_s, embeddings_per_s,
                step.kind == Kind::kScoreIds || step.kind == Kind::kScoreTexts ? "pairs" : "emb",
                static_cast<long long>(p.count), divergence, load_before);
    std::fflush(stdout);
    result.Add("requests", p.count).Add("p50_ms", p.p50).Add("p90_ms", p.p90).Add("p99_ms", p.p99);
    result.Add("max_ms", p.max).Add("mean_ms", p.mean).Add("wall_s", load->wall_s);
    result.Add("requests_per_s", requests_per_s).Add("embeddings_per_s", embeddings_per_s);
    result.Add("max_divergence", divergence).Add("load_before", load_before).Add("load_after", LoadAverage());
    results.push_back(result.str());
  }

  if (!options.json.empty()) {
    Json run;
    run.Add("tool", "stamen bench serve").Add("suite", options.suite).Add("target", options.target);
    run.Add("label", options.label.empty() ? options.target : options.label);
    run.Add("model_id", info->model_id).Add("model_kind", info->kind).Add("max_input_length", info->max_input_length);
    run.Add("dimensions", info->dimensions).Add("date", UtcNow()).Add("cpu", CpuModel()).Add("cores", CpuCount());
    run.AddRaw("results", JsonArray(results));
    std::ofstream file(options.json);
    file << run.str() << "\n";
    if (!file) {
      std::fprintf(stderr, "stamen bench serve: cannot write %s\n", options.json.c_str());
      return 2;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

void AddServeBenchmark(CLI::App& bench) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* command = bench.add_subcommand(
      "serve", "Serving suites (latency, scoring, throughput, concurrency) against a running stamen server");
  command->add_option("--target", options->target, "http://HOST:PORT (stamen serve / gateway), grpc://HOST:PORT (worker) or "
                      "openai+http://HOST:PORT/PATH[?model=NAME] (an OpenAI-compatible peer)")
      ->required();
  command->add_option("--suite", options->suite, "latency | scoring | throughput | concurrency")->required();
  command->add_option("--model", options->model,
                      "The served model's folder: its tokenizer makes the inputs, its engine the reference")
      ->required();
  command->add_option("--json", options->json, "Write the results here (input of `stamen bench report`)");
  command->add_option("--label", options->label, "Name of this target in reports (default: the target URL)");
  command->add_option("--inputs", options->inputs,
                      "latency/throughput suites: ids (pre-tokenized), text (tokenized by the server) or auto "
                      "(ids when the target takes them)")
      ->capture_default_str();
  command->add_option("--requests", options->requests, "Timed requests per step (default: the suite's)");
  command->add_option("--duration", options->duration_s, "Seconds per step instead of a request count");
  command->add_option("--seq", options->seq, "Sequence lengths instead of the suite's")->delimiter(',');
  command->add_option("--clients", options->clients, "Concurrent clients instead of the suite's")->delimiter(',');
  command->add_option("--batch", options->batch, "Inputs (pairs) per request instead of the suite's")->delimiter(',');
  command->add_option("--corpus", options->corpus, "Text the inputs are cut from (default: ../shared/corpus/botchan.txt)");
  command->callback([options] {
    const int code = RunServe(*options);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::bench
