// A mixture-of-experts feed-forward as nomic-embed-text-v2-moe's remote code computes it
// (nomic-bert-2048's NomicMoELayer: NomicRouter, NomicExperts; megablocks' layout). For each
// token x [H]:
//   p = softmax(x·W_routerᵀ) over all E experts (fp32);  K = the top_k experts by p
//   output = Σ_{e ∈ K} p_e · act(x·W1_eᵀ)·W2_e  +  b          (p_e not renormalised over K)
// W1_e is rows e·F … (e+1)·F of w1 [E·F, H]; W2_e is the same rows of w2, stored [F, H] and
// applied untransposed (the loader turns each block to [H, F]: TensorSpec::transposed_blocks);
// b is one bias shared by all experts, added once.
#pragma once

#include <vector>

#include "engine/models/layers.h"

namespace stamen::engine::layers {

struct MixtureOfExpertsWeights {
  Tensor router_weight;  // F32 [E, H] on every placement, no bias
  Tensor up_weight;      // [E·F, H]: expert e's rows e·F … (e+1)·F
  Tensor down_weight;    // [E·H, F]: expert e's down projection [H, F], as ops::Gemm reads it
  Tensor output_bias;    // [H]
};

struct MixtureOfExpertsSettings {
  ops::Activation activation = ops::Activation::kGeluErf;
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t intermediate_size = 0;  // F, each expert's width
};

// Visits `base`router.layer.weight, experts.mlp.w1 / w2 and experts.bias, as the hub stores them.
void VisitMixtureOfExperts(TensorVisitor& visit, MixtureOfExpertsWeights& weights, const std::string& base,
                           const MixtureOfExpertsSettings& settings, int64_t hidden_size);

// output = the mixture above for every row of `input` [T, H], on the model's device. The router's
// logits are an fp32 product (ops::ExpertLogits); the routing is decided on the host from them,
// so on a device the step waits for them once per such layer and cannot be captured as a graph
// (Model::Graphable). Each token's rows are gathered grouped by expert, each expert runs one gemm
// pair over its rows, and ops::CombineExperts adds every token's weighted rows and the bias.
Status MixtureOfExperts(const MixtureOfExpertsWeights& weights, const MixtureOfExpertsSettings& settings,
                        const Tensor& input, Slots slots, Tensor& output);

// The top_k experts of one token's router logits and their softmax probabilities over all
// experts, highest first (ties: the lower index first): `experts` and `probabilities` are
// resized to top_k.
void RouteToken(const float* logits, int64_t num_experts, int64_t top_k, std::vector<int32_t>& experts,
                std::vector<float>& probabilities);

}  // namespace stamen::engine::layers
