// Yes/no LLM rerankers: the rule that picks them, their prompt template, their token ids.
#include "model_folder/yes_no_reranker.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "model_folder/json_document.h"
#include "model_folder/tensor_names.h"

namespace stamen::engine {
namespace {

namespace fs = std::filesystem;

// The id of `piece` in the folder's tokenizer: tokenizer.json's added tokens, then its model
// vocabulary; else vocab.json. -1 when absent or the folder has neither file.
StatusOr<int64_t> TokenId(const std::string& model_dir, std::string_view piece) {
  const fs::path tokenizer_json = fs::path(model_dir) / "tokenizer.json";
  if (fs::exists(tokenizer_json)) {
    auto document = JsonDocument::Load(tokenizer_json.string());
    if (!document.ok()) return document.status();
    const simdjson::dom::object root = document.value()->root().raw();
    simdjson::dom::array added;
    if (root["added_tokens"].get(added) == simdjson::SUCCESS) {
      for (simdjson::dom::element token : added) {
        std::string_view content;
        int64_t id = 0;
        if (token["content"].get(content) == simdjson::SUCCESS && content == piece &&
            token["id"].get(id) == simdjson::SUCCESS) {
          return id;
        }
      }
    }
    int64_t id = 0;
    if (root["model"]["vocab"][piece].get(id) == simdjson::SUCCESS) return id;
    return int64_t{-1};
  }
  const fs::path vocab_json = fs::path(model_dir) / "vocab.json";
  if (!fs::exists(vocab_json)) return int64_t{-1};
  auto document = JsonDocument::Load(vocab_json.string());
  if (!document.ok()) return document.status();
  int64_t id = 0;
  if (document.value()->root().raw()[piece].get(id) == simdjson::SUCCESS) return id;
  return int64_t{-1};
}

}  // namespace

std::optional<YesNoTemplate> FindYesNoPreset(std::string_view name) {
  if (name == "qwen3-reranker") {
    // Qwen3-Reranker's model card: prefix, the formatted body (cut at its end), suffix.
    return YesNoTemplate{
        .preset = std::string(name),
        .parts = {"<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
                  "Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
                  "<|im_start|>user\n",
                  "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}",
                  "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        .instruction = "Given a web search query, retrieve relevant passages that answer the query",
        .yes_token = "yes",
        .no_token = "no"};
  }
  if (name == "mxbai-rerank-v2") {
    // mxbai-rerank's MxbaiRerankV2.prepare_inputs: chat prefix, "instruction: …" + sep (only
    // with an instruction) and "query: …" (one text there, cut together; split here at the
    // newline, where Qwen2's pre-tokenizer splits anyway), sep, "document: …", then
    // concat_input_ids' sep, task prompt and chat suffix. Score logit("1") − logit("0").
    return YesNoTemplate{
        .preset = std::string(name),
        .parts = {"<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
                  "<|im_start|>user\n",
                  "instruction: {instruction}\n", "query: {query}", "\n", "document: {document}", "\n",
                  "You are a search relevance expert who evaluates how well documents match search queries. For each "
                  "query-document pair, carefully analyze the semantic relationship between them, then provide your "
                  "binary relevance judgment (0 for not relevant, 1 for relevant).\nRelevance:",
                  "<|im_end|>\n<|im_start|>assistant\n"},
        .instruction = "",
        .yes_token = "1",
        .no_token = "0"};
  }
  if (name == "bge-reranker-v2-gemma") {
    // FlagEmbedding's BaseLLMReranker (bge-reranker-v2-gemma's card): bos, "A: query", sep,
    // "B: passage", sep, prompt; score logit("Yes") alone.
    return YesNoTemplate{
        .preset = std::string(name),
        .parts = {"<bos>", "A: {query}", "\n", "B: {document}", "\n", "{instruction}"},
        .instruction = "Given a query A and a passage B, determine whether the passage contains an answer to the "
                       "query by providing a prediction of either 'Yes' or 'No'.",
        .yes_token = "Yes",
        .no_token = ""};
  }
  if (name == "bge-reranker-v2.5-gemma2-lightweight") {
    // FlagEmbedding's LightweightLLMReranker.compute_score_single_gpu: BaseLLMReranker's layout
    // with its own default prompt; the score is a per-layer head's, no token's logit.
    return YesNoTemplate{.preset = std::string(name),
                         .parts = {"<bos>", "A: {query}", "\n", "B: {document}", "\n", "{instruction}"},
                         .instruction = "Predict whether passage B contains an answer to query A.",
                         .yes_token = "",
                         .no_token = ""};
  }
  return std::nullopt;
}

std::string_view DefaultYesNoPreset(ModelFamily family) {
  switch (family) {
    case ModelFamily::kQwen2:
      return "mxbai-rerank-v2";
    case ModelFamily::kGemma:
    case ModelFamily::kGemma2:
      return "bge-reranker-v2-gemma";
    default:
      return "qwen3-reranker";
  }
}

namespace {

constexpr std::string_view kLayerWisePreset = "bge-reranker-v2.5-gemma2-lightweight";

// A layer-wise reranker's keys of the file: the cut-off layer, and FlagEmbedding's token
// compression, which is refused unless it is off (ratio 1).
Status ReadLayerWiseKeys(const JsonObject& root, YesNoTemplate* prompt) {
  if (root.Has("cutoff_layer")) {
    int64_t layer = 0;
    STAMEN_RETURN_IF_ERROR(root.Optional("cutoff_layer", &layer));
    prompt->cutoff_layer = layer;
  }
  int64_t compress_ratio = 1;
  STAMEN_RETURN_IF_ERROR(root.Optional("compress_ratio", &compress_ratio));
  if (compress_ratio != 1) {
    return root.Error("compress_ratio", "is not supported: FlagEmbedding's token compression (ratios 2, 4, 8 at "
                                        "compress_layers) is not implemented; only 1 (off, its default)");
  }
  return Status();
}

StatusOr<YesNoTemplate> ReadTemplate(const std::string& model_dir, std::string_view default_preset,
                                     const std::string& instruction) {
  YesNoTemplate prompt = *FindYesNoPreset(default_preset);
  const fs::path path = fs::path(model_dir) / std::string(kYesNoTemplateFile);
  if (fs::exists(path)) {
    auto document = JsonDocument::Load(path.string());
    if (!document.ok()) return document.status();
    const JsonObject root = document.value()->root();
    std::string preset = prompt.preset;
    STAMEN_RETURN_IF_ERROR(root.Optional("preset", &preset));
    auto found = FindYesNoPreset(preset);
    if (!found) {
      return root.Error("preset", "names no preset ('" + preset +
                                      "'; qwen3-reranker, mxbai-rerank-v2, bge-reranker-v2-gemma, "
                                      "bge-reranker-v2.5-gemma2-lightweight)");
    }
    prompt = std::move(*found);
    const bool parts = root.Has("parts");
    if (parts) {
      simdjson::dom::array array;
      if (root.raw()["parts"].get(array) != simdjson::SUCCESS) return root.Error("parts", "must be an array of strings");
      prompt.parts.clear();
      for (simdjson::dom::element element : array) {
        std::string_view text;
        if (element.get(text) != simdjson::SUCCESS) return root.Error("parts", "must be an array of strings");
        prompt.parts.emplace_back(text);
      }
      if (prompt.parts.empty()) return root.Error("parts", "must not be empty");
    }
    // The first design's keys: qwen3-reranker's three parts.
    constexpr std::string_view kLegacyKeys[] = {"prefix", "body", "suffix"};
    for (size_t i = 0; i < std::size(kLegacyKeys); ++i) {
      if (!root.Has(kLegacyKeys[i])) continue;
      if (parts) return root.Error(kLegacyKeys[i], "cannot be given with 'parts'");
      if (prompt.preset != "qwen3-reranker") {
        return root.Error(kLegacyKeys[i], "sets a qwen3-reranker part; with preset '" + prompt.preset +
                                              "' give 'parts'");
      }
      STAMEN_RETURN_IF_ERROR(root.Optional(kLegacyKeys[i], &prompt.parts[i]));
    }
    STAMEN_RETURN_IF_ERROR(root.Optional("instruction", &prompt.instruction));
    STAMEN_RETURN_IF_ERROR(root.Optional("yes_token", &prompt.yes_token));
    STAMEN_RETURN_IF_ERROR(root.Optional("no_token", &prompt.no_token));
    // The layer-wise preset scores through its heads, not a token.
    if (prompt.yes_token.empty() && prompt.preset != kLayerWisePreset) {
      return root.Error("yes_token", "must not be empty");
    }
    STAMEN_RETURN_IF_ERROR(ReadLayerWiseKeys(root, &prompt));
    bool has_query = false, has_document = false;
    for (const std::string& part : prompt.parts) {
      const YesNoPartKind kind = KindOfYesNoPart(part);
      has_query = has_query || kind.query;
      has_document = has_document || kind.document;
    }
    if (!has_query || !has_document) return root.Error(parts ? "parts" : "body", "must hold {query} and {document}");
  }
  if (!instruction.empty()) prompt.instruction = instruction;
  return prompt;
}

}  // namespace

StatusOr<YesNoTemplate> ReadYesNoTemplate(const std::string& model_dir, ModelFamily family,
                                          const std::string& instruction) {
  return ReadTemplate(model_dir, DefaultYesNoPreset(family), instruction);
}

StatusOr<YesNoTemplate> ReadYesNoTemplate(const std::string& model_dir, const ModelConfig& config,
                                          const std::string& instruction) {
  return ReadTemplate(model_dir, config.layer_wise_start > 0 ? kLayerWisePreset : DefaultYesNoPreset(config.family),
                      instruction);
}

YesNoPartKind KindOfYesNoPart(std::string_view part) {
  return {.instruction = part.find("{instruction}") != std::string_view::npos,
          .query = part.find("{query}") != std::string_view::npos,
          .document = part.find("{document}") != std::string_view::npos};
}

std::string FormatYesNoPart(std::string_view part, std::string_view instruction, std::string_view query,
                            std::string_view document) {
  std::string text(part);
  // The placeholders are found in the template only and replaced from the back, so earlier
  // offsets stay valid and a query or document containing "{document}" is left as it is.
  struct Slot {
    size_t at;
    std::string_view placeholder, value;
  };
  std::vector<Slot> slots;
  const std::pair<std::string_view, std::string_view> fills[] = {
      {"{instruction}", instruction}, {"{query}", query}, {"{document}", document}};
  for (const auto& [placeholder, value] : fills) {
    for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + 1)) {
      slots.push_back({at, placeholder, value});
    }
  }
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.at > b.at; });
  for (const Slot& slot : slots) text.replace(slot.at, slot.placeholder.size(), slot.value);
  return text;
}

