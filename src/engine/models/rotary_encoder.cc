// NomicBERT (nomic-embed-text-v1 / v1.5 / v2-moe) and Alibaba's GTE (gte-base/large-en-v1.5,
// gte-multilingual-base, and its reranker): post-norm encoders with rotary positions and gated
// feed-forwards, as transformers' NomicBertModel and GteModel / GteForSequenceClassification
// compute them. With x the hidden state [T, H]:
//   x = LayerNorm(word[id] + token_type[type])                  no position embeddings
//   per layer:  x = LayerNorm(x + Attention(rotate(x·W_qkvᵀ + b_qkv))·W_oᵀ + b_o)
//               x = LayerNorm(x + (act(x·W_gateᵀ) ⊙ x·W_upᵀ)·W_downᵀ + b_down)
// NomicBERT has no biases (silu) and may rotate only the first rotary_dim dimensions of each
// head (rotary_emb_fraction < 1) and stretch RoPE's base per sequence beyond its trained length
// (dynamic NTK). nomic-embed-text-v2-moe (nomic's remote code) has biases on qkv, o, up and
// down, a plain gelu feed-forward x = LayerNorm(x + gelu(x·W_fc1ᵀ + b)·W_fc2ᵀ + b), and in each
// layer i with i % moe_every_n_layers == 1 a mixture of experts in its place
// (mixture_of_experts.h). GTE has biases on q/k/v, o and down (gelu), its token types only when
// type_vocab_size > 0, and its RoPE may carry the hub's fixed NTK scaling. GTE's
// reranker: logits = classifier(tanh(pooler.dense(x_cls))), as BERT's.
//
// Each family reads two tensor layouts: the hub's remote code (NomicBERT: emb_ln,
// encoder.layers.i.attn.Wqkv / out_proj, mlp.fc11 (up) / fc12 (gate) / fc2 or v2-moe's mlp.fc1 /
// fc2 and mlp.router / mlp.experts, norm1 / norm2; GTE:
// encoder.layer.i.attention.qkv_proj / o_proj, mlp.up_gate_proj (up then gate) / down_proj,
// attn_ln / mlp_ln, "new." before a reranker's backbone), which transformers 5.25's
// save_pretrained writes too (with "gte." for "new."), and transformers' in-memory names, which
// its conversion_mapping.py makes of them (layers.i.self_attn.{q,k,v,o}_proj,
// mlp.{gate,up,down}_proj, post_attention_layernorm, post_mlp_layernorm).
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/models/mixture_of_experts.h"
#include "engine/ops/embedding.h"
#include "engine/ops/norm.h"
#include "engine/ops/rope.h"

