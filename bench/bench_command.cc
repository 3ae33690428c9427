// Registers the `bench` subcommand group.
#include "bench/bench_command.h"

#include "bench/engine_benchmark.h"
#include "bench/serve_fairness.h"
#include "bench/serve_suites.h"
#include "bench/tokenizer_benchmark.h"

namespace stamen::bench {

void AddBenchCommand(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (see docs/BENCHMARKS.md)");
  bench->require_subcommand(1);
  AddTokenizerBenchmark(*bench);
  AddTokenizerBatchBenchmark(*bench);
  AddEngineBenchmark(*bench);
  AddAttentionBenchmark(*bench);
  AddServeBenchmark(*bench);
  AddStackBenchmarks(*bench);
  AddFairnessBenchmark(*bench);
  AddReportCommand(*bench);
}

}  // namespace stamen::bench
