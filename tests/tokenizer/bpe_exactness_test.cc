// Checks the BPE tokenizer against Hugging Face tokenizers 0.23.3 (bpe_reference.py in the
// project venv) with the real Qwen2 tokenizer: every line of udhr.tsv, botchan and wagahaiwa,
// the shared edge cases and BPE-specific ones (newlines, whitespace runs, digits, contractions,
// NFC, special-token strings), alone and in pairs through a template, decoded, and in variants
// of the file (GPT-2 ByteLevel split, prefix space, the cl100k pattern, ignore_merges); a
// character-level BPE with continuing_subword_prefix, end_of_word_suffix, unk and
// byte_fallback; the vocab.json + merges.txt folder against the tokenizer.json; EmbeddingGemma's
// tokenizer.json (when present) and a committed fixture in its layout (Replace normalizer,
// literal Split, byte fallback, its decoder); and, since bpe_reference.py runs any
// tokenizer.json, DeBERTa-v3's Unigram tokenizer.json with the Replace regexes real files use.
// References are cached in the build tree, keyed by everything they depend on. Under
// STAMEN_EXACTNESS_SAMPLE the corpora are sampled (see test_corpus.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edge_cases.h"
#include "reference_lines.h"
#include "test_corpus.h"
#include "tokenizer/tokenizer.h"

#ifndef STAMEN_PYTHON
#error "STAMEN_PYTHON must name the venv python"
#endif
#ifndef STAMEN_BPE_REFERENCE_SCRIPT
#error "STAMEN_BPE_REFERENCE_SCRIPT must name bpe_reference.py"
#endif
#ifndef STAMEN_CLI
#error "STAMEN_CLI must name the stamen binary"
#endif
#ifndef STAMEN_BPE_CACHE_DIR
#error "STAMEN_BPE_CACHE_DIR must name a writable folder"
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

std::string Repeat(std::string_view unit, size_t count) { return testing::Repeat(unit, count); }

// Cases aimed at byte-level BPE and the Qwen2 pattern; texts may hold newlines.
std::vector<Line> BpeEdgeCases() {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"newline", "a\nb"},
      {"newlines", "\n\n\n"},
      {"crlf", "one\r\ntwo\r\n"},
      {"spaces before newline", "a   \n  b"},
      {"newline then spaces", "a\n   b"},
      {"tabs and newlines", "\t\n\t x\t\t\ny"},
      {"space run at end", "end     "},
      {"space run before word", "a     b"},
      {"space run before punctuation", "a     ."},
      {"space run before digit", "a     1"},
      {"mixed whitespace", " \t\v\f\r\n\u00A0\u3000x"},
      {"punctuation then newlines", "Hello!!!\n\n\nWorld?\r\n"},
      {"digits", "0123456789 12 345 6789 3.14159 1,000,000"},
      {"digits of scripts", "٠١٢٣ ०१२३ ①②③ ⅠⅡⅢ ½ ²³ １２３"},
      {"contractions", "don't won't it's we're they've I'm y'all we'll I'd"},
      {"upper-case contractions", "DON'T IT'S WE'RE THEY'VE I'M WE'LL I'D 'S 'T 'RE 'Ve 'lL"},
      {"long s contraction", "it\u017F x'\u017F 'ſt"},
      {"apostrophes", "'' ''' 'x 'abc rock'n'roll ' s"},
      {"emoji", "I ❤️ Unicode 😀😀😀! 👨‍👩‍👧‍👦 🇯🇵 1️⃣"},
      {"combining marks (NFC)", "e\u0301 a\u0308 o\u0323\u0302 A\u030A\u0301 \u1100\u1161\u11A8 \u0B47\u0B3E"},
      {"canonical reordering", "a\u0301\u0323 a\u0323\u0301 q\u0307\u0323 \u0344 \u0958 \u2126 \u212B"},
      {"mark at start", "\u0301abc"},
      {"special tokens", "<|endoftext|>"},
      {"special tokens in text", "Hello<|endoftext|>world <|im_start|>user\nhi<|im_end|>\n"},
      {"special-like", "<|endoftext| <|im_start <|ENDOFTEXT|> <|endoftext|><|endoftext|>"},
      {"long CJK run", Repeat("吾輩は猫である名前はまだ無い", 40)},
      {"long letter run", Repeat("abcdefghij", 300)},
      {"long Cyrillic word", Repeat("Всеобщая", 50)},
      {"code", "def f(x):\n    return x**2  # square\n\tpass\n"},
      {"url", "https://example.com/a?b=c&d=e user@example.org"},
      {"invalid utf-8", "caf\xC3 \xFF\xFE abc \xED\xA0\x80 z\xF0\x9F\x98 end"},
      {"nul", std::string("a\0b", 3)},
  };
  std::vector<Line> lines;
  for (const auto& [name, text] : cases) {
    lines.push_back({text, "edge case \"" + name + "\""});
    lines.push_back({"Hello " + text + " world", "edge case \"" + name + "\" inside text"});
  }
  return lines;
}

