// Checks that a `.model` encodes exactly like SentencePiece's C++ Encode (same process, same
// input bytes) on the whole udhr corpus, SentencePiece's test novels and generated edge cases
// (a sample of the corpora under STAMEN_EXACTNESS_SAMPLE, see test_corpus.h).
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "edge_cases.h"
#include "test_corpus.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {
namespace {

using testing::EdgeCase;
using testing::Escape;
using testing::SharedPath;


std::string Join(const std::vector<int>& ids, size_t limit = 60) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < limit; ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  if (ids.size() > limit) out += " ... (" + std::to_string(ids.size()) + " ids)";
  return out;
}

// Our tokenizer and SentencePiece loaded from the same file, compared text by text. Counts
// texts and mismatches, and reports the first few mismatches in full.
class Comparator {
 public:
  explicit Comparator(const std::string& model_path) {
    auto loaded = Tokenizer::Load(model_path);
    if (!loaded.ok()) {
      ADD_FAILURE() << "stamen cannot load " << model_path << ": " << loaded.status().message();
      return;
    }
    ours_ = std::move(loaded.value());
    const auto status = reference_.Load(model_path);
    if (!status.ok()) {
      ADD_FAILURE() << "SentencePiece cannot load " << model_path << ": " << status.ToString();
      ours_.reset();
    }
  }

  bool ok() const { return ours_ != nullptr; }

  // Returns whether the ids agree; `where` names the text in failure messages.
  bool Check(std::string_view text, const std::string& where) {
    ++checked_;
    std::vector<int> expected;
    const auto status = reference_.Encode(text, &expected);
    if (!status.ok()) {
      ADD_FAILURE() << where << ": SentencePiece failed: " << status.ToString();
      return false;
    }
    ours_->Encode(text, options_, &encoding_, &scratch_);
    last_token_count_ = expected.size();
    if (std::equal(expected.begin(), expected.end(), encoding_.ids.begin(), encoding_.ids.end())) return true;
    if (++mismatches_ <= kReportedMismatches) {
      const std::vector<int> got(encoding_.ids.begin(), encoding_.ids.end());
      ADD_FAILURE() << where << ": ids differ from SentencePiece\n  input:    \"" << Escape(text)
                    << "\"\n  expected: " << Join(expected) << "\n  got:      " << Join(got);
    }
    return false;
  }

  size_t checked() const { return checked_; }
  size_t mismatches() const { return mismatches_; }
  size_t last_token_count() const { return last_token_count_; }

 private:
  static constexpr size_t kReportedMismatches = 10;
  std::unique_ptr<Tokenizer> ours_;
  sentencepiece::SentencePieceProcessor reference_;
  EncodeOptions options_;  // defaults: SentencePiece's Encode adds no BOS/EOS
  Encoding encoding_;
  Scratch scratch_;
  size_t checked_ = 0;
  size_t mismatches_ = 0;
  size_t last_token_count_ = 0;
};

struct ModelCase {
  const char* name;  // the test-name suffix
  const char* path;  // inside the shared folder
};

// Names the model in GoogleTest's messages instead of dumping the struct's bytes.
void PrintTo(const ModelCase& model, std::ostream* stream) { *stream << model.path; }

class SentencePieceExactnessTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  std::string ModelPath() const { return SharedPath(GetParam().path); }
  const char* ModelName() const { return GetParam().name; }
};

