// The `stamen` binary: one program, one subcommand per job.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bench/bench_command.h"
#include "common/cpu_check.h"
#include "embed_command.h"
#include "gateway_command.h"
#include "serve_command.h"
#include "make_model_command.h"
#include "openmp_spin.h"
#include "pull_command.h"
#include "rerank_command.h"
#include "tokenize_command.h"
#include "worker_command.h"

int main(int argc, char** argv) {
  if (const auto supported = stamen::CheckCpuRunsThisBuild(); !supported.ok()) {
    std::fprintf(stderr, "stamen: %s\n", supported.message().c_str());
    return 1;
  }
  stamen::apps::ReexecWithShortOpenMpSpin(argc, argv);
  stamen::apps::LogToStandardError();
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
