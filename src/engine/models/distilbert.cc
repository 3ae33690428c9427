// DistilBERT encoders (the msmarco / multi-qa bi-encoders), their sequence-classification
// heads (sentiment, NLI) and their masked-LM head (SPLADE: naver/splade_v2_distil and kin). BERT's post-LayerNorm layer under other names and config keys
// (dim, n_layers, n_heads, hidden_dim, activation), with learned positions from 0 and no
// token types. The head: ReLU(pre_classifier(x_cls)), then classifier.
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"

namespace stamen::engine {
namespace {

const layers::PostNormLayerNames kLayerNames = {
    .query = "attention.q_lin", .key = "attention.k_lin", .value = "attention.v_lin",
    .output = "attention.out_lin",
    .attention_norm = "sa_layer_norm",
    .up = "ffn.lin1", .down = "ffn.lin2",
    .output_norm = "output_layer_norm",
};

// The tensor schema: every weight, as save_pretrained names it.
void VisitTensors(const ModelConfig& config, const std::string& prefix, layers::PostNormEncoderWeights& weights,
                  TensorVisitor& visit) {
  layers::VisitPostNormEncoder(visit, weights, prefix, "transformer.layer.", kLayerNames, config);
  if (config.head == ModelHead::kSequenceClassification) {
    layers::VisitClassifier(visit, weights.head, "pre_classifier", "classifier", config.hidden_size,
                            config.num_labels);
  } else if (config.head == ModelHead::kMaskedLm) {
    // BERT's head under other names; vocab_projector is tied to the word embeddings.
    layers::VisitMaskedLmHead(visit, weights.masked_lm,
                              {"vocab_transform", "vocab_layer_norm", "vocab_projector", "vocab_projector.bias"}, config);
  }
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  if (config.head_dim * config.num_attention_heads != config.hidden_size) {
    return Status::Error("DistilBERT needs dim to be a multiple of n_heads");
  }
  return LoadSchemaModel<layers::PostNormEncoderModel, VisitTensors>(config, weights, placement);
}

constexpr std::string_view kPrefixes[] = {"", "distilbert."};

}  // namespace

extern const FamilyDefinition kDistilBertFamily{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<layers::PostNormEncoderWeights, VisitTensors>, .load = Load};

}  // namespace stamen::engine
