// bge-m3 folders (BgeM3Config, model_config.h): finding the two torch.save heads beside config.json,
// and reading a kDenseSparseColbert step's token rows back as FlagEmbedding's three outputs, which
// the engine's tests and the gateway share (the gateway holds the token ids and the tokenizer's
// special ids that the lexical weights drop).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model_folder/model_config.h"
#include "model_folder/model_tokenizer.h"

namespace stamen::engine {

// Sets folder->config.bge_m3 when `model_dir` holds colbert_linear.pt and sparse_linear.pt, for an
// encoder without a head (FlagEmbedding's AutoModel), and the dense pooling to CLS (FlagEmbedding's
// default) where no sentence-transformers Pooling module names one. One file without the other,
// or both beside a decoder or a classification head, is an error naming the folder.
Status ReadBgeM3Heads(const std::string& model_dir, ModelFolder* folder);

// The layout of a kDenseSparseColbert step's values: one row per token, hidden size + 1 columns.
// Column `hidden_size` of every row is the token's sparse weight relu(sparse_linear(h)); a
// sequence's first row (CLS) holds the dense vector in its first hidden-size columns, each later row
// its token's ColBERT vector. The ColBERT width is the hidden size (FlagEmbedding's colbert_dim
// default, bge-m3's own 1024 → 1024; the engine refuses another), so that the layout follows from
// config.json alone, as the gateway and the worker know it without reading the torch files.
struct BgeM3RowLayout {
  int64_t hidden_size = 0;
  int64_t columns() const { return hidden_size + 1; }
};

// FlagEmbedding's lexical weights of one sequence (M3Embedder's _process_token_weights): for each
// token id not in `dropped_ids` (its cls, eos, pad and unk ids) whose weight is above 0, the largest
// of its weights; in id order. `weights[i]` is token i's sparse weight.
std::vector<std::pair<int32_t, float>> LexicalWeights(std::span<const int32_t> ids, std::span<const float> weights,
                                                      std::span<const int32_t> dropped_ids);

// The ids the lexical weights drop (M3Embedder's unused_tokens): the tokenizer's cls, eos, pad and
// unk tokens, as `model_dir`'s tokenizer_config.json names them (a string or an AddedToken object
// with "content"), XLM-R's <s>, </s>, <pad> and <unk> where it names none; a token the vocabulary
// lacks cannot occur and is left out. A fairseq-mapped tokenizer has them at fixed ids.
StatusOr<std::vector<int32_t>> BgeM3DroppedIds(const std::string& model_dir, const ModelTokenizer& tokenizer);

}  // namespace stamen::engine
