// Yes/no LLM rerankers (Qwen3-Reranker): a causal LM asked, through a chat template, whether
// a document meets a query's requirements; the relevance score is read from the "yes" and
// "no" logits at the last position. stamen runs such a folder as a one-label scorer whose
// head is lm_head["yes"] − lm_head["no"] (models/qwen.cc), so its raw score is
// logit_yes − logit_no and sigmoid(raw) = softmax([no, yes])[yes], the model card's score.
//
// Which folders are yes/no rerankers (ResolveYesNoReranker): with no explicit choice, a
// folder whose config names a *ForCausalLM decoder, that has no sentence-transformers
// modules.json (Qwen3-Embedding folders also say Qwen3ForCausalLM but carry one), and that
// has an output projection (lm_head.weight, or tie_word_embeddings). An explicit choice
// (`--yes-no-reranker on|off`) overrides the rule; choosing a pooling mode means "embedder".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model_folder/model_config.h"
#include "common/status.h"

namespace stamen::engine {

// The prompt around a (query, document) pair: prefix + body + suffix, the body with
// {instruction}, {query} and {document} replaced. Defaults: the Qwen3-Reranker model card's.
struct YesNoTemplate {
  std::string prefix =
      "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
      "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
  std::string body = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}";
  std::string suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  std::string instruction = "Given a web search query, retrieve relevant passages that answer the query";
  std::string yes_token = "yes", no_token = "no";  // the tokenizer's pieces scored
};

// The file in a model folder that overrides the template: a JSON object with any of the
// string keys "prefix", "body", "suffix", "instruction", "yes_token", "no_token".
inline constexpr std::string_view kYesNoTemplateFile = "yes_no_reranker.json";

// The defaults, overridden by `model_dir`/yes_no_reranker.json when present, then by a
// non-empty `instruction`. Errors name the file and key.
StatusOr<YesNoTemplate> ReadYesNoTemplate(const std::string& model_dir, const std::string& instruction = "");

// The body of one pair (without prefix and suffix), as the model card's format_instruction.
std::string FormatYesNoBody(const YesNoTemplate& prompt, std::string_view query, std::string_view document);

// Decides by the rule above (or `requested`) whether `model_dir` runs as a yes/no reranker
// and, when it does, makes `config` one: head kSequenceClassification with one label "yes",
// yes_no_token_ids the tokenizer's ids of the template's no and yes tokens (from
// tokenizer.json, else vocab.json). Explicitly requested on a folder that cannot be one
// (not a *ForCausalLM decoder, no such tokens): an error saying why.
Status ResolveYesNoReranker(const std::string& model_dir, std::optional<bool> requested,
                            const SentenceTransformersConfig& sentence_transformers, ModelConfig* config);

// "on" → true, "off" → false, "auto" → nullopt; anything else sets `*ok` false.
std::optional<bool> ParseYesNoRerankerOption(std::string_view value, bool* ok);

}  // namespace stamen::engine
