// The family registry: one definition per model family, one table of them (registry.cc).
// A definition gives the family's tensor schema and how to load it; loading a model and
// `stamen make-model` go through it. What config.json says of the family (its architectures'
// names, shapes, settings) is its FamilyConfig (model_folder/family_config.h), so a new family
// is one model file, one config file and a row in model_folder/families.inc.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_folder/family_config.h"
#include "model_folder/json_document.h"
#include "model_folder/model_config.h"
#include "engine/models/model.h"
#include "engine/models/tensor_schema.h"

namespace stamen::engine {

// How the engine runs one family; what its config.json says is its FamilyConfig
// (model_folder/family_config.h), which the gateway reads too. The family ModelFamily::kName's
// definition is named kNameFamily (families.inc).
struct FamilyDefinition {
  // Where the backbone's tensors may sit: loading takes the first under which the schema's
  // first tensor is found.
  std::span<const std::string_view> weight_prefixes;
  // The tensor schema: `prefix` is the backbone's; heads sit where the architecture puts them.
  std::vector<TensorSpec> (*tensors)(const ModelConfig& config, const std::string& prefix);
  StatusOr<std::unique_ptr<Model>> (*load)(const ModelConfig& config, const WeightStore& weights,
                                           const Placement& placement);
};

// The definition of `family`; every value of ModelFamily has one (a missing one fails to link).
const FamilyDefinition& FamilyOf(ModelFamily family);

// Loads `config`'s model from `weights`: finds the backbone's prefix, then the family loads.
StatusOr<std::unique_ptr<Model>> LoadModel(const ModelConfig& config, const WeightStore& weights,
                                           const Placement& placement = {});

// A family's schema function: visits every tensor of `weights` under the backbone's `prefix`.
template <typename Weights>
using TensorSchema = void (*)(const ModelConfig& config, const std::string& prefix, Weights& weights,
                              TensorVisitor& visitor);

// Finds the backbone's prefix among the family's and loads the schema's tensors into `target`.
template <typename Weights>
Status LoadTensors(const ModelConfig& config, const WeightStore& weights, const Placement& placement,
                   TensorSchema<Weights> schema, Weights& target) {
  const FamilyDefinition& family = FamilyOf(config.family);
  const std::string probe = family.tensors(config, "").front().name;
  auto prefix = model_weights::FindPrefix(weights, family.weight_prefixes, probe);
  if (!prefix.ok()) return prefix.status();
  TensorLoader loader(weights, placement);
  schema(config, *prefix, target, loader);
  return loader.status();
}

// A family's FamilyDefinition::tensors: the specs `schema` names.
template <typename Weights, TensorSchema<Weights> schema>
std::vector<TensorSpec> SchemaTensors(const ModelConfig& config, const std::string& prefix) {
  Weights scratch;
  TensorCollector collector;
  schema(config, prefix, scratch, collector);
  return collector.Take();
}

// The base of a family's model class: the config it runs and the weights its schema fills.
template <typename WeightsType>
class FamilyModel : public Model {
 public:
  using Weights = WeightsType;
  FamilyModel(const ModelConfig& config, const Placement& placement) : Model(placement), config_(config) {}

  ModelConfig config_;
  Weights weights_;
};

// A family's FamilyDefinition::load, or its last step: constructs `FamilyModelType` (a
// FamilyModel) and loads `schema`'s tensors into its weights.
template <typename FamilyModelType, TensorSchema<typename FamilyModelType::Weights> schema>
StatusOr<std::unique_ptr<Model>> LoadSchemaModel(const ModelConfig& config, const WeightStore& weights,
                                                 const Placement& placement) {
  auto model = std::make_unique<FamilyModelType>(config, placement);
  STAMEN_RETURN_IF_ERROR(LoadTensors(config, weights, placement, schema, model->weights_));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace stamen::engine
