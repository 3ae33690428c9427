// DeBERTa-v2 and DeBERTa-v3 encoders and their sequence classifiers (mxbai-rerank-v1, the NLI
// cross-encoders). BERT's post-LayerNorm layer with disentangled attention: besides q·k, each
// score gains content→position (q_i · position_key[δ]) and position→content (k_j ·
// position_query[δ]) terms, δ the row of i − j in one table of relative embeddings shared by
// every layer (log-bucketed with position_buckets, optionally LayerNorm-ed), projected by each
// layer's own query/key weights (share_att_key, v3) or by its pos_query_proj / pos_key_proj
// (v2). Scores are scaled by 1/sqrt(head_dim · (1 + number of terms)). v3 adds no absolute
// positions (position_biased_input false) and has no token types (type_vocab_size 0).
//
// The projected relative embeddings depend on the weights alone, so they are computed once at
// load ([2·span, 2·hidden] per layer, with the placement's ops: LayerNorm and gemm, so on the
// CPU or the GPU alike) and the attention op gathers from them (ops/attention.h; both backends'
// kernels add c2p and p2c).
// The classifier: ContextPooler (act(dense(x_cls)), pooler_hidden_act) then classifier.
#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"

namespace stamen::engine {
namespace {

// A v2 layer's own position projections, stacked: pos_query_proj (p2c) rows, then
// pos_key_proj (c2p) rows; only those its pos_att_type uses.
struct PositionProjectionWeights {
  Tensor weight, bias;
};

struct DebertaWeights {
  layers::AbsoluteEmbeddingWeights embeddings;  // position: only with position_biased_input
  std::vector<layers::PostNormLayerWeights> layers;
  std::vector<PositionProjectionWeights> position_projections;  // without share_att_key
  Tensor relative_embeddings;                      // [2·span, hidden], with relative_attention
  Tensor relative_norm_gamma, relative_norm_beta;  // norm_rel_ebd "layer_norm", else empty
  layers::ClassifierWeights head;                  // pooler.dense, classifier
};

const layers::PostNormLayerNames kLayerNames = {
    .query = "attention.self.query_proj",
    .key = "attention.self.key_proj",
    .value = "attention.self.value_proj",
    .output = "attention.output.dense",
    .attention_norm = "attention.output.LayerNorm",
    .up = "intermediate.dense",
    .down = "output.dense",
    .output_norm = "output.LayerNorm",
};

// Whether the layers add a position term at all (relative_attention with c2p or p2c).
bool UsesPositionTerms(const DisentangledAttentionConfig& settings) {
  return settings.relative_attention && (settings.content_to_position || settings.position_to_content);
}

// The tensor schema: every weight, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, DebertaWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const DisentangledAttentionConfig& settings = config.disentangled;
  layers::AbsoluteEmbeddingWeights& embeddings = weights.embeddings;
  const std::string embeddings_prefix = prefix + "embeddings.";
  visit.Tensor(embeddings.word, {embeddings_prefix + "word_embeddings.weight", {config.vocab_size, h}});
  if (settings.position_biased_input) {
    visit.Tensor(embeddings.position,
                 {embeddings_prefix + "position_embeddings.weight", {config.max_position_embeddings, h}});
  }
  if (config.type_vocab_size > 0) {
    visit.Tensor(embeddings.token_type,
                 {embeddings_prefix + "token_type_embeddings.weight", {config.type_vocab_size, h}});
  }
  visit.Tensor(embeddings.norm_gamma, {embeddings_prefix + "LayerNorm.weight", {h}, TensorInit::kNormOne});
  visit.Tensor(embeddings.norm_beta, {embeddings_prefix + "LayerNorm.bias", {h}});
  layers::VisitPostNormLayers(visit, weights.layers, prefix + "encoder.layer.", kLayerNames, config);
  if (settings.relative_attention) {
    visit.Tensor(weights.relative_embeddings, {prefix + "encoder.rel_embeddings.weight", {2 * settings.RelativeSpan(), h}});
    if (settings.norm_relative_embeddings) {
      visit.Tensor(weights.relative_norm_gamma, {prefix + "encoder.LayerNorm.weight", {h}, TensorInit::kNormOne});
      visit.Tensor(weights.relative_norm_beta, {prefix + "encoder.LayerNorm.bias", {h}});
    }
    if (!settings.share_att_key) {
      weights.position_projections.resize(config.num_hidden_layers);
      for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
        const std::string base = prefix + "encoder.layer." + std::to_string(i) + ".attention.self.";
        std::vector<TensorSpec> weight_parts, bias_parts;
        for (const auto& [used, name] : {std::pair{settings.position_to_content, "pos_query_proj"},
                                         std::pair{settings.content_to_position, "pos_key_proj"}}) {
          if (!used) continue;
          weight_parts.push_back({base + name + ".weight", {h, h}});
          bias_parts.push_back({base + name + ".bias", {h}});
        }
        if (weight_parts.empty()) continue;
        visit.Stacked(weights.position_projections[i].weight, weight_parts);
        visit.Stacked(weights.position_projections[i].bias, bias_parts);
      }
    }
  }
  if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, weights.head, "pooler.dense", "classifier", h, config.num_labels);
  }
}

enum Slot : size_t { kHidden, kEmbeddingSlots, kLayerSlots = kEmbeddingSlots + 2 };

class DebertaModel final : public Model {
 public:
  DebertaModel(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden) override;
  int64_t max_sequence_length() const override { return config_.max_position_embeddings; }

