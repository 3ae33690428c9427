// Gemma3 text decoders (Gemma3TextModel), and EmbeddingGemma, the bidirectional one: a
// pre- and post-RMSNorm transformer with rotary positions, grouped-query attention with
// per-head q/k RMSNorm, sliding-window and full layers, and a GeGLU feed-forward. No KV
// cache: each step sees whole sequences.
//
// With x the hidden state [T, H], embeddings scaled by sqrt(H), per layer:
//   x += RMSNorm_post_attention(Attention(rotate(qk_norm(RMSNorm_input(x)·W_qkvᵀ)))·W_oᵀ)
//   x += RMSNorm_post_feedforward((gelu_tanh(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ),  n = RMSNorm_pre_feedforward(x)
// and a final RMSNorm. Gemma's RMSNorm multiplies by (1 + w); the loader adds the 1 to every
// stored norm weight (TensorSpec::load_offset) so ops::RmsNorm applies unchanged, and folds
// sqrt(H) into the embedding table (load_scale): both are the fp32 products transformers
// computes in an fp32 model. Sliding layers see keys within the window and rotate with
// rope_local_base_freq; full layers see the whole sequence and rotate with rope_theta.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/ops/embedding.h"
#include "engine/ops/norm.h"
#include "engine/ops/rope.h"

namespace stamen::engine {
namespace {

struct Gemma3Layer {
  Tensor input_norm;
  layers::AttentionWeights attention;
  Tensor post_attention_norm;
  Tensor pre_feedforward_norm;
  layers::FeedForwardWeights feed_forward;
  Tensor post_feedforward_norm;
};

struct Gemma3Weights {
  Tensor embeddings;
  Tensor final_norm;
  std::vector<Gemma3Layer> layers;
};

// A Gemma RMSNorm weight as save_pretrained names it: stored as w − 1 (transformers
// initialises it to zeros), loaded as w.
TensorSpec NormSpec(const std::string& name, int64_t size) {
  return {.name = name,
          .shape = {size},
          .init = TensorInit::kNormal,
          .presence = TensorPresence::kRequired,
          .load_scale = 1.0f,
          .load_offset = 1.0f};
}

// The tensor schema, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, Gemma3Weights& weights, TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const int64_t d = config.head_dim;
  const int64_t q_rows = config.num_attention_heads * d;
  const int64_t kv_rows = config.num_key_value_heads * d;
  const int64_t ffn = config.intermediate_size;
  visit.Tensor(weights.embeddings, {.name = prefix + "embed_tokens.weight",
                                    .shape = {config.vocab_size, h},
                                    .init = TensorInit::kNormal,
                                    .presence = TensorPresence::kRequired,
                                    .load_scale = static_cast<float>(std::sqrt(static_cast<double>(h))),
                                    .load_offset = 0.0f});
  weights.layers.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    Gemma3Layer& layer = weights.layers[i];
    const std::string base = prefix + "layers." + std::to_string(i) + ".";
    const std::string attention = base + "self_attn.";
    visit.Tensor(layer.input_norm, NormSpec(base + "input_layernorm.weight", h));
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
    visit.Tensor(layer.attention.query_norm, NormSpec(attention + "q_norm.weight", d));
    visit.Tensor(layer.attention.key_norm, NormSpec(attention + "k_norm.weight", d));
    visit.Tensor(layer.attention.output_weight, {attention + "o_proj.weight", {h, q_rows}});
    if (config.attention_bias) visit.Tensor(layer.attention.output_bias, {attention + "o_proj.bias", {h}});
    visit.Tensor(layer.post_attention_norm, NormSpec(base + "post_attention_layernorm.weight", h));
    visit.Tensor(layer.pre_feedforward_norm, NormSpec(base + "pre_feedforward_layernorm.weight", h));
    const TensorSpec gate_up[] = {{base + "mlp.gate_proj.weight", {ffn, h}}, {base + "mlp.up_proj.weight", {ffn, h}}};
    visit.Stacked(layer.feed_forward.up_weight, gate_up);
    visit.Tensor(layer.feed_forward.down_weight, {base + "mlp.down_proj.weight", {h, ffn}});
    visit.Tensor(layer.post_feedforward_norm, NormSpec(base + "post_feedforward_layernorm.weight", h));
  }
  visit.Tensor(weights.final_norm, NormSpec(prefix + "norm.weight", h));
}

enum Slot : size_t { kHidden, kPositions, kFullRope, kSlidingRope, kLayerSlots };