namespace stamen::engine {
namespace {

struct RotaryEncoderWeights {
  layers::AbsoluteEmbeddingWeights embeddings;  // no position table
  std::vector<layers::PostNormLayerWeights> layers;
  // Per layer: the experts that replace its feed-forward (nomic-embed-text-v2-moe's layers i with
  // config.IsMixtureOfExpertsLayer(i)), or empty tensors.
  std::vector<layers::MixtureOfExpertsWeights> experts;
  layers::ClassifierWeights head;
};

// Where one layout keeps a layer's tensors, relative to the layer's prefix, without ".weight" /
// ".bias"; a fused projection has one name, split ones three (q, k, v) or two (gate, up).
struct LayerNames {
  std::string layers;  // under the backbone's prefix, before the layer number
  std::vector<std::string> qkv;
  std::string output;
  std::vector<std::string> gate_up;
  bool up_then_gate = false;  // a fused gate_up stores up first (GTE's up_gate_proj)
  std::string down;
  std::string attention_norm, output_norm;
};

LayerNames NamesOf(const ModelConfig& config) {
  const bool nomic = config.family == ModelFamily::kNomicBert;
  if (!config.remote_code_tensors) {
    return {.layers = "layers.",
            .qkv = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
            .output = "self_attn.o_proj",
            .gate_up = {"mlp.gate_proj", "mlp.up_proj"},
            .down = "mlp.down_proj",
            .attention_norm = "post_attention_layernorm",
            .output_norm = "post_mlp_layernorm"};
  }
  if (nomic) {
    // fc12 is the activated gate, fc11 the up projection (TEI's nomic.rs and transformers'
    // conversion mapping agree: fc11 → up_proj, fc12 → gate_proj); the plain MLP's is fc1.
    return {.layers = "encoder.layers.",
            .qkv = {"attn.Wqkv"},
            .output = "attn.out_proj",
            .gate_up = config.gated_feed_forward ? std::vector<std::string>{"mlp.fc12", "mlp.fc11"}
                                                 : std::vector<std::string>{"mlp.fc1"},
            .down = "mlp.fc2",
            .attention_norm = "norm1",
            .output_norm = "norm2"};
  }
  return {.layers = "encoder.layer.",
          .qkv = {"attention.qkv_proj"},
          .output = "attention.o_proj",
          .gate_up = {"mlp.up_gate_proj"},
          .up_then_gate = true,
          .down = "mlp.down_proj",
          .attention_norm = "attn_ln",
          .output_norm = "mlp_ln"};
}

// `names` (each without ".weight" / ".bias") stacked into one [rows, columns] weight and, with
// `bias`, one [rows] bias: a fused tensor alone, or its split parts of equal rows.
void VisitFused(TensorVisitor& visit, const std::string& base, const std::vector<std::string>& names, int64_t rows,
                int64_t columns, bool bias, bool swap_halves, Tensor& weight, Tensor& bias_target) {
  const int64_t part_rows = rows / static_cast<int64_t>(names.size());
  std::vector<TensorSpec> weights, biases;
  for (const std::string& name : names) {
    weights.push_back({base + name + ".weight", {part_rows, columns}});
    biases.push_back({base + name + ".bias", {part_rows}});
  }
  weights[0].swap_row_halves = swap_halves;
  visit.Stacked(weight, weights);
  if (bias) visit.Stacked(bias_target, biases);
}

layers::MixtureOfExpertsSettings ExpertSettings(const ModelConfig& config) {
  return {.activation = config.hidden_act,
          .num_experts = config.num_experts,
          .top_k = config.moe_top_k,
          .intermediate_size = config.intermediate_size};
}

void VisitNorm(TensorVisitor& visit, const std::string& name, int64_t size, Tensor& gamma, Tensor& beta) {
  visit.Tensor(gamma, {name + ".weight", {size}, TensorInit::kNormOne});
  visit.Tensor(beta, {name + ".bias", {size}});
}

void VisitTensors(const ModelConfig& config, const std::string& prefix, RotaryEncoderWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  // GTE: biases on qkv, o and down; nomic-embed-text-v2-moe: on all four.
  const bool gte = config.family == ModelFamily::kGte;
  const bool biases = gte || config.attention_bias;
  const bool up_bias = !gte && config.feed_forward_bias;
  const int64_t up_rows = config.gated_feed_forward ? 2 * ffn : ffn;
  const layers::MixtureOfExpertsSettings experts = ExpertSettings(config);
  layers::AbsoluteEmbeddingWeights& embeddings = weights.embeddings;
  visit.Tensor(embeddings.word, {prefix + "embeddings.word_embeddings.weight", {config.vocab_size, h}});
  if (config.type_vocab_size > 0) {
    visit.Tensor(embeddings.token_type,
                 {prefix + "embeddings.token_type_embeddings.weight", {config.type_vocab_size, h}});
  }
  const bool nomic_hub = config.family == ModelFamily::kNomicBert && config.remote_code_tensors;
  VisitNorm(visit, prefix + (nomic_hub ? "emb_ln" : "embeddings.LayerNorm"), h, embeddings.norm_gamma,
            embeddings.norm_beta);
  const LayerNames names = NamesOf(config);
  weights.layers.resize(config.num_hidden_layers);
  weights.experts.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layers::PostNormLayerWeights& layer = weights.layers[i];
    const std::string base = prefix + names.layers + std::to_string(i) + ".";
    VisitFused(visit, base, names.qkv, 3 * h, h, biases, false, layer.attention.qkv_weight, layer.attention.qkv_bias);
    visit.Tensor(layer.attention.output_weight, {base + names.output + ".weight", {h, h}});
    if (biases) visit.Tensor(layer.attention.output_bias, {base + names.output + ".bias", {h}});
    VisitNorm(visit, base + names.attention_norm, h, layer.attention_norm_gamma, layer.attention_norm_beta);
    if (config.IsMixtureOfExpertsLayer(i)) {
      layers::VisitMixtureOfExperts(visit, weights.experts[i], base + "mlp.", experts, h);
    } else {
      VisitFused(visit, base, names.gate_up, up_rows, h, up_bias, names.up_then_gate, layer.feed_forward.up_weight,
                 layer.feed_forward.up_bias);
      visit.Tensor(layer.feed_forward.down_weight, {base + names.down + ".weight", {h, ffn}});
      if (biases) visit.Tensor(layer.feed_forward.down_bias, {base + names.down + ".bias", {h}});
    }
    VisitNorm(visit, base + names.output_norm, h, layer.output_norm_gamma, layer.output_norm_beta);
  }
  if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, weights.head, prefix + "pooler.dense", "classifier", h, config.num_labels);
  }
}

class RotaryEncoderModel final : public layers::ClassifierEncoderModel<RotaryEncoderWeights> {
 public:
  using ClassifierEncoderModel::ClassifierEncoderModel;
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  // The experts are routed on the host (mixture_of_experts.h).
  bool Graphable() const override { return config_.num_experts == 0; }
};

