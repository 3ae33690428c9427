// stamen_make_model: `stamen make-model` alone, so the GPU check builds the engine, the GPU
// tests and the benchmark without the server, gateway and gRPC code.
#include <CLI/CLI.hpp>

#include "apps/make_model_command.h"

int main(int argc, char** argv) {
  CLI::App app{"stamen_make_model: random-weight model folders shaped like real models"};
  app.require_subcommand(1);
  stamen::apps::AddMakeModelCommand(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
