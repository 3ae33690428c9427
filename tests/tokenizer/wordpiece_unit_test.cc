// Unit tests of the WordPiece tokenizer: the greedy longest-match-first model on a small
// vocabulary, the BertNormalizer and BertPreTokenizer corner cases, loading (tokenizer.json,
// vocab.txt, errors), decoding, and allocation-free steady-state encoding.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/allocation_counter.h"
#include "tokenizer/bert_normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/wordpiece_tokenizer.h"

#ifndef STAMEN_SHARED_DIR
#error "STAMEN_SHARED_DIR must name the shared models and corpora folder"
#endif

namespace stamen::tokenizer {
namespace {

namespace fs = std::filesystem;

const std::string kMiniLm = std::string(STAMEN_SHARED_DIR) + "/models/configs/all-MiniLM-L6-v2";

// [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4, then the pieces.
constexpr std::string_view kVocabulary =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nba\n##na\nnana\n##n\nhello\n,\n!\nworld\nun\n##aff\n##able\n"
    "e\n##e\ncafe\n##s\nhe\n##llo\n";

std::unique_ptr<Tokenizer> SmallTokenizer(std::string_view tokenizer_config = "") {
  auto loaded = LoadWordPieceVocabulary(kVocabulary, tokenizer_config);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return loaded.ok() ? std::move(loaded.value()) : nullptr;
}

std::vector<int32_t> Ids(const Tokenizer& tokenizer, std::string_view text, bool add_special_tokens = false) {
  EncodeOptions options;
  options.add_special_tokens = add_special_tokens;
  Encoding encoding;
  Scratch scratch;
  tokenizer.Encode(text, options, &encoding, &scratch);
  return encoding.ids;
}

std::string Normalized(BertNormalizerOptions options, std::string_view text) {
  std::string out;
  BertNormalizer(options).Normalize(text, 0, static_cast<uint32_t>(text.size()), &out, nullptr);
  return out;
}

TEST(WordPieceTest, GreedyLongestMatchFirst) {
  const auto tokenizer = SmallTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(Ids(*tokenizer, "banana"), (std::vector<int32_t>{5, 6, 6}));
  EXPECT_EQ(Ids(*tokenizer, "nanana"), (std::vector<int32_t>{7, 6}));  // longest first, no backtracking
  EXPECT_EQ(Ids(*tokenizer, "unaffable"), (std::vector<int32_t>{13, 14, 15}));
  EXPECT_EQ(Ids(*tokenizer, "hello"), (std::vector<int32_t>{9}));     // the whole word beats he ##llo
  EXPECT_EQ(Ids(*tokenizer, "banax"), (std::vector<int32_t>{1}));     // one unmatched part: the word is [UNK]
  EXPECT_EQ(Ids(*tokenizer, "hello, banax world!"), (std::vector<int32_t>{9, 10, 1, 12, 11}));
  EXPECT_EQ(Ids(*tokenizer, "HELLO", true), (std::vector<int32_t>{2, 9, 3}));
  EXPECT_TRUE(Ids(*tokenizer, "").empty());
  EXPECT_EQ(Ids(*tokenizer, "", true), (std::vector<int32_t>{2, 3}));
}

TEST(WordPieceTest, LongWordsAreUnknown) {
  const auto tokenizer = SmallTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  std::string word = "e";
  while (word.size() < 100) word += "e";
  EXPECT_EQ(Ids(*tokenizer, word).size(), 100u);          // 100 characters: e ##e ##e …
  EXPECT_EQ(Ids(*tokenizer, word + "e"), (std::vector<int32_t>{1}));  // 101: [UNK]
  // Characters are counted after normalization: 101 "é" become 101 "e".
  std::string accented;
  for (int i = 0; i < 101; ++i) accented += "\xC3\xA9";
  EXPECT_EQ(Ids(*tokenizer, accented), (std::vector<int32_t>{1}));
}

TEST(WordPieceTest, SpecialTokensAreSplitOutVerbatim) {
  const auto tokenizer = SmallTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(Ids(*tokenizer, "hello[MASK]world [SEP]"), (std::vector<int32_t>{9, 4, 12, 3}));
  // Lowercased text does not match them: "[mask]" is punctuation and a word.
  EXPECT_EQ(Ids(*tokenizer, "[mask]"), (std::vector<int32_t>{1, 1, 1}));
  EXPECT_TRUE(tokenizer->IsSpecial(4));
  EXPECT_FALSE(tokenizer->IsSpecial(9));
  EXPECT_EQ(tokenizer->PieceToId("##na"), 6);
  EXPECT_EQ(tokenizer->IdToPiece(6), "##na");
  EXPECT_EQ(tokenizer->PieceToId("absent"), -1);
  EXPECT_EQ(tokenizer->IdToPiece(1000), "");
}

TEST(WordPieceTest, PiecesAndOffsetsAreBytesOfTheInput) {
  const auto tokenizer = SmallTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  EncodeOptions options;
  options.with_pieces = true;
  Encoding encoding;
  Scratch scratch;
  tokenizer->Encode("Caf\xC3\xA9s \xC2\xA0" "banana", options, &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{2, 18, 19, 5, 6, 6, 3}));
  EXPECT_EQ(encoding.pieces, (std::vector<std::string>{"[CLS]", "cafe", "##s", "ba", "##na", "##na", "[SEP]"}));
  EXPECT_EQ(encoding.offsets, (std::vector<std::pair<uint32_t, uint32_t>>{
                                  {0, 0}, {0, 5}, {5, 6}, {9, 11}, {11, 13}, {13, 15}, {0, 0}}));
  // Invalid bytes become U+FFFD, which clean_text drops; offsets still index the input.
  tokenizer->Encode("\xFF" "ba\xFEna", options, &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{2, 5, 6, 3}));
  EXPECT_EQ(encoding.offsets, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 0}, {1, 3}, {4, 6}, {0, 0}}));
}