class Gemma3Model final : public Model {
 public:
  Gemma3Model(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  int64_t max_sequence_length() const override { return std::max<int64_t>(config_.max_position_embeddings, 0); }

  ModelConfig config_;
  Gemma3Weights weights_;

 private:
  Status RunLayer(const Gemma3Layer& layer, bool sliding, const ModelInput& input, const Tensor& rope,
                  Tensor& hidden);
};

Status Gemma3Model::RunLayer(const Gemma3Layer& layer, bool sliding, const ModelInput& input, const Tensor& rope,
                             Tensor& hidden) {
  const float eps = static_cast<float>(config_.norm_eps);
  layers::Slots slots(workspace_, kLayerSlots);
  Tensor normed = slots.Get(placement_.dtype, hidden.shape());
  Tensor block_output = slots.Get(placement_.dtype, hidden.shape());
  STAMEN_RETURN_IF_ERROR(slots.status());
  // transformers turns a bidirectional model's sliding_window w into w // 2 + 1 keys either side
  // (exclusive bound); a causal one sees the w − 1 keys before the query and itself.
  int64_t window = 0;
  if (sliding) window = config_.causal ? config_.sliding_window : config_.sliding_window / 2 + 1;
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_key_value_heads, config_.head_dim},
      .options = {.causal = config_.causal,
                  .window = window,
                  .scale = static_cast<float>(config_.attention_scale),
                  .position_bias = nullptr},
      .norm_eps = eps,
      .rope = &rope};
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, layer.input_norm, eps, normed));
  STAMEN_RETURN_IF_ERROR(
      layers::SelfAttention(layer.attention, attention, normed, input.cu_seqlens, slots.Nested(), block_output, false));
  // The attention output is normed before it joins the residual stream, and so is the MLP's.
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(block_output, layer.post_attention_norm, eps, hidden, /*accumulate=*/true));
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, layer.pre_feedforward_norm, eps, normed));
  const layers::FeedForwardSettings feed_forward{
      .activation = config_.hidden_act, .gated = true, .intermediate_size = config_.intermediate_size};
  STAMEN_RETURN_IF_ERROR(
      layers::FeedForward(layer.feed_forward, feed_forward, normed, slots.Nested(), block_output, false));
  return ops::RmsNorm(block_output, layer.post_feedforward_norm, eps, hidden, /*accumulate=*/true);
}

StatusOr<Tensor> Gemma3Model::Forward(const ModelInput& input) {
  const int64_t tokens = input.token_ids.dim(0);
  layers::Slots slots(workspace_, kHidden);
  Tensor hidden = slots.Get(placement_.dtype, {tokens, config_.hidden_size});
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  Tensor full_rope = slots.Get(DataType::kF32, {tokens, config_.head_dim});
  Tensor sliding_rope = slots.Get(DataType::kF32, {tokens, config_.head_dim});
  STAMEN_RETURN_IF_ERROR(slots.status());
  // Lengths were checked by the engine; positions restart at 0 per sequence, on the device.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, 0, positions));
  STAMEN_RETURN_IF_ERROR(ops::Gather(weights_.embeddings, input.token_ids, hidden));
  STAMEN_RETURN_IF_ERROR(ops::RopeTable(positions, config_.rope_theta, full_rope));
  STAMEN_RETURN_IF_ERROR(ops::RopeTable(positions, config_.local_rope_theta, sliding_rope));
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    const bool sliding = config_.sliding_window_layers[i];
    STAMEN_RETURN_IF_ERROR(RunLayer(weights_.layers[i], sliding, input, sliding ? sliding_rope : full_rope, hidden));
  }
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, weights_.final_norm, static_cast<float>(config_.norm_eps), hidden));
  return hidden;
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  auto model = std::make_unique<Gemma3Model>(config, placement);
  STAMEN_RETURN_IF_ERROR(LoadTensors<Gemma3Weights>(config, weights, placement, VisitTensors, model->weights_));
  return std::unique_ptr<Model>(std::move(model));
}

std::vector<TensorSpec> Tensors(const ModelConfig& config, const std::string& prefix) {
  return CollectTensors<Gemma3Weights>(config, prefix, VisitTensors);
}

// One layer type's RoPE base from transformers ≥ 5's rope_parameters[layer_type]; only plain RoPE.
Status ReadRopeParameters(const JsonObject& rope_parameters, std::string_view layer_type, double* theta) {
  JsonObject parameters = rope_parameters;
  bool found = false;
  STAMEN_RETURN_IF_ERROR(rope_parameters.OptionalObject(layer_type, &parameters, &found));
  if (!found) return Status();
  STAMEN_RETURN_IF_ERROR(parameters.Optional("rope_theta", theta));
  std::string rope_type = "default";
  STAMEN_RETURN_IF_ERROR(parameters.Optional("rope_type", &rope_type));
  if (rope_type != "default") {
    return parameters.Error("rope_type", "'" + rope_type + "' is not supported (only plain RoPE)");
  }
  return Status();
}

