// `stamen bench serve`, `stamen bench worker`, `stamen bench gateway`, `stamen bench knee` and
// `stamen bench report`: the serving benchmarks (docs/BENCHMARKS.md, "Worker", "Gateway",
// "Serving suites").
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::bench {

// The four suites of issue 7 against a running server (serve_suites.cc).
void AddServeBenchmark(CLI::App& bench);
// Engine direct vs in-process gRPC worker vs gateway, same run (serve_stack.cc).
void AddStackBenchmarks(CLI::App& bench);
// JSON runs → Markdown tables (and gnuplot plots when gnuplot is installed) (serve_report.cc).
void AddReportCommand(CLI::App& bench);

}  // namespace stamen::bench
