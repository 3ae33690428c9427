// Rotary position embedding in the rotate-half convention of Hugging Face Llama/Qwen: for
// frequency i < d/2, the pair (x[i], x[i + d/2]) turns by angle position · base^(-2i/d).
#pragma once

#include "engine/ops/attention.h"
#include "model_folder/kinds.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

// table F32 [T, d] on every device (angles stay fp32), d the rotated dimensions of a head
// (head_dim, or fewer for partial rotary): cos of each angle in columns [0, d/2), sin in [d/2, d),
// for positions I32 [T], the frequencies rescaled as `scaling` says (ops/rope_frequency.h).
// Dynamic NTK scaling needs cu_seqlens I32 [S + 1] (each token's sequence length picks its base);
// the other kinds ignore it. Computed once per step and shared by every layer.
Status RopeTable(const Tensor& positions, double base, Tensor& table, const RopeScaling& scaling = {},
                 const Tensor& cu_seqlens = {});

// In place, rotates every query and key head of `qkv` (packed as `layout`) by its token's
// row of `table`; value heads are untouched. A table narrower than head_dim rotates the first
// table.dim(1) dimensions of each head (rotate-half within them) and leaves the rest, as
// partial rotary does (NomicBERT's rotary_emb_fraction < 1).
Status ApplyRope(Tensor& qkv, const QkvLayout& layout, const Tensor& table);

}  // namespace stamen::engine::ops
