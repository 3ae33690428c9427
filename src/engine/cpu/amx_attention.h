// Ragged attention in bf16 on AMX tiles, for engines computing in bf16 on a CPU with AMX
// (CpuPath::amx): q·kᵀ and p·v as tile products (amx_gemm.h) with the queries, keys, values and
// softmax numerators rounded to bf16 and every sum in fp32, as torch's SDPA in bf16 computes
// them; the softmax itself in fp32. At 512 tokens the fp32 kernels (attention.cc) took most of a
// bf16 step once its dense layers ran on tiles (docs/BENCHMARKS.md, "Intel Xeon with AMX").
#pragma once

#include "engine/ops/attention.h"
#include "engine/tensor.h"

namespace stamen::engine::cpu {

// Whether these kernels compute what `options` asks: every key visible to every query, no
// position terms inside attention (BERT, RoBERTa/XLM-R, DistilBERT, ModernBERT's global layers).
bool AmxAttentionApplies(const ops::AttentionOptions& options);

// Attention(qkv, cu_seqlens, layout, options) of attention.cc for such options, with the
// queries scaled by `scale`. Arguments are checked by ops::Attention.
void AmxAttention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout, float scale,
                  Tensor& output);

}  // namespace stamen::engine::cpu
