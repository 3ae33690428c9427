// `stamen bench fairness`: short queries during a bulk request (serve_fairness.cc).
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::bench {

void AddFairnessBenchmark(CLI::App& bench);

}  // namespace stamen::bench
