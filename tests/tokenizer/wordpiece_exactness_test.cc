// Checks the WordPiece tokenizer against Hugging Face tokenizers 0.23.3 (wordpiece_reference.py
// in the project venv) on the three BERT-family tokenizer.json files: every udhr paragraph
// and botchan line and the edge cases below, alone and in pairs, with and without special
// tokens, truncated, with offsets and decoded; and a vocab.txt folder against its
// tokenizer.json. Under STAMEN_EXACTNESS_SAMPLE the corpora are sampled (see test_corpus.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "reference_lines.h"
#include "test_corpus.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

#ifndef STAMEN_SHARED_DIR
#error "STAMEN_SHARED_DIR must name the shared models and corpora folder"
#endif
#ifndef STAMEN_PYTHON
#error "STAMEN_PYTHON must name the venv python"
#endif
#ifndef STAMEN_WORDPIECE_REFERENCE_SCRIPT
#error "STAMEN_WORDPIECE_REFERENCE_SCRIPT must name wordpiece_reference.py"
#endif
// Where the reference keeps its outputs between runs, keyed by everything they depend on:
// the three models differ only in truncation/padding, which it switches off, so a cold run
// computes each reference once and later runs compute none.
#ifndef STAMEN_WORDPIECE_CACHE_DIR
#error "STAMEN_WORDPIECE_CACHE_DIR must name a writable folder"
#endif

namespace stamen::tokenizer {
namespace {

namespace fs = std::filesystem;

using testing::Hex;
using testing::Line;
using testing::ReadFileOrFail;
using testing::SharedPath;
using testing::ShellQuote;
using testing::SplitLines;

bool IsValidUtf8(std::string_view text) {
  for (size_t position = 0; position < text.size();) {
    const utf8::Decoded decoded = utf8::Decode(text, position);
    if (!decoded.valid) return false;
    position += decoded.length;
  }
  return true;
}

// Texts that take every path: accents and combining marks (NFD, Mn, the reordered marks),
// casing beyond ASCII, CJK and Hangul, punctuation of many scripts, control and format
// characters, Unicode spaces, invalid UTF-8, words at and over 100 characters, unknown
// characters, and the special tokens written out. None holds '\n' (inputs are lines).
std::vector<Line> EdgeCases() {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"one space", " "},
      {"spaces and tabs", " \t  \t "},
      {"leading and trailing spaces", "   padded text   "},
      {"accents", "Héllo Wörld! Ça va? naïve café résumé Ångström Dvořák Łódź Ærø"},
      {"combining sequences", "e\xCC\x81 a\xCC\x88\xCC\x81 o\xCC\xA3\xCC\x82 \xE1\xB9\xA9 Z\xCC\xB5\xCC\xA1" "a\xCD\x94l\xCC\xA2g\xCC\xB4o"},
      {"marks alone", "\xCC\x81\xCC\x81 x \xCD\x85 \xE0\xBD\xB3"},
      {"reordered marks", "a\xE0\xA3\x94\xCC\x81\xCC\x96" "b \xF0\x9D\x85\xAD\xF0\x9D\x85\xA5 x\xE3\x80\xAE\xCC\x96\xE3\x80\xAF"
                          "y \xF0\x9E\x80\x80\xCC\x95\xE0\xA3\x95 \xF0\x9D\x85\x9F\xF0\x9D\x85\xA5\xF0\x9D\x85\xAE"},
      {"reordered marks first",
       "\xE0\xA3\x94\xCC\x96\xE0\xA3\x95 x \xF0\x9D\x85\xAD\xCC\x81\xF0\x9D\x85\xA5\xCC\x96\xF0\x9E\xA5\x8A"},
      {"casing", "İstanbul ΣΊΣΥΦΟΣ ǅungla ǈ ﬁnance ẞtraße ΑΒΓ АБВГД Ⴀ Ꭰ 𐐀 𞤀 ᲐᲑ"},
      {"uppercase words", "THE UNIVERSAL DECLARATION OF HUMAN RIGHTS"},
      {"cjk", "日本語のテキスト 中文字符串 豈更車 𠀀𪜀𫝀 ㄅㄆ ｶﾀｶﾅ 한국어 텍스트"},
      {"hangul with marks", "한\xCC\x81국 \xEA\xB0\x80\xCC\x88"},
      {"punctuation", "Hello!!! What?? (yes) [no] {maybe} \"quoted\" 'single' «guillemets» — dash – en … ¿¡ 、。「」 ؟ ।"},
      {"symbols", "3.14 1,000,000 $100 50% #hashtag @user e-mail@example.com http://example.com/a?b=c&d=e ~^`|\\"},
      {"control characters",
       "a\x01" "b\x7F" "c\xC2\x85" "d\xE2\x80\x8B" "e\xC2\xAD" "f\xEF\xBB\xBF" "g\x0B" "h\x0C" "i\x1F" "j\r" "k"},
      {"nul byte", std::string("before\0after", 12)},
      {"replacement character", "a\xEF\xBF\xBD" "b \xEF\xBF\xBD"},
      {"private use and unassigned", "\xEE\x80\x80 \xF3\xB0\x80\x80 \xCD\xB8 \xF0\x9F\xAB\xB8 x\xE0\xA2\x9Cy"},
      {"unicode spaces",
       "a\xC2\xA0" "b\xE3\x80\x80" "c\xE2\x80\x83" "d\xE2\x80\x8A" "e\xE2\x80\xA8" "f\xE1\x9A\x80" "g\xE2\x80\xAF" "h"},
      {"invalid utf-8", "caf\xC3 \xFF\xFE abc \xED\xA0\x80 z\xF0\x9F\x98 end"},
      {"100 characters", std::string(100, 'a')},
      {"101 characters", std::string(101, 'a')},
      {"100 accented characters", [] { std::string s; for (int i = 0; i < 100; ++i) s += "é"; return s; }()},
      {"101 accented characters", [] { std::string s; for (int i = 0; i < 101; ++i) s += "é"; return s; }()},
      {"long word in text", "start " + std::string(250, 'x') + " end supercalifragilisticexpialidocious"},
      {"unknown characters", "emoji 😀🎉 xyz😀abc ☃ ⚡ 🜁 𓀀 ꙮ"},
      {"greedy failure", "nanana xyzq qqqq zzzzzz"},
      {"special tokens", "[CLS] hello [SEP] world [MASK] [PAD] [UNK] done"},
      {"special tokens glued", "a[SEP]b[MASK][MASK]c [mask] [Mask] [ SEP ] [SEP"},
      {"scripts", "مرحبا بالعالم שלום עולם สวัสดีชาวโลก नमस्ते दुनिया Γειά σου Κόσμε Привет мир Բարեւ"},
      {"digits of scripts", "٠١٢٣ ०१२३ ๐๑๒ ①②③ ⅠⅡⅢ ½ ²³"},
      {"apostrophes", "don't won't it's we're they've I'm y'all rock'n'roll"},
  };
  std::string long_text;
  while (long_text.size() < 64 * 1024) long_text += "All human beings are born free and equal in dignity and rights. ";
  cases.emplace_back("64 KB text", long_text);
  std::vector<Line> lines;
  for (auto& [name, text] : cases) {
    lines.push_back({text, "edge case \"" + name + "\""});
    lines.push_back({"Hello " + text + " world", "edge case \"" + name + "\" inside text"});
  }
  return lines;
}

