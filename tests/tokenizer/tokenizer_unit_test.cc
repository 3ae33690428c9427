// Unit tests of the tokenizer library: the .model reader, the charsmap, loading errors, the
// post-processor's templates and truncation, pieces/offsets, Decode, EncodeBatch and Stats.
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test_corpus.h"
#include "tokenizer/charsmap.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ReadFileOrFail;
using testing::SharedPath;

const std::string kXlmrModel = "models/xlmr-trimmed-32k/sentencepiece.bpe.model";
const std::string kXlmrJson = "models/xlmr-trimmed-32k/tokenizer.json";

std::unique_ptr<Tokenizer> LoadOrFail(const std::string& relative) {
  auto loaded = Tokenizer::Load(SharedPath(relative));
  EXPECT_TRUE(loaded.ok()) << relative << ": " << loaded.status().message();
  return loaded.ok() ? std::move(loaded.value()) : nullptr;
}

std::vector<int32_t> Ids(const Tokenizer& tokenizer, std::string_view text, EncodeOptions options = {}) {
  Encoding encoding;
  Scratch scratch;
  tokenizer.Encode(text, options, &encoding, &scratch);
  return encoding.ids;
}

// A temporary directory removed at the end of the test.
class TempDirectory {
 public:
  TempDirectory() {
    std::string pattern = (fs::temp_directory_path() / "stamen_unit_XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDirectory() {
    std::error_code error;
    if (!path_.empty()) fs::remove_all(path_, error);
  }
  const fs::path& path() const { return path_; }
  std::string Write(const std::string& name, std::string_view contents) const {
    const fs::path file = path_ / name;
    std::ofstream(file, std::ios::binary).write(contents.data(), static_cast<std::streamsize>(contents.size()));
    return file.string();
  }

 private:
  fs::path path_;
};

// ---------------------------------------------------------------------------------------
// Hand-built ModelProto bytes (protobuf wire format), for loader error paths.

std::string Varint(uint64_t value) {
  std::string out;
  do {
    const auto low = static_cast<char>(value & 0x7F);
    value >>= 7;
    out.push_back(static_cast<char>(low | (value ? 0x80 : 0)));
  } while (value);
  return out;
}
std::string Key(uint32_t field, uint32_t wire_type) { return Varint(field << 3 | wire_type); }
std::string Bytes(uint32_t field, std::string_view payload) {
  return Key(field, 2) + Varint(payload.size()) + std::string(payload);
}
std::string VarintField(uint32_t field, uint64_t value) { return Key(field, 0) + Varint(value); }
std::string Piece(std::string_view text, float score, int type) {
  std::string score_bytes(4, '\0');
  std::memcpy(score_bytes.data(), &score, 4);
  return Bytes(1, Bytes(1, text) + Key(2, 5) + score_bytes + VarintField(3, static_cast<uint64_t>(type)));
}
// A Unigram model without a charsmap ("identity" normalizer): <unk> <s> </s> ▁a a b ▁.
std::string TinyModel(int model_type = 1, std::string extra_pieces = "") {
  return Piece("<unk>", 0, 2) + Piece("<s>", 0, 3) + Piece("</s>", 0, 3) + Piece("\xE2\x96\x81" "a", -1, 1) +
         Piece("a", -2, 1) + Piece("b", -3, 1) + Piece("\xE2\x96\x81", -2, 1) + extra_pieces +
         Bytes(2, VarintField(3, static_cast<uint64_t>(model_type))) + Bytes(3, Bytes(1, "identity"));
}

// ---------------------------------------------------------------------------------------
// ParseSentencePieceModel. Expected values were read with SentencePieceProcessor 0.1.97
// (GetPieceSize, unk_id, …) and a raw protobuf dump of each file.

struct ModelFacts {
  const char* path;
  size_t pieces;
  const char* normalizer;
  size_t charsmap_bytes;
  const char* piece3;
  float score3;
};

TEST(ParseSentencePieceModelTest, ReadsRealModels) {
  const ModelFacts models[] = {
      {"models/spm-test/test_model.model", 1000, "nfkc", 237484, "\r", -2.9318392f},
      {"models/spm-test/test_ja_model.model", 8000, "nfkc", 237484, "\xE3\x80\x81", -3.1903727f},
      {"models/xlmr-trimmed-32k/sentencepiece.bpe.model", 31996, "nmt_nfkc", 237539, ",", -3.4635427f},
      {"models/synthetic-unigram-250k/sentencepiece.bpe.model", 250000, "nmt_nfkc", 237561, "\xE2\x96\x81",
       -3.4929016f},
  };
  for (const ModelFacts& facts : models) {
    SCOPED_TRACE(facts.path);
    const std::string bytes = ReadFileOrFail(SharedPath(facts.path));
    auto model = ParseSentencePieceModel(bytes);
    ASSERT_TRUE(model.ok()) << model.status().message();
    EXPECT_EQ(model->pieces.size(), facts.pieces);
    EXPECT_EQ(model->model_type, 1);
    EXPECT_EQ(model->unk_id, 0);
    EXPECT_EQ(model->bos_id, 1);
    EXPECT_EQ(model->eos_id, 2);
    EXPECT_EQ(model->pad_id, -1);
    EXPECT_FALSE(model->byte_fallback);
    EXPECT_FALSE(model->treat_whitespace_as_suffix);
    EXPECT_EQ(model->normalizer_name, facts.normalizer);
    EXPECT_EQ(model->precompiled_charsmap.size(), facts.charsmap_bytes);
    EXPECT_TRUE(model->add_dummy_prefix);
    EXPECT_TRUE(model->remove_extra_whitespaces);
    EXPECT_TRUE(model->escape_whitespaces);
    EXPECT_EQ(model->unk_surface, " \xE2\x81\x87 ");
    EXPECT_EQ(model->pieces[0].text, "<unk>");
    EXPECT_EQ(model->pieces[0].type, PieceType::kUnknown);
    EXPECT_EQ(model->pieces[1].text, "<s>");
    EXPECT_EQ(model->pieces[1].type, PieceType::kControl);
    EXPECT_EQ(model->pieces[2].text, "</s>");
    EXPECT_EQ(model->pieces[2].type, PieceType::kControl);
    EXPECT_EQ(model->pieces[3].text, facts.piece3);
    EXPECT_FLOAT_EQ(model->pieces[3].score, facts.score3);
    EXPECT_EQ(model->pieces[3].type, PieceType::kNormal);
  }
}

TEST(ParseSentencePieceModelTest, ReadsHandBuiltModel) {
  auto model = ParseSentencePieceModel(TinyModel() + Bytes(2, VarintField(35, 1) + VarintField(41, 5) +
                                                              VarintField(43, static_cast<uint64_t>(-7))));
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_EQ(model->pieces.size(), 7u);
  EXPECT_EQ(model->pieces[5].text, "b");
  EXPECT_FLOAT_EQ(model->pieces[5].score, -3);
  EXPECT_EQ(model->normalizer_name, "identity");
  EXPECT_TRUE(model->precompiled_charsmap.empty());
  EXPECT_TRUE(model->byte_fallback);
  EXPECT_EQ(model->bos_id, 5);
  EXPECT_EQ(model->pad_id, -7);  // negative int32 as a 10-byte varint
}

TEST(ParseSentencePieceModelTest, RejectsMalformedBytes) {
  EXPECT_FALSE(ParseSentencePieceModel("").ok());                       // no pieces
  EXPECT_FALSE(ParseSentencePieceModel("\x0A").ok());                   // key without length
  EXPECT_FALSE(ParseSentencePieceModel("\x0A\x05\x61\x62").ok());       // length past the end
  EXPECT_FALSE(ParseSentencePieceModel("\x0A\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01").ok());  // huge length
  EXPECT_FALSE(ParseSentencePieceModel("\x0B").ok());                   // wire type 3 (group)
  EXPECT_FALSE(ParseSentencePieceModel("\x08\x80\x80").ok());           // truncated varint
  EXPECT_FALSE(ParseSentencePieceModel(std::string(20, '\xFF')).ok());  // overlong varint key
  EXPECT_FALSE(ParseSentencePieceModel("{\"model\": {}}").ok());        // JSON is not a ModelProto
  auto bad_type = ParseSentencePieceModel(Bytes(1, Bytes(1, "x") + VarintField(3, 9)));
  ASSERT_FALSE(bad_type.ok());
  EXPECT_THAT(bad_type.status().message(), HasSubstr("unknown type 9"));
}

// Every prefix length of a real model and random byte flips: each must parse or fail with a
// message, and whatever loads must encode without crashing (run under ASan in debug builds).
TEST(ParseSentencePieceModelTest, SurvivesTruncationAndCorruption) {
  const std::string bytes = ReadFileOrFail(SharedPath("models/spm-test/test_model.model"));
  ASSERT_GT(bytes.size(), 100000u);
  const std::string sample = "Hello wörld ｶﾞ ① 日本語 \xFF\x80 <unk>";
  size_t failures = 0, loaded = 0;
  auto try_bytes = [&](std::string_view candidate) {
    auto model = ParseSentencePieceModel(candidate);
    if (!model.ok()) {
      EXPECT_FALSE(model.status().message().empty());
      ++failures;
    }
    auto tokenizer = Tokenizer::LoadFromBytes(candidate, /*is_json=*/false);
    if (!tokenizer.ok()) {
      EXPECT_FALSE(tokenizer.status().message().empty());
      return;
    }
    ++loaded;
    Ids(**tokenizer, sample);
    (*tokenizer)->Decode(Ids(**tokenizer, sample), false);
  };
  // All lengths through the first pieces, then a spread through the charsmap and the rest.
  for (size_t length = 0; length < 600; ++length) try_bytes(std::string_view(bytes).substr(0, length));
  for (size_t length = 600; length < bytes.size(); length += 997) try_bytes(std::string_view(bytes).substr(0, length));
  EXPECT_GT(failures, 300u) << "most cut points fall inside a field and must be rejected";

  std::mt19937 random(20240601);
  std::uniform_int_distribution<size_t> position(0, bytes.size() - 1);
  std::uniform_int_distribution<int> bit(0, 7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string mutated = bytes;
    for (int flips = 0; flips < 1 + trial % 4; ++flips) {
      mutated[position(random)] ^= static_cast<char>(1 << bit(random));
    }
    try_bytes(mutated);
  }
  EXPECT_GT(loaded, 0u);
}

// ---------------------------------------------------------------------------------------
// Charsmap, on the nmt_nfkc map of the XLM-R model. Replacements agree with Hugging Face's
// Precompiled normalizer (normalize_str) and SentencePiece's Encode.

Charsmap XlmrCharsmap() {
  auto model = ParseSentencePieceModel(ReadFileOrFail(SharedPath(kXlmrModel)));
  EXPECT_TRUE(model.ok());
  auto charsmap = Charsmap::Parse(model.ok() ? model->precompiled_charsmap : std::string());
  EXPECT_TRUE(charsmap.ok()) << charsmap.status().message();
  return charsmap.ok() ? std::move(charsmap.value()) : Charsmap();
}

TEST(CharsmapTest, LongestMatchOnRealMap) {
  const Charsmap charsmap = XlmrCharsmap();
  ASSERT_FALSE(charsmap.empty());
  std::string_view replacement;
  EXPECT_EQ(charsmap.LongestMatch("\xE2\x91\xA0 rest", &replacement), 3u);  // ① -> 1
  EXPECT_EQ(replacement, "1");
  EXPECT_EQ(charsmap.LongestMatch("\xEF\xAC\x81", &replacement), 3u);  // ﬁ -> fi
  EXPECT_EQ(replacement, "fi");
  EXPECT_EQ(charsmap.LongestMatch("\xEF\xBC\xA1", &replacement), 3u);  // fullwidth A -> A
  EXPECT_EQ(replacement, "A");
  // Halfwidth ka + voiced mark is one key: SentencePiece turns it into precomposed ガ.
  EXPECT_EQ(charsmap.LongestMatch("\xEF\xBD\xB6\xEF\xBE\x9E", &replacement), 6u);
  EXPECT_EQ(replacement, "\xE3\x82\xAC");
  EXPECT_EQ(charsmap.LongestMatch("A", &replacement), 0u);  // already normal
  EXPECT_EQ(charsmap.LongestMatch("", &replacement), 0u);
}

TEST(CharsmapTest, ShortestMatchOnRealMap) {
  const Charsmap charsmap = XlmrCharsmap();
  std::string_view replacement;
  // Hugging Face takes the shortest key: halfwidth ka alone -> カ.
  ASSERT_TRUE(charsmap.ShortestMatch("\xEF\xBD\xB6\xEF\xBE\x9E", &replacement));
  EXPECT_EQ(replacement, "\xE3\x82\xAB");
  ASSERT_TRUE(charsmap.ShortestMatch("\xE2\x91\xA0", &replacement));
  EXPECT_EQ(replacement, "1");
  EXPECT_FALSE(charsmap.ShortestMatch("A", &replacement));
  EXPECT_FALSE(charsmap.ShortestMatch(std::string_view("\0\xE2\x91\xA0", 4), &replacement));  // stops at NUL
}

TEST(CharsmapTest, ParseRejectsBadBlobs) {
  auto empty = Charsmap::Parse("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  std::string_view replacement;
  EXPECT_EQ(empty->LongestMatch("\xE2\x91\xA0", &replacement), 0u);
  EXPECT_FALSE(Charsmap::Parse("ab").ok());  // shorter than the size header
  auto with_size = [](uint32_t trie_bytes, size_t total) {
    std::string blob(total, '\0');
    std::memcpy(blob.data(), &trie_bytes, 4);
    return blob;
  };
  EXPECT_FALSE(Charsmap::Parse(with_size(6, 20)).ok());   // not whole 32-bit units
  EXPECT_FALSE(Charsmap::Parse(with_size(64, 20)).ok());  // larger than the blob
  EXPECT_FALSE(Charsmap::Parse(with_size(0, 20)).ok());   // no trie
  EXPECT_TRUE(Charsmap::Parse(with_size(16, 20)).ok());
}

TEST(CharsmapTest, CorruptUnitsAreSafe) {
  auto model = ParseSentencePieceModel(ReadFileOrFail(SharedPath(kXlmrModel)));
  ASSERT_TRUE(model.ok());
  std::mt19937 random(7);
  const std::string inputs[] = {"\xEF\xBD\xB6\xEF\xBE\x9E", "\xE2\x91\xA0", "abc", "\xF0\x9F\x98\x80", "\xFF"};
  for (int trial = 0; trial < 200; ++trial) {
    std::string blob = model->precompiled_charsmap;
    for (int i = 0; i < 8; ++i) blob[4 + random() % (blob.size() - 4)] = static_cast<char>(random());
    auto charsmap = Charsmap::Parse(blob);
    if (!charsmap.ok()) continue;
    for (const std::string& input : inputs) {
      std::string_view replacement;
      const size_t length = charsmap->LongestMatch(input, &replacement);
      EXPECT_LE(length, input.size());
      charsmap->ShortestMatch(input, &replacement);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Tokenizer::Load errors name the file and the problem.

TEST(TokenizerLoadTest, MissingFile) {
  auto loaded = Tokenizer::Load("/nonexistent/stamen/tokenizer.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("/nonexistent/stamen/tokenizer.json"));
}

TEST(TokenizerLoadTest, DirectoryWithoutTokenizer) {
  TempDirectory directory;
  directory.Write("config.json", "{}");
  auto loaded = Tokenizer::Load(directory.path().string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(directory.path().string()));
  EXPECT_THAT(loaded.status().message(), HasSubstr("tokenizer.json"));
}

TEST(TokenizerLoadTest, DirectoryPrefersTokenizerJson) {
  auto loaded = Tokenizer::Load(SharedPath("models/xlmr-trimmed-32k"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->GetStats().format, "huggingface");
}

TEST(TokenizerLoadTest, DirectoryWithOnlyModel) {
  TempDirectory directory;
  directory.Write("sentencepiece.bpe.model", ReadFileOrFail(SharedPath(kXlmrModel)));
  auto loaded = Tokenizer::Load(directory.path().string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->GetStats().format, "sentencepiece");
}

TEST(TokenizerLoadTest, TruncatedJson) {
  TempDirectory directory;
  const std::string json = ReadFileOrFail(SharedPath(kXlmrJson));
  for (size_t length : {size_t{1}, size_t{100}, size_t{5000}, json.size() / 2, json.size() - 2}) {
    const std::string path = directory.Write("tokenizer.json", json.substr(0, length));
    auto loaded = Tokenizer::Load(path);
    ASSERT_FALSE(loaded.ok()) << "length " << length;
    EXPECT_THAT(loaded.status().message(), HasSubstr(path));
    EXPECT_THAT(loaded.status().message(), HasSubstr("JSON"));
  }
}

TEST(TokenizerLoadTest, UnsupportedModelTypes) {
  // Qwen2's byte-level BPE is supported since issue 10 (bpe_exactness_test); WordLevel is not.
  auto bpe = Tokenizer::Load(SharedPath("models/qwen2-bpe/tokenizer.json"));
  EXPECT_TRUE(bpe.ok()) << bpe.status().message();
  auto word_level = Tokenizer::LoadFromBytes(R"({"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}})",
                                             /*is_json=*/true);
  ASSERT_FALSE(word_level.ok());
  EXPECT_THAT(word_level.status().message(), HasSubstr("\"WordLevel\""));
  auto sentencepiece_bpe = Tokenizer::LoadFromBytes(TinyModel(/*model_type=*/2), /*is_json=*/false);
  ASSERT_FALSE(sentencepiece_bpe.ok());
  EXPECT_THAT(sentencepiece_bpe.status().message(), HasSubstr("type 2"));
}

// A BPE or WordPiece vocabulary maps pieces to ids from 0 to INT32_MAX; any other id (negative,
// past 32 bits, fractional, a string) is refused with the vocabulary and the piece named.
TEST(TokenizerLoadTest, VocabularyIdsOutsideInt32AreRefusedByPiece) {
  for (const char* id : {"-1", "2147483648", "1.5", "\"1\"", "null"}) {
    const std::string vocabulary = std::string(R"({"a": 0, "bad": )") + id + "}";
    auto bpe = Tokenizer::LoadFromBytes(R"({"model": {"type": "BPE", "merges": [], "vocab": )" + vocabulary + "}}",
                                        /*is_json=*/true);
    ASSERT_FALSE(bpe.ok()) << id;
    EXPECT_THAT(bpe.status().message(), HasSubstr("BPE vocab entry \"bad\" has no valid id")) << id;
    auto wordpiece = Tokenizer::LoadFromBytes(R"({"model": {"type": "WordPiece", "vocab": )" + vocabulary + "}}",
                                              /*is_json=*/true);
    ASSERT_FALSE(wordpiece.ok()) << id;
    EXPECT_THAT(wordpiece.status().message(), HasSubstr("WordPiece vocab entry \"bad\" has no valid id")) << id;
    TempDirectory directory;
    directory.Write("vocab.json", vocabulary);
    directory.Write("merges.txt", "#version: 0.2\n");
    auto vocab_json = Tokenizer::Load(directory.path().string());
    ASSERT_FALSE(vocab_json.ok()) << id;
    EXPECT_THAT(vocab_json.status().message(), HasSubstr("vocab.json entry \"bad\" has no valid id")) << id;
  }
  // The largest valid id is read (and then refused as a table too sparse to build, by its id).
  auto largest = Tokenizer::LoadFromBytes(
      R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 2147483647}}})", /*is_json=*/true);
  ASSERT_FALSE(largest.ok());
  EXPECT_THAT(largest.status().message(), HasSubstr("2147483647"));
  EXPECT_THAT(largest.status().message(), ::testing::Not(HasSubstr("has no valid id")));
}

const char kMinimalUnigram[] =
    R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]})";

