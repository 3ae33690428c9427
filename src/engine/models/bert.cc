// BERT, RoBERTa and XLM-RoBERTa encoders (post-LayerNorm transformer, learned absolute
// positions, token-type embeddings), and their sequence-classification heads.
//
// Per layer, with x the hidden state [T, H]:
//   qkv = x·W_qkvᵀ + b_qkv                 (query, key and value projections as one gemm)
//   x   = LayerNorm(x + (Attention(qkv)·W_oᵀ + b_o))
//   x   = LayerNorm(x + (gelu(x·W_iᵀ + b_i)·W_o2ᵀ + b_o2))
// Heads: BERT pools with tanh(pooler.dense(x_cls)) then `classifier`; RoBERTa applies
// tanh(classifier.dense(x_cls)) then `classifier.out_proj` — the same shape of computation.
#include <string>
#include <vector>

#include "engine/models/model.h"
#include "engine/ops/attention.h"
#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/pooling.h"

namespace stamen::engine {
namespace {

struct EncoderLayer {
  Tensor qkv_weight, qkv_bias;
  Tensor output_weight, output_bias;
  Tensor attention_norm_gamma, attention_norm_beta;
  Tensor intermediate_weight, intermediate_bias;
  Tensor ffn_output_weight, ffn_output_bias;
  Tensor ffn_norm_gamma, ffn_norm_beta;
};

struct ClassifierHead {
  Tensor dense_weight, dense_bias;
  Tensor output_weight, output_bias;
};

// Workspace slots.
enum Slot : size_t { kHidden, kQkv, kContext, kProjected, kIntermediate, kPositions, kTokenTypes, kPooled, kDense,
                     kLogits, kPooledTyped };

class BertModel final : public Model {
 public:
  static StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                                const Placement& placement);
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override;
  int64_t max_sequence_length() const override { return config_.max_position_embeddings - position_offset_; }

 private:
  BertModel(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}
  Status LoadWeights(const WeightStore& weights);
  Status Embed(const ModelInput& input, Tensor& hidden);
  Status RunLayer(const EncoderLayer& layer, const ModelInput& input, Tensor& hidden);

