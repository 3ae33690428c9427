// IsWordCharacter, the neighbour test of single_word added tokens, against Hugging Face
// tokenizers 0.23.3 itself on every code point (word_character_reference.py in the project
// venv splits a single_word token out next to each one, on both sides), and on hand-picked
// characters whose class the old rule (any non-ASCII non-space) got wrong.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "reference_lines.h"
#include "tokenizer/word_character.h"

#ifndef STAMEN_PYTHON
#error "STAMEN_PYTHON must name the venv python"
#endif
#ifndef STAMEN_WORD_CHARACTER_REFERENCE_SCRIPT
#error "STAMEN_WORD_CHARACTER_REFERENCE_SCRIPT must name word_character_reference.py"
#endif

namespace stamen::tokenizer {
namespace {

namespace fs = std::filesystem;

constexpr char32_t kCodePointCount = 0x110000;

bool IsSurrogate(char32_t c) { return c >= 0xD800 && c <= 0xDFFF; }

TEST(AddedTokenWordCharacterTest, EveryCodePointMatchesHuggingFace) {
  ASSERT_TRUE(fs::exists(STAMEN_PYTHON)) << "the Hugging Face reference needs the project venv: " << STAMEN_PYTHON
                                         << " is missing; run scripts/setup.sh (tokenizers==0.23.3)";
  std::string pattern = (fs::temp_directory_path() / "stamen_word_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path directory = pattern;
  const std::string output = (directory / "word_characters.txt").string();
  const std::string errors = (directory / "stderr.txt").string();
  const std::vector<std::string> lines = testing::RunReference(
      testing::ShellQuote(STAMEN_PYTHON) + " " + testing::ShellQuote(STAMEN_WORD_CHARACTER_REFERENCE_SCRIPT) + " " +
          testing::ShellQuote(output),
      output, errors, "word_character_reference.py");
  std::error_code error;
  fs::remove_all(directory, error);
  ASSERT_FALSE(HasFailure());

  for (const std::string side : {"after", "before"}) {
    std::vector<bool> expected(kCodePointCount, false);
    size_t word_count = 0;
    for (const std::string& line : lines) {
      std::istringstream fields(line);
      std::string name;
      unsigned first = 0, last = 0;
      fields >> name >> std::hex >> first >> last;
      ASSERT_FALSE(fields.fail()) << "bad reference line: " << line;
      if (name != side) continue;
      ASSERT_LE(first, last);
      ASSERT_LT(last, kCodePointCount);
      for (unsigned c = first; c <= last; ++c) expected[c] = true;
      word_count += last - first + 1;
    }
    // Letters of all scripts alone are over 100,000; an empty or cut-off reference is no pass.
    ASSERT_GT(word_count, 100000u) << side;
    size_t compared = 0, mismatches = 0;
    for (char32_t c = 0; c < kCodePointCount; ++c) {
      if (IsSurrogate(c)) continue;
      ++compared;
      if (IsWordCharacter(c) == expected[c]) continue;
      if (++mismatches <= 20) {
        ADD_FAILURE() << "U+" << std::hex << std::uppercase << static_cast<unsigned>(c) << ": Hugging Face says "
                      << (expected[c] ? "word" : "not word") << " (token " << side << " it), stamen the opposite";
      }
    }
    EXPECT_EQ(mismatches, 0u) << side;
    std::printf("[ word characters ] %s a single_word token: %zu code points compared, %zu word characters, %zu "
                "mismatches\n",
                side.c_str(), compared, word_count, mismatches);
  }
}

// Each class of the rule, and neighbours of added tokens in real text that the old rule
// (every non-ASCII character but whitespace) counted as word characters.
TEST(AddedTokenWordCharacterTest, HandPickedCharacters) {
  struct Case {
    char32_t code_point;
    bool word;
    const char* what;
  };
  const Case cases[] = {
      {U'a', true, "ASCII letter"},
      {U'Z', true, "ASCII letter"},
      {U'7', true, "ASCII digit"},
      {U'_', true, "low line (Connector_Punctuation)"},
      {U'-', false, "hyphen-minus"},
      {U'@', false, "commercial at"},
      {U'`', false, "grave accent, next to the lower-case letters"},
      {U'[', false, "left square bracket, next to the upper-case letters"},
      {U' ', false, "space"},
      {0x00AA, true, "feminine ordinal indicator (Lo)"},
      {0x00B2, false, "superscript two (No, not Nd)"},
      {0x00B5, true, "micro sign (Ll)"},
      {0x00E9, true, "e acute"},
      {0x0301, true, "combining acute accent (Mn)"},
      {0x0663, true, "Arabic-Indic digit three (Nd)"},
      {0x0903, true, "Devanagari sign visarga (Mc)"},
      {0x2014, false, "em dash"},
      {0x201C, false, "left double quotation mark"},
      {0x201D, false, "right double quotation mark"},
      {0x200B, false, "zero width space"},
      {0x200C, true, "zero width non-joiner (Join_Control)"},
      {0x200D, true, "zero width joiner (Join_Control)"},
      {0x2060, false, "word joiner"},
      {0x203F, true, "undertie (Connector_Punctuation)"},
      {0x2160, true, "Roman numeral one (Nl, Alphabetic)"},
      {0x24B6, true, "circled Latin capital A (So, Other_Alphabetic)"},
      {0x2581, false, "lower one eighth block, SentencePiece's space"},
      {0x3002, false, "ideographic full stop"},
      {0x3007, true, "ideographic number zero (Nl)"},
      {0x4E2D, true, "CJK ideograph"},
      {0xAC00, true, "Hangul syllable"},
      {0xFE0F, true, "variation selector 16 (Mn)"},
      {0xFF3F, true, "fullwidth low line (Pc)"},
      {0xFFFD, false, "replacement character"},
      {0x1F600, false, "grinning face emoji"},
      {0x1F3FB, false, "emoji skin tone modifier (Sk)"},
      {0x1F130, true, "squared Latin capital A (So, Other_Alphabetic)"},
      {0x105C0, true, "Todhri letter A, new in Unicode 16.0"},
      {0x10940, false, "Sidetic letter, new in Unicode 17.0: regex-syntax 0.8.11 has 16.0"},
      {0x20000, true, "CJK Extension B ideograph"},
      {0xE0100, true, "variation selector 17 (Mn)"},
      {0xE0001, false, "language tag (Cf)"},
      {0x10FFFF, false, "last code point"},
      {0x110000, false, "past the last code point"},
      {0xD800, false, "surrogate"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(IsWordCharacter(c.code_point), c.word)
        << "U+" << std::hex << std::uppercase << static_cast<unsigned>(c.code_point) << " " << c.what;
  }
}

}  // namespace
}  // namespace stamen::tokenizer