TEST(TokenizerLoadTest, UnsupportedNormalizerIsNamed) {
  for (const char* normalizer : {"NFKC", "BertNormalizer", "Lowercase"}) {
    const std::string json = std::string(kMinimalUnigram) + R"(, "normalizer": {"type": ")" + normalizer + "\"}}";
    auto loaded = Tokenizer::LoadFromBytes(json, /*is_json=*/true);
    ASSERT_FALSE(loaded.ok()) << normalizer;
    EXPECT_THAT(loaded.status().message(), HasSubstr(std::string("\"") + normalizer + "\""));
  }
  // Also inside a Sequence, and through Load (the message then names the file too).
  TempDirectory directory;
  const std::string path = directory.Write(
      "tokenizer.json", std::string(kMinimalUnigram) +
                            R"(, "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}]}})");
  auto loaded = Tokenizer::Load(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("NFKC"));
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
}

TEST(TokenizerLoadTest, MinimalUnigramJsonLoads) {
  auto loaded = Tokenizer::LoadFromBytes(std::string(kMinimalUnigram) + "}", /*is_json=*/true);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(Ids(**loaded, "aab"), (std::vector<int32_t>{1, 1, 0}));  // no normalizer or pre-tokenizer
}

TEST(TokenizerLoadTest, BadSentencePieceModels) {
  // Hand-built ModelProtos that SentencePiece itself refuses.
  const std::string no_unknown = Piece("a", -1, 1) + Bytes(2, VarintField(3, 1));
  auto loaded = Tokenizer::LoadFromBytes(no_unknown, false);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("unknown piece"));
  loaded = Tokenizer::LoadFromBytes(TinyModel(1, Piece("a", -5, 1)), false);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("twice"));
  loaded = Tokenizer::LoadFromBytes(TinyModel(1, Piece("<0x41>", 0, 6)), false);  // byte piece, no fallback
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("byte"));
  loaded = Tokenizer::LoadFromBytes("not a model", false);
  EXPECT_FALSE(loaded.ok());
}

