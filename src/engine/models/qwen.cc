// Qwen2, Qwen3, Llama and Mistral decoders (and pplx-embed-v1, llama-nemotron-embed and EuroBERT,
// bidirectional encoders with their blocks) as embedding models, and as scorers through
// *ForSequenceClassification's `score` head on the last token (llama-nemotron-rerank's,
// LlamaBidirectionalForSequenceClassification: on the mean; EuroBERT's: a pooled dense → GELU →
// classifier head, layers::Classify) (pre-RMSNorm transformer,
// rotary positions, grouped-query attention, SwiGLU feed-forward, no KV cache: each step sees
// whole sequences). Llama and Mistral are Qwen2 without the q/k/v biases (unless Llama's
// attention_bias), Mistral with a causal sliding window (e5-mistral, SFR, Linq embedders).
//
// Per layer, with x the hidden state [T, H]:
//   qkv = RMSNorm(x)·W_qkvᵀ (+ b_qkv on Qwen2)   then, on Qwen3, RMSNorm of each q/k head;
//   rotate q and k by RoPE;   x += Attention(qkv)·W_oᵀ
//   x += (silu(n·W_gateᵀ) ⊙ n·W_upᵀ)·W_downᵀ,  n = RMSNorm(x)
// and a final RMSNorm. Positions restart at 0 for every sequence of the ragged batch.
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

// An RMSNorm weight, stored as the w it multiplies by.
TensorSpec NormSpec(const std::string& name, int64_t size) { return {name, {size}, TensorInit::kNormOne}; }

// The tensor schema, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PreNormDecoderWeights& weights,
                  TensorVisitor& visit) {
  // EuroBERT's attention_bias puts a bias on o_proj too (EuroBertAttention).
  const layers::PreNormDecoderSchema schema{.feed_forward_norm = "post_attention_layernorm",
                                            .norm = NormSpec,
                                            .head_norms = config.family == ModelFamily::kQwen3 ||
                                                          config.family == ModelFamily::kPplxQwen3,
                                            .output_bias = config.family == ModelFamily::kEuroBert && config.attention_bias};
  layers::VisitPreNormDecoder(visit, weights, prefix, schema, config);
  // *ForSequenceClassification keeps its head beside the backbone ("model."), as `score`; EuroBERT's
  // as `dense` and `classifier` (EuroBertForSequenceClassification; pooled as config.classifier_pooling).
  if (config.head == ModelHead::kSequenceClassification && config.family == ModelFamily::kEuroBert) {
    const char* output = config.remote_code_tensors ? "out_proj" : "classifier";
    layers::VisitClassifier(visit, weights.head, "dense", output, config.hidden_size, config.num_labels);
  } else if (config.head == ModelHead::kSequenceClassification && config.yes_no_token_ids.empty()) {
    visit.Tensor(weights.score, {"score.weight", {config.num_labels, config.hidden_size}});
  }
  // A causal LM's untied output projection (or EuroBertForMaskedLM's prediction head, as the hub
  // ships EuroBERT): written by make-model, never loaded whole (a yes/no reranker reads two of
  // its rows, layers::LoadPreNormDecoder).
  const bool language_model_head =
      config.architecture.ends_with("ForCausalLM") || config.architecture == "EuroBertForMaskedLM";
  if (language_model_head && !config.tie_word_embeddings) {
    visit.Tensor(weights.score, {"lm_head.weight", {config.vocab_size, config.hidden_size}, TensorInit::kNormal,
                                 TensorPresence::kUnread});
  }
}

constexpr std::string_view kPrefixes[] = {"", "model."};

// The four decoder families share their compute (their architectures:
// model_folder/families/qwen.cc).
constexpr FamilyDefinition kDecoderFamily = {
    .weight_prefixes = kPrefixes, .tensors = SchemaTensors<layers::PreNormDecoderWeights, VisitTensors>,
    .load = layers::LoadPreNormDecoder<VisitTensors>};

// EuroBertForSequenceClassification's output layer is `classifier` (transformers, the hub's later
// modeling_eurobert.py) or `out_proj` (the hub's first one, whose fine-tunes keep the name; same
// forward): the folder's tensors decide (ModelConfig::remote_code_tensors). transformers 5.25 has
// no renaming for it and would leave its own `classifier` untrained.
StatusOr<std::unique_ptr<Model>> LoadEuroBert(const ModelConfig& config, const WeightStore& weights,
                                              const Placement& placement) {
  ModelConfig layout = config;
  layout.remote_code_tensors = config.head == ModelHead::kSequenceClassification &&
                               !weights.Contains("classifier.weight") && weights.Contains("out_proj.weight");
  return layers::LoadPreNormDecoder<VisitTensors>(layout, weights, placement);
}

}  // namespace

extern const FamilyDefinition kQwen2Family = kDecoderFamily;
extern const FamilyDefinition kQwen3Family = kDecoderFamily;
extern const FamilyDefinition kLlamaFamily = kDecoderFamily;
extern const FamilyDefinition kMistralFamily = kDecoderFamily;
// Bidirectional encoders with Qwen3's and Llama's tensors (pplx-embed-v1, llama-nemotron-embed);
// the attention is bidirectional by their config (model_folder/families/qwen.cc).
extern const FamilyDefinition kPplxQwen3Family = kDecoderFamily;
extern const FamilyDefinition kLlamaBidirectionalFamily = kDecoderFamily;
// EuroBERT: Llama's blocks, never causal (model_folder/families/eurobert.cc).
extern const FamilyDefinition kEuroBertFamily = {.weight_prefixes = kPrefixes,
                                                 .tensors = SchemaTensors<layers::PreNormDecoderWeights, VisitTensors>,
                                                 .load = LoadEuroBert};

}  // namespace stamen::engine
