// A multi-vector (ColBERT) model's inputs (issue 44): MultiVectorInputs builds, from the texts,
// the ids and attended keys PyLate's ColBERT.tokenize built for tests/engine/data/tiny-colbert-*
// (tools/make_multi_vector_goldens.py): prefix tokens after [CLS], queries cut and padded with
// [MASK] to query_length, documents cut to document_length, and the skiplist's ids.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "gateway/multi_vector.h"
#include "model_folder/model_config.h"
#include "model_folder/model_tokenizer.h"

namespace stamen::gateway {
namespace {

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

class MultiVectorInputsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MultiVectorInputsTest, IdsEqualPyLateTokenize) {
  const std::string folder = kData + GetParam();
  simdjson::dom::parser parser;
  const simdjson::dom::element reference = parser.load(folder + "/reference.json");
  auto model = engine::ReadModelFolder(folder);
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_TRUE(model->sentence_transformers.multi_vector.enabled);
  auto tokenizer = engine::ModelTokenizer::Load(folder, model->config);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  auto inputs = MultiVectorInputs::Resolve(model->sentence_transformers.multi_vector, **tokenizer);
  ASSERT_TRUE(inputs.ok()) << inputs.status().message();

  std::vector<int32_t> skiplist;
  for (simdjson::dom::element id : reference["skiplist_ids"].get_array()) skiplist.push_back(static_cast<int32_t>(int64_t(id)));
  std::vector<int32_t> resolved = inputs->skiplist_ids();
  std::sort(resolved.begin(), resolved.end());
  EXPECT_EQ(resolved, skiplist);

  const bool unattended = !bool(reference["attend_to_expansion_tokens"]);
  for (const auto& [texts_key, ids_key, query] : {std::tuple{"queries", "query_ids", true},
                                                  std::tuple{"documents", "document_ids", false}}) {
    simdjson::dom::array texts = reference[texts_key].get_array();
    simdjson::dom::array expected_ids = reference[ids_key].get_array();
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<int32_t> ids, expected;
      const int32_t keys = inputs->Encode(**tokenizer, std::string_view(texts.at(i)), query, &ids);
      for (simdjson::dom::element id : expected_ids.at(i).get_array()) expected.push_back(static_cast<int32_t>(int64_t(id)));
      EXPECT_EQ(ids, expected) << GetParam() << ": " << texts_key << " " << i;
      const int32_t expected_keys =
          query && unattended ? static_cast<int32_t>(int64_t(reference["query_attended_keys"].at(i))) : 0;
      EXPECT_EQ(keys, expected_keys) << GetParam() << ": " << texts_key << " " << i;
      // Admission's bound before tokenizing: never above what Encode makes; an expanded query is
      // exactly its length.
      const int64_t least = inputs->LeastTokens(std::string_view(texts.at(i)), query);
      EXPECT_LE(least, static_cast<int64_t>(ids.size())) << GetParam() << ": " << texts_key << " " << i;
      EXPECT_GT(least, 0) << GetParam() << ": " << texts_key << " " << i;
      if (query && inputs->config().do_query_expansion) {
        EXPECT_EQ(least, static_cast<int64_t>(ids.size())) << GetParam() << ": query " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PyLate, MultiVectorInputsTest, ::testing::Values("tiny-colbert-bert", "tiny-colbert-modernbert", "tiny-colbert-stanford",
                                                  "tiny-colbert-jina"));

}  // namespace
}  // namespace stamen::gateway
