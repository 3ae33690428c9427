// Static embedding models (model2vec's StaticModel, sentence-transformers' StaticEmbedding): an
// embedding bag. Forward gathers each token's row of the table, and the engine's mean pooling
// (the folder's default, StaticEmbedding pools by mean) averages them, then normalises as the
// step asks; the per-token rows are what /embed_all gives. On the CPU the mean skips Forward:
// PoolIds sums the rows straight from the table (the row copies were a fifth of the time). Token rules (no special tokens,
// model2vec's unknown-token drop and cut) are the tokenizer's (model_folder/model_tokenizer.h).
//
// The table is folded at load as sentence-transformers folds a model2vec folder:
// row[id] = embeddings[mapping[id]] · weights[id] (mapping and weights when the folder has
// them), which is what model2vec averages over, plus one zero row after the vocabulary (the
// empty bag: a text with no token left gets it alone, and so the zero vector both libraries
// give). Runs on the CPU and on CUDA (there in bf16 like every model: ops::Gather and the
// mean pooling have CUDA kernels).
#include <cstring>
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/ops/embedding.h"

namespace stamen::engine {
namespace {

class StaticEmbeddingModel final : public Model {
 public:
  StaticEmbeddingModel(Tensor table, const Placement& placement) : Model(placement), table_(std::move(table)) {}

  StatusOr<Tensor> Forward(const ModelInput& input) override {
    auto rows = workspace_.Get(0, placement_.dtype, Shape{input.token_ids.dim(0), table_.dim(1)});
    if (!rows.ok()) return rows.status();
    STAMEN_RETURN_IF_ERROR(ops::Gather(table_, input.token_ids, *rows));
    return rows;
  }

  // No positions: any length (model2vec's max_length is the tokenizer's cut).
  int64_t max_sequence_length() const override { return 0; }

  // The mean on the CPU as an embedding bag: each sequence's rows summed straight from the
  // table, in the order and arithmetic of ops::Pool's mean (first row, + the others, ÷ n), so
  // both paths give the same floats; CUDA and other poolings gather with Forward.
  bool PoolsIds(ops::PoolingMode pooling) const override {
    return pooling == ops::PoolingMode::kMean && placement_.device == Device::kCpu;
  }

  Status PoolIds(const ModelInput& input, ops::PoolingMode pooling, Tensor& output) override {
    if (!PoolsIds(pooling)) return Model::PoolIds(input, pooling, output);
    const int64_t rows = table_.dim(0), n = table_.dim(1), width = output.dim(1);
    const int32_t* ids = input.token_ids.data<int32_t>();
    const std::span<const int32_t> bounds = input.cu_seqlens_host;
    for (int64_t t = 0; t < bounds.back(); ++t) {
      if (ids[t] < 0 || ids[t] >= rows) {  // as ops::Gather reports it
        return Status::Error("id " + std::to_string(ids[t]) + " at index " + std::to_string(t) +
                             " is outside the embedding table of " + std::to_string(rows) + " rows");
      }
    }
    const float* table = table_.data<float>();
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      float* out = output.data<float>() + static_cast<int64_t>(s) * width;
      const int64_t begin = bounds[s], end = bounds[s + 1];
      std::memcpy(out, table + static_cast<int64_t>(ids[begin]) * n, static_cast<size_t>(width) * sizeof(float));
      for (int64_t t = begin + 1; t < end; ++t) {
        const float* row = table + static_cast<int64_t>(ids[t]) * n;
        for (int64_t i = 0; i < width; ++i) out[i] += row[i];
      }
      const float count = static_cast<float>(end - begin);
      for (int64_t i = 0; i < width; ++i) out[i] /= count;
    }
    return Status();
  }

