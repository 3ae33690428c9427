// `stamen bench fairness`: do short queries wait behind a bulk job? Against a running server:
//   1. the queries' latency on the idle server (p50);
//   2. the bulk request(s) alone, timed;
//   3. the bulk request(s) again, with one short query every --query-interval-ms while they
//      run, each timed;
// and the verdict against the targets of docs/ARCHITECTURE.md ("Fair scheduling"): the
// queries' p99 within 2 × one batch's compute time + 3 × their idle p50, and the bulk work
// within 1.10 × its time alone. One batch's compute time is estimated from the bulk run alone
// (its time × --max-batch-tokens × --workers ÷ its tokens), the batches of a busy server being
// full and each of the workers computing one at a time.
#include "bench/serve_fairness.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "bench/serve_client.h"
#include "bench/serve_inputs.h"
#include "bench/serve_load.h"

namespace stamen::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct FairnessOptions {
  std::string target;
  std::string model;
  std::string corpus;
  std::string json;
  int bulk_inputs = 2000;
  int bulk_tokens = 60;
  int bulk_requests = 1;  // sent at once
  int query_tokens = 12;
  int query_interval_ms = 100;
  int idle_queries = 30;
  std::string query_priority;  // empty: the server's rule
  std::string bulk_priority;
  int64_t max_batch_tokens = 2048;
  int workers = 1;  // workers computing batches side by side (a gateway's)
};

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Sends every bulk request at once, each on its own connection; returns when all are answered.
StatusOr<double> RunBulk(Target& target, const std::vector<PreparedRequest>& bulk) {
  std::vector<std::unique_ptr<Client>> clients;
  for (size_t i = 0; i < bulk.size(); ++i) {
    auto client = target.Connect();
    if (!client.ok()) return client.status();
    clients.push_back(std::move(client.value()));
  }
  std::vector<Status> statuses(bulk.size());
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bulk.size(); ++i) {
    threads.emplace_back([&, i] {
      std::string answer;
      statuses[i] = clients[i]->Send(bulk[i], &answer);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double milliseconds = MillisecondsSince(start);
  for (const Status& status : statuses) {
    if (!status.ok()) return Status::Error("a bulk request failed: " + status.message());
  }
  return milliseconds;
}

int RunFairness(const FairnessOptions& options) {
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "stamen bench fairness: %s\n", message.c_str());
    return 2;
  };
  auto target = Target::Open(options.target);
  if (!target.ok()) return fail(target.status().message());
  auto maker = InputMaker::Load(options.model, options.corpus.empty() ? DefaultCorpusPath() : options.corpus);
  if (!maker.ok()) return fail(maker.status().message());

  // Pre-tokenized inputs, so that the gateway's tokenization is not what is measured.
  RequestSpec query_spec;
  auto query_ids = (*maker)->Ids(options.query_tokens, 0);
  if (!query_ids.ok()) return fail(query_ids.status().message());
  query_spec.ids.push_back(*query_ids);
  query_spec.priority = options.query_priority;
  const PreparedRequest query = (*target)->Prepare(query_spec);
  std::vector<PreparedRequest> bulk;
  int64_t bulk_tokens = 0;
  for (int request = 0; request < options.bulk_requests; ++request) {
    RequestSpec spec;
    spec.priority = options.bulk_priority;
    for (int i = 0; i < options.bulk_inputs; ++i) {
      auto ids = (*maker)->Ids(options.bulk_tokens, request * options.bulk_inputs + i + 1);
      if (!ids.ok()) return fail(ids.status().message());
      bulk_tokens += static_cast<int64_t>(ids->size());
      spec.ids.push_back(std::move(*ids));
    }
    bulk.push_back((*target)->Prepare(spec));
  }
  auto query_client = (*target)->Connect();
  if (!query_client.ok()) return fail(query_client.status().message());
  auto send_query = [&](double* milliseconds) {
    std::string answer;
    const Clock::time_point start = Clock::now();
    Status status = (*query_client)->Send(query, &answer);
    *milliseconds = MillisecondsSince(start);
    return status;
  };

  // 1. Idle.
  std::vector<double> idle;
  for (int i = 0; i < options.idle_queries + 3; ++i) {
    double milliseconds = 0;
    if (Status status = send_query(&milliseconds); !status.ok()) return fail("a query failed: " + status.message());
    if (i >= 3) idle.push_back(milliseconds);  // the first ones warm the connection and the engine
  }
  const Percentiles idle_queries = Summarize(idle);
  // 2. Bulk alone.
  auto alone = RunBulk(**target, bulk);
  if (!alone.ok()) return fail(alone.status().message());
  // 3. Bulk with queries arriving every interval (each sent at its time, or at once if the
  //    previous one took longer).
  std::vector<double> during;
  Status query_status;
  std::atomic<bool> bulk_done{false};
  std::thread queries([&] {
    Clock::time_point next = Clock::now() + std::chrono::milliseconds(options.query_interval_ms);
    while (!bulk_done.load()) {
      std::this_thread::sleep_until(next);
      if (bulk_done.load()) break;
      next += std::chrono::milliseconds(options.query_interval_ms);
      double milliseconds = 0;
      if (Status status = send_query(&milliseconds); !status.ok()) {
        query_status = status;
        return;
      }
      during.push_back(milliseconds);
    }
  });
  auto mixed = RunBulk(**target, bulk);
  bulk_done.store(true);
  queries.join();
  if (!mixed.ok()) return fail(mixed.status().message());
  if (!query_status.ok()) return fail("a query during the bulk work failed: " + query_status.message());
  if (during.empty()) return fail("the bulk work ended before the first query was sent");

  const Percentiles busy = Summarize(during);
  const double batch_ms = *alone * static_cast<double>(options.max_batch_tokens) * options.workers /
                          static_cast<double>(bulk_tokens);
  const double bound_ms = 2 * batch_ms + 3 * idle_queries.p50;
  const double slowdown = *mixed / *alone;
  const bool queries_ok = busy.p99 <= bound_ms;
  const bool bulk_ok = slowdown <= 1.10;
  std::printf("fairness: %s, %d bulk request(s) of %d × %d tokens (priority %s), queries of %d tokens every %d ms "
              "(priority %s)\n",
              options.target.c_str(), options.bulk_requests, options.bulk_inputs, options.bulk_tokens,
              options.bulk_priority.empty() ? "server's rule" : options.bulk_priority.c_str(), options.query_tokens,
              options.query_interval_ms, options.query_priority.empty() ? "server's rule" : options.query_priority.c_str());
  std::printf("  idle query: p50 %.1f ms, p99 %.1f ms (%zu)\n", idle_queries.p50, idle_queries.p99, idle.size());
  std::printf("  bulk alone: %.0f ms; one batch of %ld tokens ≈ %.1f ms\n", *alone,
              static_cast<long>(options.max_batch_tokens), batch_ms);
  std::printf("  queries during bulk: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu); bound 2 × %.1f + 3 × %.1f = %.1f ms: %s\n",
              busy.p50, busy.p99, busy.max, during.size(), batch_ms, idle_queries.p50, bound_ms,
              queries_ok ? "met" : "MISSED");
  std::printf("  bulk with queries: %.0f ms = %.3f × alone (target ≤ 1.10): %s\n", *mixed, slowdown,
              bulk_ok ? "met" : "MISSED");
  if (!options.json.empty()) {
    Json json;
    json.Add("target", options.target)
        .Add("machine", CpuModel())
        .Add("date", UtcNow())
        .Add("bulk_requests", options.bulk_requests)
        .Add("bulk_inputs", options.bulk_inputs)
        .Add("bulk_tokens", options.bulk_tokens)
        .Add("query_tokens", options.query_tokens)
        .Add("query_interval_ms", options.query_interval_ms)
        .Add("query_priority", options.query_priority)
        .Add("idle_p50_ms", idle_queries.p50)
        .Add("bulk_alone_ms", *alone)
        .Add("batch_ms", batch_ms)
        .Add("busy_p50_ms", busy.p50)
        .Add("busy_p99_ms", busy.p99)
        .Add("busy_max_ms", busy.max)
        .Add("queries", static_cast<int64_t>(during.size()))
        .Add("bound_ms", bound_ms)
        .Add("bulk_with_queries_ms", *mixed)
        .Add("bulk_slowdown", slowdown)
        .Add("queries_met", queries_ok)
        .Add("bulk_met", bulk_ok);
    std::ofstream(options.json) << json.str() << "\n";
  }
  return 0;
}

}  // namespace

