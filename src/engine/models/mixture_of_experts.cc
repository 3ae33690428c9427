// The mixture-of-experts feed-forward (mixture_of_experts.h): route on the host, then per expert
// gather its rows, one gemm pair, and add the weighted rows back.
#include "engine/models/mixture_of_experts.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/cpu/matrix_precision.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gemm.h"

namespace stamen::engine::layers {

void VisitMixtureOfExperts(TensorVisitor& visit, MixtureOfExpertsWeights& weights, const std::string& base,
                           const MixtureOfExpertsSettings& settings, int64_t hidden_size) {
  const int64_t experts = settings.num_experts;
  const int64_t width = settings.intermediate_size;
  visit.Tensor(weights.router_weight, {base + "router.layer.weight", {experts, hidden_size}});
  visit.Tensor(weights.up_weight, {base + "experts.mlp.w1", {experts * width, hidden_size}});
  visit.Tensor(weights.down_weight,
               {.name = base + "experts.mlp.w2", .shape = {experts * width, hidden_size}, .transposed_blocks = experts});
  visit.Tensor(weights.output_bias, {base + "experts.bias", {hidden_size}});
}

void RouteToken(const float* logits, int64_t num_experts, int64_t top_k, std::vector<int32_t>& experts,
                std::vector<float>& probabilities) {
  // torch's softmax: exp(l - max) / Σ exp(l - max), in fp32 (the router's softmax(dtype=float32)).
  const float largest = *std::max_element(logits, logits + num_experts);
  std::vector<float> exponentials(num_experts);
  float sum = 0.0f;
  for (int64_t e = 0; e < num_experts; ++e) {
    exponentials[e] = std::exp(logits[e] - largest);
    sum += exponentials[e];
  }
  std::vector<int32_t> order(num_experts);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int32_t a, int32_t b) {
    return exponentials[a] != exponentials[b] ? exponentials[a] > exponentials[b] : a < b;
  });
  experts.assign(order.begin(), order.begin() + top_k);
  probabilities.resize(top_k);
  for (int64_t k = 0; k < top_k; ++k) probabilities[k] = exponentials[experts[k]] / sum;
}

Status MixtureOfExperts(const MixtureOfExpertsWeights& weights, const MixtureOfExpertsSettings& settings,
                        const Tensor& input, Slots slots, Tensor& output) {
  if (input.device() != Device::kCpu || input.dtype() != DataType::kF32 || output.dtype() != DataType::kF32) {
    return Status::Error("mixture-of-experts layers run on the CPU in float32 only (got " + input.Describe() + ")");
  }
  const int64_t tokens = input.dim(0);
  const int64_t hidden = input.dim(1);
  const int64_t experts = settings.num_experts;
  const int64_t width = settings.intermediate_size;
  Tensor logits = slots.Get(DataType::kF32, {tokens, experts});
  // One expert's rows at a time: at most every token (a token picks an expert once).
  Tensor rows = slots.Get(DataType::kI32, {tokens});
  Tensor gathered = slots.Get(DataType::kF32, {tokens, hidden});
  Tensor intermediate = slots.Get(DataType::kF32, {tokens, width});
  Tensor expert_output = slots.Get(DataType::kF32, {tokens, hidden});
  STAMEN_RETURN_IF_ERROR(slots.status());
  if (tokens == 0) return Status();
  {
    // The routing is a discrete choice that a bf16 product would flip for near ties, moving a
    // token's whole output; the router has only E columns, so it always multiplies in fp32.
    const cpu::MatrixPrecisionScope precision(cpu::MatrixPrecision::kFloat32);
    STAMEN_RETURN_IF_ERROR(ops::Gemm(input, weights.router_weight, Tensor(), logits));
  }

  // Each expert's tokens, in token order, with the probability each gives it.
  std::vector<std::vector<int32_t>> expert_tokens(experts);
  std::vector<std::vector<float>> expert_probabilities(experts);
  std::vector<int32_t> chosen;
  std::vector<float> probabilities;
  for (int64_t t = 0; t < tokens; ++t) {
    RouteToken(logits.data<float>() + t * experts, experts, settings.top_k, chosen, probabilities);
    for (size_t k = 0; k < chosen.size(); ++k) {
      expert_tokens[chosen[k]].push_back(static_cast<int32_t>(t));
      expert_probabilities[chosen[k]].push_back(probabilities[k]);
    }
  }

  float* out = output.data<float>();
  const float* bias = weights.output_bias.data<float>();
  for (int64_t t = 0; t < tokens; ++t) std::copy(bias, bias + hidden, out + t * hidden);
  for (int64_t e = 0; e < experts; ++e) {
    const auto count = static_cast<int64_t>(expert_tokens[e].size());
    if (count == 0) continue;
    Tensor ids = rows.Rows(0, count);
    std::copy(expert_tokens[e].begin(), expert_tokens[e].end(), ids.data<int32_t>());
    Tensor expert_input = gathered.Rows(0, count);
    Tensor expert_intermediate = intermediate.Rows(0, count);
    Tensor expert_rows = expert_output.Rows(0, count);
    STAMEN_RETURN_IF_ERROR(ops::Gather(input, ids, expert_input));
    STAMEN_RETURN_IF_ERROR(ops::Gemm(expert_input, weights.up_weight.Rows(e * width, (e + 1) * width), Tensor(),
                                     expert_intermediate, {.activation = settings.activation}));
    STAMEN_RETURN_IF_ERROR(ops::Gemm(expert_intermediate, weights.down_weight.Rows(e * hidden, (e + 1) * hidden),
                                     Tensor(), expert_rows));
    const float* values = expert_rows.data<float>();
    for (int64_t r = 0; r < count; ++r) {
      const float weight = expert_probabilities[e][r];
      float* target = out + int64_t{expert_tokens[e][r]} * hidden;
      const float* source = values + r * hidden;
      for (int64_t j = 0; j < hidden; ++j) target[j] += weight * source[j];
    }
  }
  return Status();
}

}  // namespace stamen::engine::layers
