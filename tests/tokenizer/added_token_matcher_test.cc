// Unit tests of AddedTokenMatcher: leftmost-longest matches over a trie of overlapping added
// tokens (one a prefix of another, adjacent, at the end of the text or cut off by it), the
// first of equal contents, and the single_word / lstrip / rstrip rules on top of the longest
// match. Hugging Face's own ids for such tokens are checked in bpe_exactness_test.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_token_matcher.h"

namespace stamen::tokenizer {
namespace {

AddedToken Token(std::string content, bool single_word = false, bool lstrip = false, bool rstrip = false) {
  AddedToken token;
  token.content = std::move(content);
  token.single_word = single_word;
  token.lstrip = lstrip;
  token.rstrip = rstrip;
  return token;
}

class AddedTokenMatcherTest : public ::testing::Test {
 protected:
  void Use(std::vector<AddedToken> tokens) {
    tokens_ = std::move(tokens);
    matcher_ = AddedTokenMatcher();
    for (size_t index = 0; index < tokens_.size(); ++index) {
      matcher_.Add(static_cast<int32_t>(index), tokens_[index].content);
    }
  }

  // The segments of text[begin, end) as "text|[token]|text", each token followed by its index
  // when `with_index`.
  std::string Split(std::string_view text, size_t begin = 0, size_t end = std::string_view::npos,
                    bool with_index = false) const {
    if (end == std::string_view::npos) end = text.size();
    std::vector<TextSegment> segments;
    matcher_.Split(text, static_cast<uint32_t>(begin), static_cast<uint32_t>(end), tokens_, &segments);
    std::string out;
    for (const TextSegment& segment : segments) {
      if (!out.empty()) out += '|';
      const std::string_view part = text.substr(segment.begin, segment.end - segment.begin);
      if (segment.added_token < 0) {
        out += part;
      } else {
        out += "[" + std::string(part) + "]";
        if (with_index) out += std::to_string(segment.added_token);
      }
    }
    return out;
  }

