// The blocks families are composed of: self-attention and feed-forward layers over a ragged
// batch, the post-norm encoder layer (BERT-style) and the pre-norm decoder layer (Llama-style)
// with their schemas, RoPE tables, a classification head, and scoped workspace slots. A family
// is then its schema, its embeddings and a short loop over these blocks.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "engine/models/family.h"
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
// count from each sequence's start, token types default to 0. Without a position table
// (DeBERTa-v3: position_biased_input false) the position term is left out.
Status EmbedAbsolute(const AbsoluteEmbeddingWeights& embeddings, const ModelInput& input, int64_t position_offset,
                     float norm_eps, Slots slots, Tensor& hidden);

struct AttentionWeights {
  Tensor qkv_weight, qkv_bias;  // query, key and value rows stacked: one gemm
  Tensor query_norm, key_norm;  // an RMSNorm over each query and key head (Qwen3), or empty
  // LayerNorms over each token's whole query and whole key, before the heads split (JinaBERT
  // qk-post-norm's layer_norm_q / layer_norm_k), or empty.
  Tensor query_layer_norm_gamma, query_layer_norm_beta, key_layer_norm_gamma, key_layer_norm_beta;
  Tensor output_weight, output_bias;
};

struct AttentionSettings {
  ops::QkvLayout layout;
  ops::AttentionOptions options;  // causal, window, scale, relative position bias
  float norm_eps = 0.0f;         // of query_norm and key_norm, or of the query / key LayerNorms
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

// A sequence-classification head: logits = W_o·norm(act(W_d·x + b_d)) + b_o, x the first token
// (BERT's pooler + classifier, RoBERTa's classifier.dense + out_proj, DistilBERT's
// pre_classifier + classifier) or the mean of the sequence's tokens (ModernBERT's
// classifier_pooling "mean"; ModernBERT adds the norm); or, late-pooled (EuroBERT's "late"), the
// mean over the tokens of W_o·act(W_d·x_t + b_d) + b_o. Empty biases are none. The config says how
// it pools and activates (classifier_pooling, classifier_late_pooling, classifier_activation).
struct ClassifierWeights {
  Tensor dense_weight, dense_bias;
  Tensor norm_gamma, norm_beta;  // a LayerNorm after the activation, or empty
  Tensor output_weight, output_bias;
};

// Visits a head whose tensors are `dense` and `output` (names without ".weight" / ".bias").
void VisitClassifier(TensorVisitor& visit, ClassifierWeights& head, const std::string& dense,
                     const std::string& output, int64_t hidden_size, int64_t num_labels);

// Visits the pooler a base model saves (`dense`.weight and .bias: BertModel, XLMRobertaModel,
// MPNetModel), so make-model writes it; embeddings never read it.
void VisitUnreadPooler(TensorVisitor& visit, ClassifierWeights& head, const std::string& dense, int64_t hidden_size);

// Logits [S, num_labels] of Forward's `hidden` in its dtype, a view into `workspace` (the
// model's head_workspace_, never Forward's: model.h): the head pools by
// config.classifier_pooling, activates by config.classifier_activation and norms with
// config.norm_eps.
StatusOr<Tensor> Classify(const ClassifierWeights& weights, const ModelConfig& config, const ModelInput& input,
                          const Tensor& hidden, Workspace& workspace);

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
// without ".weight" / ".bias"; by default as BERT names them.
struct PostNormLayerNames {
  // The attention's projections.
  std::string query = "attention.self.query", key = "attention.self.key", value = "attention.self.value";
  std::string output = "attention.output.dense";
  std::string attention_norm = "attention.output.LayerNorm";
  std::string up = "intermediate.dense", down = "output.dense";  // the feed-forward's
  std::string output_norm = "output.LayerNorm";
};

// A post-norm encoder: learned absolute embeddings, then the layers; the head is the family's
// (a classifier, BertModel's unread pooler, or nothing).
// The masked-language-model head of BERT-style encoders (…ForMaskedLM), and SPLADE sparse
// vectors from its logits:
//   logits = LayerNorm(act(x·W_dᵀ + b_d))·Eᵀ + b          (E [vocab, hidden])
//   splade[s, v] = max over the tokens t of s of log(1 + relu(logits[t, v]))
// E is the decoder weight, or the word embeddings when the decoder is tied to them (no
// decoder tensor in the file, as save_pretrained writes tied weights).
struct MaskedLmHeadWeights {
  Tensor dense_weight, dense_bias;  // the transform [hidden, hidden]
  Tensor norm_gamma, norm_beta;
  Tensor decoder_weight;  // [vocab, hidden], empty when tied to the word embeddings
  Tensor decoder_bias;    // [vocab]
};

// Where the head's tensors sit: `dense`, `norm` and `decoder` without ".weight" / ".bias";
// `bias` is the full name of the decoder's bias (BERT: "cls.predictions.bias").
struct MaskedLmHeadNames {
  std::string dense, norm, decoder, bias;
};

struct MaskedLmHeadSettings {
  ops::Activation activation = ops::Activation::kGeluErf;  // of the transform
  float norm_eps = 1e-12f;
};

// Visits the head; the decoder weight is optional (tied when absent).
void VisitMaskedLmHead(TensorVisitor& visit, MaskedLmHeadWeights& head, const MaskedLmHeadNames& names,
                       const ModelConfig& config);

// The SPLADE vector of every sequence into `output` F32 [S, vocab] (on the model's device).
// The logits are made a slice of tokens at a time, so a batch never holds [T, vocab] at once.
Status SpladeVectors(const MaskedLmHeadWeights& weights, const MaskedLmHeadSettings& settings,
                     const Tensor& word_embeddings, const ModelInput& input, const Tensor& hidden, Slots slots,
                     Tensor& output);

struct PostNormEncoderWeights {
  AbsoluteEmbeddingWeights embeddings;
  std::vector<PostNormLayerWeights> layers;
  // Added to every layer's attention scores: MPNet's table (F32 [32 buckets, heads]); empty
  // for the others.
  ops::RelativePositionBias position_bias;
  ClassifierWeights head;
  MaskedLmHeadWeights masked_lm;  // …ForMaskedLM only
};

// Visits `prefix`embeddings.* (VisitAbsoluteEmbeddings) and the config's num_hidden_layers
// layers, layer i under `prefix` + `layers_path` + "i." (every linear with a bias, every norm a
// LayerNorm); not the head nor the position bias.
void VisitPostNormEncoder(TensorVisitor& visit, PostNormEncoderWeights& encoder, const std::string& prefix,
                          const std::string& layers_path, const PostNormLayerNames& names, const ModelConfig& config);
// The config's num_hidden_layers post-norm layers alone, layer i under `prefix` + "i." (DeBERTa,
// whose embeddings and position tables differ).
void VisitPostNormLayers(TensorVisitor& visit, std::vector<PostNormLayerWeights>& layers, const std::string& prefix,
                         const PostNormLayerNames& names, const ModelConfig& config);

// The model of BERT, RoBERTa, DistilBERT and MPNet, whose families differ in their schemas
// and settings only. Forward: EmbedAbsolute with positions from config.position_offset, then
// every PostNormLayer with the config's heads, activation and norm_eps; Classify: the head.
class PostNormEncoderModel final : public FamilyModel<PostNormEncoderWeights> {
 public:
  using FamilyModel::FamilyModel;
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override;
  // With a masked-LM head (BERT, RoBERTa): SPLADE vectors, else Model's error.
  Status SpladeVectors(const ModelInput& input, const Tensor& hidden, Tensor& output) override;
  int64_t splade_width() const override { return config_.head == ModelHead::kMaskedLm ? config_.vocab_size : 0; }
  int64_t max_sequence_length() const override { return config_.max_position_embeddings - config_.position_offset; }
  bool LimitsKeys() const override { return true; }
};

// The base of an encoder family whose classifier is `weights_.head` (Classify's pooler and
// classifier) and whose longest sequence is its max_position_embeddings: JinaBERT, ModernBERT
// and the rotary encoders. The family writes Forward.
template <typename WeightsType>
class ClassifierEncoderModel : public FamilyModel<WeightsType> {
 public:
  using FamilyModel<WeightsType>::FamilyModel;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override {
    if (this->config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
    return layers::Classify(this->weights_.head, this->config_, input, hidden, this->head_workspace_);
  }
  int64_t max_sequence_length() const override { return this->config_.max_position_embeddings; }
};

// The pre-norm decoder layer of Qwen2/3, Llama, Mistral, Gemma and Gemma 2 and 3, with RMSNorms:
//   x += output_norm(SelfAttention(input_norm(x)));   x += output_norm(FeedForward(feed_forward_norm(x)))
// where each output_norm is the identity (Qwen, Llama, Mistral) or, in Gemma3's sandwich,
// an RMSNorm of the block's output before it joins the residual stream.
struct PreNormLayerWeights {
  Tensor input_norm;
  AttentionWeights attention;
  Tensor attention_output_norm;  // Gemma3's post_attention_layernorm; empty: none
  Tensor feed_forward_norm;      // Qwen's post_attention_layernorm, Gemma3's pre_feedforward_layernorm
  FeedForwardWeights feed_forward;
  Tensor feed_forward_output_norm;  // Gemma3's post_feedforward_layernorm; empty when the other is
};

Status PreNormLayer(const PreNormLayerWeights& weights, const AttentionSettings& attention,
                    const FeedForwardSettings& feed_forward, float norm_eps, const Tensor& cu_seqlens, Slots slots,
                    Tensor& hidden);

// A pre-norm decoder: token embeddings, the layers, a final RMSNorm, and for a scoring model
// its head: `score` [num_labels, hidden] without bias on each sequence's last token (the
// *ForSequenceClassification `score.weight`, or a yes/no reranker's lm_head row difference), or
// for EuroBertForSequenceClassification a pooled head (`head`: dense → GELU → classifier).
struct PreNormDecoderWeights {
  Tensor embeddings;
  float embedding_scale = 1.0f;  // multiplies each gathered row (Gemma3: sqrt(hidden_size))
  std::vector<PreNormLayerWeights> layers;
  Tensor final_norm;
  Tensor score;  // empty without a head
  ClassifierWeights head;  // empty unless the family's head is pooled (EuroBERT)
  // A yes/no head under final logit soft-capping (Gemma 2), else empty: `score` then holds the
  // scored lm_head rows ([no, yes] or [yes]) divided by the cap c, and this [1, rows] weighs
  // their tanh, c·(−1, 1) or c, so that the score is c·tanh(yes / c) − c·tanh(no / c), or
  // c·tanh(yes / c): the difference of the capped logits transformers' Gemma2ForCausalLM gives.
  Tensor score_combination;
};

// How a decoder family names and stores its tensors: Llama's layout (embed_tokens, layers.i.
// with self_attn.{q,k,v,o}_proj and mlp.{gate,up,down}_proj without feed-forward biases, the
// first norm input_layernorm; norm), the q/k/v biases when config.attention_bias, and:
// A Gemma RMSNorm weight (Gemma 1 and 3) as save_pretrained names it: stored as w − 1
// (transformers initialises it to zeros), loaded as w.
TensorSpec GemmaNormSpec(const std::string& name, int64_t size);

struct PreNormDecoderSchema {
  std::string attention_output_norm = {};  // empty: none
  std::string feed_forward_norm = {};
  std::string feed_forward_output_norm = {};  // empty: none
  // An RMSNorm weight's spec as the family stores it (Qwen: w itself; Gemma3: w − 1).
  TensorSpec (*norm)(const std::string& name, int64_t size) = nullptr;
  bool head_norms = false;   // self_attn.{q,k}_norm over each query and key head (Qwen3, Gemma3)
  bool output_bias = false;  // self_attn.o_proj.bias (Gemma3 with attention_bias)
  float embedding_scale = 1.0f;  // PreNormDecoderWeights::embedding_scale
};

// Visits every tensor of a decoder under `prefix`.
void VisitPreNormDecoder(TensorVisitor& visit, PreNormDecoderWeights& decoder, const std::string& prefix,
                         const PreNormDecoderSchema& schema, const ModelConfig& config);

// The model of Qwen2/3, Llama, Mistral and Gemma3, whose families differ in their schemas and
// settings only. Forward: the embeddings, every PreNormLayer (rotary, grouped-query, gated
// feed-forward), the final norm. Positions restart at 0 in every sequence. A layer attends
// within config.sliding_window (Mistral: every layer) or, where config.sliding_window_layers
// marks layers, a sliding one within config.attention_window and a full one to every key,
// scaled by config.attention_scale and soft-capped by config.attention_logit_softcap. Classify (config.head kSequenceClassification): the
// last token's final hidden state · scoreᵀ, as transformers' *ForSequenceClassification
// scores the last non-padding token of a causal decoder; with a pooled head (EuroBERT), Classify's.
class PreNormDecoderModel : public FamilyModel<PreNormDecoderWeights> {
 public:
  using FamilyModel::FamilyModel;
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override;
  int64_t max_sequence_length() const override { return std::max<int64_t>(config_.max_position_embeddings, 0); }
};

// A yes/no reranker's head (config.yes_no_token_ids set, model_folder/yes_no_reranker.h) into
// `decoder`'s score: the row lm_head[yes] − lm_head[no], or lm_head[yes] alone, of
// lm_head.weight, or of the embedding table ([model.]embed_tokens.weight) when tied, as
// [1, hidden] placed on the model's device. Only those rows are read, never the vocabulary
// projection; the difference is taken in F32 before placement, so BF16 rows are not rounded
// twice. With config.final_logit_softcap the logits are capped before they are compared, so the
// rows stay apart (PreNormDecoderWeights::score_combination).
Status LoadYesNoHead(const ModelConfig& config, const WeightStore& weights, const Placement& placement,
                     PreNormDecoderWeights& decoder);

// A layer-wise reranker's head (config.cutoff_layer set, ModelConfig::layer_wise_start) into
// `decoder`'s score: the one row of the head FlagEmbedding applies at a single cut-off, under
// final logit soft-capping as LoadYesNoHead's rows.
Status LoadLayerWiseHead(const ModelConfig& config, const WeightStore& weights, const Placement& placement,
                         PreNormDecoderWeights& decoder);

// `rows` ({no, yes}, {yes} or a layer-wise head's one row, F32 [1, hidden] each) into
// `decoder`'s score: the last minus the first when there are two, or with
// config.final_logit_softcap the rows divided by the cap and their combination (see
// PreNormDecoderWeights::score_combination).
Status PlaceScoreRows(const ModelConfig& config, std::vector<Tensor> rows, const Placement& placement,
                      PreNormDecoderWeights& decoder);

// A decoder family's FamilyDefinition::load: `schema`'s tensors, then for a yes/no reranker its
// head (LoadYesNoHead), so a step projects onto one row instead of the vocabulary.
template <TensorSchema<PreNormDecoderWeights> schema>
StatusOr<std::unique_ptr<Model>> LoadPreNormDecoder(const ModelConfig& config, const WeightStore& weights,
                                                    const Placement& placement) {
  auto model = std::make_unique<PreNormDecoderModel>(config, placement);
  STAMEN_RETURN_IF_ERROR(LoadTensors(config, weights, placement, schema, model->weights_));
  if (!config.yes_no_token_ids.empty()) {
    STAMEN_RETURN_IF_ERROR(LoadYesNoHead(config, weights, placement, model->weights_));
  } else if (config.cutoff_layer > 0) {
    STAMEN_RETURN_IF_ERROR(LoadLayerWiseHead(config, weights, placement, model->weights_));
  }
  return std::unique_ptr<Model>(std::move(model));
}

// A step's RoPE tables [T, head_dim], positions restarting at 0 in every sequence (made on
// the device, so a replayed graph recomputes them): `full` with config.rope_theta for full
// layers, `sliding` with config.local_rope_theta for sliding ones (config.sliding_window_layers;
// when empty every layer is full). A table no layer uses stays empty and costs nothing.
struct RopeTables {
  Tensor full, sliding;
};

// The start of a rotary model's step: the hidden state [T, hidden_size] = embeddings[token id]
// · embedding_scale as the first of `slots`, then the step's positions and RoPE tables.
// `slots` hands out what the caller asks for next after them.
StatusOr<Tensor> EmbedRotary(const Tensor& embeddings, const ModelConfig& config, const ModelInput& input,
                             Slots& slots, RopeTables& rope, float embedding_scale = 1.0f);

}  // namespace stamen::engine::layers
