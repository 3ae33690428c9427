// The blocks of the layer library, as sequences of ops.
#include "engine/models/layers.h"

#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/pooling.h"
#include "engine/ops/rope.h"

namespace stamen::engine::layers {

Tensor Slots::Get(DataType type, const Shape& shape) {
  const size_t slot = next_++;
  if (!status_.ok()) return Tensor();
  auto buffer = workspace_->Get(slot, type, shape);
  if (!buffer.ok()) {
    status_ = buffer.status();
    return Tensor();
  }
  return std::move(buffer.value());
}

void VisitAbsoluteEmbeddings(TensorVisitor& visit, AbsoluteEmbeddingWeights& embeddings, const std::string& prefix,
                             const ModelConfig& config) {
  const int64_t h = config.hidden_size;
  visit.Tensor(embeddings.word, {prefix + "word_embeddings.weight", {config.vocab_size, h}});
  visit.Tensor(embeddings.position, {prefix + "position_embeddings.weight", {config.max_position_embeddings, h}});
  if (config.type_vocab_size > 0) {
    visit.Tensor(embeddings.token_type, {prefix + "token_type_embeddings.weight", {config.type_vocab_size, h}});
  }
  visit.Tensor(embeddings.norm_gamma, {prefix + "LayerNorm.weight", {h}, TensorInit::kNormOne});
  visit.Tensor(embeddings.norm_beta, {prefix + "LayerNorm.bias", {h}});
}

Status EmbedAbsolute(const AbsoluteEmbeddingWeights& embeddings, const ModelInput& input, int64_t position_offset,
                     float norm_eps, Slots slots, Tensor& hidden) {
  const int64_t tokens = input.token_ids.dim(0);
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  Tensor zeros = slots.Get(DataType::kI32, {tokens});
  STAMEN_RETURN_IF_ERROR(slots.status());
  // Sequence lengths were checked by the engine (max_sequence_length); positions are made on
  // the device so a captured graph recomputes them for each replayed batch.
  STAMEN_RETURN_IF_ERROR(ops::Gather(embeddings.word, input.token_ids, hidden));
  if (!embeddings.position.empty()) {
    STAMEN_RETURN_IF_ERROR(
        ops::SequencePositions(input.cu_seqlens, static_cast<int32_t>(position_offset), positions));
    STAMEN_RETURN_IF_ERROR(ops::Gather(embeddings.position, positions, hidden, /*accumulate=*/true));
  }
  if (!embeddings.token_type.empty()) {
    Tensor token_types = input.token_type_ids;
    if (token_types.empty()) {
      STAMEN_RETURN_IF_ERROR(ops::Zero(zeros));
      token_types = zeros;
    }
    Status types = ops::Gather(embeddings.token_type, token_types, hidden, /*accumulate=*/true);
    if (!types.ok()) return Status::Error("token type ids: " + types.message());
  }
  return ops::LayerNorm(hidden, Tensor(), embeddings.norm_gamma, embeddings.norm_beta, norm_eps, hidden);
}

Status SelfAttention(const AttentionWeights& weights, const AttentionSettings& settings, const Tensor& input,
                     const Tensor& cu_seqlens, Slots slots, Tensor& output, bool accumulate) {
  const int64_t tokens = input.dim(0);
  const ops::QkvLayout& layout = settings.layout;
  const DataType type = input.dtype();
  Tensor qkv = slots.Get(type, {tokens, layout.row_size()});
  Tensor context = slots.Get(type, {tokens, layout.num_heads * layout.head_dim});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::Gemm(input, weights.qkv_weight, weights.qkv_bias, qkv));
  if (!weights.query_norm.empty()) {
    STAMEN_RETURN_IF_ERROR(ops::RmsNormHeads(qkv, layout, weights.query_norm, weights.key_norm, settings.norm_eps));
  }
  if (!weights.query_layer_norm_gamma.empty()) {
    STAMEN_RETURN_IF_ERROR(ops::LayerNormQueryKey(qkv, layout, weights.query_layer_norm_gamma,
                                                  weights.query_layer_norm_beta, weights.key_layer_norm_gamma,
                                                  weights.key_layer_norm_beta, settings.norm_eps));
  }
  if (settings.rope != nullptr) STAMEN_RETURN_IF_ERROR(ops::ApplyRope(qkv, layout, *settings.rope));
  STAMEN_RETURN_IF_ERROR(ops::Attention(qkv, cu_seqlens, layout, settings.options, context));
  return ops::Gemm(context, weights.output_weight, weights.output_bias, output, {.accumulate = accumulate});
}

