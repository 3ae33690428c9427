// Request and answer bodies of Cohere's v2 API (what `cohere.ClientV2` sends): POST /v2/embed
// and POST /v2/rerank, with the fields of Cohere's v2 reference and the SDK's
// EmbedByTypeResponse / V2RerankResponse answers. No I/O here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model_folder/model_options.h"
#include "gateway/api.h"
#include "gateway/quantize.h"

namespace stamen::gateway {

// POST /v2/embed: {"texts": [str] | "inputs": [{"content": [{"type": "text", "text"}]}],
// "model", "input_type", "embedding_types", "truncate", "output_dimension", "max_tokens",
// "priority"}.
struct CohereEmbedCall {
  std::vector<std::string> texts;
  std::string model;
  std::string input_type;                    // search_query, search_document, classification, clustering; or empty
  std::vector<EmbeddingType> embedding_types = {EmbeddingType::kFloat};  // each answered once, in this order
  bool truncate = true;                      // Cohere's default "END"; "NONE": over-long inputs are a 422
  Truncation truncation_direction = Truncation::kRight;  // "START": drop the start
  int64_t output_dimension = 0;              // 0: the model's width
  int64_t max_tokens = 0;                    // per input, 0: the model's maximum
  std::optional<server::Priority> priority;
  // Jina's "task" (a task adapter, task_adapter.h); empty: the one input_type stands for, if any.
  std::string task;
};
std::variant<CohereEmbedCall, ApiError> ParseCohereEmbedCall(std::string_view body);

// The prompt name of the model's config_sentence_transformers.json that a Cohere input_type
// stands for: the first of its candidates the config has (search_query: query; search_document:
// document, passage; classification: classification, Classification; clustering: clustering,
// Clustering), else the input_type itself when the config has a prompt of that name; empty
// when none (the server's default prompt then applies).
std::string PromptNameForInputType(const engine::SentenceTransformersConfig& config, std::string_view input_type);

// POST /v2/rerank: {"model", "query", "documents": [str], "top_n", "max_tokens_per_doc",
// "priority"}: v1's fields (ParseRerankCall), truncated unless "truncate": false says otherwise
// (Cohere cuts long documents itself), and max_tokens_per_doc: each document cut after that
// many of its own tokens before it is paired with the query.
//
// "priority" on both routes: Cohere's integer, lower first, 0 (its default) the highest, or
// stamen's "high" / "normal" / "low"; 0 is stamen's normal (Cohere's numbers can only lower a
// request), any larger number low.
std::variant<RerankCall, ApiError> ParseCohereRerankCall(std::string_view body);

// POST /v2/embed's answer (EmbedByTypeResponse): {"id", "embeddings": {type: [v per input], …},
// "texts", "meta", "response_type": "embeddings_by_type"}, each input's vector a row of `done`.
std::string CohereEmbedBody(const CohereEmbedCall& call, const FinishedRows& done);


}  // namespace stamen::gateway