TEST(WordPieceTest, PairsUseTypeIds) {
  const auto tokenizer = SmallTokenizer();
  ASSERT_NE(tokenizer, nullptr);
  Encoding encoding;
  Scratch scratch;
  tokenizer->EncodePair("hello", "banana", EncodeOptions(), &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{2, 9, 3, 5, 6, 6, 3}));
  EXPECT_EQ(encoding.type_ids, (std::vector<uint8_t>{0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(tokenizer->SpecialTokenCount(false), 2u);
  EXPECT_EQ(tokenizer->SpecialTokenCount(true), 3u);
}

TEST(WordPieceTest, TokenizerConfigSettings) {
  // Cased: no lowercasing and (strip_accents null follows it) no accent stripping.
  const auto cased = SmallTokenizer(R"({"do_lower_case": false})");
  ASSERT_NE(cased, nullptr);
  EXPECT_EQ(Ids(*cased, "Hello"), (std::vector<int32_t>{1}));
  EXPECT_EQ(Ids(*cased, "hello"), (std::vector<int32_t>{9}));
  // Other special-token names, as AddedToken objects.
  const auto renamed = SmallTokenizer(R"({"cls_token": {"content": "[SEP]"}, "sep_token": "[CLS]"})");
  ASSERT_NE(renamed, nullptr);
  EXPECT_EQ(Ids(*renamed, "hello", true), (std::vector<int32_t>{3, 9, 2}));
}

TEST(BertNormalizerTest, Steps) {
  const BertNormalizerOptions all;
  EXPECT_EQ(Normalized(all, "H\xC3\xA9llo\tW\xC3\xB6rld\r\n"), "hello world  ");
  EXPECT_EQ(Normalized(all, "a\x01" "b\xC2\xAD" "c\xEF\xBF\xBD" "d"), "abcd");     // control, Cf, U+FFFD dropped
  EXPECT_EQ(Normalized(all, "\xCD\xB8"), "\xCD\xB8");                                // unassigned stays
  EXPECT_EQ(Normalized(all, "\xE4\xB8\xAD\xE6\x96\x87"), " \xE4\xB8\xAD  \xE6\x96\x87 ");  // 中文
  EXPECT_EQ(Normalized(all, "\xEA\xB0\x80"), "\xE1\x84\x80\xE1\x85\xA1");            // 가 → ᄀ ᅡ
  EXPECT_EQ(Normalized(all, "\xC4\xB0"), "i");                                       // İ: NFD, then lowercase
  BertNormalizerOptions lowercase_only = all;
  lowercase_only.strip_accents = false;
  EXPECT_EQ(Normalized(lowercase_only, "\xC4\xB0"), "i\xCC\x87");                    // to_lowercase("İ") = "i̇"
  EXPECT_EQ(Normalized(lowercase_only, "\xC3\x89"), "\xC3\xA9");
  // U+1D16D (class 226) before U+1D165 (class 216) survive strip_accents and are reordered.
  EXPECT_EQ(Normalized(all, "a\xF0\x9D\x85\xAD\xF0\x9D\x85\xA5"), "a\xF0\x9D\x85\xA5\xF0\x9D\x85\xAD");
  // A dropped mark of class 0 ends the run: no reordering across U+0941 (Mn, class 0).
  EXPECT_EQ(Normalized(all, "a\xF0\x9D\x85\xAD\xE0\xA5\x81\xF0\x9D\x85\xA5"), "a\xF0\x9D\x85\xAD\xF0\x9D\x85\xA5");
  const BertNormalizerOptions none{false, false, false, false};
  EXPECT_EQ(Normalized(none, "A\x01\xC3\x89\xE4\xB8\xAD"), "A\x01\xC3\x89\xE4\xB8\xAD");
}

TEST(BertNormalizerTest, PreTokenizerClasses) {
  EXPECT_TRUE(IsBertPunctuation('$'));
  EXPECT_TRUE(IsBertPunctuation('`'));
  EXPECT_TRUE(IsBertPunctuation(0x3002));    // 。
  EXPECT_FALSE(IsBertPunctuation(0x2E43));   // newer than tokenizers' tables
  EXPECT_TRUE(IsBertWhitespace(0x3000));
  EXPECT_FALSE(IsBertWhitespace(0x200B));
  std::vector<Word> words;
  const std::string text = "a,b  c!!\xE3\x80\x82" "d";
  BertPreTokenize(text, 0, static_cast<uint32_t>(text.size()), &words);
  std::vector<std::string> pieces;
  for (const Word& word : words) pieces.push_back(text.substr(word.begin, word.end - word.begin));
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", ",", "b", "c", "!", "!", "\xE3\x80\x82", "d"}));
}

TEST(WordPieceLoadTest, TokenizerJsonAndVocabTxt) {
  auto json = Tokenizer::Load(kMiniLm + "/tokenizer.json");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ((*json)->GetStats().format, "huggingface");
  EXPECT_EQ((*json)->VocabularySize(), 30522u);
  auto vocabulary = Tokenizer::Load(kMiniLm + "/vocab.txt");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status().message();
  EXPECT_EQ((*vocabulary)->GetStats().format, "vocab.txt");
  const std::string text = "Hello, World! Ça va? [MASK] tokenization 日本";
  EXPECT_EQ(Ids(**json, text, true), Ids(**vocabulary, text, true));
  EXPECT_EQ(Ids(**json, text, true),
            (std::vector<int32_t>{101, 7592, 1010, 2088, 999, 6187, 12436, 1029, 103, 19204, 3989, 1864, 1876, 102}));
}

TEST(WordPieceLoadTest, Decode) {
  auto loaded = Tokenizer::Load(kMiniLm + "/tokenizer.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& tokenizer = **loaded;
  const std::vector<int32_t> ids = Ids(tokenizer, "Hello, world! I don't tokenization [MASK] xyzq", true);
  EXPECT_EQ(tokenizer.Decode(ids, true), "hello, world! i don ' t tokenization xyzq");
  EXPECT_EQ(tokenizer.Decode(ids, false), "[CLS] hello, world! i don ' t tokenization [MASK] xyzq [SEP]");
}

TEST(WordPieceLoadTest, ErrorsNameTheProblem) {
  auto missing_unknown = LoadWordPieceVocabulary("a\nb\n", R"({"unk_token": "<unk>"})");
  ASSERT_FALSE(missing_unknown.ok());
  EXPECT_NE(missing_unknown.status().message().find("<unk>"), std::string::npos) << missing_unknown.status().message();
  const std::string json =
      R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}}, "normalizer": {"type": "NFKC"}})";
  auto unsupported = Tokenizer::LoadFromBytes(json, true);
  ASSERT_FALSE(unsupported.ok());
  EXPECT_NE(unsupported.status().message().find("NFKC"), std::string::npos) << unsupported.status().message();
  auto sparse = Tokenizer::LoadFromBytes(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 2000000000}}})", true);
  ASSERT_FALSE(sparse.ok());
  EXPECT_NE(sparse.status().message().find("2000000000"), std::string::npos) << sparse.status().message();
  // No normalizer or pre-tokenizer at all: the whole text is one word, unchanged.
  auto bare = Tokenizer::LoadFromBytes(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1, "##a": 2}}})", true);
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_EQ(Ids(**bare, "aaa"), (std::vector<int32_t>{1, 2, 2}));
  EXPECT_EQ(Ids(**bare, "a a"), (std::vector<int32_t>{0}));
}