  // The layers' position biases from the loaded weights (see the file comment).
  Status PrepareRelativePositions();

  ModelConfig config_;
  DebertaWeights weights_;
  std::vector<ops::DisentangledPositionBias> position_biases_;  // one per layer, or none

 private:
  Status Embed(const ModelInput& input, layers::Slots slots, Tensor& hidden) const;
};

Status DebertaModel::PrepareRelativePositions() {
  const DisentangledAttentionConfig& settings = config_.disentangled;
  if (!UsesPositionTerms(settings)) return Status();
  const int64_t h = config_.hidden_size;
  const int64_t rows = 2 * settings.RelativeSpan();
  auto relative = Tensor::Allocate(placement_.dtype, {rows, h}, placement_.device);
  if (!relative.ok()) return relative.status();
  if (settings.norm_relative_embeddings) {
    STAMEN_RETURN_IF_ERROR(ops::LayerNorm(weights_.relative_embeddings, Tensor(), weights_.relative_norm_gamma,
                                          weights_.relative_norm_beta, static_cast<float>(config_.norm_eps),
                                          *relative));
  } else {
    STAMEN_RETURN_IF_ERROR(CopyTensor(weights_.relative_embeddings, *relative));
  }
  position_biases_.resize(weights_.layers.size());
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    ops::DisentangledPositionBias& bias = position_biases_[i];
    bias.span = static_cast<int32_t>(settings.RelativeSpan());
    bias.position_buckets = static_cast<int32_t>(settings.position_buckets);
    bias.max_relative_positions = static_cast<int32_t>(settings.max_relative_positions);
    Tensor weight, bias_vector;
    if (settings.share_att_key) {
      // The layer's query and key rows of its stacked q|k|v projection.
      weight = weights_.layers[i].attention.qkv_weight.Rows(0, 2 * h);
      bias_vector = weights_.layers[i].attention.qkv_bias.Rows(0, 2 * h);
      bias.query_column = settings.position_to_content ? 0 : -1;
      bias.key_column = settings.content_to_position ? h : -1;
    } else {
      weight = weights_.position_projections[i].weight;
      bias_vector = weights_.position_projections[i].bias;
      bias.query_column = settings.position_to_content ? 0 : -1;
      bias.key_column = settings.content_to_position ? (settings.position_to_content ? h : 0) : -1;
    }
    auto projections = Tensor::Allocate(placement_.dtype, {rows, weight.dim(0)}, placement_.device);
    if (!projections.ok()) return projections.status();
    STAMEN_RETURN_IF_ERROR(ops::Gemm(*relative, weight, bias_vector, *projections));
    bias.projections = std::move(projections.value());
  }
  // Only the projections are read from here on.
  weights_.relative_embeddings = Tensor();
  weights_.position_projections.clear();
  return Status();
}

Status DebertaModel::Embed(const ModelInput& input, layers::Slots slots, Tensor& hidden) const {
  const float eps = static_cast<float>(config_.norm_eps);
  // position_biased_input false (v3) leaves the position table empty: positions enter as relative only.
  return layers::EmbedAbsolute(weights_.embeddings, input, /*position_offset=*/0, eps, slots, hidden);
}

StatusOr<Tensor> DebertaModel::Forward(const ModelInput& input) {
  const int64_t tokens = input.token_ids.dim(0);
  layers::Slots slots(workspace_, kHidden);
  Tensor hidden = slots.Get(placement_.dtype, {tokens, config_.hidden_size});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(Embed(input, slots.Nested(), hidden));
  // transformers counts c2p and p2c in the scale even without relative_attention.
  const DisentangledAttentionConfig& settings = config_.disentangled;
  const int scale_factor = 1 + int{settings.content_to_position} + int{settings.position_to_content};
  const float scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim * scale_factor));
  const layers::FeedForwardSettings feed_forward{.activation = config_.hidden_act,
                                                 .intermediate_size = config_.intermediate_size};
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    const layers::AttentionSettings attention{
        .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim},
        .options = {.scale = scale,
                    .disentangled_bias = position_biases_.empty() ? nullptr : &position_biases_[i]}};
    STAMEN_RETURN_IF_ERROR(layers::PostNormLayer(weights_.layers[i], attention, feed_forward,
                                                 static_cast<float>(config_.norm_eps), input.cu_seqlens,
                                                 layers::Slots(workspace_, kLayerSlots), hidden));
  }
  return hidden;
}

StatusOr<Tensor> DebertaModel::Classify(const ModelInput& input, const Tensor& hidden) {
  if (config_.head != ModelHead::kSequenceClassification) return Model::Classify(input, hidden);
  return layers::Classify(weights_.head, config_, input, hidden, head_workspace_);
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  if (config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("DeBERTa needs hidden_size to be a multiple of num_attention_heads");
  }
  auto model = std::make_unique<DebertaModel>(config, placement);
  STAMEN_RETURN_IF_ERROR(LoadTensors<DebertaWeights>(config, weights, placement, VisitTensors, model->weights_));
  STAMEN_RETURN_IF_ERROR(model->PrepareRelativePositions());
  return std::unique_ptr<Model>(std::move(model));
}


constexpr std::string_view kPrefixes[] = {"", "deberta."};

}  // namespace

extern const FamilyDefinition kDebertaFamily{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<DebertaWeights, VisitTensors>,
    .load = Load,
};

}  // namespace stamen::engine
