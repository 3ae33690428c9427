// bge-m3's two heads beside its encoder (BgeM3Config): read from their torch.save files, and the
// step that gives FlagEmbedding's three outputs from one forward's last hidden state.
#pragma once

#include <cstdint>
#include <span>

#include "engine/status.h"
#include "engine/tensor.h"
#include "model_folder/bge_m3.h"
#include "model_folder/model_config.h"

namespace stamen::engine {

struct BgeM3Heads {
  Tensor colbert_weight, colbert_bias;  // F32 [hidden, hidden], [hidden]
  Tensor sparse_weight, sparse_bias;    // F32 [1, hidden], [1]
  BgeM3RowLayout layout;
};

// Reads colbert_linear.pt ({weight [hidden, hidden], bias [hidden]}) and sparse_linear.pt ({weight [1, hidden],
// bias [1]}), the state dicts FlagEmbedding loads into its torch.nn.Linear heads.
StatusOr<BgeM3Heads> LoadBgeM3Heads(const BgeM3Config& config, int64_t hidden_size);

// The kDenseSparseColbert values of a step (BgeM3RowLayout) from `hidden` F32 [≥ T, hidden] on the
// CPU, T = cu_seqlens.back(): as FlagEmbedding's M3 model computes them, dense = normalize(h[CLS]),
// sparse weight = relu(h · w_sparseᵀ + b_sparse) per token, ColBERT = normalize(h · W_colbertᵀ + b)
// per token after CLS.
StatusOr<Tensor> ComputeBgeM3Rows(const BgeM3Heads& heads, const Tensor& hidden, std::span<const int32_t> cu_seqlens);

}  // namespace stamen::engine
