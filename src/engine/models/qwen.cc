// Qwen2 and Qwen3 decoders as embedding models (pre-RMSNorm transformer, rotary positions,
// grouped-query attention, SwiGLU feed-forward, no KV cache: each step sees whole sequences).
//
// Per layer, with x the hidden state [T, H]:
//   qkv = RMSNorm(x)·W_qkvᵀ (+ b_qkv on Qwen2)   then, on Qwen3, RMSNorm of each q/k head;
//   rotate q and k by RoPE;   x += Attention(qkv)·W_oᵀ
//   x += (silu(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ,  n = RMSNorm(x)
// and a final RMSNorm. Positions restart at 0 for every sequence of the ragged batch.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/models/model.h"
#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/rope.h"

namespace stamen::engine {
namespace {

struct DecoderLayer {
  Tensor input_norm;
  Tensor qkv_weight, qkv_bias;  // bias only on Qwen2
  Tensor query_norm, key_norm;  // Qwen3 only
  Tensor output_weight;
  Tensor post_attention_norm;
  Tensor gate_up_weight;  // gate rows then up rows
  Tensor down_weight;
};

enum Slot : size_t { kHidden, kNormed, kQkv, kContext, kGateUp, kActivated, kPositions, kRope };

class QwenModel final : public Model {
 public:
  static StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                                const Placement& placement);
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  int64_t max_sequence_length() const override { return std::max<int64_t>(config_.max_position_embeddings, 0); }

 private:
  QwenModel(const ModelConfig& config, const Placement& placement)
      : Model(placement),
        config_(config),
        layout_{config.num_attention_heads, config.num_key_value_heads, config.head_dim} {}
  Status LoadWeights(const WeightStore& weights);
  Status RunLayer(const DecoderLayer& layer, const ModelInput& input, const Tensor& rope, Tensor& hidden);

  ModelConfig config_;
  ops::QkvLayout layout_;
  Tensor embeddings_;
  Tensor final_norm_;
  std::vector<DecoderLayer> layers_;
};

StatusOr<std::unique_ptr<Model>> QwenModel::Load(const ModelConfig& config, const WeightStore& weights,
                                                 const Placement& placement) {
  std::unique_ptr<QwenModel> model(new QwenModel(config, placement));
  STAMEN_RETURN_IF_ERROR(model->LoadWeights(weights));
  return std::unique_ptr<Model>(std::move(model));
}

Status QwenModel::LoadWeights(const WeightStore& weights) {
  const int64_t h = config_.hidden_size;
  const int64_t d = config_.head_dim;
  const int64_t q_rows = layout_.num_heads * d;
  const int64_t kv_rows = layout_.num_kv_heads * d;
  const int64_t ffn = config_.intermediate_size;
  const bool qwen3 = config_.family == ModelFamily::kQwen3;
  const std::vector<std::string> prefixes = {"", "model."};
  auto found = model_weights::FindPrefix(weights, prefixes, "embed_tokens.weight");
  if (!found.ok()) return found.status();
  const std::string prefix = *found;
  model_weights::TensorLoader loader(weights, placement_);
  auto load = [&](Tensor& target, const std::string& name, const Shape& shape) { loader.Load(target, name, shape); };
  auto stack = [&](Tensor& target, const std::vector<std::string>& names, const std::vector<int64_t>& rows,
                   int64_t columns) { loader.Stack(target, names, rows, columns); };
  load(embeddings_, prefix + "embed_tokens.weight", {config_.vocab_size, h});
  load(final_norm_, prefix + "norm.weight", {h});
  layers_.resize(config_.num_hidden_layers);
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    DecoderLayer& layer = layers_[i];
    const std::string base = prefix + "layers." + std::to_string(i) + ".";
    const std::string attention = base + "self_attn.";
    load(layer.input_norm, base + "input_layernorm.weight", {h});
    stack(layer.qkv_weight, {attention + "q_proj.weight", attention + "k_proj.weight", attention + "v_proj.weight"},
          {q_rows, kv_rows, kv_rows}, h);
    // Qwen2 always has q/k/v biases; Qwen3 has none unless its config sets attention_bias.
    if (weights.Contains(attention + "q_proj.bias") || !qwen3) {
      stack(layer.qkv_bias, {attention + "q_proj.bias", attention + "k_proj.bias", attention + "v_proj.bias"},
            {q_rows, kv_rows, kv_rows}, 0);
    }
    if (qwen3) {
      load(layer.query_norm, attention + "q_norm.weight", {d});
      load(layer.key_norm, attention + "k_norm.weight", {d});
    }
    load(layer.output_weight, attention + "o_proj.weight", {h, q_rows});
    load(layer.post_attention_norm, base + "post_attention_layernorm.weight", {h});
    stack(layer.gate_up_weight, {base + "mlp.gate_proj.weight", base + "mlp.up_proj.weight"}, {ffn, ffn}, h);
    load(layer.down_weight, base + "mlp.down_proj.weight", {h, ffn});
  }
  return loader.status();
}

