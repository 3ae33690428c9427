// `stamen bench ...`: benchmark programs reachable from the main binary.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::bench {

void AddBenchCommand(CLI::App& app);

}  // namespace stamen::bench
