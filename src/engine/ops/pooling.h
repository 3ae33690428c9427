// Pooling of a ragged batch's token vectors into one vector per sequence, and L2 normalisation.
#pragma once

#include <optional>
#include <string_view>

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

enum class PoolingMode { kCls, kMean, kMax, kLastToken };

// "cls", "mean", "max", "last_token" (also sentence-transformers' "lasttoken").
std::optional<PoolingMode> PoolingModeFromName(std::string_view name);
std::string_view PoolingModeName(PoolingMode mode);

// output[s, :D] = pool of hidden[t, :D] over the tokens t of sequence s, D = output.dim(1)
// ≤ hidden.dim(1) (leading columns only: Matryoshka truncation costs nothing extra).
// hidden [T, n] in the backend's compute type (F32 cpu, BF16 cuda), cu_seqlens I32 [S + 1]
// (validated, no empty sequence), output F32 [S, D] (fp32 accumulation on every device).
Status Pool(const Tensor& hidden, const Tensor& cu_seqlens, PoolingMode mode, Tensor& output);

// output = input / max(‖input‖₂, 1e-12) per row, as torch.nn.functional.normalize; F32
// [rows, n]; `output` may be `input`.
Status L2Normalize(const Tensor& input, Tensor& output);

}  // namespace stamen::engine::ops
