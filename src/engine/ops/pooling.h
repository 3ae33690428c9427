// Pooling of a ragged batch's token vectors into one vector per sequence, and L2 normalisation.
#pragma once

#include <optional>
#include <string_view>

#include "engine/status.h"
#include "engine/tensor.h"
#include "model_folder/kinds.h"

namespace stamen::engine::ops {

// output[s, :D] = pool of hidden[t, :D] over the tokens t of sequence s, D = output.dim(1)
// ≤ hidden.dim(1) (leading columns only: Matryoshka truncation costs nothing extra).
// hidden [T, n] in the backend's compute type (F32 cpu, BF16 cuda), cu_seqlens I32 [S + 1]
// (validated, no empty sequence), output F32 [S, D] (fp32 accumulation on every device).
Status Pool(const Tensor& hidden, const Tensor& cu_seqlens, PoolingMode mode, Tensor& output);

// SPLADE pooling of a slice of the batch's tokens: logits [C, V] are the masked-LM logits of
// tokens first_token .. first_token + C - 1, and output F32 [S, V] becomes
// max(output, log(1 + relu(logits[t]))) over those of sequence s's tokens, so that zeroing the
// output and running this over consecutive slices gives the SPLADE vector of every sequence
// (log(1 + relu(x)) ≥ 0, so 0 is the identity of the max). logits in the compute type.
Status SpladePool(const Tensor& logits, const Tensor& cu_seqlens, int64_t first_token, Tensor& output);

// output = input / max(‖input‖₂, 1e-12) per row, as torch.nn.functional.normalize; F32
// [rows, n]; `output` may be `input`.
Status L2Normalize(const Tensor& input, Tensor& output);

// values = round(scale · tanh(values)) elementwise, rounding half to even as torch.round does;
// F32 of any shape, in place. pplx-embed-v1's int8 embeddings (scale 127).
Status ScaledTanhRound(Tensor& values, float scale);

}  // namespace stamen::engine::ops
