// The config side of the family registry: one row per row of families.inc, each defined in
// families/<family>.cc, in the order error messages list the architectures.
#include "model_folder/family_config.h"

#include <algorithm>
#include <iterator>

namespace stamen::engine {

#define STAMEN_FAMILY(name) extern const FamilyConfig k##name##FamilyConfig;
#include "model_folder/families.inc"
#undef STAMEN_FAMILY

namespace {

// Indexed by ModelFamily: the list gives the enum's values and these rows in one order.
const FamilyConfig* const kFamilyConfigs[] = {
#define STAMEN_FAMILY(name) &k##name##FamilyConfig,
#include "model_folder/families.inc"
#undef STAMEN_FAMILY
};

}  // namespace

std::span<const FamilyConfig* const> FamilyConfigs() { return kFamilyConfigs; }

const FamilyConfig& FamilyConfigOf(ModelFamily family) { return *kFamilyConfigs[static_cast<size_t>(family)]; }

ModelFamily ModelFamilyOf(const FamilyConfig& config) {
  const auto row = std::find(std::begin(kFamilyConfigs), std::end(kFamilyConfigs), &config);
  return static_cast<ModelFamily>(row - std::begin(kFamilyConfigs));
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