// Every `stride`-th udhr paragraph, every `stride`-th botchan line, and the edge cases.
std::vector<Line> SingleTexts(size_t stride) {
  std::vector<Line> lines;
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  for (const size_t i : testing::UdhrIndices(udhr, stride)) {
    lines.push_back({udhr[i].text, "udhr.tsv text " + std::to_string(i + 1)});
  }
  const std::vector<std::string> botchan = SplitLines(ReadFileOrFail(SharedPath("corpus/botchan.txt")));
  for (const size_t i : testing::LineIndices(botchan.size(), stride)) {
    lines.push_back({botchan[i], "botchan.txt line " + std::to_string(i + 1)});
  }
  for (Line& line : EdgeCases()) lines.push_back(std::move(line));
  return lines;
}

// `A<TAB>B`: udhr paragraphs 2k+1 and 2k+2 (every `stride`-th such pair), then each edge
// case with the next one when both are under `max_edge_bytes`. Both sides split a line at its
// first tab.
std::vector<Line> PairTexts(size_t stride, size_t max_edge_bytes = SIZE_MAX) {
  std::vector<Line> lines;
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  for (const size_t i : testing::UdhrIndices(udhr, 2 * stride, udhr.empty() ? 0 : udhr.size() - 1)) {
    lines.push_back({udhr[i].text + "\t" + udhr[i + 1].text, "udhr.tsv texts " + std::to_string(i + 1) + "+" + std::to_string(i + 2)});
  }
  const std::vector<Line> cases = EdgeCases();
  for (size_t i = 0; i + 1 < cases.size(); ++i) {
    if (cases[i].text.size() > max_edge_bytes || cases[i + 1].text.size() > max_edge_bytes) continue;
    lines.push_back({cases[i].text + "\t" + cases[i + 1].text, cases[i].origin + " + " + cases[i + 1].origin});
  }
  lines.push_back({"only the first side", "pair without a tab (empty second text)"});
  return lines;
}