void AddFairnessBenchmark(CLI::App& bench) {
  auto options = std::make_shared<FairnessOptions>();
  CLI::App* command = bench.add_subcommand(
      "fairness", "Short queries during a bulk request against a running server: their latency, and the bulk's");
  command->add_option("--target", options->target, "http://HOST:PORT (stamen serve / gateway) or grpc://HOST:PORT")
      ->required();
  command->add_option("--model", options->model, "The served model's folder (its tokenizer makes the inputs)")
      ->required();
  command->add_option("--bulk-inputs", options->bulk_inputs, "Inputs per bulk request")->capture_default_str();
  command->add_option("--bulk-tokens", options->bulk_tokens, "Tokens per bulk input")->capture_default_str();
  command->add_option("--bulk-requests", options->bulk_requests, "Bulk requests sent at once")->capture_default_str();
  command->add_option("--query-tokens", options->query_tokens, "Tokens per query")->capture_default_str();
  command->add_option("--query-interval-ms", options->query_interval_ms, "One query every this many ms")
      ->capture_default_str();
  command->add_option("--idle-queries", options->idle_queries, "Queries timed on the idle server")->capture_default_str();
  command->add_option("--query-priority", options->query_priority, "high, normal or low (default: the server's rule)");
  command->add_option("--bulk-priority", options->bulk_priority, "high, normal or low (default: the server's rule)");
  command->add_option("--max-batch-tokens", options->max_batch_tokens,
                      "The server's --max-batch-tokens (for the estimate of one batch's time)")
      ->capture_default_str();
  command->add_option("--workers", options->workers, "Workers behind the target, computing side by side")
      ->capture_default_str();
  command->add_option("--corpus", options->corpus, "Text the inputs are cut from");
  command->add_option("--json", options->json, "Write the figures here");
  command->callback([options] {
    const int code = RunFairness(*options);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::bench
