// The names the commands, the gateway and the worker share for a model folder's options
// (model_folder/model_options.h): the model id from a folder, the pooling names users write, and the
// prompt lookup with its list of known names.
#include <gtest/gtest.h>

#include "model_folder/model_options.h"

namespace stamen::engine {
namespace {

TEST(ModelOptionsTest, ModelIdIsTheGivenIdElseTheFolderName) {
  EXPECT_EQ(ModelIdOf("/models/e5-small", "my-model"), "my-model");
  EXPECT_EQ(ModelIdOf("/models/e5-small", ""), "e5-small");
  EXPECT_EQ(ModelIdOf("/models/e5-small/", ""), "e5-small");
  EXPECT_EQ(ModelIdOf("models/./e5-small", ""), "e5-small");
}

TEST(ModelOptionsTest, PoolingNamesAsUsersWriteThem) {
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kCls), "cls");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kMean), "mean");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kMax), "max");
  EXPECT_EQ(PoolingOptionName(ops::PoolingMode::kLastToken), "last-token");
  for (const char* name : {"last-token", "last_token", "lasttoken"}) {
    EXPECT_EQ(ParsePoolingOption(name), ops::PoolingMode::kLastToken) << name;
  }
  for (const ops::PoolingMode mode :
       {ops::PoolingMode::kCls, ops::PoolingMode::kMean, ops::PoolingMode::kMax, ops::PoolingMode::kLastToken}) {
    EXPECT_EQ(ParsePoolingOption(PoolingOptionName(mode)), mode);
  }
  EXPECT_EQ(ParsePoolingOption("average"), std::nullopt);
  EXPECT_EQ(ParsePoolingOption(""), std::nullopt);
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
