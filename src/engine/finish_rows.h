// Where a step's rows are finished for whoever asked for them: the leading `columns` of each
// row kept (Matryoshka truncation of embeddings; all of them for scores and token states) and,
// when asked, each kept row L2-normalised, as sentence-transformers' Normalize module and TEI
// do. Normalising after the cut is what gives a truncated vector unit length. The one place
// both are done: the worker finishes each request's rows here (Scheduler::Scatter, so one
// batch serves requests asking for different widths and normalisation) and `stamen embed` its
// own; the engine's steps give whole, unnormalised rows.
#pragma once

#include <cstdint>

#include "engine/engine.h"
#include "engine/status.h"

namespace stamen::engine {

// Writes rows [first_row, first_row + rows) of a waited-for `result` to `destination`
// ([rows, columns], row-major), each cut to its leading `columns` values and L2-normalised
// when `normalize`. An error when a row is narrower than `columns`.
Status FinishRows(const LazyResult& result, int64_t first_row, int64_t rows, int64_t columns, bool normalize,
                  float* destination);

}  // namespace stamen::engine