enum class Output { kIds, kOffsets, kDecode };

struct Mode {
  std::string name;
  bool pair = false;
  bool add_special_tokens = true;
  size_t max_length = 0;
  Output output = Output::kIds;

  std::string ReferenceFlags() const {
    std::string flags;
    if (pair) flags += " --pair";
    if (!add_special_tokens) flags += " --no-special-tokens";
    if (max_length > 0) flags += " --max-length=" + std::to_string(max_length);
    if (output == Output::kOffsets) flags += " --offsets";
    if (output == Output::kDecode) flags += " --decode";
    return flags;
  }
};

std::string Format(const Tokenizer& tokenizer, const Encoding& encoding, Output output) {
  std::string text;
  if (output == Output::kDecode) {
    return "x" + Hex(tokenizer.Decode(encoding.ids, true)) + " x" + Hex(tokenizer.Decode(encoding.ids, false));
  }
  for (size_t i = 0; i < encoding.ids.size(); ++i) {
    if (i > 0) text.push_back(' ');
    text += std::to_string(encoding.ids[i]);
    if (output == Output::kOffsets) {
      text += ":" + std::to_string(encoding.offsets[i].first) + ":" + std::to_string(encoding.offsets[i].second);
    }
  }
  return text;
}

std::string Encode(const Tokenizer& tokenizer, const std::string& line, const Mode& mode, Encoding* encoding,
                   Scratch* scratch) {
  EncodeOptions options;
  options.add_special_tokens = mode.add_special_tokens;
  options.max_length = mode.max_length;
  options.with_pieces = mode.output == Output::kOffsets;
  if (!mode.pair) {
    tokenizer.Encode(line, options, encoding, scratch);
  } else {
    const size_t tab = line.find('\t');
    const std::string_view view = line;
    tokenizer.EncodePair(view.substr(0, tab), tab == std::string::npos ? std::string_view() : view.substr(tab + 1),
                         options, encoding, scratch);
  }
  return Format(tokenizer, *encoding, mode.output);
}

class WordPieceExactnessTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(STAMEN_PYTHON)) << "the Hugging Face reference needs the project venv: " << STAMEN_PYTHON
                                           << " is missing; run scripts/setup.sh (tokenizers==0.23.3)";
    std::error_code error;
    fs::create_directories(STAMEN_WORDPIECE_CACHE_DIR, error);
    ASSERT_FALSE(error) << "cannot create " << STAMEN_WORDPIECE_CACHE_DIR << ": " << error.message();
    model_directory_ = SharedPath(std::string("models/configs/") + GetParam());
    model_ = model_directory_ + "/tokenizer.json";
    ASSERT_TRUE(fs::exists(model_)) << model_ << " is missing";
    auto loaded = Tokenizer::Load(model_);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    tokenizer_ = std::move(loaded.value());
    ASSERT_EQ(tokenizer_->GetStats().format, "huggingface");
    std::string pattern = (fs::temp_directory_path() / "stamen_wordpiece_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << "cannot create a temporary directory";
    directory_ = pattern;
  }

  void TearDown() override {
    std::error_code error;
    if (!directory_.empty()) fs::remove_all(directory_, error);
  }

  // Hugging Face's output for each line in `mode`.
  std::vector<std::string> Reference(const std::vector<Line>& lines, const Mode& mode) {
    const std::string input = (directory_ / "input.txt").string();
    const std::string output = (directory_ / "expected.txt").string();
    const std::string errors = (directory_ / "stderr.txt").string();
    {
      std::ofstream stream(input, std::ios::binary);
      for (const Line& line : lines) stream << line.text << '\n';
      EXPECT_TRUE(stream.good()) << "cannot write " << input;
    }
    const std::string command = ShellQuote(STAMEN_PYTHON) + " " + ShellQuote(STAMEN_WORDPIECE_REFERENCE_SCRIPT) + " " +
                                ShellQuote(model_) + " " + ShellQuote(input) + " " + ShellQuote(output) +
                                mode.ReferenceFlags() + " --cache-dir=" + ShellQuote(STAMEN_WORDPIECE_CACHE_DIR);
    return testing::RunReference(command, output, errors, "wordpiece_reference.py");
  }

  // Compares `got` with `expected` line by line; reports the first mismatches with inputs.
  void Compare(const std::vector<Line>& lines, const std::vector<std::string>& expected,
               const std::vector<std::string>& got, const std::string& mode) {
    testing::CompareLines(lines, expected, got, mode, std::string(GetParam()) + " " + mode);
  }

  void Check(const std::vector<Line>& lines, const Mode& mode) {
    const std::vector<std::string> expected = Reference(lines, mode);
    if (HasFailure()) return;
    std::vector<std::string> got;
    got.reserve(lines.size());
    Encoding encoding;
    Scratch scratch;
    for (const Line& line : lines) got.push_back(Encode(*tokenizer_, line.text, mode, &encoding, &scratch));
    Compare(lines, expected, got, mode.name);
  }

  std::string model_directory_;
  std::string model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  fs::path directory_;
};

