// bge-m3's three outputs (FlagEmbedding's BGEM3FlagModel.encode) read from a kDenseSparseColbert
// result, engine::BgeM3RowLayout's token rows, and written as JSON: what POST /embed_multi
// answers, and /embed_sparse and /v1/multi-vector each alone.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gateway/api.h"
#include "gateway/finished_rows.h"
#include "gateway/quantize.h"

namespace stamen::gateway {

// One input of a kDenseSparseColbert result: its token rows (hidden size + 1 floats each) and its
// token ids, one per row.
struct BgeM3Rows {
  const float* rows = nullptr;
  std::span<const int32_t> ids;
};

// Each input's rows and ids in a finished kDenseSparseColbert job (which must outlive them).
std::vector<BgeM3Rows> BgeM3RowsOf(const FinishedRows& done);

// The dense vector (the first row's leading floats, normalised by the engine): [f, …].
void AppendBgeM3Dense(std::string& out, const BgeM3Rows& input, int64_t hidden_size);
// The lexical weights (engine::LexicalWeights: `dropped_ids` left out, the largest weight per id,
// in id order): [{"index": id, "value": weight}, …], TEI's sparse shape.
void AppendBgeM3Sparse(std::string& out, const BgeM3Rows& input, int64_t hidden_size,
                       std::span<const int32_t> dropped_ids);
// The ColBERT vectors, those of the tokens after the first (CLS), end token included, as
// FlagEmbedding keeps them: [v, …], each as `type` answers it (AppendEmbedding).
void AppendBgeM3Colbert(std::string& out, const BgeM3Rows& input, int64_t hidden_size, EmbeddingType type);

// POST /embed_sparse's answer on bge-m3: [[{index, value}] per input], each input's lexical weights.
std::string BgeM3SparseBody(const FinishedRows& done, int64_t hidden_size, std::span<const int32_t> dropped_ids);

// POST /embed_multi's answer: {"dense": [[f]], "sparse": [[{index, value}]], "colbert": [[[f]]]},
// one entry per input in each, each key only when `call` asks for it.
std::string EmbedMultiBody(const EmbedMultiCall& call, const std::vector<BgeM3Rows>& inputs, int64_t hidden_size,
                           std::span<const int32_t> dropped_ids);

}  // namespace stamen::gateway