TEST(WordPieceLoadTest, FolderWithOnlyVocabTxt) {
  std::string pattern = (fs::temp_directory_path() / "stamen_wordpiece_unit_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path folder = pattern;
  std::ofstream(folder / "vocab.txt", std::ios::binary) << kVocabulary;
  auto loaded = Tokenizer::Load(folder.string());  // no tokenizer_config.json: BERT's defaults
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(Ids(**loaded, "Hello BANANA", true), (std::vector<int32_t>{2, 9, 5, 6, 6, 3}));
  std::error_code error;
  fs::remove_all(folder, error);
}

// Steady-state encoding allocates nothing, on every path: added tokens, accents, CJK, the
// reordered marks, long and unknown words, invalid UTF-8, pairs and truncation.
TEST(WordPieceAllocationTest, RepeatedEncodeAllocatesNothing) {
  auto loaded = Tokenizer::Load(kMiniLm + "/tokenizer.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& tokenizer = **loaded;
  const std::string text =
      "Hello world, this is a test. Всеобщая декларация прав человека. 世界人権宣言 [MASK] Ça "
      "a\xF0\x9D\x85\xAD\xF0\x9D\x85\xA5 😀 " + std::string(120, 'x') + " caf\xC3\xA9 \xFF\x80 tokenization 12345";
  const std::string other = "All human beings are born free and equal in dignity and rights.";
  for (const bool with_pieces : {false, true}) {
    EncodeOptions options;
    options.with_pieces = with_pieces;
    Encoding encoding;
    Scratch scratch;
    tokenizer.Encode(text, options, &encoding, &scratch);
    tokenizer.EncodePair(text, other, options, &encoding, &scratch);
    const uint64_t before = bench::AllocationCount();
    for (int i = 0; i < 20; ++i) {
      tokenizer.Encode(text, options, &encoding, &scratch);
      tokenizer.EncodePair(text, other, options, &encoding, &scratch);
      options.max_length = 16;
      tokenizer.EncodePair(text, other, options, &encoding, &scratch);
      options.max_length = 0;
    }
    EXPECT_EQ(bench::AllocationCount() - before, 0u) << "with_pieces=" << with_pieces;
  }
  // The counter sees allocations at all.
  const uint64_t before = bench::AllocationCount();
  auto buffer = std::make_unique<std::vector<char>>(1000, 'x');
  EXPECT_GE(bench::AllocationCount() - before, 1u);
}

}  // namespace
}  // namespace stamen::tokenizer
