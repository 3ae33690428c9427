// The masked-language-model head of BERT-style encoders (…ForMaskedLM), and SPLADE sparse
// vectors from its logits:
//   logits = LayerNorm(act(x·W_dᵀ + b_d))·Eᵀ + b          (E [vocab, hidden])
//   splade[s, v] = max over the tokens t of s of log(1 + relu(logits[t, v]))
// E is the decoder weight, or the word embeddings when the decoder is tied to them (no
// decoder tensor in the file, as save_pretrained writes tied weights).
#pragma once

#include <string>

#include "engine/models/layers.h"
#include "engine/ops/activation.h"

namespace stamen::engine::layers {

struct MaskedLmHeadWeights {
  Tensor dense_weight, dense_bias;  // the transform [hidden, hidden]
  Tensor norm_gamma, norm_beta;
  Tensor decoder_weight;  // [vocab, hidden], empty when tied to the word embeddings
  Tensor decoder_bias;    // [vocab]
};

// Where the head's tensors sit: `dense`, `norm` and `decoder` without ".weight" / ".bias";
// `bias` is the full name of the decoder's bias (BERT: "cls.predictions.bias").
struct MaskedLmHeadNames {
  std::string dense, norm, decoder, bias;
};

struct MaskedLmHeadSettings {
  ops::Activation activation = ops::Activation::kGeluErf;  // of the transform
  float norm_eps = 1e-12f;
};

// Visits the head; the decoder weight is optional (tied when absent).
void VisitMaskedLmHead(TensorVisitor& visit, MaskedLmHeadWeights& head, const MaskedLmHeadNames& names,
                       const ModelConfig& config);

// The SPLADE vector of every sequence into `output` F32 [S, vocab] (on the model's device).
// The logits are made a slice of tokens at a time, so a batch never holds [T, vocab] at once.
Status SpladeVectors(const MaskedLmHeadWeights& weights, const MaskedLmHeadSettings& settings,
                     const Tensor& word_embeddings, const ModelInput& input, const Tensor& hidden, Slots slots,
                     Tensor& output);

}  // namespace stamen::engine::layers
