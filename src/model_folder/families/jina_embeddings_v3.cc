// What config.json says of jina-embeddings-v3 (engine/models/jina_embeddings_v3.cc runs it): an
// XLM-RoBERTa with rotary positions, post-norm, a GELU feed-forward and biases everywhere, plus
// task LoRA adapters. Two config formats:
//   - the hub's remote code (jinaai/xlm-roberta-flash-implementation): model_type "xlm-roberta",
//     architectures ["XLMRobertaModel"], auto_map AutoConfig → XLMRobertaFlashConfig and AutoModel →
//     XLMRobertaLoRA (the class stamen runs it as: model_config.cc), position_embedding_type
//     "rotary", rotary_emb_base, lora_adaptations / lora_rank / lora_alpha / task_instructions;
//   - transformers' own JinaEmbeddingsV3Config (model_type "jina_embeddings_v3", 5.25): rope_parameters,
//     no adapters.
// jina-colbert-v2 is Stanford ColBERT's HF_ColBERT saved over the same backbone (auto_map's AutoModel
// the remote code's plain modeling_xlm_roberta.XLMRobertaModel, which applies no adapters); it runs
// as kJinaColbertArchitecture with the remote code's keys and tensor names (stanford_colbert.cc
// reads its projection and settings).
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

// lora_adaptations (the task names, in the order of the adapter tensors' first axis), lora_rank,
// lora_alpha (XLMRobertaFlashConfig's defaults 4 and 1) and task_instructions (a prompt per task).
Status ReadAdapters(const JsonObject& root, ModelConfig* config) {
  simdjson::dom::array tasks;
  if (root.raw()["lora_adaptations"].get(tasks) != simdjson::SUCCESS) {
    return root.Has("lora_adaptations") ? root.Error("lora_adaptations", "must be a list of task names") : Status();
  }
  bool trained = false;
  STAMEN_RETURN_IF_ERROR(root.Optional("load_trained_adapters", &trained));
  if (!trained) {
    // The remote code then makes new random adapters instead of reading the folder's.
    return root.Error("load_trained_adapters", "is not true: the remote code would not load the folder's adapters");
  }
  for (simdjson::dom::element task : tasks) {
    std::string_view name;
    if (task.get(name) != simdjson::SUCCESS || name.empty()) {
      return root.Error("lora_adaptations", "must hold non-empty task names");
    }
    config->adapter_tasks.emplace_back(name);
  }
  if (config->adapter_tasks.empty()) return root.Error("lora_adaptations", "is empty");
  config->lora_rank = 4;
  config->lora_alpha = 1.0;
  STAMEN_RETURN_IF_ERROR(root.Optional("lora_rank", &config->lora_rank));
  STAMEN_RETURN_IF_ERROR(root.Optional("lora_alpha", &config->lora_alpha));
  if (config->lora_rank <= 0) return root.Error("lora_rank", "must be positive");
  JsonObject instructions = root;
  bool has_instructions = false;
  STAMEN_RETURN_IF_ERROR(root.OptionalObject("task_instructions", &instructions, &has_instructions));
  for (const std::string& task : config->adapter_tasks) {
    std::string prompt;
    if (has_instructions) STAMEN_RETURN_IF_ERROR(instructions.Optional(task, &prompt));
    config->adapter_prompts.push_back(prompt);
  }
  return Status();
}

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  STAMEN_RETURN_IF_ERROR(family_settings::ReadActivation(root, "hidden_act", "gelu", config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadNormEps(root, "layer_norm_eps", 1e-5, config));
  STAMEN_RETURN_IF_ERROR(family_settings::ReadTypeVocabularySize(root, 1, 1, config));
  if (config->head_dim * config->num_attention_heads != config->hidden_size) {
    return root.Error("head_dim", "must be hidden_size / num_attention_heads for jina-embeddings-v3");
  }
  if (config->head_dim % 2 != 0) return root.Error("hidden_size", "must give an even head_dim for RoPE");
  const bool colbert = config->architecture == kJinaColbertArchitecture;
  if (config->architecture == "XLMRobertaLoRA" || colbert) {
    std::string positions = "rotary";
    STAMEN_RETURN_IF_ERROR(root.Optional("position_embedding_type", &positions));
    if (positions != "rotary") {
      return root.Error("position_embedding_type", "is '" + positions + "'; only 'rotary' is supported");
    }
    config->rope_theta = 10000.0;  // XLMRobertaFlashConfig's default
    STAMEN_RETURN_IF_ERROR(root.Optional("rotary_emb_base", &config->rope_theta));
    if (!(config->rope_theta > 0)) return root.Error("rotary_emb_base", "must be positive");
    config->remote_code_tensors = true;  // the hub's names (emb_ln, mixer.Wqkv, parametrizations)
    return colbert ? Status() : ReadAdapters(root, config);
  }
  config->rope_theta = 20000.0;  // JinaEmbeddingsV3Config's default_theta
  STAMEN_RETURN_IF_ERROR(family_settings::ReadRope(root, config));
  if (config->rope_scaling.factor != 0.0f) return root.Error("rope_parameters", "must be plain RoPE");
  return Status();
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"JinaEmbeddingsV3Model", ModelHead::kNone, "", "jina_embeddings_v3"},
    // The hub's AutoModel class (modeling_lora.XLMRobertaLoRA): its backbone sits under "roberta.".
    {"XLMRobertaLoRA", ModelHead::kNone, "roberta.", ""},
    // jina-colbert-v2 (HF_ColBERT's backbone under its base_model_prefix "roberta.").
    {kJinaColbertArchitecture, ModelHead::kNone, "roberta.", ""},
};

// The hub's auto_map: jinaai/xlm-roberta-flash-implementation--configuration_xlm_roberta.
// XLMRobertaFlashConfig (AutoConfig) and --modeling_lora.XLMRobertaLoRA (AutoModel), or for
// jina-colbert-v2 --modeling_xlm_roberta.XLMRobertaModel. A folder naming XLMRobertaModel loaded
// as that plain class stays refused: its architecture is then XLM-R's own, whose family knows no
// XLMRobertaFlashConfig.
constexpr std::string_view kRemoteCodeClasses[] = {"XLMRobertaFlashConfig", "XLMRobertaLoRA", "XLMRobertaModel"};
// What the hub's config.json names (the remote code's own modeling_xlm_roberta.XLMRobertaModel).
constexpr std::string_view kNamedArchitectures[] = {"XLMRobertaModel"};

}  // namespace

extern const FamilyConfig kJinaEmbeddingsV3FamilyConfig{.architectures = kArchitectures,
                                                         .read_settings = ReadSettings,
                                                         .remote_code_classes = kRemoteCodeClasses,
                                                         .remote_code_named_architectures = kNamedArchitectures,
                                                         .stanford_colbert_architecture = kJinaColbertArchitecture};

}  // namespace stamen::engine
