// Qwen2, Qwen3, Llama and Mistral decoders as embedding models (pre-RMSNorm transformer,
// rotary positions, grouped-query attention, SwiGLU feed-forward, no KV cache: each step sees
// whole sequences). Llama and Mistral are Qwen2 without the q/k/v biases (unless Llama's
// attention_bias), Mistral with a causal sliding window (e5-mistral, SFR, Linq embedders).
//
// Per layer, with x the hidden state [T, H]:
//   qkv = RMSNorm(x)·W_qkvᵀ (+ b_qkv on Qwen2)   then, on Qwen3, RMSNorm of each q/k head;
//   rotate q and k by RoPE;   x += Attention(qkv)·W_oᵀ
//   x += (silu(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ,  n = RMSNorm(x)
// and a final RMSNorm. Positions restart at 0 for every sequence of the ragged batch.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/ops/embedding.h"
#include "engine/ops/norm.h"
#include "engine/ops/rope.h"

namespace stamen::engine {
namespace {

struct DecoderLayer {
  Tensor input_norm;
  layers::AttentionWeights attention;
  Tensor post_attention_norm;
  layers::FeedForwardWeights feed_forward;
};

struct QwenWeights {
  Tensor embeddings;
  Tensor final_norm;
  std::vector<DecoderLayer> layers;
};

// The tensor schema, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, QwenWeights& weights, TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const int64_t d = config.head_dim;
  const int64_t q_rows = config.num_attention_heads * d;
  const int64_t kv_rows = config.num_key_value_heads * d;
  const int64_t ffn = config.intermediate_size;
  const bool qwen3 = config.family == ModelFamily::kQwen3;
  visit.Tensor(weights.embeddings, {prefix + "embed_tokens.weight", {config.vocab_size, h}});
  weights.layers.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    DecoderLayer& layer = weights.layers[i];
    const std::string base = prefix + "layers." + std::to_string(i) + ".";
    const std::string attention = base + "self_attn.";
    visit.Tensor(layer.input_norm, {base + "input_layernorm.weight", {h}, TensorInit::kNormOne});
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
    if (qwen3) {
      visit.Tensor(layer.attention.query_norm, {attention + "q_norm.weight", {d}, TensorInit::kNormOne});
      visit.Tensor(layer.attention.key_norm, {attention + "k_norm.weight", {d}, TensorInit::kNormOne});
    }
    visit.Tensor(layer.attention.output_weight, {attention + "o_proj.weight", {h, q_rows}});
    visit.Tensor(layer.post_attention_norm, {base + "post_attention_layernorm.weight", {h}, TensorInit::kNormOne});
    const TensorSpec gate_up[] = {{base + "mlp.gate_proj.weight", {ffn, h}}, {base + "mlp.up_proj.weight", {ffn, h}}};
    visit.Stacked(layer.feed_forward.up_weight, gate_up);
    visit.Tensor(layer.feed_forward.down_weight, {base + "mlp.down_proj.weight", {h, ffn}});
  }
  visit.Tensor(weights.final_norm, {prefix + "norm.weight", {h}, TensorInit::kNormOne});
}

enum Slot : size_t { kHidden, kPositions, kRope, kLayerSlots };

class QwenModel final : public Model {
 public:
  QwenModel(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  int64_t max_sequence_length() const override { return std::max<int64_t>(config_.max_position_embeddings, 0); }

  ModelConfig config_;
  QwenWeights weights_;

 private:
  Status RunLayer(const DecoderLayer& layer, const ModelInput& input, const Tensor& rope, Tensor& hidden);
};

Status QwenModel::RunLayer(const DecoderLayer& layer, const ModelInput& input, const Tensor& rope, Tensor& hidden) {
  const float eps = static_cast<float>(config_.norm_eps);
  layers::Slots slots(workspace_, kLayerSlots);
  Tensor normed = slots.Get(placement_.dtype, hidden.shape());
  STAMEN_RETURN_IF_ERROR(slots.status());
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_key_value_heads, config_.head_dim},
      .options = {.causal = config_.causal, .window = config_.sliding_window},
      .norm_eps = eps,
      .rope = &rope};
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, layer.input_norm, eps, normed));
  STAMEN_RETURN_IF_ERROR(
      layers::SelfAttention(layer.attention, attention, normed, input.cu_seqlens, slots.Nested(), hidden, true));
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, layer.post_attention_norm, eps, normed));
  const layers::FeedForwardSettings feed_forward{
      .activation = config_.hidden_act, .gated = true, .intermediate_size = config_.intermediate_size};
  return layers::FeedForward(layer.feed_forward, feed_forward, normed, slots.Nested(), hidden, true);
}