Status FeedForward(const FeedForwardWeights& weights, const FeedForwardSettings& settings, const Tensor& input,
                   Slots slots, Tensor& output, bool accumulate) {
  const int64_t tokens = input.dim(0);
  const DataType type = input.dtype();
  const int64_t width = settings.intermediate_size;
  if (!settings.gated) {
    Tensor intermediate = slots.Get(type, {tokens, width});
    STAMEN_RETURN_IF_ERROR(slots.status());
    return ops::FeedForwardGemms(input, weights.up_weight, weights.up_bias, settings.activation, weights.down_weight,
                                 weights.down_bias, intermediate, output, accumulate);
  }
  Tensor gate_up = slots.Get(type, {tokens, 2 * width});
  Tensor activated = slots.Get(type, {tokens, width});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::Gemm(input, weights.up_weight, weights.up_bias, gate_up));
  STAMEN_RETURN_IF_ERROR(ops::GatedActivation(settings.activation, gate_up, activated));
  return ops::Gemm(activated, weights.down_weight, weights.down_bias, output, {.accumulate = accumulate});
}

Status PostNormLayer(const PostNormLayerWeights& weights, const AttentionSettings& attention,
                     const FeedForwardSettings& feed_forward, float norm_eps, const Tensor& cu_seqlens, Slots slots,
                     Tensor& hidden) {
  Tensor projected = slots.Get(hidden.dtype(), hidden.shape());
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(SelfAttention(weights.attention, attention, hidden, cu_seqlens, slots.Nested(), projected,
                                       /*accumulate=*/false));
  STAMEN_RETURN_IF_ERROR(ops::LayerNorm(projected, hidden, weights.attention_norm_gamma, weights.attention_norm_beta,
                                        norm_eps, hidden));
  STAMEN_RETURN_IF_ERROR(
      FeedForward(weights.feed_forward, feed_forward, hidden, slots.Nested(), projected, /*accumulate=*/false));
  return ops::LayerNorm(projected, hidden, weights.output_norm_gamma, weights.output_norm_beta, norm_eps, hidden);
}

void VisitPostNormEncoder(TensorVisitor& visit, PostNormEncoderWeights& encoder, const std::string& prefix,
                          const std::string& layers_path, const PostNormLayerNames& names, const ModelConfig& config) {
  VisitAbsoluteEmbeddings(visit, encoder.embeddings, prefix + "embeddings.", config);
  VisitPostNormLayers(visit, encoder.layers, prefix + layers_path, names, config);
}

void VisitPostNormLayers(TensorVisitor& visit, std::vector<PostNormLayerWeights>& layers, const std::string& prefix,
                         const PostNormLayerNames& names, const ModelConfig& config) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  layers.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    PostNormLayerWeights& layer = layers[i];
    const std::string base = prefix + std::to_string(i) + ".";
    const TensorSpec qkv[] = {{base + names.query + ".weight", {h, h}}, {base + names.key + ".weight", {h, h}},
                              {base + names.value + ".weight", {h, h}}};
    const TensorSpec qkv_bias[] = {{base + names.query + ".bias", {h}}, {base + names.key + ".bias", {h}},
                                   {base + names.value + ".bias", {h}}};
    visit.Stacked(layer.attention.qkv_weight, qkv);
    visit.Stacked(layer.attention.qkv_bias, qkv_bias);
    visit.Tensor(layer.attention.output_weight, {base + names.output + ".weight", {h, h}});
    visit.Tensor(layer.attention.output_bias, {base + names.output + ".bias", {h}});
    visit.Tensor(layer.attention_norm_gamma, {base + names.attention_norm + ".weight", {h}, TensorInit::kNormOne});
    visit.Tensor(layer.attention_norm_beta, {base + names.attention_norm + ".bias", {h}});
    visit.Tensor(layer.feed_forward.up_weight, {base + names.up + ".weight", {ffn, h}});
    visit.Tensor(layer.feed_forward.up_bias, {base + names.up + ".bias", {ffn}});
    visit.Tensor(layer.feed_forward.down_weight, {base + names.down + ".weight", {h, ffn}});
    visit.Tensor(layer.feed_forward.down_bias, {base + names.down + ".bias", {h}});
    visit.Tensor(layer.output_norm_gamma, {base + names.output_norm + ".weight", {h}, TensorInit::kNormOne});
    visit.Tensor(layer.output_norm_beta, {base + names.output_norm + ".bias", {h}});
  }
}

