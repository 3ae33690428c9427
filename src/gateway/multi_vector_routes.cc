// Jina's multi-vector API, POST /v1/multi-vector: a multi-vector (ColBERT) model's token vectors
// of each input, as a query or as a document (MultiVectorInputs), in the embedding types of
// /v1/embeddings. MaxSim reranking is in rerank_routes.cc.
#include <simdjson.h>

#include <string>
#include <vector>

#include "gateway/bge_m3_outputs.h"
#include "gateway/json_read.h"
#include "gateway/route_handlers.h"

namespace stamen::gateway {

using server::WorkKind;

namespace {

// {"model", "input": str | [str], "input_type": "query" | "document" (default "document"),
//  "embedding_type": "float" | "base64" | "binary" | "ubinary" (default "float")}.
struct MultiVectorCall {
  std::vector<std::string> inputs;
  bool query = false;
  EmbeddingType type = EmbeddingType::kFloat;
  std::string model;
  std::optional<server::Priority> priority;
};

std::variant<MultiVectorCall, ApiError> ParseMultiVectorCall(std::string_view body) {
  return ParseCall<MultiVectorCall>(body, [](simdjson::dom::object fields, MultiVectorCall& call) -> std::optional<ApiError> {
    simdjson::dom::element input;
    if (auto error = ReadRequired(fields, "input", "input", &input)) return error;
    if (std::string_view text; input.get(text) == simdjson::SUCCESS) {
      call.inputs.emplace_back(text);
    } else if (simdjson::dom::array list; input.get(list) == simdjson::SUCCESS) {
      for (simdjson::dom::element item : list) {
        std::string_view text_item;
        if (item.get(text_item) != simdjson::SUCCESS) return Invalid("'input' must be a string or a list of strings");
        call.inputs.emplace_back(text_item);
      }
    } else {
      return Invalid("'input' must be a string or a list of strings");
    }
    if (call.inputs.empty()) return EmptyBatch("'input' is empty");
    std::string input_type = "document";
    if (auto error = ReadString(fields, "input_type", &input_type)) return error;
    if (input_type != "query" && input_type != "document") {
      return Invalid("'input_type' must be \"query\" or \"document\", got \"" + input_type + "\"");
    }
    call.query = input_type == "query";
    std::string type = "float";
    if (auto error = ReadString(fields, "embedding_type", &type)) return error;
    const auto parsed = ParseEmbeddingType(type);
    if (!parsed || (*parsed != EmbeddingType::kFloat && *parsed != EmbeddingType::kBase64 &&
                    *parsed != EmbeddingType::kBinary && *parsed != EmbeddingType::kUbinary)) {
      return Invalid("'embedding_type' must be \"float\", \"base64\", \"binary\" or \"ubinary\", got \"" + type + "\"");
    }
    call.type = *parsed;
    if (auto error = ReadString(fields, "model", &call.model)) return error;
    return ReadPriority(fields, &call.priority);
  });
}

// Jina's answer: {"object": "list", "model", "data": [{"object": "embeddings", "index": i,
// "embeddings": [v, …]}], "usage": {"total_tokens"}}; `append_vectors(out, i)` writes input i's
// vectors.
std::string MultiVectorBody(std::string_view model, size_t inputs, size_t total_tokens,
                            const std::function<void(std::string&, size_t)>& append_vectors) {
  std::string body = "{\"object\":\"list\",\"model\":";
  AppendJsonString(body, model);
  body += ",\"data\":[";
  for (size_t input = 0; input < inputs; ++input) {
    if (input) body += ',';
    body += "{\"object\":\"embeddings\",\"index\":" + std::to_string(input) + ",\"embeddings\":";
    append_vectors(body, input);
    body += '}';
  }
  body += "],\"usage\":{\"total_tokens\":" + std::to_string(total_tokens) + "}}";
  return body;
}

// The same on bge-m3: its ColBERT vectors.
void BgeM3MultiVector(Inference& model, const http::Request& request, std::shared_ptr<MultiVectorCall> call, Reply reply) {
  // bge-m3 reads queries and documents alike: `input_type` changes nothing.
  Inference::TokenRowsJob job{
      .truncate = model.options().auto_truncate, .priority = call->priority, .kind = WorkKind::kDenseSparseColbert};
  for (std::string& text : call->inputs) job.inputs.emplace_back(std::move(text));
  model.RunTokenRows(request, std::move(job), [&model, call](const FinishedRows& done) {
    const std::vector<BgeM3Rows> inputs = BgeM3RowsOf(done);
    return MultiVectorBody(call->model.empty() ? model.model_id() : call->model, done.inputs(), done.total_tokens(),
                           [&](std::string& out, size_t input) {
      AppendBgeM3Colbert(out, inputs[input], model.config().hidden_size, call->type);
    });
  }, std::move(reply));
}

void MultiVector(Inference& model, const http::Request& request, Reply reply) {
  if (!model.multi_vector() && !model.bge_m3()) {
    return reply.Error({400, "model " + model.model_id() + " is not a multi-vector (ColBERT) model: /v1/multi-vector needs "
                             "one (a PyLate folder: Dense modules on the tokens, no Pooling; or bge-m3)"});
  }
  auto parsed = ParseMultiVectorCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  auto call = std::make_shared<MultiVectorCall>(std::move(std::get<MultiVectorCall>(parsed)));
  if (model.bge_m3()) return BgeM3MultiVector(model, request, call, std::move(reply));
  if (auto error = model.CheckBatchSize(call->inputs.size(), "inputs")) return reply.Error(*error);
  int64_t least_tokens = 0;
  for (const std::string& text : call->inputs) least_tokens += model.multi_vector()->LeastTokens(text, call->query);
  auto tokenize = [&model, call](engine::ModelTokenizer& tokenizer, Job& job) -> std::optional<ApiError> {
    job.set_kind(WorkKind::kTokenVectors);
    model.EncodeMultiVector(tokenizer, call->inputs, call->query, job);
    if (auto error = model.CheckTokenStates("/v1/multi-vector", job.total_tokens(), model.dimensions())) return error;
    job.set_priority(model.PriorityOf(call->priority, call->inputs.size()));
    return std::nullopt;
  };
  auto answer = [&model, call](const FinishedRows& done) {
    const QuantizationRanges ranges = QuantizationRanges::UnitVector(done.columns);
    return MultiVectorBody(call->model.empty() ? model.model_id() : call->model, done.inputs(), done.total_tokens(),
                           [&](std::string& out, size_t input) {
      out += '[';
      for (size_t row = 0; row < done.RowCount(input); ++row) {
        if (row) out += ',';
        AppendEmbedding(out, done.RowsOf(input) + row * done.columns, done.columns, call->type, ranges);
      }
      out += ']';
    });
  };

  model.Run(request, least_tokens, std::move(tokenize), std::move(answer), std::move(reply));
}

}  // namespace

void AddMultiVectorRoutes(RouteTable& routes, Inference& model) {
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes.Add({{"/v1/multi-vector", "POST", ApiFamily::kOpenAI, true, false, OnModel(model, MultiVector)}});
}

}  // namespace stamen::gateway
