// The family registry's table: how each family runs, one row per row of model_folder/families.inc,
// each defined in its model file (models/<family>.cc; the config side: model_folder/family_registry.cc).
#include "engine/models/family.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace stamen::engine {

#define STAMEN_FAMILY(name) extern const FamilyDefinition k##name##Family;
#include "model_folder/families.inc"
#undef STAMEN_FAMILY

namespace {

// Indexed by ModelFamily, as the config side's table is (model_folder/family_registry.cc).
const FamilyDefinition* const kFamilies[] = {
#define STAMEN_FAMILY(name) &k##name##Family,
#include "model_folder/families.inc"
#undef STAMEN_FAMILY
};

}  // namespace

const FamilyDefinition& FamilyOf(ModelFamily family) { return *kFamilies[static_cast<size_t>(family)]; }

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
