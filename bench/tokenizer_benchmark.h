// `stamen bench tokenizer`: single-thread encode latency of one text, against SentencePiece's
// C++ library in the same process.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::bench {

void AddTokenizerBenchmark(CLI::App& bench);
// `stamen bench tokenizer-batch`: the batch encoder's multi-core speed-up.
void AddTokenizerBatchBenchmark(CLI::App& bench);

}  // namespace stamen::bench
