// The config side of the family registry: one row per family, each defined in
// families/<family>.cc, in the order error messages list the architectures.
#include "model_folder/family_config.h"

namespace stamen::engine {

extern const FamilyConfig kBertFamilyConfig;
extern const FamilyConfig kRobertaFamilyConfig;
extern const FamilyConfig kDistilBertFamilyConfig;
extern const FamilyConfig kModernBertFamilyConfig;
extern const FamilyConfig kMpnetFamilyConfig;
extern const FamilyConfig kQwen2FamilyConfig;
extern const FamilyConfig kQwen3FamilyConfig;
extern const FamilyConfig kLlamaFamilyConfig;
extern const FamilyConfig kMistralFamilyConfig;
extern const FamilyConfig kGemma3FamilyConfig;
extern const FamilyConfig kDebertaFamilyConfig;
// Issue 48: bidirectional Llama / Qwen3-style encoders.
extern const FamilyConfig kEuroBertFamilyConfig;
extern const FamilyConfig kPplxQwen3FamilyConfig;
extern const FamilyConfig kLlamaBidirectionalFamilyConfig;
// Issue 48: rotary post-norm encoders.
extern const FamilyConfig kNomicBertFamilyConfig;
extern const FamilyConfig kGteFamilyConfig;
// Issue 48: JinaBERT (ALiBi).
extern const FamilyConfig kJinaBertFamilyConfig;
// Issue 48: jina-embeddings-v3 with its task adapters.
extern const FamilyConfig kJinaEmbeddingsV3FamilyConfig;
// Issue 44: Gemma (1), for bge-reranker-v2-gemma.
extern const FamilyConfig kGemmaFamilyConfig;
// Issue 44: Gemma 2, for bge-reranker-v2.5-gemma2-lightweight-style rerankers (families/gemma3.cc).
extern const FamilyConfig kGemma2FamilyConfig;
// Issue 44: static embeddings (model2vec, StaticEmbedding).
extern const FamilyConfig kStaticEmbeddingFamilyConfig;

namespace {

const FamilyConfig* const kFamilyConfigs[] = {
    &kBertFamilyConfig,
    &kRobertaFamilyConfig,
    &kDistilBertFamilyConfig,
    &kModernBertFamilyConfig,
    &kMpnetFamilyConfig,
    &kQwen2FamilyConfig,
    &kQwen3FamilyConfig,
    &kLlamaFamilyConfig,
    &kMistralFamilyConfig,
    &kGemma3FamilyConfig,
    &kDebertaFamilyConfig,
    // Issue 48: bidirectional Llama / Qwen3-style encoders.
    &kEuroBertFamilyConfig,
    &kPplxQwen3FamilyConfig,
    &kLlamaBidirectionalFamilyConfig,
    // Issue 48: rotary post-norm encoders.
    &kNomicBertFamilyConfig,
    &kGteFamilyConfig,
    // Issue 48: JinaBERT (ALiBi).
    &kJinaBertFamilyConfig,
    // Issue 48: jina-embeddings-v3 with its task adapters.
    &kJinaEmbeddingsV3FamilyConfig,
    // Issue 44: Gemma (1).
    &kGemmaFamilyConfig,
    // Issue 44: Gemma 2.
    &kGemma2FamilyConfig,
    // Issue 44: static embeddings (model2vec, StaticEmbedding).
    &kStaticEmbeddingFamilyConfig,
};

}  // namespace

std::span<const FamilyConfig* const> FamilyConfigs() { return kFamilyConfigs; }

const FamilyConfig& FamilyConfigOf(ModelFamily family) {
  for (const FamilyConfig* definition : kFamilyConfigs) {
    if (definition->family == family) return *definition;
  }
  // Every ModelFamily value has a row; a missing one is a programming error caught by every test.
  __builtin_trap();
}

const FamilyConfig* FindArchitecture(std::string_view name, const ArchitectureDefinition** architecture) {
  for (const FamilyConfig* family : kFamilyConfigs) {
    for (const ArchitectureDefinition& candidate : family->architectures) {
      if (candidate.name == name) {
        *architecture = &candidate;
        return family;
      }
    }
  }
  return nullptr;
}

}  // namespace stamen::engine