// Every `stride`-th line of udhr.tsv (text column), botchan and wagahaiwa, then the shared
// and BPE edge cases.
std::vector<Line> CorpusLines(size_t stride) {
  std::vector<Line> lines;
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  for (const size_t i : testing::UdhrIndices(udhr, stride)) {
    lines.push_back({udhr[i].text, "udhr.tsv line " + std::to_string(i + 1) + " (" + udhr[i].language + ")"});
  }
  for (const char* corpus : {"corpus/botchan.txt", "corpus/wagahaiwa_nekodearu.txt"}) {
    const std::vector<std::string> texts = SplitLines(ReadFileOrFail(SharedPath(corpus)));
    for (const size_t i : testing::LineIndices(texts.size(), stride)) {
      lines.push_back({texts[i], std::string(corpus) + " line " + std::to_string(i + 1)});
    }
  }
  for (const testing::EdgeCase& edge_case : testing::EdgeCases(udhr)) {
    lines.push_back({edge_case.text, "shared edge case \"" + edge_case.name + "\""});
  }
  for (Line& line : BpeEdgeCases()) lines.push_back(std::move(line));
  return lines;
}

struct Mode {
  std::string name;
  bool pair = false;
  bool add_special_tokens = true;
  size_t max_length = 0;
  bool decode = false;

  std::string Flags() const {
    std::string flags;
    if (pair) flags += " --pair";
    if (!add_special_tokens) flags += " --no-special-tokens";
    if (max_length > 0) flags += " --max-length=" + std::to_string(max_length);
    if (decode) flags += " --decode";
    return flags;
  }
};

std::string Encode(const Tokenizer& tokenizer, const std::string& text, const Mode& mode, Encoding* encoding,
                   Scratch* scratch) {
  EncodeOptions options;
  options.add_special_tokens = mode.add_special_tokens;
  options.max_length = mode.max_length;
  if (mode.pair) {
    // A pair line is `A<US>B` (unit separator, which no test text holds).
    const size_t split = text.find('\x1F');
    const std::string_view view = text;
    tokenizer.EncodePair(view.substr(0, split), view.substr(split + 1), options, encoding, scratch);
  } else {
    tokenizer.Encode(text, options, encoding, scratch);
  }
  if (mode.decode) {
    return "x" + Hex(tokenizer.Decode(encoding->ids, true)) + " x" + Hex(tokenizer.Decode(encoding->ids, false));
  }
  std::string out;
  for (size_t i = 0; i < encoding->ids.size(); ++i) {
    if (i > 0) out.push_back(' ');
    out += std::to_string(encoding->ids[i]);
  }
  return out;
}

class BpeExactnessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = Tokenizer::Load(SharedPath("models/qwen2-bpe/tokenizer.json"));
    if (loaded.ok()) qwen_ = std::move(loaded.value()).release();
    else load_error_ = new std::string(loaded.status().message());
  }
  static void TearDownTestSuite() {
    delete qwen_;
    qwen_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(fs::exists(STAMEN_PYTHON)) << "the Hugging Face reference needs the project venv: " << STAMEN_PYTHON
                                           << " is missing; run scripts/setup.sh (tokenizers==0.23.3)";
    ASSERT_NE(qwen_, nullptr) << (load_error_ ? *load_error_ : "");
    std::error_code error;
    fs::create_directories(STAMEN_BPE_CACHE_DIR, error);
    std::string pattern = (fs::temp_directory_path() / "stamen_bpe_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
  }
  void TearDown() override {
    std::error_code error;
    if (!directory_.empty()) fs::remove_all(directory_, error);
  }

  std::vector<std::string> Reference(const std::string& model, const std::vector<Line>& lines, const Mode& mode) {
    const std::string input = (directory_ / "input.hex").string();
    const std::string output = (directory_ / "expected.txt").string();
    const std::string errors = (directory_ / "stderr.txt").string();
    {
      std::ofstream stream(input, std::ios::binary);
      for (const Line& line : lines) {
        if (mode.pair) {
          const size_t split = line.text.find('\x1F');
          stream << Hex(line.text.substr(0, split)) << ' ' << Hex(line.text.substr(split + 1)) << '\n';
        } else {
          stream << Hex(line.text) << '\n';
        }
      }
    }
    const std::string command = ShellQuote(STAMEN_PYTHON) + " " + ShellQuote(STAMEN_BPE_REFERENCE_SCRIPT) + " " +
                                ShellQuote(model) + " " + ShellQuote(input) + " " + ShellQuote(output) + mode.Flags() +
                                " --cache-dir=" + ShellQuote(STAMEN_BPE_CACHE_DIR);
    return testing::RunReference(command, output, errors, "bpe_reference.py");
  }

  void Compare(const std::vector<Line>& lines, const std::vector<std::string>& expected,
               const std::vector<std::string>& got, const std::string& what) {
    testing::CompareLines(lines, expected, got, what, what);
  }

  void Check(const Tokenizer& tokenizer, const std::string& model, const std::vector<Line>& lines, const Mode& mode) {
    const std::vector<std::string> expected = Reference(model, lines, mode);
    if (HasFailure()) return;
    std::vector<std::string> got;
    Encoding encoding;
    Scratch scratch;
    for (const Line& line : lines) got.push_back(Encode(tokenizer, line.text, mode, &encoding, &scratch));
    Compare(lines, expected, got, mode.name);
  }

  // A copy of the Qwen2 tokenizer.json with `replacements` made, loaded.
  std::unique_ptr<Tokenizer> Variant(const std::vector<std::pair<std::string, std::string>>& replacements,
                                     std::string* path) {
    std::string json = ReadFileOrFail(SharedPath("models/qwen2-bpe/tokenizer.json"));
    for (const auto& [from, to] : replacements) {
      const size_t found = json.find(from);
      EXPECT_NE(found, std::string::npos) << from;
      if (found == std::string::npos) return nullptr;
      json.replace(found, from.size(), to);
    }
    *path = (directory_ / "variant.json").string();
    std::ofstream(*path, std::ios::binary) << json;
    auto loaded = Tokenizer::Load(*path);
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    return loaded.ok() ? std::move(loaded.value()) : nullptr;
  }

  static inline Tokenizer* qwen_ = nullptr;
  static inline std::string* load_error_ = nullptr;
  fs::path directory_;
};

