// Gemma 2 and Gemma 3 text decoders, which share their blocks: Gemma3TextModel (EmbeddingGemma,
// the bidirectional one, among them) and Gemma2Model / Gemma2ForCausalLM (bge-reranker-v2.5-
// gemma2-lightweight-style yes/no rerankers), and CostWiseGemmaForCausalLM (bge-reranker-v2.5-
// gemma2-lightweight itself: Gemma 2 run up to a cut-off layer, then the final norm and a
// one-output head, soft-capped; ModelConfig::cutoff_layer). A pre- and post-RMSNorm transformer with rotary
// positions, grouped-query attention (with per-head q/k RMSNorm on Gemma 3), sliding-window and
// full layers, and a GeGLU feed-forward. No KV cache: each step sees whole sequences.
//
// With x the hidden state [T, H], embeddings scaled by sqrt(H), per layer:
//   x += RMSNorm_post_attention(Attention(rotate(qk_norm(RMSNorm_input(x)·W_qkvᵀ)))·W_oᵀ)
//   x += RMSNorm_post_feedforward((gelu_tanh(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ),  n = RMSNorm_pre_feedforward(x)
// and a final RMSNorm. Gemma's RMSNorm multiplies by (1 + w); the loader adds the 1 to every
// stored norm weight (TensorSpec::load_offset) so ops::RmsNorm applies unchanged, and
// multiplies each gathered embedding row by sqrt(H) (PreNormDecoderWeights::embedding_scale):
// both are the fp32 arithmetic transformers does in an fp32 model. Sliding layers see keys within the window and rotate with
// rope_local_base_freq (Gemma 2: rope_theta, like its full layers); full layers see the whole
// sequence and rotate with rope_theta. Gemma 2 also soft-caps each attention score,
// cap·tanh(score / cap) (ops::AttentionOptions::softcap), and its LM head's logits, which its
// yes/no head compares (layers::LoadYesNoHead).
#include <cmath>
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

// The tensor schema, as save_pretrained names it; the same for Gemma 2 but for the q/k norms.
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PreNormDecoderWeights& weights,
                  TensorVisitor& visit) {
  const layers::PreNormDecoderSchema schema{
      .attention_output_norm = "post_attention_layernorm",
      .feed_forward_norm = "pre_feedforward_layernorm",
      .feed_forward_output_norm = "post_feedforward_layernorm",
      .norm = layers::GemmaNormSpec,
      .head_norms = config.family == ModelFamily::kGemma3,
      .output_bias = config.attention_bias,
      .embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(config.hidden_size)))};
  layers::VisitPreNormDecoder(visit, weights, prefix, schema, config);
  // An untied output projection: written by make-model, never loaded whole (a yes/no reranker
  // reads its scored rows, layers::LoadYesNoHead).
  if (config.architecture == "Gemma2ForCausalLM" && !config.tie_word_embeddings) {
    visit.Tensor(weights.score, {"lm_head.weight", {config.vocab_size, config.hidden_size}, TensorInit::kNormal,
                                 TensorPresence::kUnread});
  }
  // CostWiseGemmaForCausalLM's per-layer heads, one for each layer start_layer + k·layer_sep:
  // written by make-model; a reranker reads the row it scores with (layers::LoadLayerWiseHead).
  if (config.layer_wise_start > 0) {
    int64_t k = 0;
    for (int64_t layer = config.layer_wise_start; layer <= config.num_hidden_layers; layer += config.layer_wise_step) {
      visit.Tensor(weights.score, {"lm_head." + std::to_string(k++) + ".linear_head.weight", {1, config.hidden_size},
                                   TensorInit::kNormal, TensorPresence::kUnread});
    }
  }
}

constexpr std::string_view kPrefixes[] = {"", "model."};

}  // namespace

extern const FamilyDefinition kGemma3Family{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<layers::PreNormDecoderWeights, VisitTensors>,
    .load = LoadSchemaModel<layers::PreNormDecoderModel, VisitTensors>};

extern const FamilyDefinition kGemma2Family{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<layers::PreNormDecoderWeights, VisitTensors>,
    .load = layers::LoadPreNormDecoder<VisitTensors>};

}  // namespace stamen::engine