namespace {

// A layer-wise reranker's cut-off (the template's, else every layer, FlagEmbedding's default),
// which must be one of FlagEmbedding's can_use_layers (start_layer, start_layer + layer_sep, …
// up to num_hidden_layers) whose head the folder holds; then `config` scores after it.
Status ResolveCutoffLayer(const std::string& model_dir, const YesNoTemplate& prompt, ModelConfig* config) {
  const int64_t cutoff = prompt.cutoff_layer.value_or(config->num_hidden_layers);
  std::string allowed;
  bool found = false;
  for (int64_t layer = config->layer_wise_start, k = 0; layer <= config->num_hidden_layers;
       layer += config->layer_wise_step, ++k) {
    auto has_head = FolderHasTensor(model_dir, "lm_head." + std::to_string(k) + ".linear_head.weight");
    // A gateway pulls no weights: without the tensor names, the config's layers are the heads.
    if (has_head.ok() && !*has_head) continue;
    allowed += (allowed.empty() ? "" : ", ") + std::to_string(layer);
    found = found || layer == cutoff;
  }
  if (!found) {
    const std::string source = prompt.cutoff_layer.has_value()
                                   ? "the cutoff_layer of " + std::string(kYesNoTemplateFile)
                                   : "the default cut-off (num_hidden_layers)";
    return Status::Error(model_dir + ": " + source + ", " + std::to_string(cutoff) +
                         ", is not a layer with a head (start_layer " + std::to_string(config->layer_wise_start) +
                         ", layer_sep " + std::to_string(config->layer_wise_step) + "; allowed: " +
                         (allowed.empty() ? "none" : allowed) + ")");
  }
  config->cutoff_layer = cutoff;
  config->head = ModelHead::kSequenceClassification;
  config->num_labels = 1;
  config->id2label = {"score"};
  config->yes_no_token_ids.clear();
  return Status();
}

}  // namespace

