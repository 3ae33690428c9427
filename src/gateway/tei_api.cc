#include "gateway/tei_api.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>

#include "gateway/json_read.h"

namespace stamen::gateway {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// A non-empty text, or the 400 that says what `name` is instead.
std::variant<std::string, ApiError> ReadText(element value, const std::string& name) {
  std::string_view text;
  if (value.get(text) != simdjson::SUCCESS) return Invalid(name + " must be a string, not " + TypeName(value.type()));
  if (text.empty()) return Invalid(name + " is an empty string");
  return std::string(text);
}

// A text, or a pair [a, b] of texts, as one sequence of /predict.
std::variant<PredictCall::Sequence, ApiError> ReadSequence(element value, const std::string& name) {
  array pair;
  if (value.get(pair) != simdjson::SUCCESS) {
    auto text = ReadText(value, name);
    if (auto* error = std::get_if<ApiError>(&text)) return *error;
    return PredictCall::Sequence{std::move(std::get<std::string>(text)), std::nullopt};
  }
  if (pair.size() != 2) return Invalid(name + " must be a string or a pair [a, b] of strings");
  auto first = ReadText(pair.at(0).value_unsafe(), name + "[0]");
  if (auto* error = std::get_if<ApiError>(&first)) return *error;
  auto second = ReadText(pair.at(1).value_unsafe(), name + "[1]");
  if (auto* error = std::get_if<ApiError>(&second)) return *error;
  return PredictCall::Sequence{std::move(std::get<std::string>(first)), std::move(std::get<std::string>(second))};
}

bool IsStringPair(array items) {
  return items.size() == 2 && items.at(0).value_unsafe().is_string() && items.at(1).value_unsafe().is_string();
}

}  // namespace

std::variant<PredictCall, ApiError> ParsePredictCall(std::string_view body) {
  return ParseCall<PredictCall>(body, [](object fields, PredictCall& call) -> std::optional<ApiError> {
    element inputs;
    if (auto error = ReadRequired(fields, "inputs", "inputs", &inputs)) return error;
    array items;
    // As TEI reads it: a string or two strings is one input (a text, a pair); any other array
    // is a batch whose items are texts or pairs.
    const bool single = inputs.get(items) != simdjson::SUCCESS || IsStringPair(items);
    if (!single && items.size() == 0) return EmptyBatch("'inputs' is empty");
    call.batch = !single;
    const std::vector<element> sequences = single ? std::vector<element>{inputs} : std::vector<element>(items.begin(), items.end());
    for (size_t i = 0; i < sequences.size(); ++i) {
      auto sequence = ReadSequence(sequences[i], single ? "'inputs'" : "'inputs'[" + std::to_string(i) + "]");
      if (auto* error = std::get_if<ApiError>(&sequence)) return *error;
      call.sequences.push_back(std::move(std::get<PredictCall::Sequence>(sequence)));
    }
    if (auto error = ReadBool(fields, "raw_scores", &call.raw_scores)) return error;
    if (auto error = ReadOptionalBool(fields, "truncate", &call.truncate)) return error;
    if (auto error = ReadPriority(fields, &call.priority)) return error;
    return ReadTruncationDirection(fields, &call.truncation_direction);
  });
}