TEST(TokenizerLoadTest, HandBuiltModelEncodes) {
  auto loaded = Tokenizer::LoadFromBytes(TinyModel(), false);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  // "▁ab": ▁a + b scores -4, better than ▁ + a + b (-7).
  EXPECT_EQ(Ids(**loaded, "ab"), (std::vector<int32_t>{3, 5}));
  // "c" is unknown: ▁ then <unk>.
  EXPECT_EQ(Ids(**loaded, "ac"), (std::vector<int32_t>{3, 0}));
}

// ---------------------------------------------------------------------------------------
// Templates, truncation and pieces on the XLM-R files. Hugging Face values come from
// tokenizers 0.23.3 in the project venv:
//   t = Tokenizer.from_file("xlmr-trimmed-32k/tokenizer.json")
//   t.enable_truncation(max_length=N, direction=D); t.encode(A[, B]).ids
// SentencePiece values from SentencePieceProcessor 0.1.97 Encode on sentencepiece.bpe.model.

constexpr std::string_view kFox = "The quick brown fox jumps over the lazy dog.";
constexpr std::string_view kHello = "Hello world";

TEST(TemplateTest, SingleAndPairTemplates) {
  auto tokenizer = LoadOrFail(kXlmrJson);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->SpecialTokenCount(false), 2u);
  EXPECT_EQ(tokenizer->SpecialTokenCount(true), 4u);
  EXPECT_EQ(Ids(*tokenizer, kFox),
            (std::vector<int32_t>{0, 416, 16323, 3151, 3344, 2656, 322, 20214, 7, 455, 61, 21, 1677, 4202, 5, 2}));
  EncodeOptions no_special;
  no_special.add_special_tokens = false;
  EXPECT_EQ(Ids(*tokenizer, kHello, no_special), (std::vector<int32_t>{10746, 3800}));

  // <s> A </s></s> B </s>
  Encoding encoding;
  Scratch scratch;
  tokenizer->EncodePair(kHello, "How are you?", {}, &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{0, 10746, 3800, 2, 2, 4502, 444, 311, 30, 2}));
  EXPECT_EQ(encoding.type_ids, std::vector<uint8_t>(10, 0));  // RoBERTa: every type id is 0
  tokenizer->EncodePair(kHello, "How are you?", no_special, &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{10746, 3800, 4502, 444, 311, 30}));
  tokenizer->EncodePair("", "", {}, &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{0, 2, 2, 2}));
}

