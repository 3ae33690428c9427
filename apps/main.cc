// The `stamen` binary: one program, one subcommand per job.
#include <CLI/CLI.hpp>

#include "bench/bench_command.h"
#include "embed_command.h"
#include "make_model_command.h"
#include "pull_command.h"
#include "rerank_command.h"
#include "tokenize_command.h"

int main(int argc, char** argv) {
  CLI::App app{"stamen: serving stack for text-embedding and reranking models"};
  app.require_subcommand(1);
  stamen::apps::AddTokenizeCommand(app);
  stamen::apps::AddEmbedCommand(app);
  stamen::apps::AddRerankCommand(app);
  stamen::apps::AddMakeModelCommand(app);
  stamen::apps::AddPullCommand(app);
  stamen::bench::AddBenchCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