StatusOr<Tensor> PostNormEncoderModel::Forward(const ModelInput& input) {
  Slots slots(workspace_);
  Tensor hidden = slots.Get(placement_.dtype, {input.token_ids.dim(0), config_.hidden_size});
  STAMEN_RETURN_IF_ERROR(slots.status());
  const float eps = static_cast<float>(config_.norm_eps);
  STAMEN_RETURN_IF_ERROR(
      EmbedAbsolute(weights_.embeddings, input, config_.position_offset, eps, slots.Nested(), hidden));
  const bool position_bias = !weights_.position_bias.table.empty();
  const AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim},
      .options = {.position_bias = position_bias ? &weights_.position_bias : nullptr,
                  .key_lengths = input.key_lengths.empty() ? nullptr : &input.key_lengths}};
  const FeedForwardSettings feed_forward{.activation = config_.hidden_act,
                                         .intermediate_size = config_.intermediate_size};
  for (const PostNormLayerWeights& layer : weights_.layers) {
    STAMEN_RETURN_IF_ERROR(
        PostNormLayer(layer, attention, feed_forward, eps, input.cu_seqlens, slots.Nested(), hidden));
  }
  return hidden;
}

StatusOr<Tensor> PostNormEncoderModel::Classify(const ModelInput& input, const Tensor& hidden) {
  if (config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
  return layers::Classify(weights_.head, config_, input, hidden, head_workspace_);
}

Status PostNormEncoderModel::SpladeVectors(const ModelInput& input, const Tensor& hidden, Tensor& output) {
  if (config_.head != ModelHead::kMaskedLm) return Model::SpladeVectors(input, hidden, output);
  // BERT's and DistilBERT's transforms use the model's activation; RoBERTa's lm_head is always
  // erf-GELU.
  const bool own_activation = config_.family == ModelFamily::kBert || config_.family == ModelFamily::kDistilBert;
  const MaskedLmHeadSettings head{
      .activation = own_activation ? config_.hidden_act : ops::Activation::kGeluErf,
      .norm_eps = static_cast<float>(config_.norm_eps)};
  // On the heads' scratch: its vocabulary-wide logits never grow Forward's workspace.
  return layers::SpladeVectors(weights_.masked_lm, head, weights_.embeddings.word, input, hidden,
                               Slots(head_workspace_), output);
}

Status PreNormLayer(const PreNormLayerWeights& weights, const AttentionSettings& attention,
                    const FeedForwardSettings& feed_forward, float norm_eps, const Tensor& cu_seqlens, Slots slots,
                    Tensor& hidden) {
  const bool output_norms = !weights.attention_output_norm.empty();
  Tensor normed = slots.Get(hidden.dtype(), hidden.shape());
  // Without output norms a block adds its output to the residual stream itself; with them it
  // writes it here, and its output norm adds the normed result.
  Tensor block_output = output_norms ? slots.Get(hidden.dtype(), hidden.shape()) : hidden;
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, weights.input_norm, norm_eps, normed));
  STAMEN_RETURN_IF_ERROR(SelfAttention(weights.attention, attention, normed, cu_seqlens, slots.Nested(), block_output,
                                       /*accumulate=*/!output_norms));
  if (output_norms) {
    STAMEN_RETURN_IF_ERROR(
        ops::RmsNorm(block_output, weights.attention_output_norm, norm_eps, hidden, /*accumulate=*/true));
  }
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, weights.feed_forward_norm, norm_eps, normed));
  STAMEN_RETURN_IF_ERROR(FeedForward(weights.feed_forward, feed_forward, normed, slots.Nested(), block_output,
                                     /*accumulate=*/!output_norms));
  if (!output_norms) return Status();
  return ops::RmsNorm(block_output, weights.feed_forward_output_norm, norm_eps, hidden, /*accumulate=*/true);
}

TensorSpec GemmaNormSpec(const std::string& name, int64_t size) {
  return {.name = name,
          .shape = {size},
          .init = TensorInit::kNormal,
          .presence = TensorPresence::kRequired,
          .load_offset = 1.0f};
}

