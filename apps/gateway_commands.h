// `stamen serve` (the main program: gateway and one worker in one process) and
// `stamen gateway` (the HTTP front of gRPC workers elsewhere).
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::apps {

void AddServeCommand(CLI::App& app);
void AddGatewayCommand(CLI::App& app);

}  // namespace stamen::apps
