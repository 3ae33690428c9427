// Generated edge-case inputs shared by the SentencePiece and Hugging Face exactness tests:
// whitespace, controls, invalid UTF-8, rare scripts, very long words and texts, special strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "test_corpus.h"

namespace stamen::tokenizer::testing {

struct EdgeCase {
  std::string name;  // says what the case exercises, for failure messages
  std::string text;
};

inline std::string Repeat(std::string_view unit, size_t count) {
  std::string out;
  out.reserve(unit.size() * count);
  for (size_t i = 0; i < count; ++i) out.append(unit);
  return out;
}

// Udhr paragraphs of many languages joined by spaces until `min_bytes`: one text of thousands
// of pieces, where SentencePiece's float path scores and Hugging Face's double ones can pick
// different splits. Striding through the file mixes scripts.
inline std::string LongMultilingualText(const std::vector<UdhrLine>& udhr, size_t min_bytes, size_t stride) {
  std::string text;
  for (size_t i = 0; !udhr.empty() && text.size() < min_bytes; i += stride) {
    if (!text.empty()) text.push_back(' ');
    text += udhr[i % udhr.size()].text;
  }
  return text;
}

// All edge cases. Some contain '\n': the line-based Hugging Face test must drop those
// (see WithoutNewlines), the in-process SentencePiece test keeps them.
inline std::vector<EdgeCase> EdgeCases(const std::vector<UdhrLine>& udhr) {
  using namespace std::string_literals;  // "...\0..."s keeps embedded NUL bytes
  std::vector<EdgeCase> cases = {
      {"empty", ""},
      {"one space", " "},
      {"space run", "     "},
      {"inner space runs", "a  b   c    d"},
      {"leading spaces", "   leading"},
      {"trailing spaces", "trailing   "},
      {"both sides", "  both sides  "},
      {"trailing single space", "word "},
      {"tab", "\t"},
      {"tabs inside", "a\tb\t\tc"},
      {"carriage return", "a\rb"},
      {"trailing carriage return", "line\r"},
      {"vertical tab", "a\vb"},
      {"form feed", "a\fb"},
      {"mixed ascii whitespace", " \t\r\v\f x \t\r\v\f "},
      {"newline", "a\nb"},
      {"only newlines", "\n\n"},
      {"crlf", "one\r\ntwo"},
      {"nbsp", "a\u00A0b"},
      {"nbsp alone", "\u00A0"},
      {"nbsp run", "x\u00A0\u00A0\u00A0y"},
      {"ideographic space", "日本\u3000語"},
      {"ideographic spaces alone", "\u3000\u3000"},
      {"other unicode spaces", "a\u2002b\u2003c\u2009d\u200Ae\u202Ff\u205Fg"},
      {"line and paragraph separators", "a\u2028b\u2029c\u0085d"},
      {"zero width characters", "a\u200Bb\u200Cc\u200Dd\uFEFFe\u2060f"},
      {"bom at start", "\uFEFFhello"},
      {"emoji zwj family", "👨‍👩‍👧‍👦"},
      {"emoji skin tones", "👍🏽 👋🏿 🧑🏻‍💻"},
      {"emoji flags", "🇯🇵🇺🇸🇩🇪 🏳️‍🌈 🏴‍☠️"},
      {"emoji keycap", "1️⃣#️⃣"},
      {"emoji in text", "I ❤️ Unicode 😀😀😀!"},
      {"combining acute", "e\u0301"},
      {"precomposed vs combining", "\u00E9 e\u0301"},
      {"stacked marks", "a\u0301\u0308\u0323\u0330"},
      {"zalgo", "Z\u0337\u0322\u0349\u036B\u0344a\u0338l\u0337g\u0335o\u0336"},
      {"lone combining mark", "\u0301"},
      {"hangul jamo", "\u1100\u1161\u11A8 한국어"},
      {"devanagari conjuncts", "क्षत्रिय हिन्दी"},
      {"gothic", "𐌰𐌱𐌲𐌳 𐍈"},
      {"linear b", "𐀀𐀁𐀂𐀃"},
      {"cjk extension b", "𠀀𠀁𠀂𡀀"},
      {"private use", "\uE000\U000F0000"},
      {"unassigned code point", "\U000E0080x"},
      {"noncharacters", "\uFFFE\uFFFF\U0010FFFF"},
      {"replacement character", "\uFFFD"},
      {"a x10000", Repeat("a", 10000)},
      {"日 x10000", Repeat("日", 10000)},
      {"ab x5000", Repeat("ab", 5000)},
      {"spaced a x5000", Repeat(" a", 5000)},
      {"space x10000", "x" + Repeat(" ", 10000) + "y"},
      {"emoji x2500", Repeat("😀", 2500)},
      {"gothic x2500", Repeat("𐌰", 2500)},
      {"lone continuation byte", "\x80"},
      {"continuation bytes in text", "abc\x80\xBF" "def"},
      {"truncated two-byte", "\xC3"},
      {"truncated three-byte", "x\xE6\x97"},
      {"truncated four-byte", "\xF0\x9F\x98 y"},
      {"truncated then valid", "\xE6\x97日本"},
      {"overlong slash", "\xC0\xAF"},
      {"overlong three-byte", "\xE0\x80\xAF"},
      {"overlong nul", "\xC0\x80"},
      {"utf8 surrogate high", "\xED\xA0\x80"},
      {"utf8 surrogate low", "a\xED\xBF\xBF" "b"},
      {"utf8 surrogate pair", "\xED\xA0\xBD\xED\xB8\x80"},
      {"above U+10FFFF", "\xF4\x90\x80\x80"},
      {"byte FE", "\xFE"},
      {"byte FF", "\xFF"},
      {"bytes FE FF in words", "ab\xFE\xFF" "cd \xFF"},
      {"only invalid bytes", "\x80\x81\xC0\xC1\xF5\xF8\xFC\xFE\xFF"},
      {"nul alone", "\0"s},
      {"nul inside", "a\0b"s},
      {"nul run", "\0\0\0 x \0"s},
      {"nul after multibyte", "日\0本"s},
      {"c0 controls", "\x01\x02\x03\x07\x08\x1B\x1F"},
      {"del and c1", "a\x7F" "b\u0080c\u009Fd"},
      {"controls between words", "hello\x01world\x1F!"},
      {"special <s>", "<s>"},
      {"special </s>", "</s>"},
      {"special <unk>", "<unk>"},
      {"special <mask>", "<mask>"},
      {"special <pad>", "<pad>"},
      {"specials in text", "Hello <mask> world </s> and <s>x<unk>y"},
      {"specials glued", "<s></s><s><mask><mask>"},
      {"special-like", "<s <mask <unk> > </ s> <MASK>"},
      {"nnn", "nnn"},
      {"nnnn", "nnnn"},
      {"n run", Repeat("n", 33)},
      {"nnn words", "nnn nnn nnnnn"},
      {"long vowel marks", "ーーーー"},
      {"long vowel marks in word", "スーーーパー"},
      {"dots", ".........."},
      {"bangs", "!!!!!???"},
      {"dashes", "------ ======"},
      {"digits", "0123456789"},
      {"numbers", "3.14159 1,000,000 -42 1e10 2024-01-01"},
      {"arabic-indic digits", "١٢٣٤٥"},
      {"fullwidth digits and letters", "１２３ ＡＢＣ ａｂｃ"},
      {"nfkc compatibility", "ﬁ ﬂ ㍿ ① ⅷ ㌔ ｶﾀｶﾅ"},
      {"mixed scripts", "Hello, world! Привет мир! 你好世界！ مرحبا بالعالم שלום עולם"},
      {"japanese", "吾輩は猫である。名前はまだ無い。"},
      {"url and email", "https://example.com/a?b=c&d=e user@example.org"},
      {"code", "int main() { return 0; } // x += y;"},
      {"underscores and lower ones", "__init__ ▁▁ ▁x"},
  };
  // Thousands of pieces in one text (about 4k, 8k and 16k on the XLM-R vocabulary).
  cases.push_back({"long multilingual 16KB", LongMultilingualText(udhr, 16 * 1024, 97)});
  cases.push_back({"long multilingual 32KB", LongMultilingualText(udhr, 32 * 1024, 89)});
  cases.push_back({"long multilingual 64KB", LongMultilingualText(udhr, 64 * 1024, 83)});
  // The same without spaces: one Viterbi lattice over the whole text in both modes.
  std::string glued = LongMultilingualText(udhr, 24 * 1024, 101);
  std::erase(glued, ' ');
  cases.push_back({"long multilingual glued", glued});
  return cases;
}

// Cases that fit on one '\n'-separated line, for the line-based CLI comparison.
inline std::vector<EdgeCase> WithoutNewlines(std::vector<EdgeCase> cases) {
  std::erase_if(cases, [](const EdgeCase& c) { return c.text.find('\n') != std::string::npos; });
  return cases;
}

}  // namespace stamen::tokenizer::testing