namespace {

// Visits through `inner` as kUnread: tensors the schema names that this model never reads (a
// layer-wise reranker's layers after its cut-off), so loading skips them and make-model writes them.
class UnreadVisitor final : public TensorVisitor {
 public:
  explicit UnreadVisitor(TensorVisitor& inner) : inner_(inner) {}
  void Tensor(engine::Tensor& target, const TensorSpec& spec) override {
    TensorSpec unread = spec;
    unread.presence = TensorPresence::kUnread;
    inner_.Tensor(target, unread);
  }
  void Stacked(engine::Tensor& target, std::span<const TensorSpec> parts) override {
    std::vector<TensorSpec> unread(parts.begin(), parts.end());
    for (TensorSpec& part : unread) part.presence = TensorPresence::kUnread;
    inner_.Stacked(target, unread);
  }

 private:
  TensorVisitor& inner_;
};

}  // namespace

void VisitPreNormDecoder(TensorVisitor& all_visit, PreNormDecoderWeights& decoder, const std::string& prefix,
                         const PreNormDecoderSchema& schema, const ModelConfig& config) {
  UnreadVisitor unread_visit(all_visit);
  const int64_t h = config.hidden_size;
  const int64_t d = config.head_dim;
  const int64_t q_rows = config.num_attention_heads * d;
  const int64_t kv_rows = config.num_key_value_heads * d;
  const int64_t ffn = config.intermediate_size;
  all_visit.Tensor(decoder.embeddings, {prefix + "embed_tokens.weight", {config.vocab_size, h}});
  decoder.embedding_scale = schema.embedding_scale;
  // A norm the family may not have: visited only when it names it.
  const auto visit_norm = [&](TensorVisitor& visit, Tensor& target, const std::string& base, const std::string& name) {
    if (!name.empty()) visit.Tensor(target, schema.norm(base + name + ".weight", h));
  };
  decoder.layers.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    // Layers past a cut-off (ModelConfig::RunLayers) stay empty.
    TensorVisitor& visit = i < config.RunLayers() ? all_visit : unread_visit;
    PreNormLayerWeights& layer = decoder.layers[i];
    const std::string base = prefix + "layers." + std::to_string(i) + ".";
    const std::string attention = base + "self_attn.";
    visit_norm(visit, layer.input_norm, base, "input_layernorm");
    const TensorSpec qkv[] = {{attention + "q_proj.weight", {q_rows, h}},
                              {attention + "k_proj.weight", {kv_rows, h}},
                              {attention + "v_proj.weight", {kv_rows, h}}};
    visit.Stacked(layer.attention.qkv_weight, qkv);
    if (config.attention_bias) {
      const TensorSpec qkv_bias[] = {{attention + "q_proj.bias", {q_rows}},
                                     {attention + "k_proj.bias", {kv_rows}},
                                     {attention + "v_proj.bias", {kv_rows}}};
      visit.Stacked(layer.attention.qkv_bias, qkv_bias);
    }
    if (schema.head_norms) {
      visit.Tensor(layer.attention.query_norm, schema.norm(attention + "q_norm.weight", d));
      visit.Tensor(layer.attention.key_norm, schema.norm(attention + "k_norm.weight", d));
    }
    visit.Tensor(layer.attention.output_weight, {attention + "o_proj.weight", {h, q_rows}});
    if (schema.output_bias) visit.Tensor(layer.attention.output_bias, {attention + "o_proj.bias", {h}});
    visit_norm(visit, layer.attention_output_norm, base, schema.attention_output_norm);
    visit_norm(visit, layer.feed_forward_norm, base, schema.feed_forward_norm);
    const TensorSpec gate_up[] = {{base + "mlp.gate_proj.weight", {ffn, h}}, {base + "mlp.up_proj.weight", {ffn, h}}};
    visit.Stacked(layer.feed_forward.up_weight, gate_up);
    visit.Tensor(layer.feed_forward.down_weight, {base + "mlp.down_proj.weight", {h, ffn}});
    visit_norm(visit, layer.feed_forward_output_norm, base, schema.feed_forward_output_norm);
  }
  all_visit.Tensor(decoder.final_norm, schema.norm(prefix + "norm.weight", h));
}

