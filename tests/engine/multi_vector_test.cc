// Multi-vector (ColBERT) models (issue 44): PyLate folders made by
// tools/make_multi_vector_goldens.py, their settings as PyLate reads them, and the engine's token
// vectors for PyLate's own query and document ids against PyLate's encode (float64 reference) at
// cosine >= 0.9999 and absolute error <= 1e-4 per vector in fp32: queries with [MASK] expansion
// tokens unattended (tiny-colbert-bert) and attended (tiny-colbert-modernbert, whose local
// attention window is shorter than the query), documents with the skiplist's tokens dropped; and a
// colbertv2.0-style checkpoint (tiny-colbert-stanford: HF_ColBERT, "linear.weight" beside the
// "bert."-prefixed backbone, artifact.metadata), which PyLate reads through its Stanford branch; and
// a jina-colbert-v2-style one (tiny-colbert-jina: HF_ColBERT over jina's XLM-RoBERTa, the remote
// code's config and tensor names, run as ColBERTJinaRobertaModel).
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model_folder/model_config.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

using Ids = std::vector<std::vector<int32_t>>;
using Vectors = std::vector<std::vector<std::vector<float>>>;

Ids ReadIds(simdjson::dom::element rows) {
  Ids ids;
  for (simdjson::dom::element row : rows.get_array()) {
    std::vector<int32_t>& out = ids.emplace_back();
    for (simdjson::dom::element id : row.get_array()) out.push_back(static_cast<int32_t>(int64_t(id)));
  }
  return ids;
}

Vectors ReadVectors(simdjson::dom::element texts) {
  Vectors vectors;
  for (simdjson::dom::element text : texts.get_array()) {
    auto& rows = vectors.emplace_back();
    for (simdjson::dom::element row : text.get_array()) {
      auto& out = rows.emplace_back();
      for (simdjson::dom::element value : row.get_array()) out.push_back(static_cast<float>(double(value)));
    }
  }
  return vectors;
}

struct Agreement {
  double worst_error = 0;   // largest absolute difference of any component
  double lowest_cosine = 1;
};

// Runs `ids` as one batch (with `key_lengths` when not empty) and compares the kept rows of each
// sequence with PyLate's vectors.
Agreement CompareVectors(Engine& engine, const Ids& ids, const std::vector<int32_t>& key_lengths, const Ids& kept,
                         const Vectors& expected) {
  std::vector<int32_t> tokens, cu_seqlens = {0};
  for (const auto& sequence : ids) {
    tokens.insert(tokens.end(), sequence.begin(), sequence.end());
    cu_seqlens.push_back(static_cast<int32_t>(tokens.size()));
  }
  Agreement agreement;
  auto result = engine.Step({.token_ids = tokens, .cu_seqlens = cu_seqlens, .token_type_ids = {}, .key_lengths = key_lengths},
                            {.output = StepOutput::kTokenVectors});
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok() || !result->Wait().ok()) return {1e9, -1};
  for (size_t s = 0; s < ids.size(); ++s) {
    const Tensor rows = result->SequenceRows(static_cast<int64_t>(s));
    EXPECT_EQ(rows.dim(0), static_cast<int64_t>(ids[s].size()));
    EXPECT_EQ(kept[s].size(), expected[s].size());
    for (size_t k = 0; k < kept[s].size() && k < expected[s].size(); ++k) {
      const std::vector<float>& reference = expected[s][k];
      EXPECT_EQ(rows.dim(1), static_cast<int64_t>(reference.size()));
      const std::span<const float> row(rows.data<float>() + kept[s][k] * rows.dim(1), reference.size());
      for (size_t i = 0; i < reference.size(); ++i) {
        agreement.worst_error = std::max(agreement.worst_error, std::abs(double{row[i]} - reference[i]));
      }
      agreement.lowest_cosine = std::min(agreement.lowest_cosine, testing::Cosine(row, reference));
    }
  }
  return agreement;
}

class MultiVectorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MultiVectorTest, TokenVectorsEqualPyLate) {
  const std::string folder = kData + GetParam();
  simdjson::dom::parser parser;
  const simdjson::dom::element reference = parser.load(folder + "/reference.json");
  auto engine = Engine::Load(folder, {.num_threads = 1, .compute_dtype = DataType::kF32});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const MultiVectorConfig& settings = (*engine)->sentence_transformers().multi_vector;
  ASSERT_TRUE(settings.enabled);
  EXPECT_EQ(settings.query_length, int64_t(reference["query_length"]));
  EXPECT_EQ(settings.document_length, int64_t(reference["document_length"]));
  EXPECT_EQ(settings.attend_to_expansion_tokens, bool(reference["attend_to_expansion_tokens"]));
  // PyLate's "[Q] " (an added token), or a Stanford checkpoint's from artifact.metadata: colbertv2.0's
  // [unused0], jina-colbert-v2's [QueryMarker].
  const std::string prefix = GetParam() == "tiny-colbert-stanford" ? "[unused0]"
                             : GetParam() == "tiny-colbert-jina"   ? "[QueryMarker]"
                                                                   : "[Q] ";
  EXPECT_EQ(settings.query_prefix, prefix);
  EXPECT_EQ(settings.skiplist_words.size(), 32u);
  EXPECT_EQ((*engine)->embedding_width(), static_cast<int64_t>(ReadVectors(reference["query_vectors"])[0][0].size()));

  // Queries: every token kept; unattended expansion tokens by key lengths (PyLate's mask).
  const Ids query_ids = ReadIds(reference["query_ids"]);
  std::vector<int32_t> key_lengths;
  if (!settings.attend_to_expansion_tokens) {
    for (simdjson::dom::element keys : reference["query_attended_keys"].get_array()) {
      key_lengths.push_back(static_cast<int32_t>(int64_t(keys)));
    }
  }
  const Ids query_kept = ReadIds(reference["query_kept"]);
  const Vectors query_vectors = ReadVectors(reference["query_vectors"]);
  const Agreement queries = CompareVectors(**engine, query_ids, key_lengths, query_kept, query_vectors);
  EXPECT_LE(queries.worst_error, 1e-4) << GetParam() << " queries";
  EXPECT_GE(queries.lowest_cosine, 0.9999) << GetParam() << " queries";
  if (!key_lengths.empty()) {
    // The key lengths matter: with the expansion tokens attended the vectors are other ones.
    const Agreement attended = CompareVectors(**engine, query_ids, {}, query_kept, query_vectors);
    EXPECT_GT(attended.worst_error, 1e-2) << GetParam() << " queries with every token attended";
  }
  // Documents: all tokens attended, the skiplist's dropped afterwards.
  const Agreement documents = CompareVectors(**engine, ReadIds(reference["document_ids"]), {},
                                             ReadIds(reference["document_kept"]), ReadVectors(reference["document_vectors"]));
  EXPECT_LE(documents.worst_error, 1e-4) << GetParam() << " documents";
  EXPECT_GE(documents.lowest_cosine, 0.9999) << GetParam() << " documents";
  std::cout << GetParam() << ": queries max abs error " << queries.worst_error << ", lowest cosine "
            << queries.lowest_cosine << "; documents " << documents.worst_error << ", " << documents.lowest_cosine << "\n";
}

INSTANTIATE_TEST_SUITE_P(PyLate, MultiVectorTest, ::testing::Values("tiny-colbert-bert", "tiny-colbert-modernbert", "tiny-colbert-stanford",
                                                  "tiny-colbert-jina"));

TEST(MultiVectorConfigTest, TokenVectorsNeedAMultiVectorModelAndKeyLengthsFitTheirSequences) {
  auto colbert = Engine::Load(kData + "tiny-colbert-bert", {.num_threads = 1, .compute_dtype = DataType::kF32});
  ASSERT_TRUE(colbert.ok()) << colbert.status().message();
  const std::vector<int32_t> ids = {2, 128, 70, 3}, cu_seqlens = {0, 4};
  const std::vector<int32_t> too_long = {5}, zero = {0};
  auto step = (*colbert)->Step({.token_ids = ids, .cu_seqlens = cu_seqlens, .token_type_ids = {}, .key_lengths = too_long},
                               {.output = StepOutput::kTokenVectors});
  EXPECT_FALSE(step.ok());
  step = (*colbert)->Step({.token_ids = ids, .cu_seqlens = cu_seqlens, .token_type_ids = {}, .key_lengths = zero},
                          {.output = StepOutput::kTokenVectors});
  EXPECT_FALSE(step.ok());
  auto plain = Engine::Load(kData + "tiny-distilbert", {.num_threads = 1, .compute_dtype = DataType::kF32});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  step = (*plain)->Step({.token_ids = ids, .cu_seqlens = cu_seqlens, .token_type_ids = {}}, {.output = StepOutput::kTokenVectors});
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.status().message().find("multi-vector"), std::string::npos) << step.status().message();
}

}  // namespace
}  // namespace stamen::engine