TEST(TemplateTest, SentencePieceModelAddsNothing) {
  auto tokenizer = LoadOrFail(kXlmrModel);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->SpecialTokenCount(false), 0u);
  EXPECT_EQ(Ids(*tokenizer, kFox),
            (std::vector<int32_t>{415, 16322, 3150, 3343, 2655, 321, 20213, 6, 454, 60, 20, 1676, 4201, 4}));
  Encoding encoding;
  Scratch scratch;
  tokenizer->EncodePair(kHello, kFox, {}, &encoding, &scratch);
  EXPECT_EQ(encoding.ids.size(), 16u);  // both texts' ids, nothing between
  EXPECT_EQ(encoding.type_ids.front(), 0);
  EXPECT_EQ(encoding.type_ids.back(), 1);
}

struct TruncationCase {
  size_t max_length;
  TruncationSide side;
  bool fox_first;  // pair order: (fox, hello) or (hello, fox)
  std::vector<int32_t> expected;
};

TEST(TruncationTest, SingleTextKeepsSpecialTokens) {
  auto tokenizer = LoadOrFail(kXlmrJson);
  ASSERT_NE(tokenizer, nullptr);
  EncodeOptions options;
  options.max_length = 8;
  EXPECT_EQ(Ids(*tokenizer, kFox, options), (std::vector<int32_t>{0, 416, 16323, 3151, 3344, 2656, 322, 2}));
  options.truncation_side = TruncationSide::kLeft;
  EXPECT_EQ(Ids(*tokenizer, kFox, options), (std::vector<int32_t>{0, 455, 61, 21, 1677, 4202, 5, 2}));
  options.add_special_tokens = false;
  options.max_length = 6;
  EXPECT_EQ(Ids(*tokenizer, kFox, options), (std::vector<int32_t>{455, 61, 21, 1677, 4202, 5}));
  options.truncation_side = TruncationSide::kRight;
  EXPECT_EQ(Ids(*tokenizer, kFox, options), (std::vector<int32_t>{416, 16323, 3151, 3344, 2656, 322}));
  options.max_length = 100;  // longer than the text: nothing cut
  EXPECT_EQ(Ids(*tokenizer, kHello, options), (std::vector<int32_t>{10746, 3800}));
}