StatusOr<Tensor> PreNormDecoderModel::Forward(const ModelInput& input) {
  Slots slots(workspace_);
  RopeTables rope;
  auto hidden = EmbedRotary(weights_.embeddings, config_, input, slots, rope, weights_.embedding_scale);
  if (!hidden.ok()) return hidden.status();
  const float eps = static_cast<float>(config_.norm_eps);
  const FeedForwardSettings feed_forward{
      .activation = config_.hidden_act, .gated = true, .intermediate_size = config_.intermediate_size};
  const bool marked = !config_.sliding_window_layers.empty();
  // A layer-wise reranker stops at its cut-off: the final norm below is then applied to that
  // layer's output, as FlagEmbedding's CostWiseGemmaModel does before its head.
  const auto run_layers = static_cast<size_t>(config_.RunLayers());
  for (size_t i = 0; i < run_layers; ++i) {
    const bool sliding = marked && config_.sliding_window_layers[i];
    const AttentionSettings attention{
        .layout = {config_.num_attention_heads, config_.num_key_value_heads, config_.head_dim},
        .options = {.causal = config_.causal,
                    .window = config_.AttentionWindow(i),
                    .scale = static_cast<float>(config_.attention_scale),
                    .softcap = static_cast<float>(config_.attention_logit_softcap)},
        .norm_eps = eps,
        .rope = sliding ? &rope.sliding : &rope.full};
    STAMEN_RETURN_IF_ERROR(
        PreNormLayer(weights_.layers[i], attention, feed_forward, eps, input.cu_seqlens, slots.Nested(), *hidden));
  }
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(*hidden, weights_.final_norm, eps, *hidden));
  return hidden;
}

StatusOr<Tensor> PreNormDecoderModel::Classify(const ModelInput& input, const Tensor& hidden) {
  if (config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
  // EuroBERT's pooled head, as the config pools it.
  if (!weights_.head.dense_weight.empty()) return layers::Classify(weights_.head, config_, input, hidden, head_workspace_);
  // On the heads' scratch, apart from Forward's workspace (model.h).
  Slots slots(head_workspace_);
  const int64_t sequences = input.cu_seqlens.dim(0) - 1;
  const DataType type = hidden.dtype();
  Tensor last = slots.Get(DataType::kF32, {sequences, hidden.dim(1)});
  Tensor last_typed = slots.Get(type, {sequences, hidden.dim(1)});
  const bool capped = !weights_.score_combination.empty();
  Tensor capped_logits = capped ? slots.Get(type, {sequences, weights_.score.dim(0)}) : Tensor();
  Tensor logits = slots.Get(type, {sequences, capped ? weights_.score_combination.dim(0) : weights_.score.dim(0)});
  STAMEN_RETURN_IF_ERROR(slots.status());
  // Sequences are unpadded, so each one's last token is its last non-padding token, and its
  // mean is over its own tokens alone. A causal *ForSequenceClassification scores the last token;
  // LlamaBidirectionalForSequenceClassification (llama-nemotron-rerank) the mean of them all: its
  // remote code pools by config "pooling", which model_folder/families/qwen.cc admits as "avg"
  // only (the mean under the attention mask).
  const ops::PoolingMode pooling =
      config_.family == ModelFamily::kLlamaBidirectional ? ops::PoolingMode::kMean : ops::PoolingMode::kLastToken;
  STAMEN_RETURN_IF_ERROR(ops::Pool(hidden, input.cu_seqlens, pooling, last));
  if (type != DataType::kF32) {
    STAMEN_RETURN_IF_ERROR(ops::Convert(last, last_typed));
    last = last_typed;
  }
  if (!capped) {
    STAMEN_RETURN_IF_ERROR(ops::Gemm(last, weights_.score, Tensor(), logits));
    return logits;
  }
  // tanh(logit / cap) of each scored token (the rows are divided by the cap), then their
  // difference times the cap (score_combination).
  STAMEN_RETURN_IF_ERROR(ops::Gemm(last, weights_.score, Tensor(), capped_logits, {.activation = ops::Activation::kTanh}));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(capped_logits, weights_.score_combination, Tensor(), logits));
  return logits;
}

