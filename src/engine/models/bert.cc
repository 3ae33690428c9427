// BERT, RoBERTa and XLM-RoBERTa encoders (post-LayerNorm transformer, learned absolute
// positions, token-type embeddings), and their sequence-classification heads.
//
// Per layer, with x the hidden state [T, H]:
//   qkv = x·W_qkvᵀ + b_qkv                 (query, key and value projections as one gemm)
//   x   = LayerNorm(x + (Attention(qkv)·W_oᵀ + b_o))
//   x   = LayerNorm(x + (gelu(x·W_iᵀ + b_i)·W_o2ᵀ + b_o2))
// Heads: BERT pools with tanh(pooler.dense(x_cls)) then `classifier`; RoBERTa applies
// tanh(classifier.dense(x_cls)) then `classifier.out_proj` — the same shape of computation.
// …ForMaskedLM adds the masked-LM head (layers.h, masked_lm_head.cc), used for SPLADE vectors.
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

// The tensor schema: every weight, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PostNormEncoderWeights& weights,
                  TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  // BERT's names are the layer library's defaults.
  layers::VisitPostNormEncoder(visit, weights, prefix, "encoder.layer.", {}, config);
  layers::ClassifierWeights& head = weights.head;
  const int64_t labels = config.num_labels;
  if (config.head == ModelHead::kSequenceClassification && config.family == ModelFamily::kBert) {
    layers::VisitClassifier(visit, head, prefix + "pooler.dense", "classifier", h, labels);
  } else if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, head, "classifier.dense", "classifier.out_proj", h, labels);
  } else if (config.head == ModelHead::kMaskedLm && config.family == ModelFamily::kBert) {
    layers::VisitMaskedLmHead(visit, weights.masked_lm,
                              {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                               "cls.predictions.decoder", "cls.predictions.bias"},
                              config);
  } else if (config.head == ModelHead::kMaskedLm) {
    layers::VisitMaskedLmHead(visit, weights.masked_lm, {"lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"},
                              config);
  } else {
    layers::VisitUnreadPooler(visit, head, prefix + "pooler.dense", h);
  }
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  if (config.num_key_value_heads != config.num_attention_heads ||
      config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("BERT-style encoders need head_dim × num_attention_heads = hidden_size and no grouped heads");
  }
  return LoadSchemaModel<layers::PostNormEncoderModel, VisitTensors>(config, weights, placement);
}

constexpr std::string_view kPrefixes[] = {"", "bert.", "roberta.", "model."};

// BERT and RoBERTa share their compute; they differ in their architectures and in how positions
// count (model_folder/families/bert.cc).
constexpr FamilyDefinition kEncoderFamily = {
    .weight_prefixes = kPrefixes, .tensors = SchemaTensors<layers::PostNormEncoderWeights, VisitTensors>, .load = Load};

}  // namespace

extern const FamilyDefinition kBertFamily = kEncoderFamily;
extern const FamilyDefinition kRobertaFamily = kEncoderFamily;

}  // namespace stamen::engine