  ModelConfig config_;
  int64_t position_offset_ = 0;  // RoBERTa counts positions from pad_token_id + 1
  Tensor word_embeddings_, position_embeddings_, token_type_embeddings_;
  Tensor embedding_norm_gamma_, embedding_norm_beta_;
  std::vector<EncoderLayer> layers_;
  ClassifierHead head_;
};

StatusOr<std::unique_ptr<Model>> BertModel::Load(const ModelConfig& config, const WeightStore& weights,
                                                 const Placement& placement) {
  std::unique_ptr<BertModel> model(new BertModel(config, placement));
  if (config.family == ModelFamily::kRoberta) model->position_offset_ = config.pad_token_id.value_or(1) + 1;
  STAMEN_RETURN_IF_ERROR(model->LoadWeights(weights));
  return std::unique_ptr<Model>(std::move(model));
}

Status BertModel::LoadWeights(const WeightStore& weights) {
  const int64_t h = config_.hidden_size;
  const int64_t ffn = config_.intermediate_size;
  if (config_.num_key_value_heads != config_.num_attention_heads || config_.head_dim * config_.num_attention_heads != h) {
    return Status::Error("BERT-style encoders need head_dim × num_attention_heads = hidden_size and no grouped heads");
  }
  const std::vector<std::string> prefixes = {"", "bert.", "roberta.", "model."};
  auto found = model_weights::FindPrefix(weights, prefixes, "embeddings.word_embeddings.weight");
  if (!found.ok()) return found.status();
  const std::string prefix = *found;
  model_weights::TensorLoader loader(weights, placement_);
  auto load = [&](Tensor& target, const std::string& name, const Shape& shape) { loader.Load(target, name, shape); };
  const std::string embeddings = prefix + "embeddings.";
  load(word_embeddings_, embeddings + "word_embeddings.weight", {config_.vocab_size, h});
  load(position_embeddings_, embeddings + "position_embeddings.weight", {config_.max_position_embeddings, h});
  load(token_type_embeddings_, embeddings + "token_type_embeddings.weight", {config_.type_vocab_size, h});
  load(embedding_norm_gamma_, embeddings + "LayerNorm.weight", {h});
  load(embedding_norm_beta_, embeddings + "LayerNorm.bias", {h});
  layers_.resize(config_.num_hidden_layers);
  for (int64_t i = 0; i < config_.num_hidden_layers && loader.status().ok(); ++i) {
    EncoderLayer& layer = layers_[i];
    const std::string base = prefix + "encoder.layer." + std::to_string(i) + ".";
    const std::string self = base + "attention.self.";
    const std::vector<std::string> qkv = {self + "query.weight", self + "key.weight", self + "value.weight"};
    const std::vector<std::string> qkv_bias = {self + "query.bias", self + "key.bias", self + "value.bias"};
    const std::vector<int64_t> rows = {h, h, h};
    loader.Stack(layer.qkv_weight, qkv, rows, h);
    loader.Stack(layer.qkv_bias, qkv_bias, rows, 0);
    load(layer.output_weight, base + "attention.output.dense.weight", {h, h});
    load(layer.output_bias, base + "attention.output.dense.bias", {h});
    load(layer.attention_norm_gamma, base + "attention.output.LayerNorm.weight", {h});
    load(layer.attention_norm_beta, base + "attention.output.LayerNorm.bias", {h});
    load(layer.intermediate_weight, base + "intermediate.dense.weight", {ffn, h});
    load(layer.intermediate_bias, base + "intermediate.dense.bias", {ffn});
    load(layer.ffn_output_weight, base + "output.dense.weight", {h, ffn});
    load(layer.ffn_output_bias, base + "output.dense.bias", {h});
    load(layer.ffn_norm_gamma, base + "output.LayerNorm.weight", {h});
    load(layer.ffn_norm_beta, base + "output.LayerNorm.bias", {h});
  }
  if (config_.head == ModelHead::kSequenceClassification) {
    const int64_t labels = config_.num_labels;
    if (config_.family == ModelFamily::kBert) {
      load(head_.dense_weight, prefix + "pooler.dense.weight", {h, h});
      load(head_.dense_bias, prefix + "pooler.dense.bias", {h});
      load(head_.output_weight, "classifier.weight", {labels, h});
      load(head_.output_bias, "classifier.bias", {labels});
    } else {
      load(head_.dense_weight, "classifier.dense.weight", {h, h});
      load(head_.dense_bias, "classifier.dense.bias", {h});
      load(head_.output_weight, "classifier.out_proj.weight", {labels, h});
      load(head_.output_bias, "classifier.out_proj.bias", {labels});
    }
  }
  return loader.status();
}

Status BertModel::Embed(const ModelInput& input, Tensor& hidden) {
  const int64_t tokens = input.token_ids.dim(0);
  auto positions = workspace_.Get(kPositions, DataType::kI32, {tokens});
  if (!positions.ok()) return positions.status();
  // Sequence lengths were checked by the engine (max_sequence_length); positions are made on
  // the device so a captured graph recomputes them for each replayed batch.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, static_cast<int32_t>(position_offset_), *positions));
  Tensor token_types = input.token_type_ids;
  if (token_types.empty()) {
    auto zeros = workspace_.Get(kTokenTypes, DataType::kI32, {tokens});
    if (!zeros.ok()) return zeros.status();
    STAMEN_RETURN_IF_ERROR(ops::Zero(*zeros));
    token_types = *zeros;
  }
  STAMEN_RETURN_IF_ERROR(ops::Gather(word_embeddings_, input.token_ids, hidden));
  STAMEN_RETURN_IF_ERROR(ops::Gather(position_embeddings_, *positions, hidden, /*accumulate=*/true));
  Status types = ops::Gather(token_type_embeddings_, token_types, hidden, /*accumulate=*/true);
  if (!types.ok()) return Status::Error("token type ids: " + types.message());
  return ops::LayerNorm(hidden, Tensor(), embedding_norm_gamma_, embedding_norm_beta_,
                        static_cast<float>(config_.norm_eps), hidden);
}

Status BertModel::RunLayer(const EncoderLayer& layer, const ModelInput& input, Tensor& hidden) {
  const int64_t tokens = hidden.dim(0);
  const int64_t h = config_.hidden_size;
  const float eps = static_cast<float>(config_.norm_eps);
  const ops::QkvLayout layout{config_.num_attention_heads, config_.num_attention_heads, config_.head_dim};
  const DataType type = placement_.dtype;
  auto qkv = workspace_.Get(kQkv, type, {tokens, layout.row_size()});
  auto context = workspace_.Get(kContext, type, {tokens, h});
  auto projected = workspace_.Get(kProjected, type, {tokens, h});
  auto intermediate = workspace_.Get(kIntermediate, type, {tokens, config_.intermediate_size});
  for (const auto* buffer : {&qkv, &context, &projected, &intermediate}) {
    if (!buffer->ok()) return buffer->status();
  }
  STAMEN_RETURN_IF_ERROR(ops::Gemm(hidden, layer.qkv_weight, layer.qkv_bias, *qkv));
  STAMEN_RETURN_IF_ERROR(ops::Attention(*qkv, input.cu_seqlens, layout, ops::AttentionOptions{}, *context));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(*context, layer.output_weight, layer.output_bias, *projected));
  STAMEN_RETURN_IF_ERROR(
      ops::LayerNorm(*projected, hidden, layer.attention_norm_gamma, layer.attention_norm_beta, eps, hidden));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(hidden, layer.intermediate_weight, layer.intermediate_bias, *intermediate,
                                   {.activation = config_.hidden_act}));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(*intermediate, layer.ffn_output_weight, layer.ffn_output_bias, *projected));
  return ops::LayerNorm(*projected, hidden, layer.ffn_norm_gamma, layer.ffn_norm_beta, eps, hidden);
}