const std::string kQwenJson = SharedPath("models/qwen2-bpe/tokenizer.json");

TEST_F(BpeExactnessTest, Qwen2MatchesOnEveryCorpusLine) {
  const std::vector<Line> lines = CorpusLines(1);
  Check(*qwen_, kQwenJson, lines, Mode{"qwen2 tokenizer.json"});
  // The batch encoder on two threads gives the same ids as one Encode per text.
  std::vector<std::string_view> texts(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) texts[i] = lines[i].text;
  std::vector<Encoding> batch;
  qwen_->EncodeBatch(texts, EncodeOptions(), &batch, 2);
  Encoding encoding;
  Scratch scratch;
  size_t mismatches = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    qwen_->Encode(lines[i].text, EncodeOptions(), &encoding, &scratch);
    mismatches += batch[i].ids != encoding.ids;
  }
  EXPECT_EQ(mismatches, 0u) << "EncodeBatch differs from Encode";
}

TEST_F(BpeExactnessTest, DecodeMatches) { Check(*qwen_, kQwenJson, CorpusLines(16), Mode{"qwen2 decode", false, true, 0, true}); }

// vocab.json + merges.txt (+ tokenizer_config.json) with Qwen2's settings: the same ids as the
// tokenizer.json, itself checked against Hugging Face above.
TEST_F(BpeExactnessTest, VocabJsonAndMergesTxtMatchTokenizerJson) {
  const fs::path folder = directory_ / "vocab_only";
  fs::create_directory(folder);
  for (const char* name : {"vocab.json", "merges.txt", "tokenizer_config.json"}) {
    fs::copy_file(SharedPath(std::string("models/qwen2-bpe/") + name), folder / name);
  }
  for (const std::string& path : {folder.string(), (folder / "vocab.json").string()}) {
    auto loaded = Tokenizer::Load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    const Tokenizer& files = *loaded.value();
    EXPECT_EQ(files.GetStats().format, "vocab.json");
    EXPECT_EQ(files.VocabularySize(), qwen_->VocabularySize());
    const std::vector<Line> lines = CorpusLines(1);
    std::vector<std::string> expected, got;
    Encoding encoding;
    Scratch scratch;
    for (const Line& line : lines) {
      expected.push_back(Encode(*qwen_, line.text, Mode{}, &encoding, &scratch));
      got.push_back(Encode(files, line.text, Mode{}, &encoding, &scratch));
    }
    Compare(lines, expected, got, "vocab.json + merges.txt vs tokenizer.json (" + path + ")");
  }
}

// Qwen3-Embedding's layout: a TemplateProcessing that appends <|endoftext|>, with pairs and
// truncation.
TEST_F(BpeExactnessTest, TemplateProcessingMatches) {
  const std::string byte_level_post =
      R"("post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false})";
  const std::string eos = R"({"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}})";
  const std::string eos1 = R"({"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}})";
  const std::string template_post =
      R"("post_processor": {"type": "Sequence", "processors": [{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}, {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}, )" +
      eos + R"(], "pair": [{"Sequence": {"id": "A", "type_id": 0}}, )" + eos +
      R"(, {"Sequence": {"id": "B", "type_id": 1}}, )" + eos1 +
      R"(], "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [151643], "tokens": ["<|endoftext|>"]}}}]})";
  std::string path;
  auto tokenizer = Variant({{byte_level_post, template_post}}, &path);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->SpecialTokenCount(false), 1u);
  std::vector<Line> lines = CorpusLines(8);
  Check(*tokenizer, path, lines, Mode{"template single"});
  Check(*tokenizer, path, lines, Mode{"template single --no-special-tokens", false, false});
  Check(*tokenizer, path, lines, Mode{"template single --max-length=24", false, true, 24});
  std::vector<Line> pairs;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    if (lines[i].text.size() > 4096 || lines[i + 1].text.size() > 4096) continue;
    if (lines[i].text.find('\x1F') != std::string::npos || lines[i + 1].text.find('\x1F') != std::string::npos) continue;
    pairs.push_back({lines[i].text + '\x1F' + lines[i + 1].text, lines[i].origin + " + " + lines[i + 1].origin});
  }
  Check(*tokenizer, path, pairs, Mode{"template pair", true});
  Check(*tokenizer, path, pairs, Mode{"template pair --max-length=41", true, true, 41});
}

