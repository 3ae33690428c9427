// Embedding lookup: gather rows of a table by token (or position, or token type) id.
#pragma once

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

// output[t] = table[ids[t]] (or += when `accumulate`, to sum word, position and token-type
// embeddings in place). table F32 [rows, n], ids I32 [T], output F32 [T, n]. An id outside
// [0, rows) is an error naming the id and its index (bad input, not a crash).
Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate = false);

}  // namespace stamen::engine::ops
