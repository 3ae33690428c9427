// OpenAI's POST /v1/embeddings and TEI's POST /embed: one vector per input (or per chunk of an
// input, late chunking), in the embedding types of api.h. Bodies are parsed by api.cc; here they
// are checked, tokenized, run on the workers and answered.
#include "gateway/route_handlers.h"

namespace stamen::gateway {

using server::WorkKind;
using server::WorkRequest;

namespace {

// 400 for int8 / uint8 of vectors that are not unit length (their calibration range).
std::optional<ApiError> CheckQuantizable(EmbeddingType type, bool normalized) {
  if (normalized || (type != EmbeddingType::kInt8 && type != EmbeddingType::kUint8)) return std::nullopt;
  return ApiError{400, std::string("int8 and uint8 embeddings are calibrated to unit-length vectors ([-1, 1] per "
                                   "dimension): ask for \"") + std::string(EmbeddingTypeName(type)) +
                           "\" with \"normalize\": true"};
}

}  // namespace

void Embed(Inference& model, const http::Request& request, bool openai, Reply respond) {
  auto parsed = ParseEmbedCall(request.body, openai);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond.Error(*error);
  auto call = std::make_shared<EmbedCall>(std::move(std::get<EmbedCall>(parsed)));
  if (auto error = model.NeedEmbedder(openai ? "/v1/embeddings" : "/embed")) return respond.Error(*error);
  if (auto error = model.CheckBatchSize(call->inputs.size(), "inputs")) return respond.Error(*error);
  size_t chunk_count = 0;
  for (const auto& chunks : call->chunks) chunk_count += chunks.size();
  if (auto error = model.CheckBatchSize(chunk_count, "chunks")) return respond.Error(*error);
  if (auto error = model.CheckDimensions("dimensions", call->dimensions)) return respond.Error(*error);
  if (auto error = CheckQuantizable(call->encoding, openai || call->normalize)) return respond.Error(*error);
  if (auto error = model.RefuseForLoad(call->inputs)) return respond.Error(*error);
  auto task = ResolveTask(model.config(), call->task);
  if (auto* error = std::get_if<ApiError>(&task)) return respond.Error(*error);
  auto prompt = model.TaskPrompt(std::get<TaskAdapter>(task), call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return respond.Error(*error);
  const bool truncate = model.Truncates(call->truncate);

  // Late chunking: input i's chunks, and (*chunk_rows)[i][k] the output row of its chunk k.
  auto chunks = std::make_shared<std::vector<std::vector<TextSpan>>>();
  auto chunk_rows = std::make_shared<std::vector<std::vector<int64_t>>>();
  auto tokenize = [&model, call, prompt = std::get<std::string>(prompt), adapter = std::get<TaskAdapter>(task).index,
                   truncate, openai, chunks, chunk_rows](engine::ModelTokenizer& tokenizer, WorkRequest& job) {
    const bool late_chunking = !call->chunks.empty() || call->chunking;
    auto error = late_chunking ? model.TokenizeChunks(tokenizer, *call, prompt, job, chunks.get(), chunk_rows.get())
                               : model.TokenizeInputs(tokenizer, call->inputs, prompt, truncate, call->truncation_direction, job);
    job.kind = WorkKind::kEmbed;
    job.pooling = model.options().pooling;
    job.normalize = openai ? true : call->normalize;
    job.dimensions = call->dimensions;
    job.adapter = adapter;
    job.priority = model.PriorityOf(call->priority, call->inputs.size());
    return error;
  };
  auto answer = [&model, call, chunks, chunk_rows, openai](const WorkRequest& done) {
    const size_t count = done.lengths.size();
    const size_t columns = static_cast<size_t>(done.columns);
    const float* values = reinterpret_cast<const float*>(done.output.data());
    const auto ranges = QuantizationRanges::UnitVector(columns);
    std::string body;
    body.reserve(count * columns * (call->encoding == EmbeddingType::kFloat ? 12 : 6) + 256);
    body += openai ? "{\"object\":\"list\",\"data\":[" : "[";
    if (!chunk_rows->empty()) {
      AppendChunkVectors(body, *chunks, *chunk_rows, values, columns, call->encoding, ranges, openai,
                         /*with_spans=*/call->chunking.has_value());
    } else {
      for (size_t row = 0; row < count; ++row) {
        if (row) body += ',';
        if (openai) body += "{\"object\":\"embedding\",\"index\":" + std::to_string(row) + ",\"embedding\":";
        AppendEmbedding(body, values + row * columns, columns, call->encoding, ranges);
        if (openai) body += '}';
      }
    }
    body += ']';
    if (openai) {
      const std::string tokens = std::to_string(done.total_tokens());
      body += ",\"model\":";
      AppendJsonString(body, call->model.empty() ? model.model_id() : call->model);
      body += ",\"usage\":{\"prompt_tokens\":" + tokens + ",\"total_tokens\":" + tokens + "}}";
    }
    return body;
  };
  model.Run(request, std::move(tokenize), std::move(answer), std::move(respond));
}

}  // namespace stamen::gateway
