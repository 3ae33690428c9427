// The family tests' golden check (issue 48's targets in fp32): a tiny folder's golden.safetensors
// holds six inputs (input_ids_i) and the reference's last_hidden_state_i, mean_pooled_i and, for
// a reranker, logits_i; the engine must match each at cosine >= 0.9999 per vector (each token's,
// the mean's) and abs error <= 1e-4 (logits: abs error alone).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/weight_store.h"
#include "test_files.h"

namespace stamen::engine::testing {

// `folder_path`: the folder; `name`: how messages call it; `hidden`: the model's hidden size.
inline void ExpectMatchesGoldenTargets(const std::string& folder_path, const std::string& name, int64_t hidden) {
  auto engine = Engine::Load(folder_path, {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << name << ": " << engine.status().message();
  auto golden = WeightStore::OpenFile(folder_path + "/golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  double worst_cosine = 1.0, worst_error = 0.0;
  for (int i = 0; i < 6; ++i) {
    const std::string index = std::to_string(i);
    auto ids64 = golden->Load("input_ids_" + index, DataType::kI64);
    ASSERT_TRUE(ids64.ok());
    const std::vector<int32_t> ids(ids64->data<int64_t>(), ids64->data<int64_t>() + ids64->NumElements());
    const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
    struct Output {
      std::string name;
      StepOptions options;
      int64_t width;  // of one compared vector
    };
    std::vector<Output> outputs = {
        {"last_hidden_state", {.output = StepOutput::kTokenEmbeddings}, hidden},
        {"mean_pooled", {.pooling = ops::PoolingMode::kMean}, hidden}};
    if (golden->Contains("logits_0")) outputs.push_back({"logits", {.output = StepOutput::kScores}, 1});
    for (const Output& output : outputs) {
      auto result = (*engine)->Step({ids, bounds, {}}, output.options);
      ASSERT_TRUE(result.ok() && result->Wait().ok()) << name;
      auto expected = golden->Load(output.name + "_" + index);
      ASSERT_TRUE(expected.ok());
      ASSERT_EQ(expected->NumElements(), result->values().NumElements()) << name << " " << output.name;
      const float* actual = result->values().data<float>();
      const float* reference = expected->data<float>();
      for (int64_t j = 0; j < expected->NumElements(); ++j) {
        worst_error = std::max(worst_error, double{std::abs(actual[j] - reference[j])});
      }
      if (output.width == 1) continue;  // a single logit: its absolute error is the measure
      for (int64_t row = 0; row < expected->NumElements() / output.width; ++row) {
        const double cosine = Cosine({actual + row * output.width, static_cast<size_t>(output.width)},
                                     {reference + row * output.width, static_cast<size_t>(output.width)});
        worst_cosine = std::min(worst_cosine, cosine);
      }
    }
  }
  EXPECT_GE(worst_cosine, 0.9999) << name;
  EXPECT_LE(worst_error, 1e-4) << name;
  std::cout << "[ golden   ] " << name << ": worst cosine " << std::setprecision(10) << worst_cosine
            << ", max abs error " << std::setprecision(3) << worst_error
            << " (per token, mean" << (golden->Contains("logits_0") ? ", logits" : "") << ")\n";
}

}  // namespace stamen::engine::testing
