// Gemma (1) decoders (GemmaModel, GemmaForCausalLM: bge-reranker-v2-gemma as a yes/no
// reranker): Llama's pre-norm blocks with Gemma's RMSNorm, which multiplies by (1 + w) (the
// loader adds the 1, TensorSpec::load_offset), embeddings scaled by sqrt(hidden), a GeGLU
// feed-forward (tanh GELU), rotary positions, multi- or grouped-query attention scaled by
// head_dim^-0.5, and the output projection tied to the embedding table. No KV cache.
//
// Per layer, with x the hidden state [T, H]:
//   x += Attention(rotate(RMSNorm_input(x)·W_qkvᵀ))·W_oᵀ
//   x += (gelu_tanh(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ,  n = RMSNorm_post_attention(x)
// and a final RMSNorm (transformers' modeling_gemma.py).
#include <cmath>
#include <string>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

// The tensor schema, as save_pretrained names it; attention_bias puts a bias on all four
// projections (GemmaAttention).
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PreNormDecoderWeights& weights,
                  TensorVisitor& visit) {
  const layers::PreNormDecoderSchema schema{
      .feed_forward_norm = "post_attention_layernorm",
      .norm = layers::GemmaNormSpec,
      .output_bias = config.attention_bias,
      .embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(config.hidden_size)))};
  layers::VisitPreNormDecoder(visit, weights, prefix, schema, config);
  // An untied output projection: written by make-model, never loaded whole.
  if (config.architecture == "GemmaForCausalLM" && !config.tie_word_embeddings) {
    visit.Tensor(weights.score, {"lm_head.weight", {config.vocab_size, config.hidden_size}, TensorInit::kNormal,
                                 TensorPresence::kUnread});
  }
}

constexpr std::string_view kPrefixes[] = {"", "model."};

}  // namespace

extern const FamilyDefinition kGemmaFamily{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<layers::PreNormDecoderWeights, VisitTensors>, .load = layers::LoadPreNormDecoder<VisitTensors>};

}  // namespace stamen::engine
