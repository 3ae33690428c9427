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
  ShapeKeys shape_keys;
  // Where the backbone's tensors may sit, and the tensor whose presence tells which.
  std::span<const std::string_view> weight_prefixes;
  std::string_view prefix_probe;
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
  auto prefix = model_weights::FindPrefix(weights, family.weight_prefixes, family.prefix_probe);
  if (!prefix.ok()) return prefix.status();
  TensorLoader loader(weights, placement);
  schema(config, *prefix, target, loader);
  return loader.status();
}

// The specs the schema names, for FamilyDefinition::tensors.
template <typename Weights>
std::vector<TensorSpec> CollectTensors(const ModelConfig& config, const std::string& prefix,
                                       TensorSchema<Weights> schema) {
  Weights scratch;
  TensorCollector collector;
  schema(config, prefix, scratch, collector);
  return collector.Take();
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
}  // namespace family_settings

}  // namespace stamen::engine
