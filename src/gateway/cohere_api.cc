#include "gateway/cohere_api.h"

#include <simdjson.h>


#include "gateway/json_read.h"

namespace stamen::gateway {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// "texts": [str], each non-empty.
std::optional<ApiError> ReadTexts(element value, std::vector<std::string>* texts) {
  array items;
  if (value.get(items) != simdjson::SUCCESS) return Invalid(std::string("'texts' must be an array of strings, not ") + TypeName(value.type()));
  if (items.size() == 0) return Invalid("'texts' is empty");
  for (element item : items) {
    std::string_view text;
    const std::string name = "'texts'[" + std::to_string(texts->size()) + "]";
    if (item.get(text) != simdjson::SUCCESS) return Invalid(name + " must be a string, not " + TypeName(item.type()));
    if (text.empty()) return Invalid(name + " is an empty string");
    texts->emplace_back(text);
  }
  return std::nullopt;
}

// "inputs": [{"content": [{"type": "text", "text": str}]}]: one text content per input (stamen
// embeds text only).
std::optional<ApiError> ReadContentInputs(element value, std::vector<std::string>* texts) {
  array items;
  if (value.get(items) != simdjson::SUCCESS) return Invalid("'inputs' must be an array of {\"content\": [...]}");
  if (items.size() == 0) return Invalid("'inputs' is empty");
  for (element item : items) {
    const std::string name = "'inputs'[" + std::to_string(texts->size()) + "]";
    object input;
    array content;
    if (item.get(input) != simdjson::SUCCESS || input["content"].get(content) != simdjson::SUCCESS) {
      return Invalid(name + " must be an object with a 'content' array");
    }
    if (content.size() != 1) {
      return Invalid(name + ".content has " + std::to_string(content.size()) + " parts; stamen embeds exactly one text part per input");
    }
    object part;
    std::string_view type, text;
    if (content.at(0).get(part) != simdjson::SUCCESS || part["type"].get(type) != simdjson::SUCCESS) {
      return Invalid(name + ".content[0] must be an object with a 'type'");
    }
    if (type != "text") return Invalid(name + ".content[0] is of type '" + std::string(type) + "'; stamen embeds only \"text\"");
    if (part["text"].get(text) != simdjson::SUCCESS) return Invalid(name + ".content[0] must have a string 'text'");
    if (text.empty()) return Invalid(name + ".content[0].text is an empty string");
    texts->emplace_back(text);
  }
  return std::nullopt;
}

std::optional<ApiError> ReadEmbeddingTypes(object fields, std::vector<EmbeddingType>* out) {
  element value;
  if (fields["embedding_types"].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  array items;
  if (value.get(items) != simdjson::SUCCESS || items.size() == 0) {
    return Invalid("'embedding_types' must be a non-empty array of \"float\", \"int8\", \"uint8\", \"binary\", \"ubinary\", \"base64\"");
  }
  out->clear();
  for (element item : items) {
    std::string_view name;
    std::optional<EmbeddingType> type;
    if (item.get(name) == simdjson::SUCCESS) type = ParseEmbeddingType(name);
    if (!type) {
      return Invalid("'embedding_types'[" + std::to_string(out->size()) +
                     "] must be one of \"float\", \"int8\", \"uint8\", \"binary\", \"ubinary\", \"base64\"");
    }
    bool seen = false;
    for (EmbeddingType earlier : *out) seen |= earlier == *type;
    if (!seen) out->push_back(*type);  // asked twice: answered once, as Cohere does
  }
  return std::nullopt;
}

}  // namespace

std::variant<CohereEmbedCall, ApiError> ParseCohereEmbedCall(std::string_view body) {
  return ParseCall<CohereEmbedCall>(body, [](object fields, CohereEmbedCall& call) -> std::optional<ApiError> {
    element texts, inputs, images;
    const bool has_texts = fields["texts"].get(texts) == simdjson::SUCCESS && !texts.is_null();
    const bool has_inputs = fields["inputs"].get(inputs) == simdjson::SUCCESS && !inputs.is_null();
    if (fields["images"].get(images) == simdjson::SUCCESS && !images.is_null()) {
      return Invalid("'images': stamen serves text embedding models only");
    }
    if (has_texts == has_inputs) return Invalid("give one of 'texts' or 'inputs'");
    if (auto error = has_texts ? ReadTexts(texts, &call.texts) : ReadContentInputs(inputs, &call.texts)) return error;
    if (auto error = ReadString(fields, "model", &call.model)) return error;
    if (auto error = ReadString(fields, "input_type", &call.input_type)) return error;
    if (auto error = ReadString(fields, "task", &call.task)) return error;
    const std::string& input_type = call.input_type;
    if (input_type == "image") return Invalid("'input_type' \"image\": stamen serves text embedding models only");
    if (!input_type.empty() && input_type != "search_query" && input_type != "search_document" &&
        input_type != "classification" && input_type != "clustering") {
      return Invalid("'input_type' must be \"search_query\", \"search_document\", \"classification\" or \"clustering\"");
    }
    if (auto error = ReadEmbeddingTypes(fields, &call.embedding_types)) return error;
    std::string truncate;
    if (auto error = ReadString(fields, "truncate", &truncate)) return error;
    if (truncate == "NONE") {
      call.truncate = false;
    } else if (truncate == "START") {
      call.truncation_direction = Truncation::kLeft;
    } else if (!truncate.empty() && truncate != "END") {
      return Invalid("'truncate' must be \"NONE\", \"START\" or \"END\"");
    }
    std::optional<int64_t> number;
    if (auto error = ReadPositive(fields, "output_dimension", &number)) return error;
    call.output_dimension = number.value_or(0);
    number.reset();
    if (auto error = ReadPositive(fields, "max_tokens", &number)) return error;
    call.max_tokens = number.value_or(0);
    return ReadPriority(fields, &call.priority, /*cohere=*/true);
  });
}

std::string PromptNameForInputType(const engine::SentenceTransformersConfig& config, std::string_view input_type) {
  std::vector<std::string> candidates;
  if (input_type == "search_query") candidates = {"query"};
  if (input_type == "search_document") candidates = {"document", "passage"};
  if (input_type == "classification") candidates = {"classification", "Classification"};
  if (input_type == "clustering") candidates = {"clustering", "Clustering"};
  candidates.emplace_back(input_type);
  for (const std::string& name : candidates) {
    if (!name.empty() && engine::FindPrompt(config, name)) return name;
  }
  return "";
}

std::variant<RerankCall, ApiError> ParseCohereRerankCall(std::string_view body) {
  return ParseCall<RerankCall>(body, [body](object fields, RerankCall& call) -> std::optional<ApiError> {
    auto parsed = ParseRerankCall(body, /*cohere=*/true);
    if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
    call = std::move(std::get<RerankCall>(parsed));
    if (!call.truncate) call.truncate = true;
    return ReadPositive(fields, "max_tokens_per_doc", &call.max_tokens_per_document);
  });
}

std::string CohereEmbedBody(const CohereEmbedCall& call, const FinishedRows& done) {
  const auto ranges = QuantizationRanges::UnitVector(done.columns);
  std::string body = "{\"id\":\"" + NewRequestId() + "\",\"embeddings\":{";
  for (size_t k = 0; k < call.embedding_types.size(); ++k) {
    const EmbeddingType type = call.embedding_types[k];
    body += k ? ",\"" : "\"";
    body += EmbeddingTypeName(type);
    body += "\":[";
    for (size_t row = 0; row < done.inputs(); ++row) {
      if (row) body += ',';
      AppendEmbedding(body, done.Row(static_cast<int64_t>(row)), done.columns, type, ranges);
    }
    body += ']';
  }
  body += "},\"texts\":[";
  for (size_t i = 0; i < call.texts.size(); ++i) {
    if (i) body += ',';
    AppendJsonString(body, call.texts[i]);
  }
  body += ']';
  AppendCohereMeta(body, "\"input_tokens\":" + std::to_string(done.total_tokens()), done.total_tokens());
  body += ",\"response_type\":\"embeddings_by_type\"}";
  return body;
}

}  // namespace stamen::gateway
