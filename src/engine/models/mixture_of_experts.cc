// The mixture-of-experts feed-forward (mixture_of_experts.h): the router's logits on the device,
// the routing on the host, then the experts' gemms over their gathered rows and one weighted sum.
#include "engine/models/mixture_of_experts.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine/ops/embedding.h"
#include "engine/ops/experts.h"
#include "engine/ops/gemm.h"

namespace stamen::engine::layers {

void VisitMixtureOfExperts(TensorVisitor& visit, MixtureOfExpertsWeights& weights, const std::string& base,
                           const MixtureOfExpertsSettings& settings, int64_t hidden_size) {
  const int64_t experts = settings.num_experts;
  const int64_t width = settings.intermediate_size;
  visit.Tensor(weights.router_weight,
               {.name = base + "router.layer.weight", .shape = {experts, hidden_size}, .keep_float32 = true});
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

namespace {

// The routing of every token, laid out for the device: the tokens to gather, grouped by expert
// (each expert's run in token order), where each token's k-th choice landed in that order, and
// the probability it was given.
struct Routing {
  std::vector<int32_t> gathered_tokens;  // [T · K]
  std::vector<int64_t> expert_begin;     // [E + 1]: expert e's rows are [begin[e], begin[e + 1])
  std::vector<int32_t> positions;        // [T, K]: rows of gathered_tokens
  std::vector<float> probabilities;      // [T, K]
};

Routing Route(const std::vector<float>& logits, int64_t tokens, int64_t experts, int64_t top_k) {
  Routing routing;
  std::vector<int32_t> chosen_experts(tokens * top_k);
  routing.probabilities.resize(tokens * top_k);
  std::vector<int32_t> chosen;
  std::vector<float> probabilities;
  std::vector<int64_t> counts(experts, 0);
  for (int64_t t = 0; t < tokens; ++t) {
    RouteToken(logits.data() + t * experts, experts, top_k, chosen, probabilities);
    for (int64_t k = 0; k < top_k; ++k) {
      chosen_experts[t * top_k + k] = chosen[k];
      routing.probabilities[t * top_k + k] = probabilities[k];
      ++counts[chosen[k]];
    }
  }
  routing.expert_begin.assign(experts + 1, 0);
  for (int64_t e = 0; e < experts; ++e) routing.expert_begin[e + 1] = routing.expert_begin[e] + counts[e];
  std::vector<int64_t> next(routing.expert_begin.begin(), routing.expert_begin.end() - 1);
  routing.gathered_tokens.resize(tokens * top_k);
  routing.positions.resize(tokens * top_k);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t k = 0; k < top_k; ++k) {
      const int64_t row = next[chosen_experts[t * top_k + k]]++;
      routing.gathered_tokens[row] = static_cast<int32_t>(t);
      routing.positions[t * top_k + k] = static_cast<int32_t>(row);
    }
  }
  return routing;
}

// Copies `values` into `target` (same element count), across devices.
template <typename T>
Status CopyFromHost(std::vector<T>& values, DataType type, Tensor& target) {
  const Tensor source = Tensor::Wrap(values.data(), type, {static_cast<int64_t>(values.size())});
  return CopyTensor(source, target);
}

}  // namespace

Status MixtureOfExperts(const MixtureOfExpertsWeights& weights, const MixtureOfExpertsSettings& settings,
                        const Tensor& input, Slots slots, Tensor& output) {
  const int64_t tokens = input.dim(0);
  const int64_t hidden = input.dim(1);
  const int64_t experts = settings.num_experts;
  const int64_t width = settings.intermediate_size;
  const int64_t top_k = settings.top_k;
  const DataType type = input.dtype();
  Tensor logits = slots.Get(DataType::kF32, {tokens, experts});
  Tensor gathered_tokens = slots.Get(DataType::kI32, {tokens * top_k});
  Tensor positions = slots.Get(DataType::kI32, {tokens, top_k});
  Tensor probabilities = slots.Get(DataType::kF32, {tokens, top_k});
  Tensor gathered = slots.Get(type, {tokens * top_k, hidden});
  // One expert's rows at a time: at most every token (a token picks an expert once).
  Tensor intermediate = slots.Get(type, {tokens, width});
  Tensor expert_rows = slots.Get(type, {tokens * top_k, hidden});
  STAMEN_RETURN_IF_ERROR(slots.status());
  if (tokens == 0) return Status();
  STAMEN_RETURN_IF_ERROR(ops::ExpertLogits(input, weights.router_weight, logits));
  std::vector<float> host_logits(tokens * experts);
  Tensor host_view = Tensor::Wrap(host_logits.data(), DataType::kF32, {tokens, experts});
  STAMEN_RETURN_IF_ERROR(CopyTensor(logits, host_view));  // on a device: waits for the logits

  Routing routing = Route(host_logits, tokens, experts, top_k);
  STAMEN_RETURN_IF_ERROR(CopyFromHost(routing.gathered_tokens, DataType::kI32, gathered_tokens));
  STAMEN_RETURN_IF_ERROR(CopyFromHost(routing.positions, DataType::kI32, positions));
  STAMEN_RETURN_IF_ERROR(CopyFromHost(routing.probabilities, DataType::kF32, probabilities));
  STAMEN_RETURN_IF_ERROR(ops::Gather(input, gathered_tokens, gathered));
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t begin = routing.expert_begin[e], end = routing.expert_begin[e + 1];
    if (begin == end) continue;
    Tensor expert_intermediate = intermediate.Rows(0, end - begin);
    Tensor expert_output = expert_rows.Rows(begin, end);
    STAMEN_RETURN_IF_ERROR(ops::Gemm(gathered.Rows(begin, end), weights.up_weight.Rows(e * width, (e + 1) * width),
                                     Tensor(), expert_intermediate, {.activation = settings.activation}));
    STAMEN_RETURN_IF_ERROR(ops::Gemm(expert_intermediate, weights.down_weight.Rows(e * hidden, (e + 1) * hidden),
                                     Tensor(), expert_output));
  }
  return ops::CombineExperts(expert_rows, positions, probabilities, weights.output_bias, output);
}

}  // namespace stamen::engine::layers
