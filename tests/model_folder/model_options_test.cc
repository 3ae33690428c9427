// The names the commands, the gateway and the worker share for a model folder's options
// (model_folder/model_options.h): the model id from a folder, the pooling names users write
// (one table, kinds.h's kPoolingModes, spelled with hyphens), which pooling a model's head can
// give, and the prompt lookup with its list of known names.
#include "model_folder/model_options.h"

#include <gtest/gtest.h>

#include <string>

namespace stamen::engine {
namespace {

TEST(ModelOptionsTest, ModelIdIsTheGivenIdElseTheFolderName) {
  EXPECT_EQ(ModelIdOf("/models/e5-small", "my-model"), "my-model");
  EXPECT_EQ(ModelIdOf("models/e5-small", "intfloat/e5-small"), "intfloat/e5-small");
  EXPECT_EQ(ModelIdOf("/models/e5-small", ""), "e5-small");
  EXPECT_EQ(ModelIdOf("/models/e5-small/", ""), "e5-small");
  EXPECT_EQ(ModelIdOf("models/./e5-small", ""), "e5-small");
}

TEST(ModelOptionsTest, PoolingNamesAsUsersWriteThem) {
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kCls), "cls");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kMean), "mean");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kMax), "max");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kLastToken), "last-token");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kWeightedMean), "weightedmean");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kMeanSqrtLen), "mean-sqrt-len-tokens");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kSplade), "splade");
  // Help texts and errors list every mode of the table, in its order.
  EXPECT_EQ(PoolingOptionNames(), "cls, mean, max, last-token, weightedmean, mean-sqrt-len-tokens, splade");
}

// sentence-transformers' names in 1_Pooling/config.json ("lasttoken", "mean_sqrt_len_tokens")
// and the command line's ("last-token", "mean-sqrt-len-tokens") name the same modes.
TEST(ModelOptionsTest, EveryModeReadsBackFromEachOfItsSpellings) {
  for (const ops::PoolingMode mode : ops::kPoolingModes) {
    EXPECT_EQ(ParsePoolingOption(PoolingOptionName(mode)), mode) << PoolingOptionName(mode);
    EXPECT_EQ(ParsePoolingOption(ops::PoolingModeName(mode)), mode) << ops::PoolingModeName(mode);
  }
  for (const char* name : {"last-token", "last_token", "lasttoken"}) {
    EXPECT_EQ(ParsePoolingOption(name), ops::PoolingMode::kLastToken) << name;
  }
  EXPECT_EQ(ParsePoolingOption("mean_sqrt_len_tokens"), ops::PoolingMode::kMeanSqrtLen);
  EXPECT_EQ(ParsePoolingOption("weightedmean"), ops::PoolingMode::kWeightedMean);
}

TEST(ModelOptionsTest, APoolingNameThatDoesNotExistIsRefused) {
  for (const char* name : {"average", "", "MEAN", "Mean", " mean", "mean ", "last token", "lasttokens", "weighted-mean",
                           "mean-sqrt-len", "splade-max"}) {
    EXPECT_EQ(ParsePoolingOption(name), std::nullopt) << '"' << name << '"';
  }
}

TEST(ModelOptionsTest, SpladeNeedsAMaskedLanguageModelHead) {
  ModelConfig masked;
  masked.architecture = "BertForMaskedLM";
  masked.head = ModelHead::kMaskedLm;
  for (const ops::PoolingMode mode : ops::kPoolingModes) {
    EXPECT_TRUE(CheckPoolingFitsModel(masked, mode).ok()) << ops::PoolingModeName(mode);
  }
  for (const ModelHead head : {ModelHead::kNone, ModelHead::kSequenceClassification}) {
    ModelConfig plain;
    plain.architecture = "MPNetModel";
    plain.head = head;
    const Status refused = CheckPoolingFitsModel(plain, ops::PoolingMode::kSplade);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("MPNetModel has no masked-LM head"), std::string::npos) << refused.message();
    EXPECT_TRUE(CheckPoolingFitsModel(plain, ops::PoolingMode::kMean).ok());
  }
}

TEST(ModelOptionsTest, FindsPromptsAndListsTheirNames) {
  SentenceTransformersConfig config;
  EXPECT_EQ(FindPrompt(config, "query"), nullptr);
  EXPECT_EQ(PromptNames(config), "none");
  config.prompts = {{"query", "query: "}, {"passage", "passage: "}};
  ASSERT_NE(FindPrompt(config, "query"), nullptr);
  EXPECT_EQ(*FindPrompt(config, "query"), "query: ");
  EXPECT_EQ(FindPrompt(config, "document"), nullptr);
  EXPECT_EQ(PromptNames(config), "passage, query");  // the map's order
}

}  // namespace
}  // namespace stamen::engine
