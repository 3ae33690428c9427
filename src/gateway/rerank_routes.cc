// POST /rerank (TEI), /v1/rerank and /v2/rerank (Cohere): a reranker's score of each document
// beside the query, or a multi-vector model's MaxSim score; answered best first in the route's
// shape. Bodies are parsed by tei_api.cc and cohere_api.cc.
#include <algorithm>

#include "gateway/cohere_api.h"
#include "gateway/least_tokens.h"
#include "gateway/route_handlers.h"

namespace stamen::gateway {

namespace {

// Rerank on a multi-vector model: MaxSim scores of each document against the query.
void RerankByMaxSim(Inference& model, const http::Request& request, std::shared_ptr<RerankCall> call, RerankShape shape,
                    Reply respond) {
  if (auto error = model.CheckBatchSize(call->documents.size(), "documents")) return respond.Error(*error);
  // The query runs at least once, beside its first chunk of documents.
  int64_t least_tokens = model.multi_vector()->LeastTokens(call->query, /*query=*/true);
  for (const std::string& document : call->documents) least_tokens += model.multi_vector()->LeastTokens(document, false);
  auto tokenize = [&model, call](engine::ModelTokenizer& tokenizer, Job& job) -> std::optional<ApiError> {
    // Documents are cut to the model's document_length as PyLate cuts them: truncate does not apply.
    model.EncodeMaxSim(tokenizer, call->query, call->documents, job);
    job.set_priority(model.ScoringPriorityOf(call->priority, call->documents.size()));
    return std::nullopt;
  };
  auto answer = [&model, call, shape](const FinishedRows& done) {
    return RerankBody(*call, shape, model.model_id(), MaxSimScores(done), done.total_tokens());
  };
  model.Run(request, least_tokens, std::move(tokenize), std::move(answer), std::move(respond));
}

// A reranker's scores, or a multi-vector model's MaxSim, in `shape`.
void Rerank(Inference& model, const http::Request& request, RerankShape shape, Reply respond) {
  auto parsed = shape == RerankShape::kCohereV2 ? ParseCohereRerankCall(request.body)
                                                : ParseRerankCall(request.body, shape == RerankShape::kCohereV1);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond.Error(*error);
  auto call = std::make_shared<RerankCall>(std::move(std::get<RerankCall>(parsed)));
  if (model.multi_vector()) return RerankByMaxSim(model, request, call, shape, std::move(respond));
  if (auto error = model.NeedClassifier("reranker")) return respond.Error(*error);
  if (model.config().num_labels != 1) {
    return respond.Error({400, "model " + model.model_id() + " has " + std::to_string(model.config().num_labels) +
                                   " labels; reranking needs a single relevance score: use /predict"});
  }
  if (auto error = model.CheckBatchSize(call->documents.size(), "documents")) return respond.Error(*error);
  // Each document runs beside the query (pair or template): the query's words count each time,
  // a document's at most max_tokens_per_doc.
  const int64_t query_tokens = LeastTokens(call->query, model.max_input_length());
  const int64_t document_most = call->max_tokens_per_document.value_or(model.max_input_length());
  int64_t least_tokens = 0;
  for (const std::string& document : call->documents) {
    least_tokens += std::min(query_tokens + LeastTokens(document, document_most), model.max_input_length());
  }
  const bool truncate = model.Truncates(call->truncate);
  auto tokenize = [&model, call, truncate](engine::ModelTokenizer& tokenizer, Job& job) {
    // Cohere's max_tokens_per_doc: a document longer than that many tokens of its own is cut
    // at the end of its last one kept.
    std::vector<std::string_view> documents(call->documents.begin(), call->documents.end());
    if (const auto most = call->max_tokens_per_document) {
      for (std::string_view& document : documents) {
        const auto tokens = tokenizer.Tokenize(document, /*add_special_tokens=*/false);
        if (static_cast<int64_t>(tokens.size()) > *most) document = document.substr(0, tokens[*most - 1].end);
      }
    }
    std::vector<Inference::ScoredText> pairs;
    for (std::string_view document : documents) pairs.push_back({call->query, document});
    job.set_priority(model.ScoringPriorityOf(call->priority, call->documents.size()));
    return model.TokenizeScored(tokenizer, pairs, truncate, Truncation::kRight, "the query with document", job);
  };
  auto answer = [&model, call, shape](const FinishedRows& done) {
    return RerankBody(*call, shape, model.model_id(), RerankScores(done, call->raw_scores), done.total_tokens());
  };
  model.Run(request, least_tokens, std::move(tokenize), std::move(answer), std::move(respond));
}

}  // namespace

void AddRerankRoutes(RouteTable& routes, Inference& model) {
  using enum ApiFamily;
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes.Add({
      {"/v1/rerank", "POST", kCohere, true, false, OnModel(model, Rerank, RerankShape::kCohereV1)},
      {"/v2/rerank", "POST", kCohere, true, false, OnModel(model, Rerank, RerankShape::kCohereV2)},
      {"/rerank", "POST", kTei, true, false, OnModel(model, Rerank, RerankShape::kTei)},
  });
}

}  // namespace stamen::gateway
