// The family registry: one definition per model family, one table of them (registry.cc).
// A definition says how config.json names the family's architectures, which keys hold its
// shapes, how to read its own settings, its tensor schema and how to load it. Reading a
// config, loading a model and `stamen make-model` all go through it, so a new family is one
// model file and one row in the table.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json_document.h"
#include "engine/model_config.h"
#include "engine/models/model.h"
#include "engine/models/tensor_schema.h"

namespace stamen::engine {

struct ArchitectureDefinition {
  std::string_view name;  // as config.json's "architectures" names it
  ModelHead head = ModelHead::kNone;
  // Where save_pretrained puts the backbone's tensors for this class ("bert." under
  // BertForSequenceClassification); loading also accepts every prefix of the family.
  std::string_view weight_prefix;
  // The config.json model_type this is transformers' default architecture of, for configs
  // without "architectures"; empty when none.
  std::string_view default_for_model_type;
};

// The config.json keys of the common shapes (DistilBERT names them differently).
struct ShapeKeys {
  std::string_view hidden_size = "hidden_size";
  std::string_view num_hidden_layers = "num_hidden_layers";
  std::string_view num_attention_heads = "num_attention_heads";
  std::string_view intermediate_size = "intermediate_size";
};

struct FamilyDefinition {
  ModelFamily family;
  std::span<const ArchitectureDefinition> architectures;
  bool decoder = false;  // uses RoPE, may attend causally, pools the last token by default
  ShapeKeys shape_keys = {};
  // Where the backbone's tensors may sit: loading takes the first under which the schema's
  // first tensor is found.
  std::span<const std::string_view> weight_prefixes;
  // The family's own keys (activation, norms, positions), after the common shapes are read.
  Status (*read_settings)(const JsonObject& root, ModelConfig* config);
  // The tensor schema: `prefix` is the backbone's; heads sit where the architecture puts them.
  std::vector<TensorSpec> (*tensors)(const ModelConfig& config, const std::string& prefix);
  StatusOr<std::unique_ptr<Model>> (*load)(const ModelConfig& config, const WeightStore& weights,
                                           const Placement& placement);
};

// Every family stamen runs, in the order error messages list their architectures.
std::span<const FamilyDefinition* const> Families();
// The family of `config.family`; every value of ModelFamily has one.
const FamilyDefinition& FamilyOf(ModelFamily family);
// The family and architecture definition of an architecture name; nullptr when unsupported.
const FamilyDefinition* FindArchitecture(std::string_view name, const ArchitectureDefinition** architecture);

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

// Config readers shared by families.
namespace family_settings {
// hidden_act (or `key`), defaulting to `fallback`.
Status ReadActivation(const JsonObject& root, std::string_view key, std::string_view fallback, ModelConfig* config);
// rope_theta, or transformers ≥ 5's {"rope_parameters": {"rope_theta", "rope_type"}}; only plain RoPE.
Status ReadRope(const JsonObject& root, ModelConfig* config);
// pad_token_id when given.
Status ReadPadToken(const JsonObject& root, ModelConfig* config);
// RoBERTa-style absolute positions, counted from pad_token_id (default 1) + 1.
Status ReadPositionsAfterPad(const JsonObject& root, ModelConfig* config);
// One layer type's RoPE base from transformers ≥ 5's rope_parameters[layer_type] (Gemma3,
// ModernBERT), when given; only plain RoPE.
Status ReadLayerTypeRope(const JsonObject& rope_parameters, std::string_view layer_type, double* theta);
// layer_types (transformers ≥ 5: "full_attention" or "sliding_attention" for every layer) into
// config->sliding_window_layers; `*found` is false when the config has none.
Status ReadLayerTypes(const JsonObject& root, ModelConfig* config, bool* found);
}  // namespace family_settings

}  // namespace stamen::engine