std::variant<SimilarityCall, ApiError> ParseSimilarityCall(std::string_view body) {
  return ParseCall<SimilarityCall>(body, [](object fields, SimilarityCall& call) -> std::optional<ApiError> {
    element value;
    if (auto error = ReadRequired(fields, "inputs", "inputs", &value)) return error;
    object inputs;
    if (value.get(inputs) != simdjson::SUCCESS) {
      return Invalid(std::string("'inputs' must be an object {\"source_sentence\", \"sentences\"}, not ") +
                     TypeName(value.type()));
    }
    if (auto error = ReadRequired(inputs, "source_sentence", "inputs.source_sentence", &value)) return error;
    auto source = ReadText(value, "'inputs.source_sentence'");
    if (auto* error = std::get_if<ApiError>(&source)) return *error;
    call.source_sentence = std::move(std::get<std::string>(source));
    if (auto error = ReadRequired(inputs, "sentences", "inputs.sentences", &value)) return error;
    array sentences;
    if (value.get(sentences) != simdjson::SUCCESS) return Invalid("'inputs.sentences' must be an array of strings");
    if (sentences.size() == 0) return EmptyBatch("'inputs.sentences' is empty");
    for (element item : sentences) {
      auto sentence = ReadText(item, "'inputs.sentences'[" + std::to_string(call.sentences.size()) + "]");
      if (auto* error = std::get_if<ApiError>(&sentence)) return *error;
      call.sentences.push_back(std::move(std::get<std::string>(sentence)));
    }
    if (auto error = ReadPriority(fields, &call.priority)) return error;
    if (auto error = ReadString(fields, "task", &call.task)) return error;
    // TEI reads the options from "parameters" (absent or null: the defaults).
    if (fields["parameters"].get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
    object parameters;
    if (value.get(parameters) != simdjson::SUCCESS) return Invalid("'parameters' must be an object");
    if (auto error = ReadOptionalBool(parameters, "truncate", &call.truncate)) return error;
    if (auto error = ReadTruncationDirection(parameters, &call.truncation_direction)) return error;
    return ReadString(parameters, "prompt_name", &call.prompt_name);
  });
}

std::variant<DecodeCall, ApiError> ParseDecodeCall(std::string_view body) {
  return ParseCall<DecodeCall>(body, [](object fields, DecodeCall& call) -> std::optional<ApiError> {
    element value;
    if (auto error = ReadRequired(fields, "ids", "ids", &value)) return error;
    array items;
    if (value.get(items) != simdjson::SUCCESS) {
      return Invalid(std::string("'ids' must be an array of token ids or an array of arrays of them, not ") +
                     TypeName(value.type()));
    }
    if (items.size() == 0) return EmptyBatch("'ids' is empty");
    if (!items.at(0).value_unsafe().is_array()) {
      auto ids = ReadIds(items);
      if (!ids) return Invalid("'ids': token ids must all be integers in int32 range");
      call.ids.push_back(std::move(*ids));
    } else {
      for (element item : items) {
        const std::string name = "'ids'[" + std::to_string(call.ids.size()) + "]";
        array sequence;
        if (item.get(sequence) != simdjson::SUCCESS) return Invalid(name + " must be an array of token ids");
        auto ids = ReadIds(sequence);
        if (!ids) return Invalid(name + ": token ids must be integers in int32 range");
        call.ids.push_back(std::move(*ids));
      }
    }
    return ReadBool(fields, "skip_special_tokens", &call.skip_special_tokens);
  });
}

TeiTask RootTask(ModelKind model, std::string_view body) {
  if (model == ModelKind::kClassifier) return TeiTask::kPredict;
  simdjson::dom::parser parser;
  auto parsed = ParseObject(parser, body);
  // A body that is no object: the model's own task reports what is wrong with it.
  const object* fields = std::get_if<object>(&parsed);
  if (model == ModelKind::kEmbedding) {
    element inputs;
    const bool similarity = fields && (*fields)["inputs"].get(inputs) == simdjson::SUCCESS && inputs.is_object();
    return similarity ? TeiTask::kSimilarity : TeiTask::kEmbed;
  }
  element unused;
  const bool predict = fields && (*fields)["query"].get(unused) != simdjson::SUCCESS &&
                       (*fields)["inputs"].get(unused) == simdjson::SUCCESS;
  return predict ? TeiTask::kPredict : TeiTask::kRerank;
}

std::vector<Prediction> Predictions(const float* logits, size_t count, bool raw_scores,
                                    const std::vector<std::string>& labels) {
  std::vector<Prediction> predictions(count);
  if (raw_scores) {
    for (size_t i = 0; i < count; ++i) predictions[i].score = logits[i];
  } else if (count == 1) {
    predictions[0].score = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logits[0]))));
  } else {
    // Softmax, shifted by the largest logit so that no exponential overflows.
    const double largest = *std::max_element(logits, logits + count);
    double sum = 0;
    for (size_t i = 0; i < count; ++i) sum += std::exp(logits[i] - largest);
    for (size_t i = 0; i < count; ++i) predictions[i].score = static_cast<float>(std::exp(logits[i] - largest) / sum);
  }
  for (size_t i = 0; i < count; ++i) predictions[i].label = &labels[i];
  std::stable_sort(predictions.begin(), predictions.end(),
                   [](const Prediction& a, const Prediction& b) { return a.score > b.score; });
  return predictions;
}