// Other pre-tokenizer setups on the Qwen2 vocabulary: GPT-2's (ByteLevel with its own split and
// a prefix space, no normalizer), ByteLevel's split without prefix space, the cl100k pattern,
// ignore_merges, no pre-tokenizer at all.
TEST_F(BpeExactnessTest, ConfigurationVariantsMatch) {
  const std::string split =
      R"({"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, )";
  const std::string byte_level =
      R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]})";
  const std::string normalizer = R"("normalizer": {"type": "NFC"})";
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> variants = {
      {"gpt-2 byte level (prefix space, regex, no NFC)",
       {{normalizer, R"("normalizer": null)"},
        {split, ""},
        {byte_level, R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}]})"}}},
      {"split then byte level with regex", {{byte_level, R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": true}]})"}}},
      {"split then byte level with prefix space", {{byte_level, R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": false}]})"}}},
      {"cl100k pattern", {{R"(\\p{N}| ?[^)", R"(\\p{N}{1,3}| ?[^)"}}},
      {"ignore_merges", {{R"("ignore_merges": false)", R"("ignore_merges": true)"}}},
      {"no pre-tokenizer split", {{split, ""}}},
  };
  std::vector<Line> lines = CorpusLines(16);
  for (const auto& [name, replacements] : variants) {
    std::string path;
    auto tokenizer = Variant(replacements, &path);
    ASSERT_NE(tokenizer, nullptr) << name;
    Check(*tokenizer, path, lines, Mode{name});
  }
}

// A character-level BPE built here: continuing_subword_prefix "##", end_of_word_suffix "</w>",
// an unknown token (fused or not), byte fallback over ASCII bytes only, merges as [a, b] pairs.
TEST_F(BpeExactnessTest, CharacterLevelBpeMatches) {
  std::vector<std::string> vocabulary = {"<unk>"};
  for (int byte = 0; byte < 0x80; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    vocabulary.push_back(name);
  }
  for (char c = 'a'; c <= 'z'; ++c) {
    for (const std::string& form : {std::string(1, c), "##" + std::string(1, c), std::string(1, c) + "</w>",
                                    "##" + std::string(1, c) + "</w>"}) {
      vocabulary.push_back(form);
    }
  }
  for (const char* form : {"é", "##é", "é</w>", " ", "##.", ".</w>"}) vocabulary.push_back(form);
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"t", "##h"}, {"th", "##e</w>"}, {"a", "##n"}, {"an", "##d</w>"}, {"##i", "##n"}, {"##in", "##g</w>"},
      {"i", "##n"}, {"##e", "##r"}, {"##er", "##s</w>"}, {"o", "##f</w>"}, {"r", "##i"}, {"ri", "##g"},
      {"rig", "##h"}, {"righ", "##t"}, {"right", "##s</w>"}, {"h", "##u"}, {"hu", "##m"}, {"hum", "##a"},
      {"huma", "##n</w>"}, {"##a", "##l</w>"}};
  for (const auto& [left, right] : merges) vocabulary.push_back(left + right.substr(2));
  auto json_string = [](const std::string& text) {
    std::string out = "\"";
    for (char c : text) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return out + "\"";
  };
  auto make = [&](bool fuse_unknown, bool byte_fallback) {
    std::string json = R"({"version": "1.0", "added_tokens": [{"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}], "normalizer": {"type": "NFC"}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}, "post_processor": null, "decoder": null, "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>", "fuse_unk": )";
    json += fuse_unknown ? "true" : "false";
    json += R"(, "byte_fallback": )";
    json += byte_fallback ? "true" : "false";
    json += R"(, "ignore_merges": false, "vocab": {)";
    for (size_t i = 0; i < vocabulary.size(); ++i) json += (i ? ", " : "") + json_string(vocabulary[i]) + ": " + std::to_string(i);
    json += R"(}, "merges": [)";
    for (size_t i = 0; i < merges.size(); ++i) {
      json += (i ? ", [" : "[") + json_string(merges[i].first) + ", " + json_string(merges[i].second) + "]";
    }
    return json + "]}}";
  };
  std::vector<Line> lines = CorpusLines(64);
  lines.push_back({"the human rights and freedoms of everyone Ünïcödé 123 éé x", "character-level sample"});
  for (const auto& [fuse, fallback] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
    const std::string path = (directory_ / "char_bpe.json").string();
    std::ofstream(path, std::ios::binary) << make(fuse, fallback);
    auto loaded = Tokenizer::Load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    const std::string name = std::string("character-level") + (fuse ? " fuse_unk" : "") + (fallback ? " byte_fallback" : "");
    Check(*loaded.value(), path, lines, Mode{name});
    Check(*loaded.value(), path, lines, Mode{name + " decode", false, true, 0, true});
  }
}