// Hugging Face tokenizers 0.23.3 leaves the input whole when max_length is below the
// template's special-token count (values from the venv's `enable_truncation(max_length=1)`).
TEST(TruncationTest, LimitBelowSpecialTokensTruncatesNothing) {
  auto tokenizer = LoadOrFail(kXlmrJson);
  ASSERT_NE(tokenizer, nullptr);
  EncodeOptions options;
  options.max_length = 1;
  EXPECT_EQ(Ids(*tokenizer, kHello, options), (std::vector<int32_t>{0, 10746, 3800, 2}));
  Encoding encoding;
  Scratch scratch;
  options.max_length = 3;
  tokenizer->EncodePair(kHello, "How are you", options, &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{0, 10746, 3800, 2, 2, 4502, 444, 311, 2}));
}

TEST(TruncationTest, PairLongestFirstMatchesHuggingFace) {
  auto tokenizer = LoadOrFail(kXlmrJson);
  ASSERT_NE(tokenizer, nullptr);
  using enum TruncationSide;
  const TruncationCase cases[] = {
      // Budget 8: only the longer text (fox, 14 tokens) is cut, to 6.
      {12, kRight, true, {0, 416, 16323, 3151, 3344, 2656, 322, 2, 2, 10746, 3800, 2}},
      {12, kRight, false, {0, 10746, 3800, 2, 2, 416, 16323, 3151, 3344, 2656, 322, 2}},
      {12, kLeft, true, {0, 455, 61, 21, 1677, 4202, 5, 2, 2, 10746, 3800, 2}},
      {12, kLeft, false, {0, 10746, 3800, 2, 2, 455, 61, 21, 1677, 4202, 5, 2}},
      // Budget 7: fox keeps 5.
      {11, kRight, true, {0, 416, 16323, 3151, 3344, 2656, 2, 2, 10746, 3800, 2}},
      {11, kLeft, false, {0, 10746, 3800, 2, 2, 61, 21, 1677, 4202, 5, 2}},
      // Budget 2: both texts are cut to one token each.
      {6, kRight, true, {0, 416, 2, 2, 10746, 2}},
      {6, kRight, false, {0, 10746, 2, 2, 416, 2}},
      {6, kLeft, true, {0, 5, 2, 2, 3800, 2}},
      {6, kLeft, false, {0, 3800, 2, 2, 5, 2}},
  };
  Encoding encoding;
  Scratch scratch;
  for (const TruncationCase& c : cases) {
    EncodeOptions options;
    options.max_length = c.max_length;
    options.truncation_side = c.side;
    tokenizer->EncodePair(c.fox_first ? kFox : kHello, c.fox_first ? kHello : kFox, options, &encoding, &scratch);
    EXPECT_EQ(encoding.ids, c.expected) << "max_length " << c.max_length << (c.side == kLeft ? " left" : " right")
                                        << (c.fox_first ? " (fox, hello)" : " (hello, fox)");
    EXPECT_EQ(encoding.type_ids.size(), encoding.ids.size());
  }
}