// Which layers slide: layer_types when given, else transformers' sliding_window_pattern rule
// (every pattern-th layer is full).
Status ReadLayerTypes(const JsonObject& root, ModelConfig* config) {
  config->sliding_window_layers.clear();
  simdjson::dom::array layer_types;
  if (root.Has("layer_types")) {
    if (root.raw()["layer_types"].get(layer_types) != simdjson::SUCCESS) {
      return root.Error("layer_types", "must be an array");
    }
    for (simdjson::dom::element element : layer_types) {
      std::string_view type;
      if (element.get(type) != simdjson::SUCCESS) return root.Error("layer_types", "must hold strings");
      if (type != "sliding_attention" && type != "full_attention") {
        return root.Error("layer_types", "names unsupported layer type '" + std::string(type) + "'");
      }
      config->sliding_window_layers.push_back(type == "sliding_attention");
    }
    if (static_cast<int64_t>(config->sliding_window_layers.size()) != config->num_hidden_layers) {
      return root.Error("layer_types", "must name one type per layer (num_hidden_layers)");
    }
    return Status();
  }
  int64_t pattern = 6;
  STAMEN_RETURN_IF_ERROR(root.Optional("_sliding_window_pattern", &pattern));
  STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window_pattern", &pattern));
  if (pattern < 1) return root.Error("sliding_window_pattern", "must be positive");
  for (int64_t i = 0; i < config->num_hidden_layers; ++i) config->sliding_window_layers.push_back((i + 1) % pattern != 0);
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_activation", "gelu_pytorch_tanh", config));
  config->gated_feed_forward = true;
  config->norm_eps = 1e-6;
  STAMEN_RETURN_IF_ERROR(root.Optional("rms_norm_eps", &config->norm_eps));
  config->attention_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  // Soft-capping would tanh-squash the attention scores (or the LM logits); stamen's attention
  // has no such step, so such a model is refused rather than run differently.
  if (root.Has("attn_logit_softcapping")) return root.Error("attn_logit_softcapping", "is not supported (must be null)");
  if (root.Has("final_logit_softcapping")) {
    return root.Error("final_logit_softcapping", "is not supported (must be null)");
  }
  if (root.Has("rope_scaling")) return root.Error("rope_scaling", "is not supported (only plain RoPE)");
  // transformers' defaults: 1e6 on full layers, 1e4 (rope_local_base_freq) on sliding ones;
  // transformers ≥ 5 writes both into rope_parameters, which wins.
  config->rope_theta = 1'000'000.0;
  config->local_rope_theta = 10'000.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("rope_theta", &config->rope_theta));
  STAMEN_RETURN_IF_ERROR(root.Optional("rope_local_base_freq", &config->local_rope_theta));
  JsonObject rope_parameters = root;
  bool has_rope_parameters = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("rope_parameters", &rope_parameters, &has_rope_parameters));
  if (has_rope_parameters) {
    STAMEN_RETURN_IF_ERROR(ReadRopeParameters(rope_parameters, "full_attention", &config->rope_theta));
    STAMEN_RETURN_IF_ERROR(ReadRopeParameters(rope_parameters, "sliding_attention", &config->local_rope_theta));
  }
  if (!(config->rope_theta > 0)) return root.Error("rope_theta", "must be positive");
  if (!(config->local_rope_theta > 0)) return root.Error("rope_local_base_freq", "must be positive");
  if (config->head_dim % 2 != 0) return root.Error("head_dim", "must be even for RoPE");
  STAMEN_RETURN_IF_ERROR(ReadLayerTypes(root, config));
  config->sliding_window = 4096;
  STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window", &config->sliding_window));
  if (config->sliding_window < 1) return root.Error("sliding_window", "must be positive");
  double query_pre_attn_scalar = 256.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("query_pre_attn_scalar", &query_pre_attn_scalar));
  if (!(query_pre_attn_scalar > 0)) return root.Error("query_pre_attn_scalar", "must be positive");
  config->attention_scale = 1.0 / std::sqrt(query_pre_attn_scalar);
  // EmbeddingGemma sets use_bidirectional_attention; Gemma3 language models attend causally.
  bool bidirectional = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("use_bidirectional_attention", &bidirectional));
  config->causal = !bidirectional;
  return family_settings::ReadPadToken(root, config);
}

constexpr std::string_view kPrefixes[] = {"", "model."};

constexpr ArchitectureDefinition kGemma3Architectures[] = {
    {"Gemma3TextModel", ModelHead::kNone, "", "gemma3_text"},
};

}  // namespace

// A decoder in the registry's sense: RoPE, and it may attend causally (Gemma3 language
// models); a bidirectional one (EmbeddingGemma) pools the mean by default, as the engine
// derives from config.causal.
extern const FamilyDefinition kGemma3Family{
    .family = ModelFamily::kGemma3,
    .architectures = kGemma3Architectures,
    .decoder = true,
    .shape_keys = {},
    .weight_prefixes = kPrefixes,
    .prefix_probe = "embed_tokens.weight",
    .read_settings = ReadSettings,
    .tensors = Tensors,
    .load = Load,
};

}  // namespace stamen::engine
