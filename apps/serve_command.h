// `stamen serve`: the main program, the gateway and one worker per model in one process.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::apps {

void AddServeCommand(CLI::App& app);

}  // namespace stamen::apps
