// Tests NextGraphemeLength against the Unicode 17.0.0 conformance data, against boundaries
// recorded from the Rust crate itself (grapheme_reference.py), and on hand-picked cases.
#include "tokenizer/grapheme.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#ifndef STAMEN_GRAPHEME_TEST_DATA_DIR
#define STAMEN_GRAPHEME_TEST_DATA_DIR "tests/tokenizer/data"
#endif

namespace stamen::tokenizer {
namespace {

std::string Utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

std::vector<std::string> Clusters(std::string_view text) {
  std::vector<std::string> clusters;
  for (size_t position = 0; position < text.size();) {
    const size_t length = NextGraphemeLength(text, position);
    if (length == 0 || position + length > text.size()) {
      clusters.push_back("<bad length " + std::to_string(length) + ">");
      break;
    }
    clusters.emplace_back(text.substr(position, length));
    position += length;
  }
  return clusters;
}

struct BreakCase {
  int line_number;
  std::string line;
  std::string text;
  std::vector<std::string> clusters;
};

// Reads the GraphemeBreakTest.txt format: "÷ 0061 × 0308 ÷ 0062 ÷", '#' starts a comment.
std::vector<BreakCase> ReadBreakCases(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot open " << path;
  std::vector<BreakCase> cases;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    const std::string data = line.substr(0, line.find('#'));
    std::istringstream tokens(data);
    BreakCase c{line_number, line, "", {}};
    std::string current;
    std::string token;
    while (tokens >> token) {
      if (token == "\xC3\xB7") {  // ÷
        if (!current.empty()) c.clusters.push_back(current);
        current.clear();
      } else if (token != "\xC3\x97") {  // ×
        const std::string utf8 = Utf8(static_cast<char32_t>(std::stoul(token, nullptr, 16)));
        current += utf8;
        c.text += utf8;
      }
    }
    if (!c.text.empty()) cases.push_back(std::move(c));
  }
  return cases;
}

void ExpectMatches(const std::vector<BreakCase>& cases) {
  int failures = 0;
  for (const BreakCase& c : cases) {
    const std::vector<std::string> got = Clusters(c.text);
    if (got != c.clusters && ++failures <= 20) {
      ADD_FAILURE() << "line " << c.line_number << ": " << c.line << "\n  got " << got.size()
                    << " clusters, expected " << c.clusters.size();
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(GraphemeTest, UnicodeConformance) {
  const std::vector<BreakCase> cases =
      ReadBreakCases(STAMEN_GRAPHEME_TEST_DATA_DIR "/grapheme_break_test.txt");
  EXPECT_EQ(cases.size(), 766u);  // "# Lines: 766" of GraphemeBreakTest-17.0.0.txt
  ExpectMatches(cases);
}

TEST(GraphemeTest, MatchesRustCrate) {
  const std::vector<BreakCase> cases =
      ReadBreakCases(STAMEN_GRAPHEME_TEST_DATA_DIR "/grapheme_crate_test.txt");
  EXPECT_GT(cases.size(), 1000u);
  ExpectMatches(cases);
}

using Split = std::vector<std::string>;

TEST(GraphemeTest, Ascii) {
  EXPECT_EQ(Clusters("ab c"), (Split{"a", "b", " ", "c"}));
  EXPECT_EQ(Clusters("a\r\nb\n\r\r\n"), (Split{"a", "\r\n", "b", "\n", "\r", "\r\n"}));
  EXPECT_EQ(Clusters("\r"), (Split{"\r"}));
  EXPECT_EQ(Clusters("\t\x7F"), (Split{"\t", "\x7F"}));
  // An ASCII letter followed by a combining mark leaves the fast path.
  EXPECT_EQ(Clusters("e\u0301a\u0308\u0323!"), (Split{"e\u0301", "a\u0308\u0323", "!"}));
  // ...but a control never takes one (GB4, GB5).
  EXPECT_EQ(Clusters("\r\u0301\n\u0301"), (Split{"\r", "\u0301", "\n", "\u0301"}));
}

TEST(GraphemeTest, EndOfText) {
  EXPECT_EQ(NextGraphemeLength("", 0), 0u);
  EXPECT_EQ(NextGraphemeLength("ab", 2), 0u);
  EXPECT_EQ(NextGraphemeLength("ab", 1), 1u);
  EXPECT_EQ(NextGraphemeLength("a\u0301", 0), 3u);
}

TEST(GraphemeTest, Emoji) {
  const std::string family = "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466";
  EXPECT_EQ(Clusters(family + family), (Split{family, family}));
  // Skin tone modifiers are Extend; a ZWJ joins only after a pictograph (GB11).
  EXPECT_EQ(Clusters("\U0001F44D\U0001F3FD\U0001F3FD"), (Split{"\U0001F44D\U0001F3FD\U0001F3FD"}));
  EXPECT_EQ(Clusters("\U0001F3F3\uFE0F\u200D\U0001F308"),
            (Split{"\U0001F3F3\uFE0F\u200D\U0001F308"}));
  EXPECT_EQ(Clusters("a\u200D\U0001F308"), (Split{"a\u200D", "\U0001F308"}));
  EXPECT_EQ(Clusters("\U0001F600\u200D\u200D\U0001F308"),
            (Split{"\U0001F600\u200D\u200D", "\U0001F308"}));
  EXPECT_EQ(Clusters("1\uFE0F\u20E3#"), (Split{"1\uFE0F\u20E3", "#"}));
  EXPECT_EQ(Clusters("\u00A9\u200D\u00AE"), (Split{"\u00A9\u200D\u00AE"}));
}

TEST(GraphemeTest, RegionalIndicatorPairs) {
  const std::string u = "\U0001F1FA", s = "\U0001F1F8", f = "\U0001F1EB", r = "\U0001F1F7";
  EXPECT_EQ(Clusters(u + s + f + r), (Split{u + s, f + r}));
  EXPECT_EQ(Clusters(u + s + u), (Split{u + s, u}));
  EXPECT_EQ(Clusters("a" + u + s + u + "\u0301" + s), (Split{"a", u + s, u + "\u0301", s}));
  EXPECT_EQ(Clusters(u + "\u200D" + s), (Split{u + "\u200D", s}));
}

TEST(GraphemeTest, Hangul) {
  EXPECT_EQ(Clusters("\uD55C\uAD6D\uC5B4"), (Split{"\uD55C", "\uAD6D", "\uC5B4"}));
  // Conjoining jamo: L V T, L L V, LV T T, LVT T; a syllable never takes a following L.
  EXPECT_EQ(Clusters("\u1112\u1161\u11AB"), (Split{"\u1112\u1161\u11AB"}));
  EXPECT_EQ(Clusters("\u1100\u1100\u1161"), (Split{"\u1100\u1100\u1161"}));
  EXPECT_EQ(Clusters("\uAC00\u11A8\u11A8"), (Split{"\uAC00\u11A8\u11A8"}));
  EXPECT_EQ(Clusters("\uAC01\u11A8\u1161"), (Split{"\uAC01\u11A8", "\u1161"}));
  EXPECT_EQ(Clusters("\uAC00\u1161\u1100"), (Split{"\uAC00\u1161", "\u1100"}));
  EXPECT_EQ(Clusters("\uD7A3\u1161"), (Split{"\uD7A3", "\u1161"}));  // last LVT syllable
}

TEST(GraphemeTest, IndicConjuncts) {
  // क्ष, क्षि: consonant + virama + consonant is one cluster (GB9c).
  EXPECT_EQ(Clusters("\u0915\u094D\u0937\u093F"), (Split{"\u0915\u094D\u0937\u093F"}));
  EXPECT_EQ(Clusters("\u0928\u092E\u0938\u094D\u0924\u0947"),
            (Split{"\u0928", "\u092E", "\u0938\u094D\u0924\u0947"}));
  // A ZWJ (InCB=Extend) keeps the conjunct, a ZWNJ (InCB=None) ends it.
  EXPECT_EQ(Clusters("\u0915\u094D\u200D\u0937"), (Split{"\u0915\u094D\u200D\u0937"}));
  EXPECT_EQ(Clusters("\u0915\u094D\u200C\u0937"), (Split{"\u0915\u094D\u200C", "\u0937"}));
  EXPECT_EQ(Clusters("\u0915\u200C\u094D\u0937"), (Split{"\u0915\u200C\u094D", "\u0937"}));
  // Nukta (InCB=Extend) before the virama, and chains of conjuncts.
  EXPECT_EQ(Clusters("\u0915\u093C\u094D\u0937\u094D\u092F"),
            (Split{"\u0915\u093C\u094D\u0937\u094D\u092F"}));
  // A virama without a consonant before it links nothing.
  EXPECT_EQ(Clusters("a\u094D\u0937"), (Split{"a\u094D", "\u0937"}));
  // Other scripts with InCB: Bengali, Khmer.
  EXPECT_EQ(Clusters("\u0995\u09CD\u09B7"), (Split{"\u0995\u09CD\u09B7"}));
  EXPECT_EQ(Clusters("\u1780\u17D2\u1780"), (Split{"\u1780\u17D2\u1780"}));
  // Spacing marks (GB9a) and prepend (GB9b).
  EXPECT_EQ(Clusters("\u0915\u093E\u0915"), (Split{"\u0915\u093E", "\u0915"}));
  EXPECT_EQ(Clusters("\u0600\u0661a"), (Split{"\u0600\u0661", "a"}));
  EXPECT_EQ(Clusters("\u0600\n"), (Split{"\u0600", "\n"}));
}

TEST(GraphemeTest, InvalidUtf8IsSafe) {
  // Not valid input, but must neither loop nor read past the end.
  const std::string bad[] = {"\xFF", "\xE0\x80", "a\xCC", "\xF0\x9F\x98", "\xCC\x81\x81"};
  for (const std::string& text : bad) {
    size_t total = 0;
    for (const std::string& cluster : Clusters(text)) total += cluster.size();
    EXPECT_EQ(total, text.size());
  }
}

}  // namespace
}  // namespace stamen::tokenizer
