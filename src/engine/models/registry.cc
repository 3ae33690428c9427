// The family registry's table: how each family runs, one row per family, each defined in its
// model file (the config side: model_folder/family_registry.cc).
#include "engine/models/family.h"

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
};

}  // namespace

const FamilyDefinition& FamilyOf(ModelFamily family) {
  for (const FamilyDefinition* definition : kFamilies) {
    if (definition->family == family) return *definition;
  }
  // Every ModelFamily value has a row; a missing one is a programming error caught by every test.
  __builtin_trap();
}

StatusOr<std::unique_ptr<Model>> LoadModel(const ModelConfig& config, const WeightStore& weights,
                                           const Placement& placement) {
  return FamilyOf(config.family).load(config, weights, placement);
}

}  // namespace stamen::engine