TEST_P(SentencePieceExactnessTest, UdhrCorpusMatches) {
  Comparator comparator(ModelPath());
  ASSERT_TRUE(comparator.ok());
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  ASSERT_GT(udhr.size(), 40000u) << "udhr.tsv looks incomplete";
  // Per-language counts, so a failure shows which scripts are affected.
  std::map<std::string, std::pair<size_t, size_t>> per_language;  // lines, mismatches
  for (const size_t i : testing::UdhrIndices(udhr)) {
    auto& [lines, mismatches] = per_language[udhr[i].language];
    ++lines;
    if (!comparator.Check(udhr[i].text, "udhr.tsv line " + std::to_string(i + 1) + " (" + udhr[i].language + ")")) {
      ++mismatches;
    }
  }
  size_t fewest = SIZE_MAX, most = 0;
  std::string languages_with_mismatches;
  for (const auto& [language, counts] : per_language) {
    fewest = std::min(fewest, counts.first);
    most = std::max(most, counts.first);
    if (counts.second > 0) languages_with_mismatches += " " + language + ":" + std::to_string(counts.second);
  }
  std::printf("[ exactness ] %s: udhr.tsv %zu lines checked in %zu languages (%zu-%zu lines each), %zu mismatches%s\n",
              ModelName(), comparator.checked(), per_language.size(), fewest, most, comparator.mismatches(),
              testing::SampleNote().c_str());
  EXPECT_GT(comparator.checked(), 0u);
  EXPECT_EQ(comparator.mismatches(), 0u) << "languages with mismatches:" << languages_with_mismatches;
}

TEST_P(SentencePieceExactnessTest, NovelsMatch) {
  Comparator comparator(ModelPath());
  ASSERT_TRUE(comparator.ok());
  for (const char* corpus : {"corpus/botchan.txt", "corpus/wagahaiwa_nekodearu.txt"}) {
    const std::vector<std::string> lines = testing::SplitLines(testing::ReadFileOrFail(SharedPath(corpus)));
    ASSERT_GT(lines.size(), 1000u) << corpus << " looks incomplete";
    const size_t before = comparator.checked();
    for (const size_t i : testing::LineIndices(lines.size())) {
      comparator.Check(lines[i], std::string(corpus) + " line " + std::to_string(i + 1));
    }
    std::printf("[ exactness ] %s: %s %zu lines checked%s\n", ModelName(), corpus, comparator.checked() - before,
                testing::SampleNote().c_str());
    EXPECT_GT(comparator.checked(), before) << corpus;
  }
  // Whole files as single texts: long inputs with '\r\n' inside.
  for (const char* corpus : {"corpus/botchan.txt", "corpus/wagahaiwa_nekodearu.txt"}) {
    comparator.Check(testing::ReadFileOrFail(SharedPath(corpus)), std::string(corpus) + " as one text");
  }
  EXPECT_EQ(comparator.mismatches(), 0u);
}

TEST_P(SentencePieceExactnessTest, EdgeCasesMatch) {
  Comparator comparator(ModelPath());
  ASSERT_TRUE(comparator.ok());
  const std::vector<EdgeCase> cases = testing::EdgeCases(testing::ReadUdhr());
  for (const EdgeCase& edge_case : cases) {
    comparator.Check(edge_case.text, "edge case \"" + edge_case.name + "\"");
    if (edge_case.name.starts_with("long multilingual")) {
      std::printf("[ exactness ] %s: edge case \"%s\": %zu bytes, %zu tokens\n", ModelName(), edge_case.name.c_str(),
                  edge_case.text.size(), comparator.last_token_count());
    }
  }
  // Every edge case again inside ordinary text, where it meets neighbouring pieces.
  for (const EdgeCase& edge_case : cases) {
    comparator.Check("Hello " + edge_case.text + " world", "edge case \"" + edge_case.name + "\" inside text");
  }
  std::printf("[ exactness ] %s: %zu edge cases checked, alone and inside text (%zu texts)\n", ModelName(),
              cases.size(), comparator.checked());
  EXPECT_EQ(comparator.mismatches(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Models, SentencePieceExactnessTest,
    ::testing::Values(ModelCase{"test_model", "models/spm-test/test_model.model"},
                      ModelCase{"test_ja_model", "models/spm-test/test_ja_model.model"},
                      ModelCase{"xlmr_trimmed_32k", "models/xlmr-trimmed-32k/sentencepiece.bpe.model"},
                      ModelCase{"synthetic_unigram_250k", "models/synthetic-unigram-250k/sentencepiece.bpe.model"}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace stamen::tokenizer