TEST_P(WordPieceExactnessTest, SingleTextsMatch) {
  const std::vector<Line> lines = SingleTexts(1);
  const Mode mode{"single"};
  Check(lines, mode);
  // The batch encoder on two threads gives the same ids as one Encode per text.
  std::vector<std::string_view> texts;
  for (const Line& line : lines) texts.push_back(line.text);
  std::vector<Encoding> batch;
  tokenizer_->EncodeBatch(texts, EncodeOptions(), &batch, 2);
  Encoding encoding;
  Scratch scratch;
  size_t mismatches = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    mismatches += batch[i].ids != (tokenizer_->Encode(lines[i].text, EncodeOptions(), &encoding, &scratch), encoding.ids);
  }
  EXPECT_EQ(mismatches, 0u) << "EncodeBatch differs from Encode";
}

TEST_P(WordPieceExactnessTest, PairsMatch) { Check(PairTexts(1), Mode{"pair", true}); }

TEST_P(WordPieceExactnessTest, WithoutSpecialTokensMatch) {
  Check(SingleTexts(4), Mode{"single --no-special-tokens", false, false});
  Check(PairTexts(8), Mode{"pair --no-special-tokens", true, false});
}

TEST_P(WordPieceExactnessTest, TruncationMatches) {
  Check(SingleTexts(8), Mode{"single --max-length=16", false, true, 16});
  // Hugging Face keeps every combination of the two sides' overflowing windows: the 64 KB
  // texts paired with each other would make millions of them.
  Check(PairTexts(8, 4096), Mode{"pair --max-length=40", true, true, 40});
}

TEST_P(WordPieceExactnessTest, OffsetsMatch) {
  // Offsets are bytes of the caller's text; the reference only knows them for valid UTF-8.
  std::vector<Line> lines;
  for (Line& line : SingleTexts(4)) {
    if (IsValidUtf8(line.text)) lines.push_back(std::move(line));
  }
  Check(lines, Mode{"single offsets", false, true, 0, Output::kOffsets});
  std::vector<Line> pairs;
  for (Line& line : PairTexts(8)) {
    if (IsValidUtf8(line.text)) pairs.push_back(std::move(line));
  }
  Check(pairs, Mode{"pair offsets", true, true, 0, Output::kOffsets});
}

TEST_P(WordPieceExactnessTest, DecodeMatches) { Check(SingleTexts(8), Mode{"decode", false, true, 0, Output::kDecode}); }