// `stamen tokenize --model tokenizer.json` prints, one line per input line, the ids of Encode
// (checked against Hugging Face above), alone and with the batch encoder; invalid UTF-8
// reaches it as raw bytes.
TEST_F(BpeExactnessTest, TokenizeCommandPrintsEncodeIds) {
  std::vector<Line> lines;
  for (Line& line : CorpusLines(8)) {
    if (line.text.find('\n') == std::string::npos) lines.push_back(std::move(line));
  }
  const std::string input = (directory_ / "lines.txt").string();
  {
    std::ofstream stream(input, std::ios::binary);
    for (const Line& line : lines) stream << line.text << '\n';
  }
  std::vector<std::string> expected;
  Encoding encoding;
  Scratch scratch;
  for (const Line& line : lines) expected.push_back(Encode(*qwen_, line.text, Mode{}, &encoding, &scratch));
  for (const char* flags : {"", " --batch"}) {
    const std::string output = (directory_ / "got.txt").string();
    const std::string command = ShellQuote(STAMEN_CLI) + " tokenize --model " + ShellQuote(kQwenJson) + flags + " <" +
                                ShellQuote(input) + " >" + ShellQuote(output);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    Compare(lines, expected, SplitLines(ReadFileOrFail(output)), std::string("stamen tokenize") + flags);
  }
}

// EmbeddingGemma-300m's tokenizer.json (262,144 pieces, 514,906 merges, 6,415 added tokens):
// Replace(" " → "▁"), Split(" ", MergedWithPrevious), BPE with byte_fallback, the
// <bos> A <eos> template and the Replace/ByteFallback/Fuse decoder. From
// $STAMEN_EMBEDDINGGEMMA_DIR, else $STAMEN_MODELS or ../models beside the checkout; skipped
// when absent (CI: the committed gemma-like fixture below covers the same paths).
std::string EmbeddingGemmaTokenizerJson() {
  fs::path folder;
  if (const char* dir = std::getenv("STAMEN_EMBEDDINGGEMMA_DIR"); dir != nullptr && *dir != '\0') {
    folder = dir;
  } else if (const char* models = std::getenv("STAMEN_MODELS"); models != nullptr && *models != '\0') {
    folder = fs::path(models) / "embeddinggemma-300m";
  } else {
    folder = fs::path(STAMEN_SOURCE_DIR).parent_path() / "models" / "embeddinggemma-300m";
  }
  return (folder / "tokenizer.json").string();
}

// Pairs of neighbouring lines, `A<US>B`, short enough for the reference's input.
std::vector<Line> PairLines(const std::vector<Line>& lines) {
  std::vector<Line> pairs;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    if (lines[i].text.size() > 4096 || lines[i + 1].text.size() > 4096) continue;
    if (lines[i].text.find('\x1F') != std::string::npos || lines[i + 1].text.find('\x1F') != std::string::npos) continue;
    pairs.push_back({lines[i].text + '\x1F' + lines[i + 1].text, lines[i].origin + " + " + lines[i + 1].origin});
  }
  return pairs;
}

// Gemma's added tokens ("\n" and "▁" runs, <start_of_turn>, <bos> in text), spaces that the
// Replace normalizer turns into "▁", and characters that only byte fallback can spell.
std::vector<Line> GemmaEdgeCases() {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"turns", "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n"},
      {"specials in text", "<bos>x<eos> <pad><unk><mask> <unused0><unused1>"},
      {"meta-space runs", "\u2581\u2581 \u2581\u2581\u2581\u2581\u2581\u2581 a\u2581b"},
      {"space runs", "a  b   c    d          e"},
      {"newline runs", "a\n\nb\n\n\n\n\n\n\n\nc\r\n\r\nd"},
      {"tab runs", "\t\ta\t\t\t\tb"},
      {"rare characters", "\U0001F9EC \U00010348 \u0E3F \uFFFD \U000E0041 \u200D"},
      {"leading and trailing spaces", "   x   "},
      {"html tags", "<table><tr><td>x</td><td></td></tr></table><b>bold</b><br/><div class=\"a\">d</div>"},
      {"unused numbers", "<unused12><unused123><unused1234><unused6241><unused6242><unused99999><unused-1>"},
      {"cut-off tokens", "<unused <start_of_turn <start_of_tur> <end_of_turn</end_of_turn> x <unused1"},
      {"angle brackets", "<<<<>>>> <=< <<= a<b<=c x<y> <<>> <</td>> <<td>>"},
      {"adjacent tokens", "<bos><eos><pad><start_of_turn><end_of_turn>\n\n\n\n\n\n<unused0>\t\t\t<mask>"},
      {"token at the end", "text ends with <end_of_turn>"},
  };
  std::vector<Line> lines;
  for (const auto& [name, text] : cases) lines.push_back({text, "gemma edge case \"" + name + "\""});
  return lines;
}

// The "<"-heavy benchmark inputs (bench/make_added_token_inputs.py: an HTML page and C++ code),
// whole and line by line.
std::vector<Line> AngleBracketLines() {
  std::vector<Line> lines;
  for (const char* name : {"gemma_html_4098.txt", "gemma_code_4098.txt"}) {
    const std::string path = std::string(STAMEN_SOURCE_DIR) + "/bench/data/tokenizer/" + name;
    const std::string text = ReadFileOrFail(path);
    lines.push_back({text, path});
    const std::vector<std::string> texts = SplitLines(text);
    for (size_t i = 0; i < texts.size(); ++i) lines.push_back({texts[i], path + " line " + std::to_string(i + 1)});
  }
  return lines;
}