StatusOr<Tensor> EmbedRotary(const Tensor& embeddings, const ModelConfig& config, const ModelInput& input,
                             Slots& slots, RopeTables& rope, float embedding_scale) {
  const int64_t tokens = input.token_ids.dim(0);
  bool any_full = config.sliding_window_layers.empty(), any_sliding = false;
  for (bool sliding : config.sliding_window_layers) (sliding ? any_sliding : any_full) = true;
  Tensor hidden = slots.Get(embeddings.dtype(), {tokens, config.hidden_size});
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  if (any_full) rope.full = slots.Get(DataType::kF32, {tokens, config.head_dim});
  if (any_sliding) rope.sliding = slots.Get(DataType::kF32, {tokens, config.head_dim});
  STAMEN_RETURN_IF_ERROR(slots.status());
  // Lengths were checked by the engine.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, 0, positions));
  if (any_full) STAMEN_RETURN_IF_ERROR(ops::RopeTable(positions, config.rope_theta, rope.full, config.rope_scaling));
  if (any_sliding) STAMEN_RETURN_IF_ERROR(ops::RopeTable(positions, config.local_rope_theta, rope.sliding));
  STAMEN_RETURN_IF_ERROR(ops::Gather(embeddings, input.token_ids, hidden, /*accumulate=*/false, embedding_scale));
  return hidden;
}

namespace {

// Row `index` of the [rows, hidden_size] table `name`, as F32 [1, hidden_size].
StatusOr<Tensor> LoadHeadRow(const ModelConfig& config, const WeightStore& weights, const std::string& name,
                             int64_t index) {
  auto row = weights.LoadRow(name, index);
  if (!row.ok()) return row.status();
  if (row->dim(1) != config.hidden_size) {
    return Status::Error(name + " has " + std::to_string(row->dim(1)) + " columns, expected hidden_size " +
                         std::to_string(config.hidden_size));
  }
  return row;
}

}  // namespace

Status LoadYesNoHead(const ModelConfig& config, const WeightStore& weights, const Placement& placement,
                     PreNormDecoderWeights& decoder) {
  std::string table = "lm_head.weight";
  if (config.tie_word_embeddings) {
    table = weights.Contains("model.embed_tokens.weight") ? "model.embed_tokens.weight" : "embed_tokens.weight";
  }
  const std::vector<int32_t>& tokens = config.yes_no_token_ids;  // {no, yes} or {yes}
  if (tokens.empty() || tokens.size() > 2) return Status::Error("a yes/no reranker scores one or two tokens");
  std::vector<Tensor> rows;  // in the order of `tokens`
  for (const int32_t token : tokens) {
    auto row = LoadHeadRow(config, weights, table, token);
    if (!row.ok()) return row.status();
    rows.push_back(std::move(row.value()));
  }
  return PlaceScoreRows(config, std::move(rows), placement, decoder);
}

Status LoadLayerWiseHead(const ModelConfig& config, const WeightStore& weights, const Placement& placement,
                         PreNormDecoderWeights& decoder) {
  // FlagEmbedding's CostWiseGemmaForCausalLM.forward applies lm_head[i] to the i-th of the
  // hidden states it kept, one per requested cut-off layer in layer order: with the one cut-off
  // LightweightLLMReranker asks for (cutoff_layers=[L], or None: every layer), head 0, whatever
  // L is. Heads 1… (for start_layer + k·layer_sep) score only when several cut-offs are asked
  // for at once, which stamen does not do.
  auto row = LoadHeadRow(config, weights, "lm_head.0.linear_head.weight", 0);
  if (!row.ok()) return row.status();
  std::vector<Tensor> rows;
  rows.push_back(std::move(row.value()));
  return PlaceScoreRows(config, std::move(rows), placement, decoder);
}

Status PlaceScoreRows(const ModelConfig& config, std::vector<Tensor> rows, const Placement& placement,
                      PreNormDecoderWeights& decoder) {
  const int64_t h = config.hidden_size;
  const auto row_count = static_cast<int64_t>(rows.size());
  const float cap = static_cast<float>(config.final_logit_softcap);
  if (cap <= 0.0f) {
    float* difference = rows.back().data<float>();
    if (row_count == 2) {
      for (int64_t i = 0; i < h; ++i) difference[i] -= rows.front().data<float>()[i];
    }
    auto placed = model_weights::Place(rows.back(), placement);
    if (!placed.ok()) return placed.status();
    decoder.score = std::move(placed.value());
    return Status();
  }
  // Soft-capped logits are not linear in the hidden state, so each row is kept, divided by the
  // cap (a tanh epilogue then caps them) and combined after.
  auto scored = Tensor::Allocate(DataType::kF32, {row_count, h});
  auto combination = Tensor::Allocate(DataType::kF32, {1, row_count});
  if (!scored.ok()) return scored.status();
  if (!combination.ok()) return combination.status();
  for (int64_t r = 0; r < row_count; ++r) {
    for (int64_t i = 0; i < h; ++i) scored->data<float>()[r * h + i] = rows[r].data<float>()[i] / cap;
    // {no, yes}: −cap, cap; {yes}: cap.
    combination->data<float>()[r] = r + 1 == row_count ? cap : -cap;
  }
  auto placed_rows = model_weights::Place(*scored, placement);
  if (!placed_rows.ok()) return placed_rows.status();
  auto placed_combination = model_weights::Place(*combination, placement);
  if (!placed_combination.ok()) return placed_combination.status();
  decoder.score = std::move(placed_rows.value());
  decoder.score_combination = std::move(placed_combination.value());
  return Status();
}