// The other BertNormalizer settings, no normalizer or pre-tokenizer, and added tokens that
// are normalized or strip spaces, as variants of all-MiniLM-L6-v2's tokenizer.json (ids and
// offsets of the valid UTF-8 lines).
TEST_P(WordPieceExactnessTest, ConfigurationVariantsMatch) {
  if (std::string_view(GetParam()) != "all-MiniLM-L6-v2") GTEST_SKIP() << "run on all-MiniLM-L6-v2 only";
  const std::string original = ReadFileOrFail(model_);
  const std::string normalizer =
      R"("normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true})";
  const std::string pre_tokenizer = R"("pre_tokenizer":{"type":"BertPreTokenizer"})";
  const std::string mask = R"("content":"[MASK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false)";
  const std::string unknown = R"("content":"[UNK]","single_word":false,"lstrip":false,"rstrip":false,"normalized":false)";
  ASSERT_NE(original.find(normalizer), std::string::npos);
  ASSERT_NE(original.find(pre_tokenizer), std::string::npos);
  ASSERT_NE(original.find(mask), std::string::npos);
  ASSERT_NE(original.find(unknown), std::string::npos);
  auto bert = [](const char* clean, const char* chinese, const char* strip, const char* lowercase) {
    return std::string(R"("normalizer":{"type":"BertNormalizer","clean_text":)") + clean + R"(,"handle_chinese_chars":)" +
           chinese + R"(,"strip_accents":)" + strip + R"(,"lowercase":)" + lowercase + "}";
  };
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> variants = {
      {"cased", {{normalizer, bert("true", "true", "null", "false")}}},
      {"strip accents only", {{normalizer, bert("true", "true", "true", "false")}}},
      {"lowercase only", {{normalizer, bert("true", "true", "false", "true")}}},
      {"no chinese characters", {{normalizer, bert("true", "false", "null", "true")}}},
      {"no clean text", {{normalizer, bert("false", "true", "null", "true")}}},
      {"no normalizer", {{normalizer, R"("normalizer":null)"}}},
      {"no pre-tokenizer", {{pre_tokenizer, R"("pre_tokenizer":null)"}}},
      {"normalized added tokens",
       {{mask, R"("content":"[MASK]","single_word":false,"lstrip":true,"rstrip":false,"normalized":true)"},
        {unknown, R"("content":"[UNK]","single_word":true,"lstrip":false,"rstrip":true,"normalized":false)"}}},
  };
  std::vector<Line> lines;
  for (Line& line : SingleTexts(16)) {
    if (IsValidUtf8(line.text)) lines.push_back(std::move(line));
  }
  lines.push_back({"Bonjour [MASK] le [mask] monde [UNK]x [UNK]  [UNK]", "added tokens in text"});
  for (const auto& [name, replacements] : variants) {
    std::string json = original;
    for (const auto& [from, to] : replacements) json.replace(json.find(from), from.size(), to);
    model_ = (directory_ / "variant.json").string();
    std::ofstream(model_, std::ios::binary) << json;
    auto loaded = Tokenizer::Load(model_);
    ASSERT_TRUE(loaded.ok()) << name << ": " << loaded.status().message();
    tokenizer_ = std::move(loaded.value());
    Check(lines, Mode{name + " offsets", false, true, 0, Output::kOffsets});
  }
}

// A folder with vocab.txt and tokenizer_config.json (no tokenizer.json) gives the ids of the
// tokenizer.json, itself checked against Hugging Face above.
TEST_P(WordPieceExactnessTest, VocabTxtMatchesTokenizerJson) {
  if (!fs::exists(model_directory_ + "/vocab.txt")) GTEST_SKIP() << GetParam() << " has no vocab.txt";
  const fs::path folder = directory_ / "vocab_only";
  fs::create_directory(folder);
  fs::copy_file(model_directory_ + "/vocab.txt", folder / "vocab.txt");
  fs::copy_file(model_directory_ + "/tokenizer_config.json", folder / "tokenizer_config.json");
  auto loaded = Tokenizer::Load(folder.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& vocabulary = *loaded.value();
  EXPECT_EQ(vocabulary.GetStats().format, "vocab.txt");
  EXPECT_EQ(vocabulary.VocabularySize(), tokenizer_->VocabularySize());
  EXPECT_EQ(vocabulary.SpecialTokenCount(true), tokenizer_->SpecialTokenCount(true));
  for (const Mode& mode : {Mode{"single"}, Mode{"pair", true}, Mode{"single offsets", false, true, 0, Output::kOffsets},
                           Mode{"decode", false, true, 0, Output::kDecode}}) {
    const std::vector<Line> lines = mode.pair ? PairTexts(2) : SingleTexts(mode.output == Output::kIds ? 1 : 8);
    std::vector<std::string> expected, got;
    Encoding encoding;
    Scratch scratch;
    for (const Line& line : lines) {
      expected.push_back(Encode(*tokenizer_, line.text, mode, &encoding, &scratch));
      got.push_back(Encode(vocabulary, line.text, mode, &encoding, &scratch));
    }
    Compare(lines, expected, got, "vocab.txt vs tokenizer.json " + mode.name);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, WordPieceExactnessTest,
                         ::testing::Values("all-MiniLM-L6-v2", "ms-marco-MiniLM-L-6-v2", "ms-marco-MiniLM-L-12-v2"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace stamen::tokenizer
