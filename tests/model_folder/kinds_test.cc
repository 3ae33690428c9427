// The kinds a model folder names (model_folder/kinds.h): pooling modes by the names the model
// files write (1_Pooling/config.json's "pooling_mode", sentence-transformers' spellings) and
// activations by transformers' ACT2FN names (config.json's hidden_act). Unknown names give no
// kind, so that each reader can refuse them by name.
#include "model_folder/kinds.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

namespace stamen::engine::ops {
namespace {

TEST(PoolingModeNamesTest, EveryModeHasItsOwnNameAndReadsBackFromIt) {
  std::set<std::string_view> names;
  for (const PoolingMode mode : kPoolingModes) {
    const std::string_view name = PoolingModeName(mode);
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(name).second) << "two modes are called " << name;
    EXPECT_EQ(PoolingModeFromName(name), mode) << name;
  }
  EXPECT_EQ(names.size(), 7u);
  EXPECT_EQ(PoolingModeName(PoolingMode::kLastToken), "last_token");
  EXPECT_EQ(PoolingModeName(PoolingMode::kMeanSqrtLen), "mean_sqrt_len_tokens");
  EXPECT_EQ(PoolingModeFromName("lasttoken"), PoolingMode::kLastToken);  // sentence-transformers' spelling
}

// The file spellings only: the command line's hyphens are ParsePoolingOption's (model_options).
TEST(PoolingModeNamesTest, ANameThatIsNoModeGivesNone) {
  for (const char* name : {"average", "", "CLS", "last-token", "mean-sqrt-len-tokens", "mean_tokens", "sum"}) {
    EXPECT_EQ(PoolingModeFromName(name), std::nullopt) << '"' << name << '"';
  }
}

// transformers' ACT2FN names: "gelu" is the exact erf form, "gelu_new", "gelu_fast" and
// "gelu_pytorch_tanh" the tanh approximation, "swish" is SiLU.
TEST(ActivationNamesTest, TransformersNamesMapToTheirFunctions) {
  EXPECT_EQ(ActivationFromName("gelu"), Activation::kGeluErf);
  EXPECT_EQ(ActivationFromName("gelu_pytorch_tanh"), Activation::kGeluTanh);
  EXPECT_EQ(ActivationFromName("gelu_new"), Activation::kGeluTanh);
  EXPECT_EQ(ActivationFromName("gelu_fast"), Activation::kGeluTanh);
  EXPECT_EQ(ActivationFromName("relu"), Activation::kRelu);
  EXPECT_EQ(ActivationFromName("silu"), Activation::kSilu);
  EXPECT_EQ(ActivationFromName("swish"), Activation::kSilu);
  EXPECT_EQ(ActivationFromName("tanh"), Activation::kTanh);
}

TEST(ActivationNamesTest, AnUnknownActivationGivesNone) {
  for (const char* name : {"softmax", "", "GELU", "gelu_erf", "quick_gelu", "swiglu"}) {
    EXPECT_EQ(ActivationFromName(name), std::nullopt) << '"' << name << '"';
  }
}

}  // namespace
}  // namespace stamen::engine::ops
