#include "gateway/bge_m3_outputs.h"

#include "model_folder/bge_m3.h"

namespace stamen::gateway {

namespace {

size_t ColumnsOf(int64_t hidden_size) {
  return static_cast<size_t>(engine::BgeM3RowLayout{.hidden_size = hidden_size}.columns());
}

// `entry(out, input)` for each input, as a JSON array.
template <typename Entry>
void AppendEach(std::string& out, const std::vector<BgeM3Rows>& inputs, Entry entry) {
  out += '[';
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) out += ',';
    entry(out, inputs[i]);
  }
  out += ']';
}

}  // namespace

std::vector<BgeM3Rows> BgeM3RowsOf(const FinishedRows& done) {
  std::vector<BgeM3Rows> inputs;
  int64_t first_token = 0;
  for (size_t input = 0; input < done.inputs(); ++input) {
    inputs.push_back({done.RowsOf(input), done.token_ids.subspan(static_cast<size_t>(first_token),
                                                                static_cast<size_t>(done.lengths[input]))});
    first_token += done.lengths[input];
  }
  return inputs;
}

std::string BgeM3SparseBody(const FinishedRows& done, int64_t hidden_size, std::span<const int32_t> dropped_ids) {
  std::string body = "[";
  for (const BgeM3Rows& input : BgeM3RowsOf(done)) {
    if (body.size() > 1) body += ',';
    AppendBgeM3Sparse(body, input, hidden_size, dropped_ids);
  }
  return body + ']';
}

void AppendBgeM3Dense(std::string& out, const BgeM3Rows& input, int64_t hidden_size) {
  AppendEmbedding(out, input.rows, static_cast<size_t>(hidden_size), EmbeddingType::kFloat, {});
}

void AppendBgeM3Sparse(std::string& out, const BgeM3Rows& input, int64_t hidden_size,
                       std::span<const int32_t> dropped_ids) {
  const size_t columns = ColumnsOf(hidden_size);
  std::vector<float> weights(input.ids.size());
  for (size_t token = 0; token < weights.size(); ++token) {
    weights[token] = input.rows[token * columns + static_cast<size_t>(hidden_size)];
  }
  out += '[';
  bool first = true;
  for (const auto& [id, weight] : engine::LexicalWeights(input.ids, weights, dropped_ids)) {
    out += first ? "{\"index\":" : ",{\"index\":";
    out += std::to_string(id) + ",\"value\":";
    AppendFloat(out, weight);
    out += '}';
    first = false;
  }
  out += ']';
}

void AppendBgeM3Colbert(std::string& out, const BgeM3Rows& input, int64_t hidden_size, EmbeddingType type) {
  const size_t columns = ColumnsOf(hidden_size);
  const QuantizationRanges ranges = QuantizationRanges::UnitVector(static_cast<size_t>(hidden_size));
  out += '[';
  for (size_t token = 1; token < input.ids.size(); ++token) {
    if (token > 1) out += ',';
    AppendEmbedding(out, input.rows + token * columns, static_cast<size_t>(hidden_size), type, ranges);
  }
  out += ']';
}

std::string EmbedMultiBody(const EmbedMultiCall& call, const std::vector<BgeM3Rows>& inputs, int64_t hidden_size,
                           std::span<const int32_t> dropped_ids) {
  std::string body = "{";
  auto key = [&body](const char* name) {
    if (body.size() > 1) body += ',';
    body += name;
  };
  if (call.dense) {
    key("\"dense\":");
    AppendEach(body, inputs, [&](std::string& out, const BgeM3Rows& input) { AppendBgeM3Dense(out, input, hidden_size); });
  }
  if (call.sparse) {
    key("\"sparse\":");
    AppendEach(body, inputs, [&](std::string& out, const BgeM3Rows& input) {
      AppendBgeM3Sparse(out, input, hidden_size, dropped_ids);
    });
  }
  if (call.colbert) {
    key("\"colbert\":");
    AppendEach(body, inputs, [&](std::string& out, const BgeM3Rows& input) {
      AppendBgeM3Colbert(out, input, hidden_size, EmbeddingType::kFloat);
    });
  }
  body += '}';
  return body;
}

}  // namespace stamen::gateway
