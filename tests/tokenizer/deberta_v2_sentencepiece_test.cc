// DeBERTa-v3 folders with spm.model and no tokenizer.json (data/deberta-v3-spm, made by
// make_deberta_v3_spm.py): every case of expected.jsonl against transformers 4's
// DebertaV2TokenizerFast (exact) and its slow DebertaV2Tokenizer (exact but where it differs
// from the fast one), the same through microsoft/deberta-v3-base's minimal tokenizer_config.json,
// then the options refused by name.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(STAMEN_TOKENIZER_TEST_DATA_DIR) + "/deberta-v3-spm";

struct Case {
  std::string first, second;
  bool pair = false;
  size_t max_length = 0;
  std::vector<int32_t> fast, type_ids, slow;
};

std::vector<int32_t> Ints(simdjson::dom::element array) {
  std::vector<int32_t> values;
  for (simdjson::dom::element value : array.get_array()) values.push_back(static_cast<int32_t>(int64_t(value)));
  return values;
}

std::vector<Case> ReadCases() {
  std::ifstream file(kFixture + "/expected.jsonl");
  std::vector<Case> cases;
  simdjson::dom::parser parser;
  for (std::string line; std::getline(file, line);) {
    simdjson::dom::element entry;
    if (parser.parse(line).get(entry) != simdjson::SUCCESS) {
      ADD_FAILURE() << "not JSON: " << line;
      continue;
    }
    Case c;
    c.first = std::string(entry["first"].get_string().value());
    std::string_view second;
    if (entry["second"].get(second) == simdjson::SUCCESS) {
      c.second = std::string(second);
      c.pair = true;
      c.type_ids = Ints(entry["type_ids"]);
    }
    int64_t max_length = 0;
    if (entry["max_length"].get(max_length) == simdjson::SUCCESS) c.max_length = static_cast<size_t>(max_length);
    c.fast = Ints(entry["fast"]);
    simdjson::dom::element slow;
    c.slow = entry["slow"].get(slow) == simdjson::SUCCESS ? Ints(slow) : c.fast;
    cases.push_back(std::move(c));
  }
  return cases;
}

void Run(const Tokenizer& tokenizer, const Case& c, Encoding* encoding, Scratch* scratch) {
  EncodeOptions options;
  options.max_length = c.max_length;
  if (c.pair) {
    tokenizer.EncodePair(c.first, c.second, options, encoding, scratch);
  } else {
    tokenizer.Encode(c.first, options, encoding, scratch);
  }
}

// Counts the cases whose ids differ from transformers' fast and slow tokenizers.
struct Mismatches {
  size_t fast = 0, slow = 0, fast_versus_slow = 0;
};

Mismatches Compare(const Tokenizer& tokenizer, const std::vector<Case>& cases) {
  Mismatches mismatches;
  Encoding encoding;
  Scratch scratch;
  for (const Case& c : cases) {
    Run(tokenizer, c, &encoding, &scratch);
    const std::vector<int32_t> ids(encoding.ids.begin(), encoding.ids.end());
    if (ids != c.fast) {
      ++mismatches.fast;
      ADD_FAILURE() << "'" << c.first << "'" << (c.pair ? " / '" + c.second + "'" : std::string())
                    << " max_length " << c.max_length << ": differs from DebertaV2TokenizerFast";
    }
    if (c.pair) {
      const std::vector<int32_t> type_ids(encoding.type_ids.begin(), encoding.type_ids.end());
      EXPECT_EQ(type_ids, c.type_ids) << "'" << c.first << "' / '" << c.second << "'";
    }
    mismatches.slow += ids != c.slow;
    mismatches.fast_versus_slow += c.fast != c.slow;
  }
  return mismatches;
}

