// bge-m3's heads: two small linear layers on every token, laid out in one row per token.
#include "engine/bge_m3_heads.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/ops/gemm.h"
#include "engine/ops/pooling.h"
#include "engine/torch_file.h"

namespace stamen::engine {

StatusOr<BgeM3Heads> LoadBgeM3Heads(const BgeM3Config& config, int64_t hidden_size) {
  BgeM3Heads heads;
  auto colbert = TorchStateDict::Open(config.colbert_linear_path);
  if (!colbert.ok()) return colbert.status();
  auto colbert_weight = colbert->Get("weight");
  if (!colbert_weight.ok()) return colbert_weight.status();
  // Only colbert_dim = hidden size (FlagEmbedding's default, bge-m3's): BgeM3RowLayout says why.
  if (!(colbert_weight->shape() == Shape{hidden_size, hidden_size})) {
    return Status::Error(config.colbert_linear_path + ": weight has shape " + colbert_weight->shape().ToString() +
                         ", expected [" + std::to_string(hidden_size) + ", " + std::to_string(hidden_size) +
                         "]: ColBERT vectors as wide as the hidden size (FlagEmbedding's colbert_dim default)");
  }
  auto colbert_bias = colbert->Get("bias", Shape{hidden_size});
  if (!colbert_bias.ok()) return colbert_bias.status();
  auto sparse = TorchStateDict::Open(config.sparse_linear_path);
  if (!sparse.ok()) return sparse.status();
  auto sparse_weight = sparse->Get("weight", Shape{1, hidden_size});
  if (!sparse_weight.ok()) return sparse_weight.status();
  auto sparse_bias = sparse->Get("bias", Shape{1});
  if (!sparse_bias.ok()) return sparse_bias.status();
  heads.colbert_weight = std::move(colbert_weight.value());
  heads.colbert_bias = std::move(colbert_bias.value());
  heads.sparse_weight = std::move(sparse_weight.value());
  heads.sparse_bias = std::move(sparse_bias.value());
  heads.layout = {.hidden_size = hidden_size};
  return heads;
}

StatusOr<Tensor> ComputeBgeM3Rows(const BgeM3Heads& heads, const Tensor& hidden, std::span<const int32_t> cu_seqlens) {
  if (hidden.dtype() != DataType::kF32 || hidden.device() != Device::kCpu) {
    return Status::Error("bge-m3's outputs run on the CPU engine only");
  }
  const int64_t tokens = cu_seqlens.back();
  const int64_t hidden_size = heads.layout.hidden_size;
  const int64_t colbert_width = hidden_size;
  const int64_t columns = heads.layout.columns();
  const Tensor states = hidden.Rows(0, tokens);
  auto colbert = Tensor::Allocate(DataType::kF32, {tokens, colbert_width});
  if (!colbert.ok()) return colbert.status();
  STAMEN_RETURN_IF_ERROR(ops::Gemm(states, heads.colbert_weight, heads.colbert_bias, *colbert));
  STAMEN_RETURN_IF_ERROR(ops::L2Normalize(*colbert, *colbert));
  auto sparse = Tensor::Allocate(DataType::kF32, {tokens, 1});
  if (!sparse.ok()) return sparse.status();
  STAMEN_RETURN_IF_ERROR(
      ops::Gemm(states, heads.sparse_weight, heads.sparse_bias, *sparse, {.activation = ops::Activation::kRelu}));
  auto values = Tensor::Allocate(DataType::kF32, {tokens, columns});  // zero-filled
  if (!values.ok()) return values.status();
  float* out = values->data<float>();
  const float* state = states.data<float>();
  const float* vectors = colbert->data<float>();
  const float* weights = sparse->data<float>();
  for (size_t s = 0; s + 1 < cu_seqlens.size(); ++s) {
    const int64_t first = cu_seqlens[s], end = cu_seqlens[s + 1];
    if (first == end) continue;
    // Dense: the CLS state over max(‖x‖, 1e-12), as torch.nn.functional.normalize.
    const float* cls = state + first * hidden_size;
    double squares = 0.0;
    for (int64_t i = 0; i < hidden_size; ++i) squares += double{cls[i]} * cls[i];
    const float scale = static_cast<float>(1.0 / std::max(std::sqrt(squares), 1e-12));
    for (int64_t i = 0; i < hidden_size; ++i) out[first * columns + i] = cls[i] * scale;
    for (int64_t t = first + 1; t < end; ++t) {
      std::memcpy(out + t * columns, vectors + t * colbert_width, colbert_width * sizeof(float));
    }
  }
  for (int64_t t = 0; t < tokens; ++t) out[t * columns + columns - 1] = weights[t];
  return values;
}

}  // namespace stamen::engine
