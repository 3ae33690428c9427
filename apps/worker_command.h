// `stamen worker`: serves one model folder over gRPC (stamen.v1.Inference) to gateways and to
// clients that tokenize themselves.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::apps {

void AddWorkerCommand(CLI::App& app);

}  // namespace stamen::apps