TEST_F(BpeExactnessTest, EmbeddingGemmaMatches) {
  const std::string path = EmbeddingGemmaTokenizerJson();
  std::error_code error;
  if (!fs::exists(path, error)) GTEST_SKIP() << path << " not found (set STAMEN_EMBEDDINGGEMMA_DIR)";
  auto loaded = Tokenizer::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Tokenizer& gemma = *loaded.value();
  EXPECT_EQ(gemma.VocabularySize(), 262145u);
  std::vector<Line> lines = CorpusLines(1);
  for (Line& line : GemmaEdgeCases()) lines.push_back(std::move(line));
  for (Line& line : AngleBracketLines()) lines.push_back(std::move(line));
  Check(gemma, path, lines, Mode{"embeddinggemma"});
  Check(gemma, path, lines, Mode{"embeddinggemma --no-special-tokens", false, false});
  std::vector<Line> sampled = CorpusLines(16);
  for (Line& line : GemmaEdgeCases()) sampled.push_back(std::move(line));
  Check(gemma, path, sampled, Mode{"embeddinggemma decode", false, true, 0, true});
  Check(gemma, path, PairLines(sampled), Mode{"embeddinggemma pair --max-length=64", true, true, 64});
}

// The committed gemma-like fixture (make_gemma_like_bpe.py): Gemma's layout on a 3,000-piece
// vocabulary, where most scripts spell themselves in <0xXX> pieces; and variants of it where
// the Split on " " acts (no Replace normalizer), with each literal-split behavior.
TEST_F(BpeExactnessTest, GemmaLikeFixtureMatches) {
  const std::string path = std::string(STAMEN_TOKENIZER_TEST_DATA_DIR) + "/gemma-like-bpe/tokenizer.json";
  auto loaded = Tokenizer::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  std::vector<Line> lines = CorpusLines(1);
  for (Line& line : GemmaEdgeCases()) lines.push_back(std::move(line));
  Check(*loaded.value(), path, lines, Mode{"gemma-like"});
  std::vector<Line> sampled = CorpusLines(16);
  for (Line& line : GemmaEdgeCases()) sampled.push_back(std::move(line));
  Check(*loaded.value(), path, sampled, Mode{"gemma-like decode", false, true, 0, true});
  Check(*loaded.value(), path, PairLines(sampled), Mode{"gemma-like pair", true});

  const std::string fixture = ReadFileOrFail(path);
  const std::string normalizer = R"("normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"})";
  const std::string behavior = R"("behavior": "MergedWithPrevious")";
  for (const char* name : {"MergedWithPrevious", "MergedWithNext", "Isolated", "Removed"}) {
    std::string json = fixture;
    const size_t at_normalizer = json.find(normalizer);
    ASSERT_NE(at_normalizer, std::string::npos);
    json.replace(at_normalizer, normalizer.size(), R"("normalizer": null)");
    const size_t at_behavior = json.find(behavior);
    ASSERT_NE(at_behavior, std::string::npos);
    json.replace(at_behavior, behavior.size(), std::string(R"("behavior": ")") + name + "\"");
    const std::string variant = (directory_ / "split_variant.json").string();
    std::ofstream(variant, std::ios::binary) << json;
    auto split = Tokenizer::Load(variant);
    ASSERT_TRUE(split.ok()) << split.status().message();
    Check(*split.value(), variant, sampled, Mode{std::string("gemma-like, no normalizer, Split ") + name});
  }
}

