// The mixture-of-experts feed-forward (engine/models/mixture_of_experts.h) against a scalar
// reference in double that runs every expert on every token and weights each by a dense routing
// row (zero off the top k): another formulation of nomic's NomicExperts, so grouping tokens by
// expert, gathering and adding back must give the same rows. The golden folder
// tiny-nomic-bert-moe-hub checks the whole model against nomic's code (rotary_encoders_test).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/models/mixture_of_experts.h"

namespace stamen::engine {
namespace {

Tensor Random(std::mt19937& generator, const Shape& shape, float scale) {
  Tensor tensor = *Tensor::Allocate(DataType::kF32, shape);
  std::normal_distribution<float> normal(0.0f, scale);
  for (int64_t i = 0; i < tensor.NumElements(); ++i) tensor.data<float>()[i] = normal(generator);
  return tensor;
}

double Gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(MixtureOfExpertsTest, RouteTokenKeepsSoftmaxProbabilitiesOfTheTopK) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  std::vector<int32_t> experts;
  std::vector<float> probabilities;
  layers::RouteToken(logits, 5, 3, experts, probabilities);
  ASSERT_EQ(experts, (std::vector<int32_t>{1, 3, 4}));  // the tie at 2.0: the lower index first
  double sum = 0.0;
  for (const float logit : logits) sum += std::exp(double{logit});
  // Probabilities over all five experts, not renormalised over the three kept.
  EXPECT_NEAR(probabilities[0], std::exp(2.0) / sum, 1e-6);
  EXPECT_NEAR(probabilities[1], std::exp(2.0) / sum, 1e-6);
  EXPECT_NEAR(probabilities[2], std::exp(1.0) / sum, 1e-6);
  EXPECT_LT(probabilities[0] + probabilities[1] + probabilities[2], 0.95f);
}

TEST(MixtureOfExpertsTest, MatchesEveryExpertOnEveryTokenWeightedDensely) {
  constexpr int64_t kTokens = 37, kHidden = 24, kWidth = 40, kExperts = 6;
  for (const int64_t top_k : {int64_t{1}, int64_t{2}, kExperts}) {
    std::mt19937 generator(11 + top_k);
    layers::MixtureOfExpertsWeights weights{.router_weight = Random(generator, {kExperts, kHidden}, 1.0f),
                                            .up_weight = Random(generator, {kExperts * kWidth, kHidden}, 0.3f),
                                            .down_weight = Random(generator, {kExperts * kHidden, kWidth}, 0.3f),
                                            .output_bias = Random(generator, {kHidden}, 0.5f)};
    const layers::MixtureOfExpertsSettings settings{.activation = ops::Activation::kGeluErf,
                                                    .num_experts = kExperts,
                                                    .top_k = top_k,
                                                    .intermediate_size = kWidth};
    const Tensor input = Random(generator, {kTokens, kHidden}, 1.0f);
    Tensor output = *Tensor::Allocate(DataType::kF32, {kTokens, kHidden});
    Workspace workspace;
    const Status status = layers::MixtureOfExperts(weights, settings, input, layers::Slots(workspace), output);
    ASSERT_TRUE(status.ok()) << status.message();

    const float* x = input.data<float>();
    const float* router = weights.router_weight.data<float>();
    const float* up = weights.up_weight.data<float>();
    const float* down = weights.down_weight.data<float>();
    std::vector<int> used(kExperts, 0);
    for (int64_t t = 0; t < kTokens; ++t) {
      // Dense routing: softmax over all experts, zero but for the top k (no ties in random logits).
      std::vector<double> probability(kExperts);
      double sum = 0.0;
      for (int64_t e = 0; e < kExperts; ++e) {
        double logit = 0.0;
        for (int64_t j = 0; j < kHidden; ++j) logit += double{x[t * kHidden + j]} * router[e * kHidden + j];
        probability[e] = std::exp(logit);
        sum += probability[e];
      }
      std::vector<double> dense(kExperts, 0.0);
      for (int64_t e = 0; e < kExperts; ++e) {
        int64_t higher = 0;
        for (int64_t other = 0; other < kExperts; ++other) higher += probability[other] > probability[e];
        if (higher < top_k) {
          dense[e] = probability[e] / sum;
          ++used[e];
        }
      }
      for (int64_t j = 0; j < kHidden; ++j) {
        double expected = weights.output_bias.data<float>()[j];
        for (int64_t e = 0; e < kExperts; ++e) {
          double value = 0.0;
          for (int64_t f = 0; f < kWidth; ++f) {
            double projected = 0.0;
            for (int64_t i = 0; i < kHidden; ++i) {
              projected += double{x[t * kHidden + i]} * up[(e * kWidth + f) * kHidden + i];
            }
            value += Gelu(projected) * down[(e * kHidden + j) * kWidth + f];
          }
          expected += dense[e] * value;
        }
        EXPECT_NEAR(output.data<float>()[t * kHidden + j], expected, 1e-4) << "top " << top_k << " token " << t;
      }
    }
    for (int64_t e = 0; e < kExperts; ++e) EXPECT_GT(used[e], 0) << "expert " << e << " never chosen (top " << top_k << ")";
  }
}

}  // namespace
}  // namespace stamen::engine
