// Late chunking's plan (gateway/late_chunking.h) on hand-made tokenizations: which tokens each
// chunk holds, and for a text longer than the model takes, which window pools each chunk.
#include "gateway/late_chunking.h"

#include <gtest/gtest.h>

namespace stamen::gateway {
namespace {

using Token = engine::ModelTokenizer::Token;

// [CLS], `count` words of 2 bytes and a space each, [SEP]: word i covers bytes
// [prompt_bytes + 3i, prompt_bytes + 3i + 2) and has id 1000 + i.
std::vector<Token> Words(int count, size_t prompt_bytes = 0) {
  std::vector<Token> tokens = {{101, "[CLS]", 0, 0, true}};
  for (int i = 0; i < count; ++i) {
    const auto begin = static_cast<uint32_t>(prompt_bytes + 3 * i);
    tokens.push_back({1000 + i, "w", begin, begin + 2, false});
  }
  tokens.push_back({102, "[SEP]", 0, 0, true});
  return tokens;
}

LateChunkPlan Plan(const std::vector<Token>& tokens, std::vector<TextSpan> chunks, int64_t max_length,
                   size_t prompt_bytes = 0) {
  const size_t text_bytes = tokens.size() * 3;
  auto plan = PlanLateChunks(tokens, prompt_bytes, text_bytes, chunks, max_length, "input 0");
  if (auto* error = std::get_if<ApiError>(&plan)) ADD_FAILURE() << error->message;
  return std::get_if<LateChunkPlan>(&plan) ? std::get<LateChunkPlan>(plan) : LateChunkPlan{};
}

TEST(LateChunkingTest, AShortTextIsOneSequenceAndEachChunkItsTokens) {
  const auto tokens = Words(10);  // 12 tokens with [CLS] and [SEP]
  // Bytes [0, 8) hold words 0..2 (word 2 is [6, 8)); [4, 12) holds words 2 and 3 only (word 1
  // starts at 3); [3, 5) is exactly word 1.
  const LateChunkPlan plan = Plan(tokens, {{0, 8}, {4, 12}, {3, 5}}, 512);
  ASSERT_EQ(plan.lengths, std::vector<int32_t>{12});
  EXPECT_EQ(plan.token_ids.front(), 101);
  EXPECT_EQ(plan.token_ids.back(), 102);
  EXPECT_EQ(plan.span_counts, std::vector<int32_t>{3});
  // Token positions in the sequence: [CLS] is 0, word i is i + 1.
  EXPECT_EQ(plan.spans, (std::vector<int32_t>{1, 4, 3, 5, 2, 3}));
  EXPECT_EQ(plan.row_of_chunk, (std::vector<int64_t>{0, 1, 2}));
}

TEST(LateChunkingTest, ThePromptsTokensBelongToNoChunk) {
  // A 9-byte prompt tokenized as three words before the text's.
  std::vector<Token> tokens = Words(3);
  tokens.insert(tokens.begin() + 1, {{7, "p", 0, 2, false}, {8, "p", 3, 5, false}, {9, "p", 6, 8, false}});
  for (size_t i = 4; i + 1 < tokens.size(); ++i) tokens[i].begin += 9, tokens[i].end += 9;
  const LateChunkPlan plan = Plan(tokens, {{0, 8}}, 512, /*prompt_bytes=*/9);
  // The text's words are at positions 4, 5, 6 after [CLS] and the prompt's three.
  EXPECT_EQ(plan.spans, (std::vector<int32_t>{4, 7}));
}

TEST(LateChunkingTest, BadChunksAreRefusedByName) {
  const auto tokens = Words(4);  // text of 18 bytes as Plan counts it
  auto past_end = PlanLateChunks(tokens, 0, 11, std::vector<TextSpan>{{0, 12}}, 512, "input 3");
  ASSERT_TRUE(std::holds_alternative<ApiError>(past_end));
  EXPECT_EQ(std::get<ApiError>(past_end).status, 400);
  EXPECT_NE(std::get<ApiError>(past_end).message.find("input 3: chunk 0 [0, 12) ends past the text's 11 bytes"),
            std::string::npos);
  // Byte 2 is the space between two words: no token lies inside [2, 3).
  auto empty = PlanLateChunks(tokens, 0, 11, std::vector<TextSpan>{{0, 2}, {2, 3}}, 512, "input 0");
  ASSERT_TRUE(std::holds_alternative<ApiError>(empty));
  EXPECT_EQ(std::get<ApiError>(empty).status, 422);
  EXPECT_NE(std::get<ApiError>(empty).message.find("chunk 1 [2, 3) holds no token"), std::string::npos);
}

TEST(LateChunkingTest, ALongTextRunsInOverlappingWindowsAndEachChunkInTheOneThatHoldsItBest) {
  // 100 words, a model of 22 tokens: windows of 20 words every 15 (0, 15, …, 75, and 80 to
  // end at the text's end).
  const auto tokens = Words(100);
  const std::vector<TextSpan> chunks = {
      {0, 3 * 5},            // words 0..4: only window 0 holds it with context 0 on the left
      {3 * 24, 3 * 28 - 1},  // words 24..27: only window 15 holds it (9 words before, 7 after)
      {3 * 95, 3 * 100},     // words 95..99: the last window, 80
      {3 * 3, 3 * 18},       // words 3..17 (15 > 20 / 4): window 0 holds it (3 before, 2 after)
      {3 * 33, 3 * 51},      // words 33..50 (18): no regular window holds it, one of its own
  };
  const LateChunkPlan plan = Plan(tokens, chunks, 22);
  // Windows in order of their first word: 0 (chunks 0, 3), 15 (chunk 1), 32 (chunk 4, centred:
  // 33 - (20 - 18) / 2), 80 (chunk 2).
  ASSERT_EQ(plan.lengths, (std::vector<int32_t>{22, 22, 22, 22}));
  EXPECT_EQ(plan.span_counts, (std::vector<int32_t>{2, 1, 1, 1}));
  EXPECT_EQ(plan.token_ids[1], 1000);       // window 0 starts at word 0
  EXPECT_EQ(plan.token_ids[22 + 1], 1015);  // window 15
  EXPECT_EQ(plan.token_ids[44 + 1], 1032);  // chunk 4's own window
  EXPECT_EQ(plan.token_ids[66 + 1], 1080);  // the last window
  for (int window = 0; window < 4; ++window) {
    EXPECT_EQ(plan.token_ids[22 * window], 101);
    EXPECT_EQ(plan.token_ids[22 * window + 21], 102);
  }
  // Spans are positions in their window ([CLS] first): chunk 0 words 0..4 → 1..6 in window 0,
  // chunk 3 words 3..17 → 4..19; chunk 1 words 24..27 → 10..14 in window 15; chunk 4 words
  // 33..50 → 2..20 in window 32; chunk 2 words 95..99 → 16..21 in window 80.
  EXPECT_EQ(plan.spans, (std::vector<int32_t>{1, 6, 4, 19, 10, 14, 2, 20, 16, 21}));
  EXPECT_EQ(plan.row_of_chunk, (std::vector<int64_t>{0, 2, 4, 1, 3}));
}

TEST(LateChunkingTest, AChunkLongerThanTheModelTakesIsRefused) {
  const auto tokens = Words(100);
  auto plan = PlanLateChunks(tokens, 0, 300, std::vector<TextSpan>{{0, 3 * 30}}, 22, "input 0");
  ASSERT_TRUE(std::holds_alternative<ApiError>(plan));
  EXPECT_EQ(std::get<ApiError>(plan).status, 422);
  EXPECT_NE(std::get<ApiError>(plan).message.find("chunk 0 has 30 tokens; the model takes 20 at once"),
            std::string::npos);
}

TEST(LateChunkingTest, SentencesEndAtTheirMarkOrALineBreak) {
  const std::string text = "  The cat sat. It was happy! Was it? 3.85 million.\nA line\n\n猫です。犬も";
  const auto chunks = ChunksByRule({.sentences = true}, text, {}, 0);
  std::vector<std::string> sentences;
  for (const TextSpan& chunk : chunks) sentences.push_back(text.substr(chunk.start, chunk.end - chunk.start));
  // Each from where the previous ended: the whitespace between them is the next one's.
  EXPECT_EQ(sentences, (std::vector<std::string>{"  The cat sat.", " It was happy!", " Was it?", " 3.85 million.",
                                                  "\nA line", "\n猫です。", "犬も"}));
}

TEST(LateChunkingTest, TokenRunsOverlapAndTheLastEndsAtTheLastToken) {
  // A prompt of one word (bytes [0, 3)) before the text's 10 words, shifted by 3.
  std::vector<Token> tokens = Words(11);
  const auto chunks = ChunksByRule({.tokens = 4, .overlap = 1}, "", tokens, /*prompt_bytes=*/3);
  // Text words 0..9 at text bytes [3i, 3i + 2): runs 0..3, 3..6, 6..9.
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].start, 0);
  EXPECT_EQ(chunks[0].end, 3 * 3 + 2);
  EXPECT_EQ(chunks[1].start, 3 * 3);
  EXPECT_EQ(chunks[2].start, 3 * 6);
  EXPECT_EQ(chunks[2].end, 3 * 9 + 2);
  // No overlap, a run longer than the text: one chunk of all of it.
  const auto whole = ChunksByRule({.tokens = 50}, "", tokens, 3);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].end, 3 * 9 + 2);
}

}  // namespace
}  // namespace stamen::gateway