StatusOr<Tensor> BertModel::Forward(const ModelInput& input) {
  auto hidden = workspace_.Get(kHidden, placement_.dtype, {input.token_ids.dim(0), config_.hidden_size});
  if (!hidden.ok()) return hidden.status();
  STAMEN_RETURN_IF_ERROR(Embed(input, *hidden));
  for (const EncoderLayer& layer : layers_) STAMEN_RETURN_IF_ERROR(RunLayer(layer, input, *hidden));
  return hidden;
}

StatusOr<Tensor> BertModel::Classify(const ModelInput& input, const Tensor& hidden) {
  if (config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
  const int64_t sequences = input.cu_seqlens.dim(0) - 1;
  const DataType type = placement_.dtype;
  auto pooled = workspace_.Get(kPooled, DataType::kF32, {sequences, config_.hidden_size});
  auto pooled_typed = workspace_.Get(kPooledTyped, type, {sequences, config_.hidden_size});
  auto dense = workspace_.Get(kDense, type, {sequences, config_.hidden_size});
  auto logits = workspace_.Get(kLogits, type, {sequences, config_.num_labels});
  for (const auto* buffer : {&pooled, &pooled_typed, &dense, &logits}) {
    if (!buffer->ok()) return buffer->status();
  }
  // Pooling yields F32 on every device; the head's gemms run in the compute type.
  STAMEN_RETURN_IF_ERROR(ops::Pool(hidden, input.cu_seqlens, ops::PoolingMode::kCls, *pooled));
  if (type != DataType::kF32) {
    STAMEN_RETURN_IF_ERROR(ops::Convert(*pooled, *pooled_typed));
    pooled = pooled_typed;
  }
  STAMEN_RETURN_IF_ERROR(
      ops::Gemm(*pooled, head_.dense_weight, head_.dense_bias, *dense, {.activation = ops::Activation::kTanh}));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(*dense, head_.output_weight, head_.output_bias, *logits));
  return logits;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> LoadBertModel(const ModelConfig& config, const WeightStore& weights,
                                               const Placement& placement) {
  return BertModel::Load(config, weights, placement);
}

}  // namespace stamen::engine
