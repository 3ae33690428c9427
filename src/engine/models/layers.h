// The blocks families are composed of: self-attention and feed-forward layers over a ragged
// batch, and scoped workspace slots. A family is then its schema, its embeddings and a short
// loop over these blocks, with the norms (ops/norm.h) placed where the family places them.
#pragma once

#include <string>
#include <vector>

#include "engine/models/model.h"
#include "engine/models/tensor_schema.h"
#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/pooling.h"

namespace stamen::engine::layers {

// Hands out a workspace's slots in order, so a block asks for buffers without numbering them.
// The same requests in the same order get the same slots every step, so buffers are reused.
// Nested() starts after the slots handed out so far: each layer of a loop takes the same
// nested slots and reuses them. The first error is kept (Get then returns an empty tensor),
// so a block checks status() once after asking for all its buffers.
class Slots {
 public:
  explicit Slots(Workspace& workspace, size_t first = 0) : workspace_(&workspace), next_(first) {}
  Tensor Get(DataType type, const Shape& shape);
  Slots Nested() const { return Slots(*workspace_, next_); }
  const Status& status() const { return status_; }

 private:
  Workspace* workspace_;
  size_t next_;
  Status status_;
};

// Learned absolute embeddings with a LayerNorm (BERT, RoBERTa, DistilBERT, MPNet).
struct AbsoluteEmbeddingWeights {
  Tensor word, position;
  Tensor token_type;  // empty for families without token types
  Tensor norm_gamma, norm_beta;
};

// Visits `prefix`word_embeddings, position_embeddings, token_type_embeddings (only when the
// config has token types) and LayerNorm, as BERT-style folders name them.
void VisitAbsoluteEmbeddings(TensorVisitor& visit, AbsoluteEmbeddingWeights& embeddings, const std::string& prefix,
                             const ModelConfig& config);

// hidden = LayerNorm(word[id] + position[position_offset + i] + token_type[type]); positions
// count from each sequence's start, token types default to 0.
Status EmbedAbsolute(const AbsoluteEmbeddingWeights& embeddings, const ModelInput& input, int64_t position_offset,
                     float norm_eps, Slots slots, Tensor& hidden);

struct AttentionWeights {
  Tensor qkv_weight, qkv_bias;  // query, key and value rows stacked: one gemm
  Tensor query_norm, key_norm;  // an RMSNorm over each query and key head (Qwen3), or empty
  Tensor output_weight, output_bias;
};

struct AttentionSettings {
  ops::QkvLayout layout;
  ops::AttentionOptions options;  // causal, window, scale, relative position bias
  float norm_eps = 0.0f;         // of query_norm and key_norm
  const Tensor* rope = nullptr;  // the step's RoPE table [T, head_dim], or none
};

// output = (or += with `accumulate`) Attention(rotate(norm(input·W_qkvᵀ + b)))·W_oᵀ + b_o.
Status SelfAttention(const AttentionWeights& weights, const AttentionSettings& settings, const Tensor& input,
                     const Tensor& cu_seqlens, Slots slots, Tensor& output, bool accumulate);

struct FeedForwardWeights {
  Tensor up_weight, up_bias;  // gated: the gate rows, then the up rows
  Tensor down_weight, down_bias;
};

struct FeedForwardSettings {
  ops::Activation activation = ops::Activation::kGeluErf;
  bool gated = false;  // act(x·W_gateᵀ) ⊙ x·W_upᵀ, else act(x·W_upᵀ + b)
  int64_t intermediate_size = 0;
};

// output = (or += with `accumulate`) act(input·W_upᵀ + b)·W_downᵀ + b_down, or its gated form.
Status FeedForward(const FeedForwardWeights& weights, const FeedForwardSettings& settings, const Tensor& input,
                   Slots slots, Tensor& output, bool accumulate);

// The post-LayerNorm encoder layer of BERT, DistilBERT and MPNet:
//   x = LayerNorm(x + SelfAttention(x));   x = LayerNorm(x + FeedForward(x))
struct PostNormLayerWeights {
  AttentionWeights attention;
  Tensor attention_norm_gamma, attention_norm_beta;
  FeedForwardWeights feed_forward;
  Tensor output_norm_gamma, output_norm_beta;
};

Status PostNormLayer(const PostNormLayerWeights& weights, const AttentionSettings& attention,
                     const FeedForwardSettings& feed_forward, float norm_eps, const Tensor& cu_seqlens, Slots slots,
                     Tensor& hidden);

// Where a post-norm layer's tensors sit in a file, relative to the layer's own prefix and
// without ".weight" / ".bias".
struct PostNormLayerNames {
  std::string query, key, value, output;  // the attention's projections
  std::string attention_norm;
  std::string up, down;  // the feed-forward's
  std::string output_norm;
};

// Visits the config's num_hidden_layers post-norm layers, layer i under `layers_prefix` + "i."
// (every linear with a bias, every norm a LayerNorm).
void VisitPostNormLayers(TensorVisitor& visit, std::vector<PostNormLayerWeights>& layers,
                         const std::string& layers_prefix, const PostNormLayerNames& names, const ModelConfig& config);

// A sequence-classification head: logits = W_o·norm(act(W_d·x + b_d)) + b_o, x the first token
// (BERT's pooler + classifier, RoBERTa's classifier.dense + out_proj, DistilBERT's
// pre_classifier + classifier) or the mean of the sequence's tokens (ModernBERT's
// classifier_pooling "mean"; ModernBERT adds the norm). Empty biases are none.
struct ClassifierWeights {
  Tensor dense_weight, dense_bias;
  Tensor norm_gamma, norm_beta;  // a LayerNorm after the activation, or empty
  Tensor output_weight, output_bias;
};

struct ClassifierSettings {
  ops::PoolingMode pooling = ops::PoolingMode::kCls;
  ops::Activation activation = ops::Activation::kTanh;
  float norm_eps = 0.0f;
  int64_t num_labels = 0;
};

// Visits a head whose tensors are `dense` and `output` (names without ".weight" / ".bias").
void VisitClassifier(TensorVisitor& visit, ClassifierWeights& head, const std::string& dense,
                     const std::string& output, int64_t hidden_size, int64_t num_labels);

// Logits [S, num_labels] in the hidden state's dtype, a view into the workspace.
StatusOr<Tensor> Classify(const ClassifierWeights& weights, const ClassifierSettings& settings, const Tensor& hidden,
                          const Tensor& cu_seqlens, Slots slots);

}  // namespace stamen::engine::layers
