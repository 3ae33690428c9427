// Yes/no LLM rerankers (Qwen3-Reranker, mxbai-rerank-v2, bge-reranker-v2-gemma): a causal LM
// asked, through a prompt template, whether a document answers a query; the relevance score is
// read from one or two of its logits at the last position. stamen runs such a folder as a
// one-label scorer whose head is lm_head[yes] − lm_head[no], or lm_head[yes] alone
// (layers::LoadYesNoHead), so its raw score is logit_yes − logit_no (sigmoid: softmax([no,
// yes])[yes], Qwen3-Reranker's and mxbai's score) or logit_yes (bge-reranker-v2-gemma's).
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
#include <vector>

#include "model_folder/model_config.h"
#include "common/status.h"

namespace stamen::engine {

// The prompt around a (query, document) pair: a list of parts, each tokenized alone (no special
// tokens added) and the pieces concatenated, as the model cards build their inputs. A part may
// hold the placeholders {instruction}, {query} and {document}, replaced by the texts; a part
// holding {instruction} but neither {query} nor {document} is left out when the instruction is
// empty. Too long a pair (ModelTokenizer::EncodeYesNoPair) is cut in its query and document
// parts only: a query part to 3/4 of what the fixed parts leave when a separate document part
// exists (mxbai-rerank's and FlagEmbedding's rule), then the document part, then the query
// part, each from its end; a part holding both (Qwen3-Reranker's body) is cut from its end.
//
// The score is read at the last position: with a no_token, logit(yes) − logit(no), whose
// sigmoid is softmax([no, yes])[yes]; without one (no_token empty), logit(yes) itself, whose
// sigmoid is FlagEmbedding's normalized score. Either is the raw score of a one-label scorer.
//
// A layer-wise reranker (ModelConfig::layer_wise_start, CostWiseGemmaForCausalLM) scores no
// token: its head is one-output, and the score is read at the last position after
// cutoff_layer layers (FlagEmbedding's cutoff_layers=[L]; by default every layer, as its
// compute_score with cutoff_layers None). yes_token and no_token are then empty.
struct YesNoTemplate {
  std::string preset;  // the preset the template started from (FindYesNoPreset)
  std::vector<std::string> parts;
  std::string instruction;
  std::string yes_token, no_token;  // the tokenizer's pieces scored; no_token may be empty
  std::optional<int64_t> cutoff_layer{};  // a layer-wise reranker's, when the file chooses one
};

// The presets by name: "qwen3-reranker" (Qwen3-Reranker's model card), "mxbai-rerank-v2"
// (mxbai-rerank's MxbaiRerankV2 on Qwen2: "1" against "0"), "bge-reranker-v2-gemma"
// (FlagEmbedding's BaseLLMReranker: logit("Yes") alone), "bge-reranker-v2.5-gemma2-lightweight"
// (FlagEmbedding's LightweightLLMReranker: v2-gemma's layout with its own prompt, no token
// scored; layer-wise rerankers only). nullopt for another name.
std::optional<YesNoTemplate> FindYesNoPreset(std::string_view name);

// The preset a folder of `family` gets without a yes_no_reranker.json naming one: Qwen2 →
// mxbai-rerank-v2, Gemma → bge-reranker-v2-gemma, any other decoder → qwen3-reranker.
std::string_view DefaultYesNoPreset(ModelFamily family);

// The file in a model folder that chooses and overrides the template: a JSON object with
// "preset" (a name above), "parts" (an array of strings), "instruction", "yes_token" and
// "no_token" (strings), all optional; the keys of the first design, "prefix", "body" and
// "suffix", still set qwen3-reranker's three parts (not with "parts", nor another preset). A
// layer-wise reranker's file may also give "cutoff_layer" (an integer, validated against the
// heads by ResolveYesNoReranker) and "compress_ratio" (FlagEmbedding's token compression; only
// 1, none, is implemented) with "compress_layers" (ignored at ratio 1, as FlagEmbedding does).
inline constexpr std::string_view kYesNoTemplateFile = "yes_no_reranker.json";

// The family's default preset, overridden by `model_dir`/yes_no_reranker.json when present,
// then by a non-empty `instruction`. Errors name the file and key.
StatusOr<YesNoTemplate> ReadYesNoTemplate(const std::string& model_dir, ModelFamily family,
                                          const std::string& instruction = "");
// The same for the model `config` describes: a layer-wise reranker's default preset is
// bge-reranker-v2.5-gemma2-lightweight.
StatusOr<YesNoTemplate> ReadYesNoTemplate(const std::string& model_dir, const ModelConfig& config,
                                          const std::string& instruction = "");

// What a part's placeholders hold.
struct YesNoPartKind {
  bool instruction = false, query = false, document = false;
};
YesNoPartKind KindOfYesNoPart(std::string_view part);

// `part` with its placeholders replaced (placeholders found in the template only, so a query
// holding "{document}" stays as it is).
std::string FormatYesNoPart(std::string_view part, std::string_view instruction, std::string_view query,
                            std::string_view document);

// Decides by the rule above (or `requested`) whether `model_dir` runs as a yes/no reranker
// and, when it does, makes `config` one: head kSequenceClassification with one label (the yes
// token), yes_no_token_ids the tokenizer's ids of the template's no and yes tokens, or of the
// yes token alone (from tokenizer.json, else vocab.json). Explicitly requested on a folder
// that cannot be one (not a *ForCausalLM decoder, no such tokens): an error saying why. A
// layer-wise CostWiseGemmaForCausalLM is one by the same rule (its heads stand for lm_head):
// config.cutoff_layer becomes the file's cutoff_layer, else num_hidden_layers, which must be a
// layer whose head the folder holds (an error lists them).
Status ResolveYesNoReranker(const std::string& model_dir, std::optional<bool> requested,
                            const SentenceTransformersConfig& sentence_transformers, ModelConfig* config);

// "on" → true, "off" → false, "auto" → nullopt; anything else sets `*ok` false.
std::optional<bool> ParseYesNoRerankerOption(std::string_view value, bool* ok);

}  // namespace stamen::engine
