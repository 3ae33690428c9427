// The `stamen` binary: one program, one subcommand per job.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "bench/bench_command.h"
#include "engine/cpu/cpu_path.h"
#include "embed_command.h"
#include "gateway_commands.h"
#include "make_model_command.h"
#include "openmp_spin.h"
#include "pull_command.h"
#include "rerank_command.h"
#include "tokenize_command.h"
#include "worker_command.h"

int main(int argc, char** argv) {
  if (const auto supported = stamen::engine::cpu::CheckCpuRunsThisBuild(); !supported.ok()) {
    std::fprintf(stderr, "stamen: %s\n", supported.message().c_str());
    return 1;
  }
  stamen::apps::ReexecWithShortOpenMpSpin(argc, argv);
  // Logs go to stderr: stdout carries the commands' output (ids, vectors, JSON).
  spdlog::set_default_logger(spdlog::stderr_color_mt("stamen"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  CLI::App app{"stamen: serving stack for text-embedding and reranking models"};
  app.require_subcommand(1);
  stamen::apps::AddTokenizeCommand(app);
  stamen::apps::AddEmbedCommand(app);
  stamen::apps::AddRerankCommand(app);
  stamen::apps::AddMakeModelCommand(app);
  stamen::apps::AddPullCommand(app);
  stamen::apps::AddServeCommand(app);
  stamen::apps::AddGatewayCommand(app);
  stamen::apps::AddWorkerCommand(app);
  stamen::bench::AddBenchCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