TEST(PiecesTest, PiecesAndOffsetsIndexTheInput) {
  EncodeOptions options;
  options.with_pieces = true;
  Encoding encoding;
  Scratch scratch;
  const std::string_view text = "Hello world, this is a test.";
  // Offsets cover each piece's original bytes; a piece's ▁ is the space before it.
  const std::vector<std::pair<uint32_t, uint32_t>> content_offsets = {{0, 5},   {5, 11},  {11, 12}, {12, 17},
                                                                      {17, 20}, {20, 22}, {22, 27}, {27, 28}};
  const std::vector<std::string> content_pieces = {"\xE2\x96\x81Hello", "\xE2\x96\x81world", ",",
                                                   "\xE2\x96\x81this",  "\xE2\x96\x81is",    "\xE2\x96\x81" "a",
                                                   "\xE2\x96\x81test",  "."};
  {
    auto tokenizer = LoadOrFail(kXlmrJson);
    ASSERT_NE(tokenizer, nullptr);
    tokenizer->Encode(text, options, &encoding, &scratch);
    EXPECT_EQ(encoding.ids, (std::vector<int32_t>{0, 10746, 3800, 4, 595, 73, 10, 1581, 5, 2}));
    std::vector<std::string> pieces = {"<s>"};
    pieces.insert(pieces.end(), content_pieces.begin(), content_pieces.end());
    pieces.push_back("</s>");
    EXPECT_EQ(encoding.pieces, pieces);
    std::vector<std::pair<uint32_t, uint32_t>> offsets = {{0, 0}};  // special tokens: (0, 0)
    offsets.insert(offsets.end(), content_offsets.begin(), content_offsets.end());
    offsets.emplace_back(0, 0);
    EXPECT_EQ(encoding.offsets, offsets);
  }
  {
    auto tokenizer = LoadOrFail(kXlmrModel);
    ASSERT_NE(tokenizer, nullptr);
    tokenizer->Encode(text, options, &encoding, &scratch);
    EXPECT_EQ(encoding.ids, (std::vector<int32_t>{10745, 3799, 3, 594, 72, 9, 1580, 4}));
    EXPECT_EQ(encoding.pieces, content_pieces);
    EXPECT_EQ(encoding.offsets, content_offsets);
  }
}

TEST(PiecesTest, OffsetsOfNormalizedText) {
  // "  Hello  wörld " (bytes: spaces 0-1, Hello 2-6, spaces 7-8, w 9, ö 10-11, r 12, l 13,
  // d 14, space 15) -> ▁Hello ▁w ör ld ▁, as Hugging Face encodes it. Offsets are bytes of
  // the original text; a collapsed space run may be attributed to its first space (stamen)
  // or its last (Hugging Face reports (1, 7) and (8, 10) after converting its character
  // offsets to bytes), so only the run is checked for those two.
  auto tokenizer = LoadOrFail(kXlmrJson);
  ASSERT_NE(tokenizer, nullptr);
  EncodeOptions options;
  options.with_pieces = true;
  Encoding encoding;
  Scratch scratch;
  tokenizer->Encode("  Hello  w\xC3\xB6rld ", options, &encoding, &scratch);
  EXPECT_EQ(encoding.ids, (std::vector<int32_t>{0, 10746, 128, 3134, 3218, 6, 2}));
  ASSERT_EQ(encoding.offsets.size(), 7u);
  EXPECT_EQ(encoding.offsets[0], std::make_pair(0u, 0u));
  EXPECT_LE(encoding.offsets[1].first, 1u);
  EXPECT_EQ(encoding.offsets[1].second, 7u);
  EXPECT_GE(encoding.offsets[2].first, 7u);
  EXPECT_LE(encoding.offsets[2].first, 8u);
  EXPECT_EQ(encoding.offsets[2].second, 10u);
  EXPECT_EQ(encoding.offsets[3], std::make_pair(10u, 13u));  // ör: ö is two bytes
  EXPECT_EQ(encoding.offsets[4], std::make_pair(13u, 15u));
  EXPECT_EQ(encoding.offsets[5], std::make_pair(15u, 16u));
  EXPECT_EQ(encoding.offsets[6], std::make_pair(0u, 0u));
}

