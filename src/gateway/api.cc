#include "gateway/api.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <random>

#include "gateway/json_read.h"

namespace stamen::gateway {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// str | [str] | [int] | [[int]]
std::optional<ApiError> ReadInputs(element value, const char* key, std::vector<Input>* inputs) {
  const std::string name = std::string("'") + key + "'";
  std::string_view text;
  if (value.get(text) == simdjson::SUCCESS) {
    inputs->emplace_back(std::string(text));
    return std::nullopt;
  }
  array items;
  if (value.get(items) != simdjson::SUCCESS) {
    return Invalid(name + " must be a string, an array of strings, an array of token ids or an array of arrays of token ids, not " + TypeName(value.type()));
  }
  if (items.size() == 0) return EmptyBatch(name + " is empty");
  const element first = items.at(0).value_unsafe();
  if (first.is_int64() || first.is_uint64()) {
    auto ids = ReadIds(items);
    if (!ids) return Invalid(name + ": token ids must all be integers in int32 range");
    inputs->emplace_back(std::move(*ids));
    return std::nullopt;
  }
  size_t index = 0;
  for (element item : items) {
    if (item.get(text) == simdjson::SUCCESS) {
      inputs->emplace_back(std::string(text));
    } else if (array ids_array; item.get(ids_array) == simdjson::SUCCESS) {
      auto ids = ReadIds(ids_array);
      if (!ids) return Invalid(name + "[" + std::to_string(index) + "]: token ids must be integers in int32 range");
      if (ids->empty()) return Invalid(name + "[" + std::to_string(index) + "] is empty");
      inputs->emplace_back(std::move(*ids));
    } else {
      return Invalid(name + "[" + std::to_string(index) + "] must be a string or an array of token ids, not " +
                     TypeName(item.type()));
    }
    ++index;
  }
  return std::nullopt;
}

// [start, end] of one chunk: two integers, 0 ≤ start < end.
std::optional<ApiError> ReadSpan(element value, const std::string& name, TextSpan* span) {
  array pair;
  int64_t bounds[2];
  if (value.get(pair) != simdjson::SUCCESS || pair.size() != 2 || pair.at(0).get(bounds[0]) != simdjson::SUCCESS ||
      pair.at(1).get(bounds[1]) != simdjson::SUCCESS) {
    return Invalid(name + " must be [start, end], two integers");
  }
  if (bounds[0] < 0 || bounds[0] >= bounds[1]) {
    return Invalid(name + " [" + std::to_string(bounds[0]) + ", " + std::to_string(bounds[1]) +
                   "] must have 0 <= start < end");
  }
  *span = {bounds[0], bounds[1]};
  return std::nullopt;
}

// One input's chunks: a non-empty array of [start, end] pairs.
std::optional<ApiError> ReadSpanList(array spans, const std::string& name, std::vector<TextSpan>* out) {
  if (spans.size() == 0) return Invalid(name + " must be a non-empty array of [start, end] pairs");
  size_t index = 0;
  for (element span : spans) {
    TextSpan read;
    if (auto error = ReadSpan(span, name + "[" + std::to_string(index++) + "]", &read)) return error;
    out->push_back(read);
  }
  return std::nullopt;
}

// "chunks": [[start, end], …] for one input, or [[[start, end], …], …], one list per input.
std::optional<ApiError> ReadChunks(object fields, size_t inputs, std::vector<std::vector<TextSpan>>* chunks) {
  element value;
  if (fields["chunks"].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  array lists;
  if (value.get(lists) != simdjson::SUCCESS || lists.size() == 0) {
    return Invalid("'chunks' must be a non-empty array of [start, end] pairs, or one such array per input");
  }
  array first;
  const bool one_list = lists.at(0).get(first) == simdjson::SUCCESS && first.size() > 0 &&
                        first.at(0).value_unsafe().is_int64();
  if (one_list) {
    if (inputs != 1) {
      return Invalid("'chunks' is one list of spans, but there are " + std::to_string(inputs) +
                     " inputs: give one list per input");
    }
    chunks->emplace_back();
    return ReadSpanList(lists, "'chunks'", &chunks->back());
  }
  if (lists.size() != inputs) {
    return Invalid("'chunks' has " + std::to_string(lists.size()) + " lists for " + std::to_string(inputs) + " inputs");
  }
  size_t input = 0;
  for (element list : lists) {
    const std::string name = "'chunks'[" + std::to_string(input++) + "]";
    array spans;
    if (list.get(spans) != simdjson::SUCCESS) return Invalid(name + " must be an array of [start, end] pairs");
    chunks->emplace_back();
    if (auto error = ReadSpanList(spans, name, &chunks->back())) return error;
  }
  return std::nullopt;
}

// "chunking": "sentences" | {"tokens": N, "overlap": M} with N ≥ 1, 0 ≤ M < N.
std::optional<ApiError> ReadChunkingRule(object fields, std::optional<ChunkingRule>* rule) {
  element value;
  if (fields["chunking"].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  const ApiError shape = Invalid("'chunking' must be \"sentences\" or {\"tokens\": N, \"overlap\": M} with N >= 1 and 0 <= M < N");
  std::string_view name;
  if (value.get(name) == simdjson::SUCCESS) {
    if (name != "sentences") return shape;
    *rule = ChunkingRule{.sentences = true};
    return std::nullopt;
  }
  object spec;
  int64_t tokens = 0, overlap = 0;
  if (value.get(spec) != simdjson::SUCCESS || spec["tokens"].get(tokens) != simdjson::SUCCESS) return shape;
  element overlap_value;
  if (spec["overlap"].get(overlap_value) == simdjson::SUCCESS && !overlap_value.is_null() &&
      overlap_value.get(overlap) != simdjson::SUCCESS) {
    return shape;
  }
  if (tokens < 1 || overlap < 0 || overlap >= tokens) return shape;
  *rule = ChunkingRule{.tokens = tokens, .overlap = overlap};
  return std::nullopt;
}

}  // namespace

ApiError UnknownModel(std::string_view model, std::string_view served) {
  return {404, "the model '" + std::string(model) + "' does not exist; this server serves " + std::string(served),
          "model_not_found"};
}

int ErrorStatus(const ApiError& error, ApiFamily family) {
  if (family == ApiFamily::kTei && error.type == "server_error") return 424;  // TEI's "failed dependency"
  return error.status;
}

std::string ErrorBody(const ApiError& error, ApiFamily family) {
  std::string body;
  switch (family) {
    case ApiFamily::kOpenAI:
      body = "{\"error\":{\"message\":";
      AppendJsonString(body, error.message);
      if (error.type == "model_not_found") {
        body += R"(,"type":"invalid_request_error","param":null,"code":"model_not_found"}})";
        break;
      }
      body += ",\"type\":";
      AppendJsonString(body, error.type);
      body += ",\"param\":null,\"code\":" + std::to_string(error.status) + "}}";
      break;
    case ApiFamily::kTei: {
      // TEI's ErrorType (its published enum, capitalised): what the request got wrong, or
      // which part of the server failed.
      const std::string& type = error.type;
      const char* error_type = error.empty_batch                                                      ? "Empty"
                               : type == "overloaded"                                                 ? "Overloaded"
                               : type == "unavailable"                                                ? "Unhealthy"
                               : type == "server_error" || type == "timeout" || type == "cancelled" ? "Backend"
                                                                                                      : "Validation";
      body = "{\"error\":";
      AppendJsonString(body, error.message);
      body += ",\"error_type\":\"";
      body += error_type;
      body += "\"}";
      break;
    }
    case ApiFamily::kCohere:
      body = "{\"message\":";
      AppendJsonString(body, error.message);
      body += '}';
      break;
  }
  return body;
}

std::variant<EmbedCall, ApiError> ParseEmbedCall(std::string_view body, bool openai) {
  simdjson::dom::parser parser;
  auto parsed = ParseObject(parser, body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  object fields = std::get<object>(parsed);
  EmbedCall call;
  const char* input_key = openai ? "input" : "inputs";
  element input;
  if (fields[input_key].get(input) != simdjson::SUCCESS || input.is_null()) {
    return Invalid(std::string("missing '") + input_key + "'");
  }
  if (auto error = ReadInputs(input, input_key, &call.inputs)) return *error;
  std::optional<int64_t> dimensions;
  if (auto error = ReadPositive(fields, "dimensions", &dimensions)) return *error;
  call.dimensions = dimensions.value_or(0);
  if (auto error = ReadPriority(fields, &call.priority)) return *error;
  if (auto error = ReadChunks(fields, call.inputs.size(), &call.chunks)) return *error;
  if (auto error = ReadChunkingRule(fields, &call.chunking)) return *error;
  if (call.chunking && !call.chunks.empty()) return Invalid("give 'chunks' or 'chunking', not both");
  if (auto error = ReadString(fields, "task", &call.task)) return *error;
  if (openai) {
    std::string format;
    if (auto error = ReadString(fields, "encoding_format", &format)) return *error;
    if (!format.empty()) {
      const auto encoding = ParseEmbeddingType(format);
      if (!encoding) {
        return Invalid("'encoding_format' must be \"float\", \"base64\", \"int8\", \"uint8\", \"binary\" or \"ubinary\"");
      }
      call.encoding = *encoding;
    }
    if (auto error = ReadString(fields, "model", &call.model)) return *error;
    std::string user;
    if (auto error = ReadString(fields, "user", &user)) return *error;
  } else {
    if (auto error = ReadBool(fields, "normalize", &call.normalize)) return *error;
    if (auto error = ReadOptionalBool(fields, "truncate", &call.truncate)) return *error;
    if (auto error = ReadTruncationDirection(fields, &call.truncation_direction)) return *error;
    if (auto error = ReadString(fields, "prompt_name", &call.prompt_name)) return *error;
    std::string type;
    if (auto error = ReadString(fields, "embedding_type", &type)) return *error;
    if (!type.empty()) {
      const auto encoding = ParseEmbeddingType(type);
      if (!encoding || *encoding == EmbeddingType::kBase64) {
        return Invalid("'embedding_type' must be \"float\", \"int8\", \"uint8\", \"binary\" or \"ubinary\"");
      }
      call.encoding = *encoding;
    }
  }
  return call;
}

std::variant<EmbedMultiCall, ApiError> ParseEmbedMultiCall(std::string_view body) {
  return ParseCall<EmbedMultiCall>(body, [](object fields, EmbedMultiCall& call) -> std::optional<ApiError> {
    element input;
    if (auto error = ReadRequired(fields, "inputs", "inputs", &input)) return error;
    if (auto error = ReadInputs(input, "inputs", &call.inputs)) return error;
    std::optional<bool> dense, sparse, colbert;
    if (auto error = ReadOptionalBool(fields, "dense", &dense)) return error;
    if (auto error = ReadOptionalBool(fields, "sparse", &sparse)) return error;
    if (auto error = ReadOptionalBool(fields, "colbert", &colbert)) return error;
    // Naming any output asks for exactly those named true (FlagEmbedding's return_* flags);
    // naming none asks for the dense vectors, what /embed gives.
    if (dense || sparse || colbert) {
      call.dense = dense.value_or(false);
      call.sparse = sparse.value_or(false);
      call.colbert = colbert.value_or(false);
      if (!call.dense && !call.sparse && !call.colbert) {
        return Invalid("'dense', 'sparse' and 'colbert' are all false: ask for at least one output");
      }
    }
    if (auto error = ReadOptionalBool(fields, "truncate", &call.truncate)) return error;
    if (auto error = ReadTruncationDirection(fields, &call.truncation_direction)) return error;
    if (auto error = ReadString(fields, "prompt_name", &call.prompt_name)) return error;
    return ReadPriority(fields, &call.priority);
  });
}

std::variant<RerankCall, ApiError> ParseRerankCall(std::string_view body, bool cohere) {
  simdjson::dom::parser parser;
  auto parsed = ParseObject(parser, body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  object fields = std::get<object>(parsed);
  RerankCall call;
  element query;
  if (fields["query"].get(query) != simdjson::SUCCESS || query.is_null()) return Invalid("missing 'query'");
  std::string_view text;
  if (query.get(text) != simdjson::SUCCESS) return Invalid("'query' must be a string");
  if (text.empty()) return Invalid("'query' is empty");
  call.query = std::string(text);
  const char* documents_key = cohere ? "documents" : "texts";
  element documents;
  if (fields[documents_key].get(documents) != simdjson::SUCCESS || documents.is_null()) {
    return Invalid(std::string("missing '") + documents_key + "'");
  }
  array items;
  if (documents.get(items) != simdjson::SUCCESS) return Invalid(std::string("'") + documents_key + "' must be an array");
  if (items.size() == 0) return EmptyBatch(std::string("'") + documents_key + "' is empty");
  size_t index = 0;
  for (element item : items) {
    const std::string name = std::string("'") + documents_key + "'[" + std::to_string(index++) + "]";
    object document;
    if (cohere && item.get(document) == simdjson::SUCCESS) {
      // Cohere and Jina also take {"text": …}.
      if (document["text"].get(text) != simdjson::SUCCESS) return Invalid(name + " must have a string 'text'");
    } else if (item.get(text) != simdjson::SUCCESS) {
      return Invalid(name + " must be a string" + (cohere ? " or {\"text\": string}" : ""));
    }
    if (text.empty()) return Invalid(name + " is empty");
    call.documents.emplace_back(text);
  }
  if (auto error = ReadOptionalBool(fields, "truncate", &call.truncate)) return *error;
  if (auto error = ReadTruncationDirection(fields, &call.truncation_direction)) return *error;
  if (auto error = ReadPriority(fields, &call.priority, cohere)) return *error;
  if (cohere) {
    if (auto error = ReadPositive(fields, "top_n", &call.top_n)) return *error;
    if (auto error = ReadBool(fields, "return_documents", &call.return_documents)) return *error;
    if (auto error = ReadString(fields, "model", &call.model)) return *error;
  } else {
    // Not in TEI's RerankRequest: kept as /v1/rerank keeps it (the best n), so that a bad value
    // is refused on both routes, not silently ignored on one; 422, as TEI answers a field of
    // the wrong type.
    if (auto error = ReadPositive(fields, "top_n", &call.top_n)) return ApiError{422, error->message, error->type};
    if (auto error = ReadBool(fields, "raw_scores", &call.raw_scores)) return *error;
    if (auto error = ReadBool(fields, "return_text", &call.return_documents)) return *error;
  }
  return call;
}

std::variant<TokenizeCall, ApiError> ParseTokenizeCall(std::string_view body) {
  simdjson::dom::parser parser;
  auto parsed = ParseObject(parser, body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  object fields = std::get<object>(parsed);
  TokenizeCall call;
  element input;
  if (fields["inputs"].get(input) != simdjson::SUCCESS || input.is_null()) return Invalid("missing 'inputs'");
  std::vector<Input> inputs;
  if (auto error = ReadInputs(input, "inputs", &inputs)) return *error;
  for (Input& item : inputs) {
    if (auto* text = std::get_if<std::string>(&item)) {
      call.inputs.push_back(std::move(*text));
    } else {
      return Invalid("'inputs' must be a string or an array of strings");
    }
  }
  if (auto error = ReadBool(fields, "add_special_tokens", &call.add_special_tokens)) return *error;
  if (auto error = ReadString(fields, "prompt_name", &call.prompt_name)) return *error;
  // TEI's /tokenize has no max_length and never truncates; neither does stamen. A positive one
  // (what transformers' tokenizers take) changes nothing; any other is refused, 422 as TEI
  // answers a field of the wrong type, rather than ignored.
  std::optional<int64_t> max_length;
  if (auto error = ReadPositive(fields, "max_length", &max_length)) return ApiError{422, error->message, error->type};
  return call;
}

void AppendModelObject(std::string& out, std::string_view id, int64_t created) {
  out += "{\"id\":";
  AppendJsonString(out, id);
  out += ",\"object\":\"model\",\"created\":" + std::to_string(created) + ",\"owned_by\":\"stamen\"}";
}

void AppendFloat(std::string& out, float value) {
  if (!std::isfinite(value)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (byte < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 15];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t triple = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                            static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[triple >> 18];
    out += kAlphabet[(triple >> 12) & 63];
    out += kAlphabet[(triple >> 6) & 63];
    out += kAlphabet[triple & 63];
  }
  if (i < bytes.size()) {
    uint32_t triple = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) triple |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[triple >> 18];
    out += kAlphabet[(triple >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(triple >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

void AppendEmbedding(std::string& out, const float* row, size_t columns, EmbeddingType type,
                     const QuantizationRanges& ranges) {
  if (type == EmbeddingType::kBase64) {
    out += '"';
    out += Base64(std::string_view(reinterpret_cast<const char*>(row), columns * sizeof(float)));
    out += '"';
    return;
  }
  out += '[';
  if (IsQuantized(type)) {
    const std::vector<int32_t> values = QuantizeRow(row, columns, type, ranges);
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(values[i]);
    }
  } else {
    for (size_t column = 0; column < columns; ++column) {
      if (column) out += ',';
      AppendFloat(out, row[column]);
    }
  }
  out += ']';
}

void AppendChunkVectors(std::string& out, const std::vector<std::vector<TextSpan>>& chunks,
                        const std::vector<std::vector<int64_t>>& rows, const float* values, size_t columns,
                        EmbeddingType type, const QuantizationRanges& ranges, bool openai, bool with_spans) {
  size_t item = 0;
  for (size_t input = 0; input < rows.size(); ++input) {
    if (!openai) out += input ? ",[" : "[";
    for (size_t chunk = 0; chunk < rows[input].size(); ++chunk) {
      if (chunk || (openai && item)) out += ',';
      const std::string span = "\"chunk\":[" + std::to_string(chunks[input][chunk].start) + "," +
                               std::to_string(chunks[input][chunk].end) + "],\"embedding\":";
      if (openai) {
        out += "{\"object\":\"embedding\",\"index\":" + std::to_string(item) + ",\"input_index\":" +
               std::to_string(input) + "," + span;
      } else if (with_spans) {
        out += "{" + span;
      }
      AppendEmbedding(out, values + rows[input][chunk] * columns, columns, type, ranges);
      if (openai || with_spans) out += '}';
      ++item;
    }
    if (!openai) out += ']';
  }
}


std::string NewRequestId() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  const uint64_t high = generator(), low = generator();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 32; ++i) {
    const uint64_t word = i < 16 ? high : low;
    int nibble = static_cast<int>((word >> (60 - 4 * (i % 16))) & 15);
    if (i == 12) nibble = 4;                      // version 4
    if (i == 16) nibble = 8 | (nibble & 3);       // variant 10xx
    if (i == 8 || i == 12 || i == 16 || i == 20) id += '-';
    id += kHex[nibble];
  }
  return id;
}

void AppendCohereMeta(std::string& out, const std::string& billed, size_t input_tokens) {
  out += ",\"meta\":{\"api_version\":{\"version\":\"2\"},\"billed_units\":{" + billed +
         "},\"tokens\":{\"input_tokens\":" + std::to_string(input_tokens) + "}}";
}

std::string EmbeddingsBody(const EmbedCall& call, bool openai, std::string_view model_id, const FinishedRows& done,
                           const LateChunks& late) {
  const auto ranges = QuantizationRanges::UnitVector(done.columns);
  std::string body;
  body.reserve(done.inputs() * done.columns * (call.encoding == EmbeddingType::kFloat ? 12 : 6) + 256);
  body += openai ? "{\"object\":\"list\",\"data\":[" : "[";
  if (!late.rows.empty()) {
    AppendChunkVectors(body, late.chunks, late.rows, done.values, done.columns, call.encoding, ranges, openai,
                       /*with_spans=*/call.chunking.has_value());
  } else {
    for (size_t row = 0; row < done.inputs(); ++row) {
      if (row) body += ',';
      if (openai) body += "{\"object\":\"embedding\",\"index\":" + std::to_string(row) + ",\"embedding\":";
      AppendEmbedding(body, done.Row(static_cast<int64_t>(row)), done.columns, call.encoding, ranges);
      if (openai) body += '}';
    }
  }
  body += ']';
  if (openai) {
    const std::string tokens = std::to_string(done.total_tokens());
    body += ",\"model\":";
    AppendJsonString(body, call.model.empty() ? model_id : std::string_view(call.model));
    body += ",\"usage\":{\"prompt_tokens\":" + tokens + ",\"total_tokens\":" + tokens + "}}";
  }
  return body;
}

std::vector<double> RerankScores(const FinishedRows& done, bool raw_scores) {
  std::vector<double> scores(done.inputs());
  for (size_t i = 0; i < scores.size(); ++i) {
    const double logit = done.Row(static_cast<int64_t>(i))[0];
    scores[i] = raw_scores ? logit : 1.0 / (1.0 + std::exp(-logit));
  }
  return scores;
}

std::vector<double> MaxSimScores(const FinishedRows& done) {
  std::vector<double> scores(done.inputs() - 1);
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = done.RowsOf(i + 1)[0];
  return scores;
}

std::string RerankBody(const RerankCall& call, RerankShape shape, std::string_view model_id,
                       const std::vector<double>& scores, size_t total_tokens) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (call.top_n && static_cast<size_t>(*call.top_n) < order.size()) order.resize(*call.top_n);
  const bool cohere = shape != RerankShape::kTei;
  std::string body;
  if (shape == RerankShape::kCohereV1) {
    body = "{\"model\":";
    AppendJsonString(body, call.model.empty() ? model_id : std::string_view(call.model));
    body += ",\"results\":[";
  } else if (shape == RerankShape::kCohereV2) {
    body = "{\"id\":\"" + NewRequestId() + "\",\"results\":[";
  } else {
    body = "[";
  }
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    body += k ? ",{" : "{";
    body += "\"index\":" + std::to_string(i) + (cohere ? ",\"relevance_score\":" : ",\"score\":");
    AppendFloat(body, static_cast<float>(scores[i]));
    if (call.return_documents) {
      body += cohere ? ",\"document\":{\"text\":" : ",\"text\":";
      AppendJsonString(body, call.documents[i]);
      if (cohere) body += '}';
    }
    body += '}';
  }
  body += ']';
  if (shape == RerankShape::kCohereV1) body += ",\"usage\":{\"total_tokens\":" + std::to_string(total_tokens) + "}}";
  if (shape == RerankShape::kCohereV2) {
    // Cohere bills a search unit per query with up to 100 documents.
    const size_t search_units = (call.documents.size() + 99) / 100;
    AppendCohereMeta(body, "\"search_units\":" + std::to_string(search_units), total_tokens);
    body += '}';
  }
  return body;
}

}  // namespace stamen::gateway