TEST(DebertaV2SentencePieceTest, MatchesTransformersOnEveryCase) {
  const std::vector<Case> cases = ReadCases();
  ASSERT_GE(cases.size(), 1400u);
  auto tokenizer = Tokenizer::Load(kFixture);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  const Mismatches mismatches = Compare(**tokenizer, cases);
  EXPECT_EQ(mismatches.fast, 0u);
  // Where the slow tokenizer differs from the fast one (whitespace beside a literal [UNK] or a
  // trailing zero-width character, its own longest_first cut), stamen gives the fast ids.
  EXPECT_EQ(mismatches.slow, mismatches.fast_versus_slow);
  EXPECT_LE(mismatches.fast_versus_slow, 20u);
  std::cout << cases.size() << " cases: " << mismatches.fast << " differ from DebertaV2TokenizerFast, "
            << mismatches.slow << " from DebertaV2Tokenizer (slow)\n";
}

TEST(DebertaV2SentencePieceTest, SpecialTokensVocabularyAndDecode) {
  auto loaded = Tokenizer::Load(kFixture + "/spm.model");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& tokenizer = **loaded;
  // [PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3 from spm.model, [MASK] after its 4,000 pieces.
  EXPECT_EQ(tokenizer.VocabularySize(), 4001u);
  EXPECT_EQ(tokenizer.PieceToId("[PAD]"), 0);
  EXPECT_EQ(tokenizer.PieceToId("[CLS]"), 1);
  EXPECT_EQ(tokenizer.PieceToId("[SEP]"), 2);
  EXPECT_EQ(tokenizer.PieceToId("[UNK]"), 3);
  EXPECT_EQ(tokenizer.PieceToId("[MASK]"), 4000);
  EXPECT_TRUE(tokenizer.IsSpecial(4000));
  EXPECT_EQ(tokenizer.SpecialTokenCount(false), 2u);
  EXPECT_EQ(tokenizer.SpecialTokenCount(true), 3u);
  Encoding encoding;
  Scratch scratch;
  tokenizer.Encode("Everyone has the right to life.", {}, &encoding, &scratch);
  EXPECT_EQ(tokenizer.Decode(encoding.ids, true), "Everyone has the right to life.");
  EXPECT_EQ(tokenizer.Decode(encoding.ids, false), "[CLS] Everyone has the right to life.[SEP]");
}

// A folder as microsoft/deberta-v3-base ships it: spm.model and {"do_lower_case": false,
// "vocab_type": "spm"}; `extra` replaces that tokenizer_config.json's content when given.
fs::path MinimalFolder(const std::string& name, const std::string& tokenizer_config) {
  const fs::path folder = fs::path(testing::TempDir()) / ("deberta_v2_spm_" + name);
  fs::remove_all(folder);
  fs::create_directories(folder);
  fs::copy_file(kFixture + "/spm.model", folder / "spm.model");
  std::ofstream(folder / "tokenizer_config.json") << tokenizer_config;
  return folder;
}

TEST(DebertaV2SentencePieceTest, MinimalHubFolderGivesTheSameIds) {
  const fs::path folder = MinimalFolder("minimal", R"({"do_lower_case": false, "vocab_type": "spm"})");
  auto tokenizer = Tokenizer::Load(folder.string());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_EQ((*tokenizer)->PieceToId("[MASK]"), 4000);
  EXPECT_EQ(Compare(**tokenizer, ReadCases()).fast, 0u);
  fs::remove_all(folder);
}

TEST(DebertaV2SentencePieceTest, RefusesWhatItDoesNotBuildByName) {
  for (const std::string option : {"do_lower_case", "split_by_punct"}) {
    const fs::path folder = MinimalFolder(option, "{\"" + option + "\": true}");
    auto tokenizer = Tokenizer::Load(folder.string());
    ASSERT_FALSE(tokenizer.ok()) << option;
    EXPECT_NE(tokenizer.status().message().find(option + " true is not supported"), std::string::npos)
        << tokenizer.status().message();
    fs::remove_all(folder);
  }
  const fs::path broken = MinimalFolder("broken", "{\"do_lower_case\": false");
  auto tokenizer = Tokenizer::Load(broken.string());
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.status().message().find("tokenizer_config.json: not valid JSON"), std::string::npos)
      << tokenizer.status().message();
  fs::remove_all(broken);
}

}  // namespace
}  // namespace stamen::tokenizer