void VisitClassifier(TensorVisitor& visit, ClassifierWeights& head, const std::string& dense,
                     const std::string& output, int64_t hidden_size, int64_t num_labels) {
  visit.Tensor(head.dense_weight, {dense + ".weight", {hidden_size, hidden_size}});
  visit.Tensor(head.dense_bias, {dense + ".bias", {hidden_size}});
  visit.Tensor(head.output_weight, {output + ".weight", {num_labels, hidden_size}});
  visit.Tensor(head.output_bias, {output + ".bias", {num_labels}});
}

void VisitUnreadPooler(TensorVisitor& visit, ClassifierWeights& head, const std::string& dense, int64_t hidden_size) {
  visit.Tensor(head.dense_weight,
               {dense + ".weight", {hidden_size, hidden_size}, TensorInit::kNormal, TensorPresence::kUnread});
  visit.Tensor(head.dense_bias, {dense + ".bias", {hidden_size}, TensorInit::kNormal, TensorPresence::kUnread});
}

StatusOr<Tensor> Classify(const ClassifierWeights& weights, const ModelConfig& config, const ModelInput& input,
                          const Tensor& hidden, Workspace& workspace) {
  const Tensor& cu_seqlens = input.cu_seqlens;
  Slots slots(workspace);
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  const int64_t width = hidden.dim(1);
  const DataType type = hidden.dtype();
  Tensor pooled = slots.Get(DataType::kF32, {sequences, width});
  Tensor pooled_typed = slots.Get(type, {sequences, width});
  Tensor dense = slots.Get(type, {sequences, width});
  Tensor logits = slots.Get(type, {sequences, config.num_labels});
  // Late pooling: the activated dense layer of every token, pooled after.
  Tensor every_token = config.classifier_late_pooling ? slots.Get(type, {hidden.dim(0), width}) : Tensor();
  STAMEN_RETURN_IF_ERROR(slots.status());
  const ops::GemmOptions activated{.activation = config.classifier_activation};
  if (config.classifier_late_pooling) {
    if (!weights.norm_gamma.empty()) return Status::Error("a late-pooled classifier head has no norm");
    // mean_t(W_o·a_t + b_o) = W_o·mean_t(a_t) + b_o: the output layer runs once per sequence.
    STAMEN_RETURN_IF_ERROR(ops::Gemm(hidden, weights.dense_weight, weights.dense_bias, every_token, activated));
    STAMEN_RETURN_IF_ERROR(ops::Pool(every_token, cu_seqlens, config.classifier_pooling, pooled));
    if (type != DataType::kF32) {
      STAMEN_RETURN_IF_ERROR(ops::Convert(pooled, dense));
    } else {
      dense = pooled;
    }
  } else {
    // Pooling yields F32 on every device; the head's gemms run in the compute type.
    STAMEN_RETURN_IF_ERROR(ops::Pool(hidden, cu_seqlens, config.classifier_pooling, pooled));
    if (type != DataType::kF32) {
      STAMEN_RETURN_IF_ERROR(ops::Convert(pooled, pooled_typed));
      pooled = pooled_typed;
    }
    STAMEN_RETURN_IF_ERROR(ops::Gemm(pooled, weights.dense_weight, weights.dense_bias, dense, activated));
  }
  if (!weights.norm_gamma.empty()) {
    const float eps = static_cast<float>(config.norm_eps);
    STAMEN_RETURN_IF_ERROR(ops::LayerNorm(dense, Tensor(), weights.norm_gamma, weights.norm_beta, eps, dense));
  }
  STAMEN_RETURN_IF_ERROR(ops::Gemm(dense, weights.output_weight, weights.output_bias, logits));
  return logits;
}

}  // namespace stamen::engine::layers
