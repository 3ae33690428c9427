// Text Embeddings Inference's routes beyond /embed, /rerank and /tokenize: the catch-all
// POST / (and SageMaker's /invocations), /predict, /similarity, /decode, /embed_all and
// /embed_sparse. Bodies are parsed
// and written by tei_api.cc; here they are tokenized, run on the workers and answered.
#include <algorithm>

#include "gateway/bge_m3_outputs.h"
#include "gateway/gateway.h"
#include "gateway/least_tokens.h"
#include "model_folder/bge_m3.h"

namespace stamen::gateway {

using server::WorkKind;
using server::WorkRequest;

void Gateway::TeiRoot(const http::Request& request, Reply reply) {
  switch (RootTask(kind_, request.body)) {
    case TeiTask::kEmbed: return splade_ ? EmbedSparse(request, std::move(reply)) : Embed(request, false, std::move(reply));
    case TeiTask::kSimilarity: return Similarity(request, std::move(reply));
    case TeiTask::kRerank: return Rerank(request, RerankShape::kTei, std::move(reply));
    case TeiTask::kPredict: return Predict(request, std::move(reply));
  }
}

void Gateway::Predict(const http::Request& request, Reply reply) {
  auto parsed = ParsePredictCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  auto call = std::make_shared<PredictCall>(std::move(std::get<PredictCall>(parsed)));
  if (auto error = NeedClassifier("classifier")) return reply.Error(*error);
  if (auto error = CheckBatchSize(call->sequences.size(), "inputs")) return reply.Error(*error);
  const bool has_pair = std::any_of(call->sequences.begin(), call->sequences.end(),
                                    [](const PredictCall::Sequence& sequence) { return sequence.second.has_value(); });
  if (call->truncation_direction == Truncation::kLeft && has_pair) {
    // A pair is cut longest-first from the right, as transformers does.
    return reply.Error({400, "'truncation_direction' \"left\" applies to single texts; pairs are truncated longest-first"});
  }
  int64_t least_tokens = 0;
  for (const PredictCall::Sequence& sequence : call->sequences) {
    const int64_t words = LeastTokens(sequence.first, 0) + (sequence.second ? LeastTokens(*sequence.second, 0) : 0);
    least_tokens += std::min(words, max_input_length_);
  }
  if (auto error = RefuseForLoad(least_tokens)) return reply.Error(*error);
  const bool truncate = call->truncate.value_or(options_.auto_truncate);
  auto tokenize = [this, call, truncate](engine::ModelTokenizer& tokenizer, WorkRequest& job) {
    std::vector<ScoredText> texts;
    for (const auto& sequence : call->sequences) {
      texts.push_back({sequence.first, sequence.second ? std::optional<std::string_view>(*sequence.second) : std::nullopt});
    }
    job.priority = PriorityOf(call->priority, call->sequences.size(), options_.rerank_bulk_threshold);
    return TokenizeScored(tokenizer, texts, truncate, call->truncation_direction, "input", job);
  };
  auto answer = [this, call](const WorkRequest& done) -> std::variant<std::string, ApiError> {
    const size_t labels = config_.id2label.size();
    if (static_cast<size_t>(done.columns) != labels) {
      return ApiError{500, "the worker answered " + std::to_string(done.columns) + " scores per input; the model has " +
                               std::to_string(labels) + " labels", "server_error"};
    }
    const float* logits = reinterpret_cast<const float*>(done.output.data());
    std::string body = call->batch ? "[" : "";
    for (size_t row = 0; row < done.lengths.size(); ++row) {
      if (row) body += ',';
      AppendPredictions(body, Predictions(logits + row * labels, labels, call->raw_scores, config_.id2label));
    }
    if (call->batch) body += ']';
    return body;
  };
  Run(request, std::move(tokenize), std::move(answer), std::move(reply));
}

void Gateway::Similarity(const http::Request& request, Reply reply) {
  auto parsed = ParseSimilarityCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  const SimilarityCall& similarity = std::get<SimilarityCall>(parsed);
  if (auto error = NeedEmbedder("/similarity")) return reply.Error(*error);
  if (auto error = CheckBatchSize(similarity.sentences.size() + 1, "sentences (with the source sentence)")) {
    return reply.Error(*error);
  }
  auto prompt = Prompt(similarity.prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return reply.Error(*error);
  // The source sentence is input 0, the sentences follow.
  auto inputs = std::make_shared<std::vector<Input>>();
  inputs->emplace_back(similarity.source_sentence);
  for (const std::string& sentence : similarity.sentences) inputs->emplace_back(sentence);
  if (auto error = RefuseForLoad(*inputs)) return reply.Error(*error);
  const bool truncate = similarity.truncate.value_or(options_.auto_truncate);
  const Truncation direction = similarity.truncation_direction;
  const server::Priority priority = PriorityOf(similarity.priority, inputs->size(), options_.bulk_threshold);
  auto tokenize = [this, inputs, prompt = std::get<std::string>(prompt), truncate, direction, priority](
                      engine::ModelTokenizer& tokenizer, WorkRequest& job) {
    job.kind = WorkKind::kEmbed;
    job.pooling = options_.pooling;
    job.priority = priority;
    return TokenizeInputs(tokenizer, *inputs, prompt, truncate, direction, job);
  };
  auto answer = [](const WorkRequest& done) {
    const size_t columns = static_cast<size_t>(done.columns);
    const float* vectors = reinterpret_cast<const float*>(done.output.data());
    std::string body = "[";
    for (size_t row = 1; row < done.lengths.size(); ++row) {
      if (row > 1) body += ',';
      AppendFloat(body, Cosine(vectors, vectors + row * columns, columns));
    }
    return body + ']';
  };
  Run(request, std::move(tokenize), std::move(answer), std::move(reply));
}

void Gateway::Decode(const http::Request& request, Reply reply) {
  auto parsed = ParseDecodeCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  auto call = std::make_shared<DecodeCall>(std::move(std::get<DecodeCall>(parsed)));
  if (auto error = CheckBatchSize(call->ids.size(), "sequences")) return reply.Error(*error);
  const int64_t vocabulary = static_cast<int64_t>(tokenizers_.front()->VocabularySize());
  for (size_t i = 0; i < call->ids.size(); ++i) {
    for (int32_t id : call->ids[i]) {
      if (id < 0 || id >= vocabulary) {
        return reply.Error({400, "sequence " + std::to_string(i) + ": token id " + std::to_string(id) +
                                     " is outside the tokenizer's vocabulary (0.." + std::to_string(vocabulary - 1) + ")"});
      }
    }
  }
  pool_->Post([this, call, reply](size_t thread) {
    const engine::ModelTokenizer& tokenizer = *tokenizers_[thread];
    std::string body = "[";
    for (size_t i = 0; i < call->ids.size(); ++i) {
      if (i) body += ',';
      AppendJsonString(body, tokenizer.Decode(call->ids[i], call->skip_special_tokens));
    }
    body += ']';
    reply(JsonResponse(200, std::move(body)));
  });
}

void Gateway::EmbedRows(const http::Request& request, WorkKind kind, std::optional<engine::ops::PoolingMode> pooling,
                        RowsWriter write, Reply reply) {
  auto parsed = ParseEmbedCall(request.body, /*openai=*/false);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  EmbedCall& call = std::get<EmbedCall>(parsed);
  if (auto error = NeedEmbedder(request.path, kind == WorkKind::kEmbed)) return reply.Error(*error);
  auto prompt = Prompt(call.prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return reply.Error(*error);
  TokenRowsJob job{.inputs = std::move(call.inputs),
                   .prompt = std::get<std::string>(prompt),
                   .truncate = call.truncate.value_or(options_.auto_truncate),
                   .direction = call.truncation_direction,
                   .priority = call.priority,
                   .kind = kind,
                   .pooling = pooling};
  RunTokenRows(request, std::move(job), [write = std::move(write)](const WorkRequest& done) {
    const std::vector<int64_t>& rows = done.row_offsets;  // set by Dispatcher::Run
    const size_t columns = static_cast<size_t>(done.columns);
    const float* values = reinterpret_cast<const float*>(done.output.data());
    const auto* ids = reinterpret_cast<const int32_t*>(done.token_ids.data());
    std::string body = "[";
    int64_t first_token = 0;
    for (size_t input = 0; input < done.lengths.size(); ++input) {
      if (input) body += ',';
      write(body, values + rows[input] * columns, static_cast<size_t>(rows[input + 1] - rows[input]), columns,
            std::span<const int32_t>(ids + first_token, static_cast<size_t>(done.lengths[input])));
      first_token += done.lengths[input];
    }
    body += ']';
    return body;
  }, std::move(reply));
}

void Gateway::RunTokenRows(const http::Request& request, TokenRowsJob job, AnswerJob answer, Reply reply) {
  if (auto error = CheckBatchSize(job.inputs.size(), "inputs")) return reply.Error(*error);
  if (auto error = RefuseForLoad(job.inputs)) return reply.Error(*error);
  // Rows per token (every token's state, bge-m3's outputs) grow with the tokens: capped by
  // --max-token-states once they are counted.
  const int64_t token_columns = job.kind == WorkKind::kTokenEmbed ? config_.hidden_size
                                : job.kind == WorkKind::kDenseSparseColbert
                                    ? engine::BgeM3RowLayout{.hidden_size = config_.hidden_size}.columns()
                                    : 0;
  auto tokenize = [this, rows = std::make_shared<TokenRowsJob>(std::move(job)), token_columns, path = request.path](
                      engine::ModelTokenizer& tokenizer, WorkRequest& job) -> std::optional<ApiError> {
    if (auto error = TokenizeInputs(tokenizer, rows->inputs, rows->prompt, rows->truncate, rows->direction, job)) {
      return error;
    }
    if (auto error = CheckTokenStates(path, job.total_tokens(), token_columns)) return error;
    job.kind = rows->kind;
    job.pooling = rows->pooling;
    job.normalize = false;
    job.priority = PriorityOf(rows->priority, rows->inputs.size(), options_.bulk_threshold);
    return std::nullopt;
  };
  Run(request, std::move(tokenize), std::move(answer), std::move(reply));
}

void Gateway::EmbedAll(const http::Request& request, Reply reply) {
  // [[float] per token] per input: the last hidden state, special tokens included.
  EmbedRows(request, WorkKind::kTokenEmbed, std::nullopt,
            [](std::string& out, const float* rows, size_t count, size_t columns, std::span<const int32_t>) {
    out += '[';
    for (size_t token = 0; token < count; ++token) {
      if (token) out += ',';
      out += '[';
      for (size_t column = 0; column < columns; ++column) {
        if (column) out += ',';
        AppendFloat(out, rows[token * columns + column]);
      }
      out += ']';
    }
    out += ']';
  }, std::move(reply));
}

void Gateway::EmbedSparse(const http::Request& request, Reply reply) {
  if (bge_m3_) {
    // [{index, value}] per input: bge-m3's lexical weights.
    return EmbedRows(request, WorkKind::kDenseSparseColbert, std::nullopt,
                     [this](std::string& out, const float* rows, size_t, size_t, std::span<const int32_t> ids) {
                       AppendBgeM3Sparse(out, {rows, ids}, config_.hidden_size, bge_m3_dropped_ids_);
                     }, std::move(reply));
  }
  if (!splade_) {
    return reply.Error({400, "model " + model_id_ + " has no SPLADE pooling: /embed_sparse needs a …ForMaskedLM model "
                             "with a SpladePooling module (or --pooling splade)"});
  }
  // [{index, value}] per input: the SPLADE vector's non-zero entries, by vocabulary id.
  EmbedRows(request, WorkKind::kEmbed, engine::ops::PoolingMode::kSplade,
            [](std::string& out, const float* row, size_t, size_t columns, std::span<const int32_t>) {
              out += '[';
              bool first = true;
              for (size_t index = 0; index < columns; ++index) {
                if (row[index] == 0.0f) continue;
                out += first ? "{\"index\":" : ",{\"index\":";
                out += std::to_string(index) + ",\"value\":";
                AppendFloat(out, row[index]);
                out += '}';
                first = false;
              }
              out += ']';
            }, std::move(reply));
}

}  // namespace stamen::gateway
