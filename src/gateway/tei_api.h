// Request and answer bodies of Text Embeddings Inference's routes beyond /embed, /rerank and
// /tokenize (whose shapes api.h shares with OpenAI and Cohere): /predict, /similarity,
// /decode, and which of them TEI's catch-all `POST /` (and SageMaker's /invocations) means.
// Shapes as TEI's router/src/http/types.rs has them. No I/O here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gateway/api.h"
#include "gateway/finished_rows.h"
#include "model_folder/model_profile.h"

namespace stamen::gateway {

// POST /predict: a text or a pair [a, b], or an array of either.
struct PredictCall {
  struct Sequence {
    std::string first;
    std::optional<std::string> second;  // set for a pair
  };
  std::vector<Sequence> sequences;
  bool batch = false;       // an array of inputs: the answer is one list of predictions per input
  bool raw_scores = false;  // logits instead of softmax (sigmoid for one label)
  std::optional<bool> truncate;
  Truncation truncation_direction = Truncation::kRight;
  std::optional<server::Priority> priority;  // stamen's own "priority"
};
std::variant<PredictCall, ApiError> ParsePredictCall(std::string_view body);

// POST /similarity: {"inputs": {"source_sentence", "sentences"}, "parameters": {truncate,
// truncation_direction, prompt_name}}, as huggingface_hub's sentence_similarity posts it.
struct SimilarityCall {
  std::string source_sentence;
  std::vector<std::string> sentences;
  std::optional<bool> truncate;
  Truncation truncation_direction = Truncation::kRight;
  std::string prompt_name;
  std::optional<server::Priority> priority;  // stamen's own "priority", beside "inputs"
  std::string task;  // Jina's "task" (a task adapter, task_adapter.h), beside "inputs" too
};
std::variant<SimilarityCall, ApiError> ParseSimilarityCall(std::string_view body);

// POST /decode: {"ids": [int] | [[int]], "skip_special_tokens": true}.
struct DecodeCall {
  std::vector<std::vector<int32_t>> ids;
  bool skip_special_tokens = true;
};
std::variant<DecodeCall, ApiError> ParseDecodeCall(std::string_view body);

// What `POST /` asks of a model. TEI picks by the model alone (and its TASK variable); the
// body's shape also tells huggingface_hub's tasks apart, which all post to the base URL:
// sentence_similarity sends {"inputs": {source_sentence, …}}, text_classification {"inputs"}.
enum class TeiTask { kEmbed, kSimilarity, kRerank, kPredict };
using engine::ModelKind;  // model_folder/model_profile.h
TeiTask RootTask(ModelKind model, std::string_view body);

// One input's predictions: `logits` (one per label) as softmax probabilities (a sigmoid for
// one label) or raw, named by `labels`, sorted by score, highest first.
struct Prediction {
  float score;
  const std::string* label;
};
std::vector<Prediction> Predictions(const float* logits, size_t count, bool raw_scores,
                                    const std::vector<std::string>& labels);
// [{"score", "label"}, …]
void AppendPredictions(std::string& out, const std::vector<Prediction>& predictions);

// Cosine similarity of two vectors of `size` floats (0 when either is all zeros).
float Cosine(const float* a, const float* b, size_t size);

// --- answers, from a finished job's rows ---
// POST /predict: each input's predictions from its row of logits (one per label of `labels`),
// one list per input when the call was a batch; a 500 when the rows do not hold one logit per label.
std::variant<std::string, ApiError> PredictBody(const PredictCall& call, const FinishedRows& done,
                                                const std::vector<std::string>& labels);
// POST /similarity: [cosine of each sentence's row with the source sentence's (row 0)].
std::string SimilarityBody(const FinishedRows& done);
// POST /embed_all: [[[f] per token] per input], every token's row.
std::string EmbedAllBody(const FinishedRows& done);
// POST /embed_sparse on a SPLADE model: [[{"index", "value"}] per input], the non-zero entries of
// each input's row by vocabulary id.
std::string SpladeSparseBody(const FinishedRows& done);

}  // namespace stamen::gateway