// The gemma-like fixture with added tokens that overlap (prefixes of one another, sharing
// bytes with Gemma's), raw and normalized, first without flags and then with single_word,
// lstrip and rstrip, then all single_word: the added-token trie's leftmost-longest matches on
// texts that make them adjacent, cut them off and end with them, put them next to characters
// of every class of Hugging Face's \w and of none (word_character.h), and on the "<"-heavy
// benchmark inputs.
TEST_F(BpeExactnessTest, GemmaLikeOverlappingAddedTokensMatch) {
  const std::string path = std::string(STAMEN_TOKENIZER_TEST_DATA_DIR) + "/gemma-like-bpe/tokenizer.json";
  const std::string fixture = ReadFileOrFail(path);
  auto base = Tokenizer::Load(path);
  ASSERT_TRUE(base.ok()) << base.status().message();
  const size_t first_id = base.value()->VocabularySize();
  struct Added {
    std::string content;
    bool normalized = false;
    const char* flags = R"("single_word": false, "lstrip": false, "rstrip": false)";
  };
  const char* kSingleWord = R"("single_word": true, "lstrip": false, "rstrip": false)";
  const char* kBothStrips = R"("single_word": false, "lstrip": true, "rstrip": true)";
  const char* kLeftStrip = R"("single_word": false, "lstrip": true, "rstrip": false)";
  const std::vector<std::pair<std::string, std::vector<Added>>> variants = {
      {"no flags",
       {{"<a"}, {"<ab>"}, {"<abc>"}, {"<"}, {"<td>"}, {"</td>"}, {"<unused1>0"}, {"ab cd", true}, {"ab c", true}}},
      {"single_word, lstrip, rstrip",
       {{"<a", false, kLeftStrip}, {"<ab>", false, kSingleWord}, {"<abc>", false, kBothStrips}, {"<td>"},
        {"</td>", false, kBothStrips}, {"ab cd", true, kBothStrips}, {"ab c", true, kLeftStrip}}},
      // Normalized tokens see "▁" for each space: no word character to \w, so "ab cd" between
      // spaces is still a single word.
      {"single_word, raw and normalized",
       {{"<ab>", false, kSingleWord}, {"<a", false, kSingleWord}, {"ab cd", true, kSingleWord},
        {"ab c", true, kSingleWord}, {"</td>"}}},
  };
  std::vector<Line> lines = {
      {"x<ab>y <abc> <abd> <<a< <abc<ab> <a<ab><abc>", "overlapping tokens"},
      {"<td><td></td></td><ab><a<td>", "adjacent tokens"},
      {"a<ab>b <ab> x <abc>  y  <abc>", "single_word and strips"},
      {"<unused1>0 <unused1>00 <unused10> <unused1>", "a token that extends one of Gemma's"},
      {"ab cd ab c abcd ab  cd xab cdx ab cde", "normalized tokens"},
      {"ends with <abc>", "token at the end"},
      {"ends with <ab", "token cut off at the end"},
      // Neighbours of single_word tokens that are no word characters to Hugging Face's \w but
      // were to stamen's first rule (any non-ASCII character but whitespace), and ones that are.
      {"\u2014<ab>\u2014 \u201C<ab>\u201D \u2018<ab>\u2019 \u00AB<ab>\u00BB", "single_word next to dashes and quotes"},
      {"\u2581<ab>\u2581 \u3002<ab>\u3001 \u4E2D<ab> <ab>\u4E2D \uFF08<ab>\uFF09", "single_word next to \u2581 and CJK"},
      {"e\u0301<ab> <ab>\u0301 a\u0308<ab>b <ab>\u20DD", "single_word next to combining marks"},
      {"\u0663<ab> <ab>\u0661\u0662 \u0966<ab> \u00B2<ab>\u00BD", "single_word next to digits of other scripts"},
      {"_<ab> <ab>_ \uFF3F<ab> \u203F<ab>\u2040", "single_word next to connector punctuation"},
      {"\U0001F600<ab>\U0001F600 \U0001F44D\U0001F3FD<ab> <ab>\u2764\uFE0F <ab>\uFE0F", "single_word next to emoji"},
      {"\u200D<ab> <ab>\u200C \u200B<ab>\u2060 \u00A0<ab>\u3000", "single_word next to joiners and spaces"},
      {"<ab>", "single_word token alone"},
      {"<ab>\u2014starts", "single_word token at the start"},
      {"ends\u201C<ab>", "single_word token at the end"},
      {"ab cd\u2014ab cd \u201Cab cd\u201D \u4E2Dab cd \u0663ab c\u0301 ab c", "normalized single_word tokens"},
      {"\u24B6<ab>\u2160 \u3007<ab>\U0001F130 \U000105C0<ab>\U00010940", "single_word next to Other_Alphabetic, Nl, Unicode 16 and 17 letters"},
  };
  for (Line& line : GemmaEdgeCases()) lines.push_back(std::move(line));
  for (Line& line : AngleBracketLines()) lines.push_back(std::move(line));
  for (Line& line : CorpusLines(64)) lines.push_back(std::move(line));
  for (const auto& [name, added] : variants) {
    std::string json = fixture;
    std::string vocabulary_entries, added_entries;
    for (size_t i = 0; i < added.size(); ++i) {
      const std::string content = added[i].content;
      ASSERT_EQ(fixture.find("\"" + content + "\": "), std::string::npos) << content << " is in the vocabulary already";
      const std::string id = std::to_string(first_id + i);
      vocabulary_entries += "\"" + content + "\": " + id + ", ";
      added_entries += R"({"id": )" + id + R"(, "content": ")" + content + R"(", )" + added[i].flags +
                       R"(, "normalized": )" + (added[i].normalized ? "true" : "false") + R"(, "special": false}, )";
    }
    for (const auto& [from, to] : {std::pair<std::string, std::string>{R"("vocab": {)", vocabulary_entries},
                                   std::pair<std::string, std::string>{R"("added_tokens": [)", added_entries}}) {
      const size_t at = json.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      json.insert(at + from.size(), to);
    }
    const std::string variant = (directory_ / "overlapping_added_tokens.json").string();
    std::ofstream(variant, std::ios::binary) << json;
    auto loaded = Tokenizer::Load(variant);
    ASSERT_TRUE(loaded.ok()) << name << ": " << loaded.status().message();
    Check(*loaded.value(), variant, lines, Mode{"gemma-like, overlapping added tokens, " + name});
  }
}