StatusOr<Tensor> RotaryEncoderModel::Forward(const ModelInput& input) {
  layers::Slots slots(workspace_);
  const int64_t tokens = input.token_ids.dim(0);
  Tensor hidden = slots.Get(placement_.dtype, {tokens, config_.hidden_size});
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  // NomicBERT's partial rotary turns the first rotary_dim dimensions of each head.
  const int64_t rotated = config_.rotary_dim > 0 ? config_.rotary_dim : config_.head_dim;
  Tensor rope = slots.Get(DataType::kF32, {tokens, rotated});
  STAMEN_RETURN_IF_ERROR(slots.status());
  const float eps = static_cast<float>(config_.norm_eps);
  // Positions restart at 0 in every sequence, made on the device so a replayed graph recomputes
  // them; dynamic NTK scaling reads each sequence's length from the same boundaries.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, 0, positions));
  STAMEN_RETURN_IF_ERROR(ops::RopeTable(positions, config_.rope_theta, rope, config_.rope_scaling, input.cu_seqlens));
  // Without a position table, EmbedAbsolute adds the token types alone.
  STAMEN_RETURN_IF_ERROR(layers::EmbedAbsolute(weights_.embeddings, input, 0, eps, slots.Nested(), hidden));
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim},
      .options = {},
      .norm_eps = 0.0f,
      .rope = &rope};
  const layers::FeedForwardSettings feed_forward{.activation = config_.hidden_act,
                                                 .gated = config_.gated_feed_forward,
                                                 .intermediate_size = config_.intermediate_size};
  const layers::MixtureOfExpertsSettings experts = ExpertSettings(config_);
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    const layers::PostNormLayerWeights& layer = weights_.layers[i];
    if (!config_.IsMixtureOfExpertsLayer(static_cast<int64_t>(i))) {
      STAMEN_RETURN_IF_ERROR(
          layers::PostNormLayer(layer, attention, feed_forward, eps, input.cu_seqlens, slots.Nested(), hidden));
      continue;
    }
    // PostNormLayer with the experts in the feed-forward's place.
    layers::Slots nested = slots.Nested();
    Tensor projected = nested.Get(hidden.dtype(), hidden.shape());
    STAMEN_RETURN_IF_ERROR(nested.status());
    STAMEN_RETURN_IF_ERROR(layers::SelfAttention(layer.attention, attention, hidden, input.cu_seqlens, nested.Nested(),
                                                 projected, /*accumulate=*/false));
    STAMEN_RETURN_IF_ERROR(
        ops::LayerNorm(projected, hidden, layer.attention_norm_gamma, layer.attention_norm_beta, eps, hidden));
    STAMEN_RETURN_IF_ERROR(layers::MixtureOfExperts(weights_.experts[i], experts, hidden, nested.Nested(), projected));
    STAMEN_RETURN_IF_ERROR(
        ops::LayerNorm(projected, hidden, layer.output_norm_gamma, layer.output_norm_beta, eps, hidden));
  }
  return hidden;
}

constexpr std::string_view kNomicPrefixes[] = {"", "nomic_bert."};
constexpr std::string_view kGtePrefixes[] = {"", "gte.", "new."};

// The layout is the tensors': the hub's names (what its folders and transformers 5.25's
// save_pretrained both write) unless transformers' in-memory ones are present under one of the
// family's prefixes (a plain state_dict save).
StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  if (config.num_key_value_heads != config.num_attention_heads ||
      config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("rotary encoders need head_dim × num_attention_heads = hidden_size and no grouped heads");
  }
  ModelConfig layout = config;
  layout.remote_code_tensors = false;
  const LayerNames transformers_names = NamesOf(layout);
  const auto& prefixes = config.family == ModelFamily::kNomicBert ? std::span<const std::string_view>(kNomicPrefixes)
                                                                    : std::span<const std::string_view>(kGtePrefixes);
  layout.remote_code_tensors = true;
  for (std::string_view prefix : prefixes) {
    const std::string probe =
        std::string(prefix) + transformers_names.layers + "0." + transformers_names.output_norm + ".weight";
    if (weights.Contains(probe)) layout.remote_code_tensors = false;
  }
  if (!layout.remote_code_tensors && config.family == ModelFamily::kNomicBert && !config.gated_feed_forward) {
    // transformers' NomicBertModel has only the gated feed-forward; v2-moe ships the hub's names.
    return Status::Error("gelu NomicBERT (nomic-embed-text-v2-moe) is read in the hub's tensor layout only "
                         "(encoder.layers.i.mlp.fc1, …), not transformers' in-memory names");
  }
  return LoadSchemaModel<RotaryEncoderModel, VisitTensors>(layout, weights, placement);
}

}  // namespace

extern const FamilyDefinition kNomicBertFamily{
    .weight_prefixes = kNomicPrefixes,
    .tensors = SchemaTensors<RotaryEncoderWeights, VisitTensors>, .load = Load};
extern const FamilyDefinition kGteFamily{
    .weight_prefixes = kGtePrefixes,
    .tensors = SchemaTensors<RotaryEncoderWeights, VisitTensors>, .load = Load};

}  // namespace stamen::engine