StatusOr<Tensor> QwenModel::Forward(const ModelInput& input) {
  const int64_t tokens = input.token_ids.dim(0);
  layers::Slots slots(workspace_, kHidden);
  Tensor hidden = slots.Get(placement_.dtype, {tokens, config_.hidden_size});
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  Tensor rope = slots.Get(DataType::kF32, {tokens, config_.head_dim});
  STAMEN_RETURN_IF_ERROR(slots.status());
  // Lengths were checked by the engine; positions restart at 0 per sequence, on the device.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, 0, positions));
  STAMEN_RETURN_IF_ERROR(ops::Gather(weights_.embeddings, input.token_ids, hidden));
  STAMEN_RETURN_IF_ERROR(ops::RopeTable(positions, config_.rope_theta, rope));
  for (const DecoderLayer& layer : weights_.layers) STAMEN_RETURN_IF_ERROR(RunLayer(layer, input, rope, hidden));
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, weights_.final_norm, static_cast<float>(config_.norm_eps), hidden));
  return hidden;
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  auto model = std::make_unique<QwenModel>(config, placement);
  STAMEN_RETURN_IF_ERROR(LoadTensors<QwenWeights>(config, weights, placement, VisitTensors, model->weights_));
  return std::unique_ptr<Model>(std::move(model));
}

std::vector<TensorSpec> Tensors(const ModelConfig& config, const std::string& prefix) {
  return CollectTensors<QwenWeights>(config, prefix, VisitTensors);
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "silu", config));
  if (config->hidden_act != ops::Activation::kSilu) return root.Error("hidden_act", "must be silu");
  config->gated_feed_forward = true;
  config->norm_eps = 1e-6;
  STAMEN_RETURN_IF_ERROR(root.Optional("rms_norm_eps", &config->norm_eps));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config));
  // Qwen2 always has q/k/v biases; the others none unless their config sets attention_bias.
  config->attention_bias = config->family == ModelFamily::kQwen2;
  if (config->family != ModelFamily::kQwen2) STAMEN_RETURN_IF_ERROR(root.Optional("attention_bias", &config->attention_bias));
  bool mlp_bias = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("mlp_bias", &mlp_bias));
  if (mlp_bias) return root.Error("mlp_bias", "is not supported (feed-forward layers without biases only)");
  if (config->family == ModelFamily::kMistral) {
    STAMEN_RETURN_IF_ERROR(root.Optional("sliding_window", &config->sliding_window));
    if (config->sliding_window < 0) return root.Error("sliding_window", "must not be negative");
  } else {
    // Qwen2's per-layer windows (use_sliding_window with max_window_layers) are not built.
    bool use_sliding_window = false;
    STAMEN_RETURN_IF_ERROR(root.Optional("use_sliding_window", &use_sliding_window));
    if (use_sliding_window) return root.Error("use_sliding_window", "is not supported");
  }
  config->causal = true;
  STAMEN_RETURN_IF_ERROR(root.Optional("is_causal", &config->causal));
  return Status();
}

constexpr std::string_view kPrefixes[] = {"", "model."};

constexpr ArchitectureDefinition kQwen2Architectures[] = {
    {"Qwen2Model", ModelHead::kNone, "", "qwen2"},
    {"Qwen2ForCausalLM", ModelHead::kNone, "model.", ""},  // embedding use ignores lm_head
};

constexpr ArchitectureDefinition kLlamaArchitectures[] = {
    {"LlamaModel", ModelHead::kNone, "", "llama"},
    {"LlamaForCausalLM", ModelHead::kNone, "model.", ""},
};

constexpr ArchitectureDefinition kMistralArchitectures[] = {
    {"MistralModel", ModelHead::kNone, "", "mistral"},
    {"MistralForCausalLM", ModelHead::kNone, "model.", ""},
};

constexpr ArchitectureDefinition kQwen3Architectures[] = {
    {"Qwen3Model", ModelHead::kNone, "", "qwen3"},
    {"Qwen3ForCausalLM", ModelHead::kNone, "model.", ""},
};

// The four decoder families share everything but their architectures and family value.
constexpr FamilyDefinition DecoderFamily(ModelFamily family, std::span<const ArchitectureDefinition> architectures) {
  return {.family = family,
          .architectures = architectures,
          .decoder = true,
          .shape_keys = {},
          .weight_prefixes = kPrefixes,
          .prefix_probe = "embed_tokens.weight",
          .read_settings = ReadSettings,
          .tensors = Tensors,
          .load = Load};
}

}  // namespace

extern const FamilyDefinition kQwen2Family = DecoderFamily(ModelFamily::kQwen2, kQwen2Architectures);
extern const FamilyDefinition kQwen3Family = DecoderFamily(ModelFamily::kQwen3, kQwen3Architectures);
extern const FamilyDefinition kLlamaFamily = DecoderFamily(ModelFamily::kLlama, kLlamaArchitectures);
extern const FamilyDefinition kMistralFamily = DecoderFamily(ModelFamily::kMistral, kMistralArchitectures);

}  // namespace stamen::engine
