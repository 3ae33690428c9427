// The facts of a model that every layer must agree on — what it serves (embeddings, relevance
// scores, class labels), how wide its embeddings are, how long a sequence may be, whether its
// vectors are sparse and how it pools by default — worked out by one function from what the
// folder says. The gateway describes its model with it and the worker validates requests with
// it (server::ModelLimits), so the two cannot come to different answers; a gateway refuses to
// start beside a worker whose model differs.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model_folder/kinds.h"
#include "model_folder/model_config.h"

namespace stamen::engine {

// What a model serves: embeddings, or a classification head's scores, which /rerank takes when
// it has one label and /predict with any number.
enum class ModelKind { kEmbedding, kReranker, kClassifier };

struct ModelProfile {
  ModelKind kind = ModelKind::kEmbedding;
  // The pooling a step uses when it names none (DefaultPooling); unset: requests must name one.
  std::optional<ops::PoolingMode> default_pooling;
  bool sparse = false;  // the default pooling is SPLADE: vectors over the vocabulary
  bool multi_vector = false;  // a multi-vector (ColBERT) model: one vector per token, MaxSim
  // bge-m3's sparse and ColBERT heads beside the encoder (config.bge_m3): its dense, sparse and
  // ColBERT outputs come from one forward (BgeM3RowLayout).
  bool bge_m3 = false;
  // The width of a dense pooled embedding: the last sentence-transformers Dense module's
  // out_features, else the hidden size.
  int64_t pooled_width = 0;
  // The width of the embeddings a step gives by default, before Matryoshka truncation: the
  // vocabulary size when sparse, else pooled_width.
  int64_t embedding_width = 0;
  int64_t hidden_size = 0;           // of every token's last hidden state
  int64_t max_sequence_length = 0;   // special tokens included; 0: no limit known
  int64_t vocabulary_size = 0;
  int64_t type_vocabulary_size = 0;  // 0: token type ids must be 0
  int64_t num_labels = 0;            // > 0 for a classification head only
  // Task LoRA adapters a sequence may run with (jina-embeddings-v3: config.adapter_tasks, read
  // from a hub folder); 0: none.
  int64_t task_adapters = 0;

  // The width of embeddings pooled with `pooling` (a --pooling that overrides the default).
  int64_t EmbeddingWidthWith(ops::PoolingMode pooling) const {
    return pooling == ops::PoolingMode::kSplade ? vocabulary_size : pooled_width;
  }
};

// The profile of a model read from its folder (ReadModelFolder), after a yes/no reranker was
// resolved (ResolveYesNoReranker), which makes a causal LM a one-label classification head.
ModelProfile ProfileOf(const ModelConfig& config, const SentenceTransformersConfig& sentence_transformers);

// "embedding", "reranker", "classifier".
std::string_view ModelKindName(ModelKind kind);

}  // namespace stamen::engine