void AppendPredictions(std::string& out, const std::vector<Prediction>& predictions) {
  out += '[';
  for (size_t i = 0; i < predictions.size(); ++i) {
    out += i ? ",{\"score\":" : "{\"score\":";
    AppendFloat(out, predictions[i].score);
    out += ",\"label\":";
    AppendJsonString(out, *predictions[i].label);
    out += '}';
  }
  out += ']';
}

float Cosine(const float* a, const float* b, size_t size) {
  double dot = 0, a_squares = 0, b_squares = 0;
  for (size_t i = 0; i < size; ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    a_squares += static_cast<double>(a[i]) * a[i];
    b_squares += static_cast<double>(b[i]) * b[i];
  }
  if (a_squares == 0 || b_squares == 0) return 0;
  return static_cast<float>(dot / std::sqrt(a_squares * b_squares));
}

std::variant<std::string, ApiError> PredictBody(const PredictCall& call, const FinishedRows& done,
                                                const std::vector<std::string>& labels) {
  if (done.columns != labels.size()) {
    return ApiError{500, "the worker answered " + std::to_string(done.columns) + " scores per input; the model has " +
                             std::to_string(labels.size()) + " labels", "server_error"};
  }
  std::string body = call.batch ? "[" : "";
  for (size_t row = 0; row < done.inputs(); ++row) {
    if (row) body += ',';
    AppendPredictions(body, Predictions(done.Row(static_cast<int64_t>(row)), labels.size(), call.raw_scores, labels));
  }
  if (call.batch) body += ']';
  return body;
}

std::string SimilarityBody(const FinishedRows& done) {
  std::string body = "[";
  for (size_t row = 1; row < done.inputs(); ++row) {
    if (row > 1) body += ',';
    AppendFloat(body, Cosine(done.Row(0), done.Row(static_cast<int64_t>(row)), done.columns));
  }
  return body + ']';
}

std::string EmbedAllBody(const FinishedRows& done) {
  std::string body = "[";
  for (size_t input = 0; input < done.inputs(); ++input) {
    body += input ? ",[" : "[";
    const float* rows = done.RowsOf(input);
    for (size_t token = 0; token < done.RowCount(input); ++token) {
      body += token ? ",[" : "[";
      for (size_t column = 0; column < done.columns; ++column) {
        if (column) body += ',';
        AppendFloat(body, rows[token * done.columns + column]);
      }
      body += ']';
    }
    body += ']';
  }
  return body + ']';
}

std::string SpladeSparseBody(const FinishedRows& done) {
  std::string body = "[";
  for (size_t input = 0; input < done.inputs(); ++input) {
    body += input ? ",[" : "[";
    const float* row = done.RowsOf(input);
    bool first = true;
    for (size_t index = 0; index < done.columns; ++index) {
      if (row[index] == 0.0f) continue;
      body += first ? "{\"index\":" : ",{\"index\":";
      body += std::to_string(index) + ",\"value\":";
      AppendFloat(body, row[index]);
      body += '}';
      first = false;
    }
    body += ']';
  }
  return body + ']';
}

}  // namespace stamen::gateway