// bpe_reference.py runs any tokenizer.json, so the Unigram normalizers that the Replace regex
// matcher serves are checked here too, with texts holding tabs and newlines. DeBERTa-v3 as
// transformers 5 writes it (make_deberta_v3_like.py): Replace(\s{2,}|[\n\r\t] → " "), NFC,
// Strip(right), Metaspace, Unigram; then the Hub's form of the same tokenizer, with the
// normalizer of the shared 250k Unigram file (Precompiled, Strip, Replace(" {2,}")), and other
// regexes that real files use.
TEST_F(BpeExactnessTest, DebertaV3TokenizerJsonMatches) {
  const std::string path = std::string(STAMEN_TOKENIZER_TEST_DATA_DIR) + "/deberta-v3-like/tokenizer.json";
  auto loaded = Tokenizer::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  std::vector<Line> lines = CorpusLines(1);
  const std::vector<std::pair<std::string, std::string>> whitespace = {
      {"tabs", "a\tb\t\tc \t d"}, {"newlines", "one\ntwo\r\nthree\n\n\nfour"},
      {"unicode spaces", "a\u00A0\u00A0b\u3000c\u2028d\u0085e\u200Bf \u00A0g"},
      {"trailing whitespace", "x \t\n "}, {"leading whitespace", " \t\nx"}, {"only whitespace", " \t\r\n\v\f "},
      {"single space runs", "a b  c   d"}, {"nfc", "e\u0301 A\u030A \u212B \u1100\u1161\u11A8"},
      {"special tokens", "[CLS] x [SEP][MASK]  [UNK]\t[PAD]"}};
  for (const auto& [name, text] : whitespace) lines.push_back({text, "whitespace case \"" + name + "\""});
  Check(*loaded.value(), path, lines, Mode{"deberta-v3 (transformers 5)"});
  Check(*loaded.value(), path, PairLines(CorpusLines(8)), Mode{"deberta-v3 (transformers 5) pair", true});

  const std::string fixture = ReadFileOrFail(path);
  const std::string transformers_normalizer =
      R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"Regex": "\\s{2,}|[\\n\\r\\t]"}, "content": " "}, {"type": "NFC"}, {"type": "Strip", "strip_left": false, "strip_right": true}]})";
  ASSERT_NE(fixture.find(transformers_normalizer), std::string::npos);
  // The Hub's normalizer, taken whole from the shared 250k file.
  const std::string hub_source = ReadFileOrFail(SharedPath("models/synthetic-unigram-250k/tokenizer.json"));
  const size_t hub_begin = hub_source.find("\"normalizer\"");
  const size_t hub_end = hub_source.find("\"pre_tokenizer\"");
  ASSERT_TRUE(hub_begin != std::string::npos && hub_end != std::string::npos && hub_begin < hub_end);
  std::string hub_normalizer = hub_source.substr(hub_begin, hub_end - hub_begin);
  hub_normalizer.erase(hub_normalizer.find_last_not_of(" \n,") + 1);
  ASSERT_NE(hub_normalizer.find(R"({2,})"), std::string::npos);
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"hub form (Precompiled, Strip, Replace \" {2,}\")", hub_normalizer},
      {"\\A +| +\\z and \\s+",
       R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"Regex": "\\A +| +\\z"}, "content": ""}, {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}]})"},
      {"\\A▁ and [\\t\\n]{2} and e{1,2}",
       R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}, {"type": "Replace", "pattern": {"Regex": "\\A▁"}, "content": "▁▁"}, {"type": "Replace", "pattern": {"Regex": "[\\t\\n]{2}|e{1,2}"}, "content": "|"}]})"},
  };
  for (const auto& [name, normalizer] : variants) {
    std::string json = fixture;
    json.replace(json.find(transformers_normalizer), transformers_normalizer.size(), normalizer);
    const std::string variant = (directory_ / "normalizer_variant.json").string();
    std::ofstream(variant, std::ios::binary) << json;
    auto tokenizer = Tokenizer::Load(variant);
    ASSERT_TRUE(tokenizer.ok()) << name << ": " << tokenizer.status().message();
    Check(*tokenizer.value(), variant, lines, Mode{"deberta-v3 " + name});
  }
}

TEST(HuggingFaceLoaderTest, UnsupportedReplaceRegexIsNamed) {
  for (const char* regex : {"(a|b)+", "a*", "[a-z]{2,}", "ab", "\\w+", "[^ ]"}) {
    std::string escaped;
    for (const char* c = regex; *c != '\0'; ++c) escaped += *c == '\\' ? std::string("\\\\") : std::string(1, *c);
    const std::string json = R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]}, "normalizer": {"type": "Replace", "pattern": {"Regex": ")" +
                             escaped + R"("}, "content": " "}})";
    auto loaded = Tokenizer::LoadFromBytes(json, true);
    ASSERT_FALSE(loaded.ok()) << regex;
    EXPECT_NE(loaded.status().message().find(std::string("\"") + regex + "\" is not supported"), std::string::npos)
        << loaded.status().message();
  }
}

TEST(BpeLoaderTest, UnsupportedPatternIsNamed) {
  const std::string json =
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated", "invert": false}})";
  auto loaded = Tokenizer::LoadFromBytes(json, true);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("\\w+"), std::string::npos) << loaded.status().message();
}

TEST(BpeLoaderTest, MergeOutsideVocabularyIsAnError) {
  const std::string json = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})";
  auto loaded = Tokenizer::LoadFromBytes(json, true);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("\"ab\""), std::string::npos) << loaded.status().message();
}

}  // namespace
}  // namespace stamen::tokenizer
