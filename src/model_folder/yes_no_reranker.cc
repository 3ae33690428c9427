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

StatusOr<YesNoTemplate> ReadYesNoTemplate(const std::string& model_dir, const std::string& instruction) {
  YesNoTemplate prompt;
  const fs::path path = fs::path(model_dir) / std::string(kYesNoTemplateFile);
  if (fs::exists(path)) {
    auto document = JsonDocument::Load(path.string());
    if (!document.ok()) return document.status();
    const JsonObject root = document.value()->root();
    STAMEN_RETURN_IF_ERROR(root.Optional("prefix", &prompt.prefix));
    STAMEN_RETURN_IF_ERROR(root.Optional("body", &prompt.body));
    STAMEN_RETURN_IF_ERROR(root.Optional("suffix", &prompt.suffix));
    STAMEN_RETURN_IF_ERROR(root.Optional("instruction", &prompt.instruction));
    STAMEN_RETURN_IF_ERROR(root.Optional("yes_token", &prompt.yes_token));
    STAMEN_RETURN_IF_ERROR(root.Optional("no_token", &prompt.no_token));
  }
  if (!instruction.empty()) prompt.instruction = instruction;
  return prompt;
}

std::string FormatYesNoBody(const YesNoTemplate& prompt, std::string_view query, std::string_view document) {
  std::string body = prompt.body;
  const size_t query_at = body.find("{query}"), document_at = body.find("{document}");
  // The placeholders are found in the template only and replaced from the back, so earlier
  // offsets stay valid and a query or document containing "{document}" is left as it is.
  struct Slot {
    size_t at;
    std::string_view placeholder, value;
  };
  std::vector<Slot> slots;
  for (size_t at = body.find("{instruction}"); at != std::string::npos; at = body.find("{instruction}", at + 1)) {
    slots.push_back({at, "{instruction}", prompt.instruction});
  }
  if (query_at != std::string::npos) slots.push_back({query_at, "{query}", query});
  if (document_at != std::string::npos) slots.push_back({document_at, "{document}", document});
  std::sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.at > b.at; });
  for (const Slot& slot : slots) body.replace(slot.at, slot.placeholder.size(), slot.value);
  return body;
}

Status ResolveYesNoReranker(const std::string& model_dir, std::optional<bool> requested,
                            const SentenceTransformersConfig& sentence_transformers, ModelConfig* config) {
  if (requested.has_value() && !*requested) return Status();
  const bool causal_lm = config->decoder && config->architecture.ends_with("ForCausalLM");
  if (!requested.has_value()) {
    if (!causal_lm || sentence_transformers.has_modules) return Status();
    if (!config->tie_word_embeddings) {
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
  auto prompt = ReadYesNoTemplate(model_dir);
  if (!prompt.ok()) return prompt.status();
  int64_t ids[2];
  const std::string* pieces[2] = {&prompt->no_token, &prompt->yes_token};
  for (int i = 0; i < 2; ++i) {
    auto id = TokenId(model_dir, *pieces[i]);
    if (!id.ok()) return id.status();
    if (*id < 0 || *id >= config->vocab_size) {
      return Status::Error(model_dir + ": the tokenizer has no token '" + *pieces[i] + "' within the model's " +
                           std::to_string(config->vocab_size) + " ids, which a yes/no reranker scores (load it " +
                           "as an embedder with a pooling mode or --yes-no-reranker off)");
    }
    ids[i] = *id;
  }
  config->head = ModelHead::kSequenceClassification;
  config->num_labels = 1;
  config->id2label = {prompt->yes_token};
  config->yes_no_token_ids = {static_cast<int32_t>(ids[0]), static_cast<int32_t>(ids[1])};
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
