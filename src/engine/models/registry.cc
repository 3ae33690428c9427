// The family registry's table: how each family runs, one row per family, each defined in its
// model file (the config side: model_folder/family_registry.cc).
#include "engine/models/family.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace stamen::engine {

// Defined in models/<family>.cc.
extern const FamilyDefinition kBertFamily;
extern const FamilyDefinition kRobertaFamily;
extern const FamilyDefinition kDistilBertFamily;
extern const FamilyDefinition kModernBertFamily;
extern const FamilyDefinition kMpnetFamily;
extern const FamilyDefinition kQwen2Family;
extern const FamilyDefinition kQwen3Family;
extern const FamilyDefinition kLlamaFamily;
extern const FamilyDefinition kMistralFamily;
extern const FamilyDefinition kGemma3Family;
extern const FamilyDefinition kDebertaFamily;
// Issue 48: bidirectional Llama / Qwen3-style encoders.
extern const FamilyDefinition kEuroBertFamily;
extern const FamilyDefinition kPplxQwen3Family;
extern const FamilyDefinition kLlamaBidirectionalFamily;
// Issue 48: rotary post-norm encoders (models/rotary_encoder.cc).
extern const FamilyDefinition kNomicBertFamily;
extern const FamilyDefinition kGteFamily;
// Issue 48: JinaBERT (models/jina_bert.cc).
extern const FamilyDefinition kJinaBertFamily;
// Issue 48: jina-embeddings-v3 with its task adapters (models/jina_embeddings_v3.cc).
extern const FamilyDefinition kJinaEmbeddingsV3Family;
// Issue 44: Gemma (1), for bge-reranker-v2-gemma.
extern const FamilyDefinition kGemmaFamily;
// Issue 44: Gemma 2, for bge-reranker-v2.5-gemma2-lightweight-style rerankers (models/gemma3.cc).
extern const FamilyDefinition kGemma2Family;
// Issue 44: static embeddings (model2vec, StaticEmbedding).
extern const FamilyDefinition kStaticEmbeddingFamily;

namespace {

const FamilyDefinition* const kFamilies[] = {
    &kBertFamily,
    &kRobertaFamily,
    &kDistilBertFamily,
    &kModernBertFamily,
    &kMpnetFamily,
    &kQwen2Family,
    &kQwen3Family,
    &kLlamaFamily,
    &kMistralFamily,
    &kGemma3Family,
    &kDebertaFamily,
    // Issue 48: bidirectional Llama / Qwen3-style encoders.
    &kEuroBertFamily,
    &kPplxQwen3Family,
    &kLlamaBidirectionalFamily,
    // Issue 48: rotary post-norm encoders.
    &kNomicBertFamily,
    &kGteFamily,
    // Issue 48: JinaBERT (ALiBi).
    &kJinaBertFamily,
    // Issue 48: jina-embeddings-v3 with its task adapters.
    &kJinaEmbeddingsV3Family,
    // Issue 44: Gemma (1).
    &kGemmaFamily,
    // Issue 44: Gemma 2.
    &kGemma2Family,
    // Issue 44: static embeddings (model2vec, StaticEmbedding).
    &kStaticEmbeddingFamily,
};

}  // namespace

const FamilyDefinition& FamilyOf(ModelFamily family) {
  for (const FamilyDefinition* definition : kFamilies) {
    if (definition->family == family) return *definition;
  }
  // Every ModelFamily value has a row; a missing one is a programming error caught by every test.
  __builtin_trap();
}

namespace {

// One past the largest number among the dot-separated segments of the tensors' names: layer i's
// tensors carry i ("encoder.layer.5.…", "model.layers.5.…"), so no family's weights hold more
// layers than this (other numbered segments can only make the bound looser, never too tight).
int64_t LayersAtMost(const WeightStore& weights) {
  int64_t layers = 0;
  for (const std::string& name : weights.Names()) {
    size_t begin = 0;
    while (begin <= name.size()) {
      const size_t end = std::min(name.find('.', begin), name.size());
      const std::string_view segment(name.data() + begin, end - begin);
      int64_t number = 0;
      const auto [rest, error] = std::from_chars(segment.data(), segment.data() + segment.size(), number);
      if (!segment.empty() && error == std::errc() && rest == segment.data() + segment.size()) {
        layers = std::max(layers, number + 1);
      }
      begin = end + 1;
    }
  }
  return layers;
}

// A layer count beyond the layers whose tensors exist is refused before the model is built:
// the schema lists every layer's tensors, so a config claiming millions of layers would make
// the loader allocate for each before the first missing tensor is noticed.
Status CheckLayerCount(const ModelConfig& config, const WeightStore& weights) {
  const int64_t present = LayersAtMost(weights);
  // No layer at all: the loader's first missing tensor says more (config.json already refused
  // an absurd count).
  if (present == 0 || config.num_hidden_layers <= present) return Status();
  const std::string_view key = FamilyConfigOf(config.family).shape_keys.num_hidden_layers;
  return Status::Error("config.json: key '" + std::string(key) + "' is " + std::to_string(config.num_hidden_layers) +
                       ", but the weights hold the tensors of at most " + std::to_string(present) + " layers");
}

}  // namespace

StatusOr<std::unique_ptr<Model>> LoadModel(const ModelConfig& config, const WeightStore& weights,
                                           const Placement& placement) {
  STAMEN_RETURN_IF_ERROR(CheckLayerCount(config, weights));
  return FamilyOf(config.family).load(config, weights, placement);
}

}  // namespace stamen::engine