Status ResolveYesNoReranker(const std::string& model_dir, std::optional<bool> requested,
                            const SentenceTransformersConfig& sentence_transformers, ModelConfig* config) {
  if (requested.has_value() && !*requested) return Status();
  const bool causal_lm = config->decoder && config->architecture.ends_with("ForCausalLM");
  const bool layer_wise = config->layer_wise_start > 0;
  if (!requested.has_value()) {
    if (!causal_lm || sentence_transformers.has_modules) return Status();
    if (!config->tie_word_embeddings && !layer_wise) {
      auto has_head = FolderHasTensor(model_dir, "lm_head.weight");
      if (!has_head.ok()) {
        // A gateway pulls no weights: a single-file model's tensor names are not there to read.
        return Status::Error("cannot tell whether " + config->architecture + " is a yes/no reranker (" +
                             has_head.status().message() + "): give --yes-no-reranker on or off");
      }
      if (!*has_head) return Status();
    }
  } else if (!causal_lm) {
    return Status::Error(model_dir + ": a yes/no reranker must be a decoder *ForCausalLM, not " + config->architecture);
  }
  auto prompt = ReadYesNoTemplate(model_dir, *config);
  if (!prompt.ok()) return prompt.status();
  if (layer_wise) return ResolveCutoffLayer(model_dir, *prompt, config);
  if (prompt->cutoff_layer.has_value()) {
    return Status::Error(model_dir + "/" + std::string(kYesNoTemplateFile) + ": 'cutoff_layer' applies to layer-wise " +
                         "rerankers (CostWiseGemmaForCausalLM) only, not " + config->architecture);
  }
  if (prompt->yes_token.empty()) {
    return Status::Error(model_dir + "/" + std::string(kYesNoTemplateFile) + ": preset '" + prompt->preset +
                         "' scores no token, which only a layer-wise reranker (CostWiseGemmaForCausalLM) can do");
  }
  std::vector<int32_t> ids;
  // {no, yes}, or {yes} alone.
  for (const std::string* piece : {&prompt->no_token, &prompt->yes_token}) {
    if (piece->empty()) continue;
    auto id = TokenId(model_dir, *piece);
    if (!id.ok()) return id.status();
    if (*id < 0 || *id >= config->vocab_size) {
      return Status::Error(model_dir + ": the tokenizer has no token '" + *piece + "' within the model's " +
                           std::to_string(config->vocab_size) + " ids, which a yes/no reranker scores (load it " +
                           "as an embedder with a pooling mode or --yes-no-reranker off)");
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  config->head = ModelHead::kSequenceClassification;
  config->num_labels = 1;
  config->id2label = {prompt->yes_token};
  config->yes_no_token_ids = std::move(ids);
  return Status();
}

std::optional<bool> ParseYesNoRerankerOption(std::string_view value, bool* ok) {
  *ok = true;
  if (value == "on") return true;
  if (value == "off") return false;
  if (value != "auto") *ok = false;
  return std::nullopt;
}

}  // namespace stamen::engine
