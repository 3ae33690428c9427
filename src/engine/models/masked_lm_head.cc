// The masked-LM head and SPLADE pooling of the layer library, as sequences of ops (declared in layers.h).
#include "engine/models/layers.h"

#include <algorithm>

#include "engine/ops/convert.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/pooling.h"

namespace stamen::engine::layers {
namespace {

// Tokens per slice of logits: 256 × a 30,522-word vocabulary is 31 MB of F32 logits, against
// 1 GB for a whole 8,192-token batch; the gemm stays large enough to run at full speed.
constexpr int64_t kSliceTokens = 256;

}  // namespace

void VisitMaskedLmHead(TensorVisitor& visit, MaskedLmHeadWeights& head, const MaskedLmHeadNames& names,
                       const ModelConfig& config) {
  const int64_t h = config.hidden_size;
  const int64_t vocabulary = config.vocab_size;
  visit.Tensor(head.dense_weight, {names.dense + ".weight", {h, h}});
  visit.Tensor(head.dense_bias, {names.dense + ".bias", {h}});
  visit.Tensor(head.norm_gamma, {names.norm + ".weight", {h}, TensorInit::kNormOne});
  visit.Tensor(head.norm_beta, {names.norm + ".bias", {h}});
  visit.Tensor(head.decoder_weight,
               {names.decoder + ".weight", {vocabulary, h}, TensorInit::kNormal, TensorPresence::kOptional});
  visit.Tensor(head.decoder_bias, {names.bias, {vocabulary}});
}

Status SpladeVectors(const MaskedLmHeadWeights& weights, const MaskedLmHeadSettings& settings,
                     const Tensor& word_embeddings, const ModelInput& input, const Tensor& hidden, Slots slots,
                     Tensor& output) {
  const Tensor& decoder = weights.decoder_weight.empty() ? word_embeddings : weights.decoder_weight;
  // Rows past the last sequence are padding (a CUDA graph's token bucket): left out.
  const int64_t tokens = input.cu_seqlens_host.back();
  const int64_t slice = std::min(tokens, kSliceTokens);
  const DataType type = hidden.dtype();
  Tensor transformed = slots.Get(type, {slice, hidden.dim(1)});
  Tensor logits = slots.Get(type, {slice, decoder.dim(0)});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::Zero(output));
  for (int64_t first = 0; first < tokens; first += slice) {
    const int64_t count = std::min(slice, tokens - first);
    Tensor slice_transformed = transformed.Rows(0, count);
    Tensor slice_logits = logits.Rows(0, count);
    STAMEN_RETURN_IF_ERROR(ops::Gemm(hidden.Rows(first, first + count), weights.dense_weight, weights.dense_bias,
                                     slice_transformed, {.activation = settings.activation}));
    STAMEN_RETURN_IF_ERROR(ops::LayerNorm(slice_transformed, Tensor(), weights.norm_gamma, weights.norm_beta,
                                          settings.norm_eps, slice_transformed));
    STAMEN_RETURN_IF_ERROR(ops::Gemm(slice_transformed, decoder, weights.decoder_bias, slice_logits));
    STAMEN_RETURN_IF_ERROR(ops::SpladePool(slice_logits, input.cu_seqlens, first, output));
  }
  return Status();
}

}  // namespace stamen::engine::layers