TEST(PiecesTest, WithoutPiecesLeavesThemEmpty) {
  auto tokenizer = LoadOrFail(kXlmrJson);
  ASSERT_NE(tokenizer, nullptr);
  Encoding encoding;
  Scratch scratch;
  tokenizer->Encode(kFox, {}, &encoding, &scratch);
  EXPECT_FALSE(encoding.ids.empty());
  EXPECT_TRUE(encoding.pieces.empty());
  EXPECT_TRUE(encoding.offsets.empty());
}

TEST(DecodeTest, RoundTrip) {
  const std::string_view text = "Hello world, this is a test.";
  {
    auto tokenizer = LoadOrFail(kXlmrJson);
    ASSERT_NE(tokenizer, nullptr);
    const std::vector<int32_t> ids = Ids(*tokenizer, text);
    EXPECT_EQ(tokenizer->Decode(ids, /*skip_special_tokens=*/true), text);
    // As Hugging Face's decode(ids, skip_special_tokens=False).
    EXPECT_EQ(tokenizer->Decode(ids, false), "<s> Hello world, this is a test.</s>");
  }
  {
    auto tokenizer = LoadOrFail(kXlmrModel);
    ASSERT_NE(tokenizer, nullptr);
    EXPECT_EQ(tokenizer->Decode(Ids(*tokenizer, text), true), text);
    // SentencePiece prints <unk> as " ⁇ " (ids 5 0 are ▁ and <unk> for a Gothic letter).
    EXPECT_EQ(tokenizer->Decode(Ids(*tokenizer, "\xF0\x90\x8C\xB0"), true), " \xE2\x81\x87 ");
    EXPECT_EQ(tokenizer->Decode(std::vector<int32_t>{-1, 1 << 30}, true), "");  // out of range ids dropped
  }
}

TEST(VocabularyTest, PieceLookups) {
  auto json = LoadOrFail(kXlmrJson);
  auto model = LoadOrFail(kXlmrModel);
  ASSERT_NE(json, nullptr);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(json->IdToPiece(0), "<s>");
  EXPECT_EQ(json->IdToPiece(3), "<unk>");
  EXPECT_EQ(json->IdToPiece(31997), "<mask>");
  EXPECT_EQ(json->IdToPiece(10746), "\xE2\x96\x81Hello");
  EXPECT_EQ(json->IdToPiece(-1), "");
  EXPECT_EQ(json->IdToPiece(31998), "");
  EXPECT_EQ(json->PieceToId("<mask>"), 31997);
  EXPECT_EQ(json->PieceToId("\xE2\x96\x81Hello"), 10746);
  EXPECT_EQ(json->PieceToId("no such piece"), -1);
  EXPECT_TRUE(json->IsSpecial(0));
  EXPECT_TRUE(json->IsSpecial(31997));
  EXPECT_FALSE(json->IsSpecial(10746));
  // SentencePiece ids are the XLM-R ids minus one above 3.
  EXPECT_EQ(model->IdToPiece(10745), "\xE2\x96\x81Hello");
  EXPECT_EQ(model->PieceToId("\xE2\x96\x81Hello"), 10745);
  EXPECT_EQ(model->IdToPiece(0), "<unk>");
  EXPECT_TRUE(model->IsSpecial(1));  // control pieces <s> </s>
  EXPECT_FALSE(model->IsSpecial(10745));
}

// ---------------------------------------------------------------------------------------

TEST(EncodeBatchTest, EqualsSequentialEncode) {
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  ASSERT_GT(udhr.size(), 40000u);
  // 2,000 lines spread over the file, so many languages are included.
  std::vector<std::string_view> texts;
  for (size_t i = 0; i < udhr.size() && texts.size() < 2000; i += udhr.size() / 2000) texts.push_back(udhr[i].text);
  for (const std::string& path : {kXlmrJson, kXlmrModel}) {
    auto tokenizer = LoadOrFail(path);
    ASSERT_NE(tokenizer, nullptr);
    for (const bool with_pieces : {false, true}) {
      EncodeOptions options;
      options.with_pieces = with_pieces;
      std::vector<Encoding> sequential(texts.size());
      Scratch scratch;
      for (size_t i = 0; i < texts.size(); ++i) tokenizer->Encode(texts[i], options, &sequential[i], &scratch);
      for (unsigned threads : {1u, 2u}) {
        std::vector<Encoding> batch;
        tokenizer->EncodeBatch(texts, options, &batch, threads);
        ASSERT_EQ(batch.size(), texts.size());
        for (size_t i = 0; i < texts.size(); ++i) {
          ASSERT_EQ(batch[i].ids, sequential[i].ids) << path << " text " << i << ", " << threads << " threads";
          ASSERT_EQ(batch[i].pieces, sequential[i].pieces);
          ASSERT_EQ(batch[i].offsets, sequential[i].offsets);
        }
      }
    }
    std::vector<Encoding> none;
    tokenizer->EncodeBatch({}, {}, &none, 2);
    EXPECT_TRUE(none.empty());
  }
}

