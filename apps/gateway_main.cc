// `stamen-gateway`: `stamen gateway` alone, for gateway containers and pods. It links no engine
// (no oneDNN, OpenMP or CUDA), so it is smaller and starts leaner than `stamen`.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/cpu_check.h"
#include "gateway_command.h"

int main(int argc, char** argv) {
  if (const auto supported = stamen::CheckCpuRunsThisBuild(); !supported.ok()) {
    std::fprintf(stderr, "stamen-gateway: %s\n", supported.message().c_str());
    return 1;
  }
  stamen::apps::LogToStandardError();
  CLI::App app{"stamen-gateway: the HTTP API (OpenAI, TEI, Cohere) in front of `stamen worker` processes"};
  app.set_version_flag("--version", STAMEN_VERSION);
  stamen::apps::SetUpGatewayCommand(&app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
