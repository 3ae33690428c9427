// Embedding lookup: gather rows of a table by token (or position, or token type) id.
#pragma once

#include <cstdint>

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

// output[t] = table[ids[t]] · scale (or += when `accumulate`, to sum word, position and
// token-type embeddings in place). table F32 [rows, n], ids I32 [T], output F32 [T, n]. An id
// outside [0, rows) is an error naming the id and its index (bad input, not a crash). The
// scale is Gemma's sqrt(hidden_size), applied to the few rows a step reads rather than to the
// whole table at load: its 262,144 × 768 table would otherwise be copied (805 MB) at start-up.
Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate = false, float scale = 1.0f);

// positions[t] = offset + (t - start of t's sequence) for the ragged batch `cu_seqlens` I32
// [S + 1] (validated); tokens past cu_seqlens[S] (padding of a bucketed batch) get `offset`.
// positions I32 [T], T ≥ cu_seqlens[S]. Runs on the device, so a captured graph recomputes it.
Status SequencePositions(const Tensor& cu_seqlens, int32_t offset, Tensor& positions);

}  // namespace stamen::engine::ops