Status QwenModel::RunLayer(const DecoderLayer& layer, const ModelInput& input, const Tensor& rope, Tensor& hidden) {
  const int64_t tokens = hidden.dim(0);
  const float eps = static_cast<float>(config_.norm_eps);
  const DataType type = placement_.dtype;
  auto normed = workspace_.Get(kNormed, type, {tokens, config_.hidden_size});
  auto qkv = workspace_.Get(kQkv, type, {tokens, layout_.row_size()});
  auto context = workspace_.Get(kContext, type, {tokens, layout_.num_heads * layout_.head_dim});
  auto gate_up = workspace_.Get(kGateUp, type, {tokens, 2 * config_.intermediate_size});
  auto activated = workspace_.Get(kActivated, type, {tokens, config_.intermediate_size});
  for (const auto* buffer : {&normed, &qkv, &context, &gate_up, &activated}) {
    if (!buffer->ok()) return buffer->status();
  }
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, layer.input_norm, eps, *normed));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(*normed, layer.qkv_weight, layer.qkv_bias, *qkv));
  if (!layer.query_norm.empty()) {
    STAMEN_RETURN_IF_ERROR(ops::RmsNormHeads(*qkv, layout_, layer.query_norm, layer.key_norm, eps));
  }
  STAMEN_RETURN_IF_ERROR(ops::ApplyRope(*qkv, layout_, rope));
  STAMEN_RETURN_IF_ERROR(ops::Attention(*qkv, input.cu_seqlens, layout_, {.causal = config_.causal}, *context));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(*context, layer.output_weight, Tensor(), hidden, {.accumulate = true}));
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(hidden, layer.post_attention_norm, eps, *normed));
  STAMEN_RETURN_IF_ERROR(ops::Gemm(*normed, layer.gate_up_weight, Tensor(), *gate_up));
  STAMEN_RETURN_IF_ERROR(ops::SiluMul(*gate_up, *activated));
  return ops::Gemm(*activated, layer.down_weight, Tensor(), hidden, {.accumulate = true});
}

StatusOr<Tensor> QwenModel::Forward(const ModelInput& input) {
  const int64_t tokens = input.token_ids.dim(0);
  auto hidden = workspace_.Get(kHidden, placement_.dtype, {tokens, config_.hidden_size});
  auto positions = workspace_.Get(kPositions, DataType::kI32, {tokens});
  auto rope = workspace_.Get(kRope, DataType::kF32, {tokens, config_.head_dim});
  for (const auto* buffer : {&hidden, &positions, &rope}) {
    if (!buffer->ok()) return buffer->status();
  }
  // Lengths were checked by the engine; positions restart at 0 per sequence, on the device.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, 0, *positions));
  STAMEN_RETURN_IF_ERROR(ops::Gather(embeddings_, input.token_ids, *hidden));
  STAMEN_RETURN_IF_ERROR(ops::RopeTable(*positions, config_.rope_theta, *rope));
  for (const DecoderLayer& layer : layers_) STAMEN_RETURN_IF_ERROR(RunLayer(layer, input, *rope, *hidden));
  STAMEN_RETURN_IF_ERROR(ops::RmsNorm(*hidden, final_norm_, static_cast<float>(config_.norm_eps), *hidden));
  return hidden;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> LoadQwenModel(const ModelConfig& config, const WeightStore& weights,
                                               const Placement& placement) {
  return QwenModel::Load(config, weights, placement);
}

}  // namespace stamen::engine