  std::vector<AddedToken> tokens_;
  AddedTokenMatcher matcher_;
};

TEST_F(AddedTokenMatcherTest, EmptyUntilATokenIsAdded) {
  EXPECT_TRUE(matcher_.empty());
  EXPECT_EQ(Split("a <b> c"), "a <b> c");
  Use({Token("<b>")});
  EXPECT_FALSE(matcher_.empty());
  EXPECT_EQ(Split("a <b> c"), "a |[<b>]| c");
  EXPECT_EQ(Split(""), "");
}

TEST_F(AddedTokenMatcherTest, LongestOfTokensThatArePrefixesOfOneAnother) {
  Use({Token("<ab>"), Token("<a"), Token("<"), Token("<abc>")});
  EXPECT_EQ(Split("x<ab>y", 0, std::string_view::npos, true), "x|[<ab>]0|y");
  EXPECT_EQ(Split("x<abc>y", 0, std::string_view::npos, true), "x|[<abc>]3|y");
  EXPECT_EQ(Split("x<abd>y", 0, std::string_view::npos, true), "x|[<a]1|bd>y");
  EXPECT_EQ(Split("<<a<", 0, std::string_view::npos, true), "[<]2|[<a]1|[<]2");
  // A walk down the trie that fails deep (<ab then "c" with no ">") falls back to the longest
  // token seen on the way, and the scan goes on right after it.
  EXPECT_EQ(Split("<abc<ab>", 0, std::string_view::npos, true), "[<a]1|bc|[<ab>]0");
}

TEST_F(AddedTokenMatcherTest, AdjacentMatches) {
  Use({Token("<td>"), Token("</td>"), Token("<tr>"), Token("\n"), Token("\n\n")});
  EXPECT_EQ(Split("<tr><td><td>x</td></td>\n\n\n"), "[<tr>]|[<td>]|[<td>]|x|[</td>]|[</td>]|[\n\n]|[\n]");
}

TEST_F(AddedTokenMatcherTest, TokenAtTheEndAndTokensCutOffByIt) {
  Use({Token("<td>"), Token("<t")});
  EXPECT_EQ(Split("abc<td>"), "abc|[<td>]");
  EXPECT_EQ(Split("abc<td"), "abc|[<t]|d");
  EXPECT_EQ(Split("abc<"), "abc<");
  // Only text[begin, end) is searched: a token that crosses `end` does not match whole.
  EXPECT_EQ(Split("x<td>y", 0, 4), "x|[<t]|d");
  EXPECT_EQ(Split("x<td>y", 2, 6), "td>y");
}

TEST_F(AddedTokenMatcherTest, LeftmostBeatsLonger) {
  Use({Token("bcdef"), Token("ab"), Token("b")});
  EXPECT_EQ(Split("abcdef"), "[ab]|cdef");
  EXPECT_EQ(Split("xbcdef"), "x|[bcdef]");
  EXPECT_EQ(Split("xbcdx"), "x|[b]|cdx");
}

TEST_F(AddedTokenMatcherTest, MultiByteTokens) {
  Use({Token("\u2581\u2581"), Token("\u2581\u2581\u2581"), Token("\u00E9t\u00E9")});
  EXPECT_EQ(Split("a\u2581\u2581\u2581\u2581b"), "a|[\u2581\u2581\u2581]|\u2581b");
  EXPECT_EQ(Split("\u2581\u2581\u2581\u2581\u2581"), "[\u2581\u2581\u2581]|[\u2581\u2581]");
  // Shares the lead byte 0xC3 with \u00E9 but not the continuation byte.
  EXPECT_EQ(Split("\u00E8t\u00E9 \u00E9t\u00E9"), "\u00E8t\u00E9 |[\u00E9t\u00E9]");
}

TEST_F(AddedTokenMatcherTest, FirstOfEqualContentsWins) {
  Use({Token("<x>"), Token("<y>"), Token("<x>")});
  EXPECT_EQ(Split("<x><y>", 0, std::string_view::npos, true), "[<x>]0|[<y>]1");
}

// A longest match that single_word refuses is dropped, not replaced by a shorter token
// (Hugging Face's Aho-Corasick yields only the longest, then filters it).
TEST_F(AddedTokenMatcherTest, SingleWordAppliesToTheLongestMatch) {
  Use({Token("<a"), Token("<ab>", /*single_word=*/true)});
  EXPECT_EQ(Split("x<ab>"), "x<ab>");
  EXPECT_EQ(Split("<ab>y"), "<ab>y");
  EXPECT_EQ(Split("x <ab> y"), "x |[<ab>]| y");
  EXPECT_EQ(Split("x<abc"), "x|[<a]|bc");
  EXPECT_EQ(Split("a<ab>b <ab>"), "a<ab>b |[<ab>]");
  EXPECT_EQ(Split("x<ab><ab>"), "x<ab>|[<ab>]");  // ">" is no word character
}

// single_word's neighbours are word characters by Hugging Face's \w (word_character.h):
// letters, marks, decimal digits of every script, connector punctuation and the joiners, but
// not dashes, quotes, "▁", CJK punctuation or emoji. Each expectation is what Hugging Face
// tokenizers 0.23.3 splits out of the same text (word_character_test checks every code point,
// bpe_exactness_test the ids).
TEST_F(AddedTokenMatcherTest, SingleWordNeighboursAreUnicodeWordCharacters) {
  Use({Token("<ab>", /*single_word=*/true)});
  EXPECT_EQ(Split("\u2014<ab>\u2014"), "\u2014|[<ab>]|\u2014");                  // em dash
  EXPECT_EQ(Split("\u201C<ab>\u201D"), "\u201C|[<ab>]|\u201D");                  // curly quotes
  EXPECT_EQ(Split("\u2581<ab>\u2581"), "\u2581|[<ab>]|\u2581");                  // SentencePiece's space
  EXPECT_EQ(Split("\u3002<ab>\u3001"), "\u3002|[<ab>]|\u3001");                  // CJK punctuation
  EXPECT_EQ(Split("\U0001F600<ab>\U0001F600"), "\U0001F600|[<ab>]|\U0001F600");  // emoji
  EXPECT_EQ(Split("\U0001F44D\U0001F3FD<ab>"), "\U0001F44D\U0001F3FD|[<ab>]");    // skin tone (Sk)
  EXPECT_EQ(Split("\u200B<ab>\u2060"), "\u200B|[<ab>]|\u2060");                  // zero width space, word joiner
  EXPECT_EQ(Split("\u4E2D<ab>"), "\u4E2D<ab>");                                   // CJK ideograph
  EXPECT_EQ(Split("<ab>\u4E2D"), "<ab>\u4E2D");
  EXPECT_EQ(Split("e\u0301<ab>"), "e\u0301<ab>");                                 // combining mark before
  EXPECT_EQ(Split("<ab>\u0301"), "<ab>\u0301");                                   // and after
  EXPECT_EQ(Split("\u0663<ab>"), "\u0663<ab>");                                   // Arabic-Indic digit
  EXPECT_EQ(Split("<ab>\u0661"), "<ab>\u0661");
  EXPECT_EQ(Split("_<ab>"), "_<ab>");                                              // connector punctuation
  EXPECT_EQ(Split("<ab>\uFF3F"), "<ab>\uFF3F");
  EXPECT_EQ(Split("\u200D<ab>"), "\u200D<ab>");                                   // zero width joiner
  EXPECT_EQ(Split("<ab>\u200C"), "<ab>\u200C");                                   // zero width non-joiner
  EXPECT_EQ(Split("<ab>"), "[<ab>]");                                              // text start and end
  EXPECT_EQ(Split("\u00B2<ab>\u00BD"), "\u00B2|[<ab>]|\u00BD");                  // No digits are not Nd
  // The range's own ends count as text ends, whatever lies outside them, as Hugging Face's
  // find_matches sees only the piece of text it is given.
  EXPECT_EQ(Split("x<ab>y", 1, 5), "[<ab>]");
}

TEST_F(AddedTokenMatcherTest, StripRulesExtendTheLongestMatch) {
  Use({Token("<a", false, true, false), Token("<ab>", false, true, true)});
  EXPECT_EQ(Split("x  <ab>  y"), "x|[  <ab>  ]|y");
  EXPECT_EQ(Split("x  <ab  y"), "x|[  <a]|b  y");
  EXPECT_EQ(Split("<ab> <ab>"), "[<ab> ]|[<ab>]");
}

// Random token sets over a small alphabet (so tokens overlap and repeat) against a brute-force
// search: at each position, the longest token the text starts with, the first of equals.
TEST_F(AddedTokenMatcherTest, RandomTextsMatchABruteForceSearch) {
  const std::vector<std::string> alphabet = {"<", ">", "a", "b", "/", " ", "\xC3\xA9", "\xE2\x96\x81"};
  std::mt19937 random(7);
  auto random_text = [&](size_t max_pieces) {
    std::string text;
    for (size_t i = random() % (max_pieces + 1); i > 0; --i) text += alphabet[random() % alphabet.size()];
    return text;
  };
  for (int round = 0; round < 2000; ++round) {
    std::vector<AddedToken> tokens;
    for (size_t i = 1 + random() % 12; i > 0; --i) {
      std::string content = random_text(4);
      if (!content.empty()) tokens.push_back(Token(content));
    }
    Use(tokens);
    for (int sample = 0; sample < 10; ++sample) {
      const std::string text = random_text(30);
      std::string expected, pending;
      for (size_t position = 0; position < text.size();) {
        int longest = -1;
        for (size_t t = 0; t < tokens.size(); ++t) {
          const size_t length = tokens[t].content.size();
          if (text.compare(position, length, tokens[t].content) == 0 &&
              (longest < 0 || length > tokens[static_cast<size_t>(longest)].content.size())) {
            longest = static_cast<int>(t);
          }
        }
        if (longest < 0) {
          pending += text[position++];
          continue;
        }
        if (!pending.empty()) expected += (expected.empty() ? "" : "|") + pending;
        pending.clear();
        expected += (expected.empty() ? "[" : "|[") + tokens[static_cast<size_t>(longest)].content + "]" +
                    std::to_string(longest);
        position += tokens[static_cast<size_t>(longest)].content.size();
      }
      if (!pending.empty()) expected += (expected.empty() ? "" : "|") + pending;
      ASSERT_EQ(Split(text, 0, std::string_view::npos, true), expected) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace stamen::tokenizer
