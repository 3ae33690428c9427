// `stamen bench engine`: tokens/s and achieved GFLOP/s of Engine::Step at given sequence
// lengths and batch sizes, beside the rate of a bare GEMM of the model's largest shape
// measured in the same run.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::bench {

void AddEngineBenchmark(CLI::App& bench);
// `stamen bench attention`: the CPU attention op alone, milliseconds and GFLOP/s per length.
void AddAttentionBenchmark(CLI::App& bench);

}  // namespace stamen::bench
