// The config side of the family registry (family_config.h), whose table families.inc lists:
// FamilyConfigOf indexes it by ModelFamily and ModelFamilyOf gives a row's family back, and
// FindArchitecture takes the first family naming an architecture, so no name may be in two.
#include "model_folder/family_config.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <set>
#include <string_view>

namespace stamen::engine {
namespace {

// A family is its row: ModelFamilyOf gives it back (a definition listed twice would give the second
// row the first's family), FamilyConfigOf finds the row.
TEST(FamilyRegistryTest, EveryRowIsADistinctDefinitionOfItsFamily) {
  const auto configs = FamilyConfigs();
  ASSERT_FALSE(configs.empty());
  for (size_t index = 0; index < configs.size(); ++index) {
    const auto family = static_cast<ModelFamily>(index);
    EXPECT_EQ(ModelFamilyOf(*configs[index]), family) << "row " << index;
    EXPECT_EQ(&FamilyConfigOf(family), configs[index]) << "row " << index;
    EXPECT_FALSE(configs[index]->architectures.empty()) << "row " << index;
    EXPECT_NE(configs[index]->read_settings, nullptr) << "row " << index;
  }
}

TEST(FamilyRegistryTest, EachArchitectureAndDefaultModelTypeBelongsToOneFamily) {
  std::set<std::string_view> architectures;
  std::map<std::string_view, std::string_view> model_type_architectures;
  for (const FamilyConfig* family : FamilyConfigs()) {
    for (const ArchitectureDefinition& architecture : family->architectures) {
      EXPECT_TRUE(architectures.insert(architecture.name).second) << architecture.name << " is named twice";
      const ArchitectureDefinition* found = nullptr;
      EXPECT_EQ(FindArchitecture(architecture.name, &found), family) << architecture.name;
      EXPECT_EQ(found, &architecture) << architecture.name;
      if (architecture.default_for_model_type.empty()) continue;
      const auto [typed, unique] =
          model_type_architectures.emplace(architecture.default_for_model_type, architecture.name);
      EXPECT_TRUE(unique) << "model_type " << architecture.default_for_model_type << " defaults to both "
                          << typed->second << " and " << architecture.name;
    }
  }
  const ArchitectureDefinition* found = nullptr;
  EXPECT_EQ(FindArchitecture("GPT2Model", &found), nullptr);
}

}  // namespace
}  // namespace stamen::engine
