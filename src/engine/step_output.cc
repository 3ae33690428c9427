// The step's values from the last hidden state: copy, classification head, or pooling.
#include "engine/step_output.h"

#include <filesystem>

#include "engine/ops/convert.h"
#include "engine/ops/gemm.h"
#include "engine/weight_store.h"

namespace stamen::engine {

StatusOr<DenseModules> LoadDenseModules(const std::vector<DenseModuleConfig>& modules, int64_t hidden_size,
                                        const Placement& placement) {
  DenseModules dense{.layers = {}, .scratch = Workspace(placement.device)};
  int64_t width = hidden_size;
  for (const DenseModuleConfig& module : modules) {
    if (module.in_features != width) {
      return Status::Error(module.folder + "/config.json: in_features is " + std::to_string(module.in_features) +
                           ", but the vectors before it have " + std::to_string(width));
    }
    auto store = WeightStore::OpenFile((std::filesystem::path(module.folder) / "model.safetensors").string());
    if (!store.ok()) return store.status();
    DenseModules::Layer layer;
    layer.activation = module.activation;
    auto weight = store->Load("linear.weight", Shape{module.out_features, module.in_features});
    if (!weight.ok()) return weight.status();
    auto placed = model_weights::Place(*weight, placement);
    if (!placed.ok()) return placed.status();
    layer.weight = std::move(placed.value());
    if (module.bias) {
      auto bias = store->Load("linear.bias", Shape{module.out_features});
      if (!bias.ok()) return bias.status();
      auto placed_bias = model_weights::Place(*bias, placement);
      if (!placed_bias.ok()) return placed_bias.status();
      layer.bias = std::move(placed_bias.value());
    }
    dense.layers.push_back(std::move(layer));
    width = module.out_features;
  }
  return dense;
}

namespace {

// Rows [rows, in] of the compute dtype through the Dense modules into `values` F32 [rows, D],
// from scratch slot `slot` on. Truncation to D columns runs the last module on its first D
// weight rows only: the leading columns of x·Wᵀ + b are x·W[:D]ᵀ + b[:D].
Status ProjectRows(Tensor input, DenseModules& dense, size_t slot, Tensor& values) {
  const int64_t sequences = values.dim(0);
  const int64_t width = values.dim(1);
  const DataType compute = input.dtype();  // F32 on the CPU, BF16 on CUDA: what Gemm takes
  for (size_t i = 0; i < dense.layers.size(); ++i) {
    const DenseModules::Layer& layer = dense.layers[i];
    const bool last = i + 1 == dense.layers.size();
    const int64_t rows = last ? width : layer.weight.dim(0);
    const Tensor weight = layer.weight.Rows(0, rows);
    const Tensor bias = layer.bias.empty() ? Tensor() : layer.bias.Rows(0, rows);
    if (last && compute == DataType::kF32) {
      return ops::Gemm(input, weight, bias, values, {.accumulate = false, .activation = layer.activation});
    }
    auto output = dense.scratch.Get(slot++, compute, {sequences, rows});
    if (!output.ok()) return output.status();
    STAMEN_RETURN_IF_ERROR(ops::Gemm(input, weight, bias, *output, {.accumulate = false, .activation = layer.activation}));
    input = *output;
  }
  return ops::Convert(input, values);
}

// Pooled vectors [S, hidden] through the Dense modules into `values` F32 [S, D].
Status RunDenseModules(const Tensor& hidden, const Tensor& cu_seqlens, ops::PoolingMode pooling, DenseModules& dense,
                       Tensor& values) {
  const int64_t sequences = values.dim(0);
  const DataType compute = hidden.dtype();
  size_t slot = 0;
  auto pooled = dense.scratch.Get(slot++, DataType::kF32, {sequences, hidden.dim(1)});
  if (!pooled.ok()) return pooled.status();
  STAMEN_RETURN_IF_ERROR(ops::Pool(hidden, cu_seqlens, pooling, *pooled));
  Tensor input = *pooled;
  if (compute != DataType::kF32) {
    auto converted = dense.scratch.Get(slot++, compute, pooled->shape());
    if (!converted.ok()) return converted.status();
    STAMEN_RETURN_IF_ERROR(ops::Convert(*pooled, *converted));
    input = *converted;
  }
  return ProjectRows(input, dense, slot, values);
}

// Late chunking: the hidden rows of every span end to end, and offsets that make each span a
// sequence of its own, so that the pooling of whole sequences pools spans (spans validated by
// the engine; CPU tensors).
struct SpanTokens {
  Tensor hidden;      // [Σ span lengths, hidden]
  Tensor cu_seqlens;  // I32 [spans + 1]
};

StatusOr<SpanTokens> GatherSpans(const Tensor& hidden, std::span<const int32_t> spans) {
  const int64_t count = static_cast<int64_t>(spans.size() / 2);
  SpanTokens gathered;
  auto offsets = Tensor::Allocate(DataType::kI32, {count + 1});
  if (!offsets.ok()) return offsets.status();
  int32_t* offset = offsets->data<int32_t>();
  offset[0] = 0;
  for (int64_t i = 0; i < count; ++i) offset[i + 1] = offset[i] + (spans[2 * i + 1] - spans[2 * i]);
  auto rows = Tensor::Allocate(hidden.dtype(), {offset[count], hidden.dim(1)});
  if (!rows.ok()) return rows.status();
  for (int64_t i = 0; i < count; ++i) {
    Tensor target = rows->Rows(offset[i], offset[i + 1]);
    STAMEN_RETURN_IF_ERROR(CopyTensor(hidden.Rows(spans[2 * i], spans[2 * i + 1]), target));
  }
  gathered.hidden = std::move(rows.value());
  gathered.cu_seqlens = std::move(offsets.value());
  return gathered;
}

}  // namespace

StatusOr<Tensor> ComputeStepValues(Model& model, const ModelConfig& config, const ModelInput& input, const Tensor& hidden,
                                   const StepOptions& options, ops::PoolingMode pooling, DenseModules& dense,
                                   const StepValuesBuffer& buffer) {
  const int64_t tokens = input.cu_seqlens_host.back();
  const int64_t sequences = static_cast<int64_t>(input.cu_seqlens_host.size()) - 1;
  switch (options.output) {
    case StepOutput::kTokenEmbeddings: {
      auto values = buffer({tokens, hidden.dim(1)});
      if (!values.ok()) return values.status();
      STAMEN_RETURN_IF_ERROR(ops::Convert(hidden.Rows(0, tokens), *values));
      return values;
    }
    case StepOutput::kTokenVectors: {
      // A multi-vector model: every token through the Dense modules, then each row normalised.
      auto values = buffer({tokens, dense.OutputWidth(hidden.dim(1))});
      if (!values.ok()) return values.status();
      STAMEN_RETURN_IF_ERROR(ProjectRows(hidden.Rows(0, tokens), dense, 0, *values));
      STAMEN_RETURN_IF_ERROR(ops::L2Normalize(*values, *values));
      return values;
    }
    case StepOutput::kDenseSparseColbert:
      // The engine computes them from the hidden state on the host (bge_m3_heads.h).
      return Status::Error("bge-m3's outputs run on the CPU engine only");
    case StepOutput::kScores: {
      auto logits = model.Classify(input, hidden);
      if (!logits.ok()) return logits.status();
      auto values = buffer(logits->shape());
      if (!values.ok()) return values.status();
      STAMEN_RETURN_IF_ERROR(ops::Convert(*logits, *values));
      return values;
    }
    case StepOutput::kEmbeddings: {
      if (pooling == ops::PoolingMode::kSplade) {
        // Sparse vectors over the vocabulary: no Dense modules.
        auto values = buffer({sequences, model.splade_width()});
        if (!values.ok()) return values.status();
        STAMEN_RETURN_IF_ERROR(model.SpladeVectors(input, hidden, *values));
        return values;
      }
      // What is pooled: each sequence's tokens, or (late chunking) each span's.
      Tensor pooled_hidden = hidden;
      Tensor pooled_offsets = input.cu_seqlens;
      int64_t rows = sequences;
      if (!options.spans.empty()) {
        auto gathered = GatherSpans(hidden, options.spans);
        if (!gathered.ok()) return gathered.status();
        pooled_hidden = std::move(gathered->hidden);
        pooled_offsets = std::move(gathered->cu_seqlens);
        rows = pooled_offsets.dim(0) - 1;
      }
      // No hidden state: the model pools its token ids itself (Model::PoolsIds; no Dense, no spans).
      const bool from_ids = hidden.empty();
      const int64_t hidden_width = from_ids ? config.hidden_size : hidden.dim(1);
      const int64_t width = dense.OutputWidth(hidden_width);
      auto values = buffer({rows, width});
      if (!values.ok()) return values.status();
      if (from_ids) {
        STAMEN_RETURN_IF_ERROR(model.PoolIds(input, pooling, *values));
      } else if (dense.layers.empty()) {
        STAMEN_RETURN_IF_ERROR(ops::Pool(pooled_hidden, pooled_offsets, pooling, *values));
      } else {
        STAMEN_RETURN_IF_ERROR(RunDenseModules(pooled_hidden, pooled_offsets, pooling, dense, *values));
      }
      // pplx-embed-v1 serves its int8 vectors (round(127·tanh(x))); normalising them after, when
      // asked (FinishRows), is what TEI does too (its int8 scale is then lost).
      if (config.pooled_tanh_int8) STAMEN_RETURN_IF_ERROR(ops::ScaledTanhRound(*values, 127.0f));
      return values;
    }
  }
  return Status::Error("unknown step output");
}

}  // namespace stamen::engine