TEST(StatsTest, ReportsVocabularyAndTrie) {
  EXPECT_STREQ(PageKindName(PageKind::kHugeTlb), "hugetlb");
  EXPECT_STREQ(PageKindName(PageKind::kTransparentHuge), "transparent");
  EXPECT_STREQ(PageKindName(PageKind::kNormal), "normal");
  struct Expected {
    std::string path;
    size_t vocabulary;
    const char* format;
  };
  for (const Expected& expected :
       {Expected{kXlmrJson, 31998, "huggingface"}, Expected{kXlmrModel, 31996, "sentencepiece"},
        Expected{"models/spm-test/test_model.model", 1000, "sentencepiece"}}) {
    auto tokenizer = LoadOrFail(expected.path);
    ASSERT_NE(tokenizer, nullptr);
    const Stats stats = tokenizer->GetStats();
    EXPECT_EQ(stats.vocabulary_size, expected.vocabulary) << expected.path;
    EXPECT_EQ(tokenizer->VocabularySize(), expected.vocabulary) << expected.path;
    EXPECT_EQ(stats.format, expected.format);
    // Every piece is a trie path, and each 64-byte node is one slot.
    EXPECT_GE(stats.trie_nodes, expected.vocabulary / 2) << expected.path;
    EXPECT_GE(stats.trie_bytes, stats.trie_nodes * 64) << expected.path;
    const std::string page_kind = PageKindName(stats.trie_pages);
    EXPECT_TRUE(page_kind == "hugetlb" || page_kind == "transparent" || page_kind == "normal") << page_kind;
  }
}

// ---------------------------------------------------------------------------------------
// The corpus sample of the exactness tests (STAMEN_EXACTNESS_SAMPLE, test_corpus.h).

// Sets STAMEN_EXACTNESS_SAMPLE for one scope and restores what was there.
class ScopedSample {
 public:
  explicit ScopedSample(const char* value) {
    if (const char* old = std::getenv("STAMEN_EXACTNESS_SAMPLE")) old_ = old;
    if (value != nullptr) setenv("STAMEN_EXACTNESS_SAMPLE", value, 1);
    else unsetenv("STAMEN_EXACTNESS_SAMPLE");
  }
  ~ScopedSample() {
    if (old_) setenv("STAMEN_EXACTNESS_SAMPLE", old_->c_str(), 1);
    else unsetenv("STAMEN_EXACTNESS_SAMPLE");
  }

 private:
  std::optional<std::string> old_;
};

TEST(ExactnessSampleTest, UnsetOrOneIsEveryLine) {
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  ASSERT_GT(udhr.size(), 40000u);
  for (const char* value : {static_cast<const char*>(nullptr), "", "1"}) {
    ScopedSample sample(value);
    EXPECT_EQ(testing::ExactnessSample(), 1u);
    EXPECT_EQ(testing::SampleNote(), "");
    const std::vector<size_t> all = testing::UdhrIndices(udhr);
    ASSERT_EQ(all.size(), udhr.size());
    for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i);
    // A stride as the tests use it: 0, 4, 8, ...; pairs stop before the last line.
    const std::vector<size_t> strided = testing::UdhrIndices(udhr, 4);
    EXPECT_EQ(strided.size(), (udhr.size() + 3) / 4);
    EXPECT_EQ(strided[1], 4u);
    EXPECT_LT(testing::UdhrIndices(udhr, 2, udhr.size() - 1).back(), udhr.size() - 1);
    EXPECT_EQ(testing::LineIndices(10, 3), (std::vector<size_t>{0, 3, 6, 9}));
  }
}

TEST(ExactnessSampleTest, SampleKeepsEveryLanguageOfTheFullRun) {
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  ASSERT_GT(udhr.size(), 40000u);
  for (const size_t stride : {1u, 4u, 16u}) {
    std::set<std::string> full_languages;
    for (const size_t i : testing::UdhrIndices(udhr, stride)) full_languages.insert(udhr[i].language);
    // 100000: more than the file's lines, so that only the per-language lines remain.
    for (const char* value : {"8", "100000"}) {
      ScopedSample sample(value);
      const std::vector<size_t> indices = testing::UdhrIndices(udhr, stride);
      ASSERT_FALSE(indices.empty());
      EXPECT_TRUE(std::is_sorted(indices.begin(), indices.end()));
      std::set<std::string> languages;
      for (const size_t i : indices) {
        EXPECT_EQ(i % stride, 0u) << "a line the full run does not check";
        languages.insert(udhr[i].language);
      }
      EXPECT_EQ(languages, full_languages) << "STAMEN_EXACTNESS_SAMPLE=" << value << ", stride " << stride;
      EXPECT_EQ(std::set<size_t>(indices.begin(), indices.end()).size(), indices.size()) << "a line twice";
      // Every 8th (stride-th) line, and not many more: the per-language additions are few.
      if (std::string_view(value) == "8") {
        const size_t every_eighth = ((udhr.size() + stride - 1) / stride + 7) / 8;
        EXPECT_GE(indices.size(), every_eighth);
        EXPECT_LE(indices.size(), every_eighth + full_languages.size());
      } else {
        EXPECT_EQ(indices.size(), full_languages.size());
      }
    }
  }
  ScopedSample sample("8");
  EXPECT_EQ(testing::LineIndices(20), (std::vector<size_t>{0, 8, 16}));
  EXPECT_EQ(testing::LineIndices(20, 2), (std::vector<size_t>{0, 16}));
  EXPECT_EQ(testing::LineIndices(1), (std::vector<size_t>{0}));
  EXPECT_NE(testing::SampleNote().find("every 8th"), std::string::npos);
}

TEST(ExactnessSampleTest, AnythingButAPositiveIntegerFails) {
  for (const char* value : {"0", "-8", "8x", " 8", "eight", "99999999999999999999999"}) {
    ScopedSample sample(value);
    size_t got = 0;
    EXPECT_NONFATAL_FAILURE(got = testing::ExactnessSample(), "is not a positive integer");
    EXPECT_EQ(got, 1u) << value;  // and every line is checked
  }
}

}  // namespace
}  // namespace stamen::tokenizer