 private:
  Tensor table_;  // [vocabulary + 1, dimensions], the last row zero
};

// The folder's table tensor: sentence-transformers' "embedding.weight", else model2vec's.
std::string TableName(const ModelConfig& config, const WeightStore& weights) {
  return !config.static_embedding.model2vec_rules && weights.Contains("embedding.weight") ? "embedding.weight"
                                                                                           : "embeddings";
}

std::vector<TensorSpec> Tensors(const ModelConfig& config, const std::string& prefix) {
  const std::string name = config.static_embedding.model2vec_rules ? "embeddings" : "embedding.weight";
  return {{.name = prefix + name, .shape = {config.static_embedding.vocabulary_rows, config.hidden_size}}};
}

// model2vec's token id → row mapping, stored as I64 or I32.
StatusOr<std::vector<int64_t>> LoadMapping(const WeightStore& weights, int64_t ids, int64_t rows) {
  auto stored = weights.Load("mapping", DataType::kI64);
  if (!stored.ok()) stored = weights.Load("mapping", DataType::kI32);
  if (!stored.ok()) return stored.status();
  if (stored->rank() != 1 || stored->dim(0) != ids) {
    return Status::Error("static embedding: 'mapping' must hold one row index for each of the " + std::to_string(ids) +
                         " token ids");
  }
  std::vector<int64_t> mapping(static_cast<size_t>(ids));
  for (int64_t id = 0; id < ids; ++id) {
    mapping[id] = stored->dtype() == DataType::kI64 ? stored->data<int64_t>()[id] : stored->data<int32_t>()[id];
    if (mapping[id] < 0 || mapping[id] >= rows) {
      return Status::Error("static embedding: 'mapping' sends token id " + std::to_string(id) + " to row " +
                           std::to_string(mapping[id]) + ", outside the " + std::to_string(rows) + " rows");
    }
  }
  return mapping;
}

StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  const int64_t ids = config.static_embedding.vocabulary_rows;
  const int64_t width = config.hidden_size;
  const std::string name = TableName(config, weights);
  auto embeddings = weights.Load(name);  // F32
  if (!embeddings.ok()) return embeddings.status();
  if (embeddings->rank() != 2 || embeddings->dim(1) != width) {
    return Status::Error("static embedding: '" + name + "' must be [rows, " + std::to_string(width) + "]");
  }
  const int64_t rows = embeddings->dim(0);
  const bool folded = name == "embeddings";
  std::vector<int64_t> mapping;
  if (folded && weights.Contains("mapping")) {
    auto loaded = LoadMapping(weights, ids, rows);
    if (!loaded.ok()) return loaded.status();
    mapping = std::move(loaded.value());
  } else if (rows != ids) {
    return Status::Error("static embedding: '" + name + "' has " + std::to_string(rows) + " rows for " +
                         std::to_string(ids) + " token ids");
  }
  Tensor factors;
  if (folded && weights.Contains("weights")) {
    auto loaded = weights.Load("weights", Shape{ids});
    if (!loaded.ok()) return loaded.status();
    factors = std::move(loaded.value());
  }
  auto table = Tensor::Allocate(DataType::kF32, Shape{ids + 1, width});
  if (!table.ok()) return table.status();
  const float* source = embeddings->data<float>();
  float* target = table->data<float>();
  for (int64_t id = 0; id < ids; ++id) {
    const float* row = source + (mapping.empty() ? id : mapping[id]) * width;
    float* out = target + id * width;
    if (factors.empty()) {
      std::memcpy(out, row, static_cast<size_t>(width) * sizeof(float));
    } else {
      const float factor = factors.data<float>()[id];
      for (int64_t column = 0; column < width; ++column) out[column] = row[column] * factor;
    }
  }
  std::memset(target + ids * width, 0, static_cast<size_t>(width) * sizeof(float));  // the empty bag
  auto placed = model_weights::Place(*table, placement);
  if (!placed.ok()) return placed.status();
  return std::unique_ptr<Model>(std::make_unique<StaticEmbeddingModel>(std::move(placed.value()), placement));
}

constexpr std::string_view kPrefixes[] = {""};

}  // namespace

extern const FamilyDefinition kStaticEmbeddingFamily{
    .weight_prefixes = kPrefixes, .tensors = Tensors, .load = Load};

}  // namespace stamen::engine
