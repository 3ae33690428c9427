// Late chunking over real HTTP (gateway_fixture.h): each chunk's vector pooled from one pass
// over the whole text, long texts in windows, chunks by a rule, and errors that name the chunk.
#include "tests/gateway/gateway_fixture.h"

namespace stamen::gateway {
namespace {

// The mean of the token states whose byte span lies inside [start, end), L2-normalised: the
// late chunking rule written out over the engine's per-token output.
std::vector<float> ChunkVector(Served& served, const std::string& text, int64_t start, int64_t end) {
  const auto tokens = served.Tokenize(text);
  std::vector<int32_t> ids;
  for (const auto& token : tokens) ids.push_back(token.id);
  const engine::Tensor states = served.TokenStates(ids);
  const int64_t width = states.dim(1);
  std::vector<double> sum(width, 0.0);
  int count = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t].special || tokens[t].begin < start || tokens[t].end > end) continue;
    for (int64_t c = 0; c < width; ++c) sum[c] += states.data<float>()[t * width + c];
    ++count;
  }
  std::vector<float> mean(width);
  for (int64_t c = 0; c < width; ++c) mean[c] = static_cast<float>(sum[c] / count);
  return Renormalized(mean, width);
}

TEST_F(GatewayTest, LateChunkingPoolsEachChunksTokensFromOnePass) {
  const std::string text = "The cat sat on the mat. It was happy, and so was the dog.";
  const std::vector<std::pair<int64_t, int64_t>> chunks = {{0, 23}, {24, 57}, {4, 11}, {0, 57}};
  const auto answer = Post(served_->port(), "/embed",
                           R"({"inputs": ")" + text + R"(", "chunks": [[0, 23], [24, 57], [4, 11], [0, 57]]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto inputs = Parse(parser_, answer.body).get_array().value();
  ASSERT_EQ(inputs.size(), 1u);
  auto vectors = inputs.at(0).get_array().value();
  ASSERT_EQ(vectors.size(), chunks.size());
  for (size_t k = 0; k < chunks.size(); ++k) {
    ExpectNear(Floats(vectors.at(k)), ChunkVector(*served_, text, chunks[k].first, chunks[k].second));
  }
  // Context: a chunk's vector is not the chunk embedded alone.
  const auto alone = served_->Embed(served_->Encode("The cat"));
  EXPECT_LT(Cosine(Floats(vectors.at(2)), alone), 0.9999);

  // A list of inputs takes one list of chunks each; OpenAI's answer has one item per chunk.
  const auto listed = Post(served_->port(), "/v1/embeddings",
                           R"({"input": ["The cat sat.", ")" + text + R"("], "chunks": [[[0, 7]], [[24, 57], [0, 23]]]})");
  ASSERT_EQ(listed.status, 200) << listed.body;
  auto data = Parse(parser_, listed.body)["data"].get_array().value();
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data.at(2)["index"].get_int64().value(), 2);
  EXPECT_EQ(data.at(2)["input_index"].get_int64().value(), 1);
  EXPECT_EQ(data.at(2)["chunk"].at(0).get_int64().value(), 0);
  ExpectNear(Floats(data.at(0)["embedding"]), ChunkVector(*served_, "The cat sat.", 0, 7));
  ExpectNear(Floats(data.at(1)["embedding"]), ChunkVector(*served_, text, 24, 57));
  ExpectNear(Floats(data.at(2)["embedding"]), ChunkVector(*served_, text, 0, 23));
}

TEST_F(GatewayTest, LateChunkingRunsALongTextInWindows) {
  // About 600 tokens, more than the model takes: refused whole, chunked in windows.
  std::string text;
  for (int i = 0; i < 120; ++i) text += "word" + std::to_string(i) + " here. ";
  const auto whole = Post(served_->port(), "/embed", R"({"inputs": ")" + text + R"("})");
  EXPECT_EQ(whole.status, 422) << whole.body;
  const int64_t size = static_cast<int64_t>(text.size());
  const std::string body = R"({"inputs": ")" + text + R"(", "chunks": [[0, 40], [)" + std::to_string(size / 2) + ", " +
                           std::to_string(size / 2 + 40) + "], [" + std::to_string(size - 40) + ", " +
                           std::to_string(size) + "]]}";
  const auto chunked = Post(served_->port(), "/embed", body);
  ASSERT_EQ(chunked.status, 200) << chunked.body;
  auto vectors = Parse(parser_, chunked.body).at(0).get_array().value();
  ASSERT_EQ(vectors.size(), 3u);
  // The first chunk's window is the text's first (max length - 2) tokens: its vector is the
  // chunk pooled over the states of that window, [CLS] and [SEP] around it.
  const auto tokens = served_->Tokenize(text);
  const size_t window_end = static_cast<size_t>(served_->MaxLength()) - 1;
  ASSERT_GT(tokens.size(), window_end + 1);
  std::vector<int32_t> window = {tokens.front().id};
  for (size_t t = 1; t < window_end; ++t) window.push_back(tokens[t].id);
  window.push_back(tokens.back().id);
  const engine::Tensor states = served_->TokenStates(window);
  std::vector<float> mean(states.dim(1), 0.0f);
  int count = 0;
  for (size_t t = 1; t < window_end; ++t) {
    if (tokens[t].end > 40) break;
    for (int64_t c = 0; c < states.dim(1); ++c) mean[c] += states.data<float>()[t * states.dim(1) + c];
    ++count;
  }
  for (float& value : mean) value /= count;
  ExpectNear(Floats(vectors.at(0)), Renormalized(mean, mean.size()));
}

// A chunking rule cuts the chunks in the gateway: the answer carries each chunk's span, and its
// vectors are those of the same spans given as "chunks".
TEST_F(GatewayTest, LateChunkingByARuleAnswersEachChunksSpan) {
  const std::string text = "The cat sat on the mat. It was happy, and so was the dog.";
  for (const std::string rule : {R"("sentences")", R"({"tokens": 5, "overlap": 2})"}) {
    const auto ruled = Post(served_->port(), "/embed", R"({"inputs": ")" + text + R"(", "chunking": )" + rule + "}");
    ASSERT_EQ(ruled.status, 200) << ruled.body;
    auto items = Parse(parser_, ruled.body).at(0).get_array().value();
    ASSERT_GE(items.size(), 2u) << rule;
    std::string spans;
    std::vector<std::vector<float>> vectors;
    for (auto item : items) {
      const int64_t start = item["chunk"].at(0).get_int64().value(), end = item["chunk"].at(1).get_int64().value();
      spans += (spans.empty() ? "[" : ",[") + std::to_string(start) + "," + std::to_string(end) + "]";
      vectors.push_back(Floats(item["embedding"]));
      ExpectNear(vectors.back(), ChunkVector(*served_, text, start, end));
    }
    if (rule == R"("sentences")") {
      EXPECT_EQ(spans, "[0,23],[23,57]");
    }
    simdjson::dom::parser other;
    const auto given = Post(served_->port(), "/embed", R"({"inputs": ")" + text + R"(", "chunks": [)" + spans + "]}");
    ASSERT_EQ(given.status, 200) << given.body;
    auto given_vectors = Parse(other, given.body).at(0).get_array().value();
    for (size_t k = 0; k < vectors.size(); ++k) ExpectNear(Floats(given_vectors.at(k)), vectors[k], 1e-6);
  }
  const auto openai = Post(served_->port(), "/v1/embeddings",
                           R"({"input": ["A b. C d.", "E f."], "chunking": "sentences"})");
  ASSERT_EQ(openai.status, 200) << openai.body;
  auto data = Parse(parser_, openai.body)["data"].get_array().value();
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data.at(2)["input_index"].get_int64().value(), 1);
  EXPECT_EQ(data.at(1)["chunk"].at(0).get_int64().value(), 4);
  EXPECT_EQ(Post(served_->port(), "/embed", R"({"inputs": "a", "chunking": "paragraphs"})").status, 400);
  EXPECT_EQ(Post(served_->port(), "/embed", R"({"inputs": " . ", "chunking": {"tokens": 3}})").status, 200);
}

TEST_F(GatewayTest, LateChunkingErrorsNameTheChunk) {
  const auto ids = Post(served_->port(), "/embed", R"({"inputs": [101, 7592, 102], "chunks": [[0, 2]]})");
  EXPECT_EQ(ids.status, 400);
  EXPECT_NE(ids.body.find("token ids have no text offsets"), std::string::npos) << ids.body;
  const auto past = Post(served_->port(), "/embed", R"({"inputs": "The cat", "chunks": [[0, 8]]})");
  EXPECT_EQ(past.status, 400);
  EXPECT_NE(past.body.find("input 0: chunk 0 [0, 8) ends past the text's 7 bytes"), std::string::npos) << past.body;
  const auto empty = Post(served_->port(), "/embed", R"({"inputs": "The cat", "chunks": [[3, 4]]})");
  EXPECT_EQ(empty.status, 422);
  EXPECT_NE(empty.body.find("holds no token"), std::string::npos) << empty.body;
  const auto shape = Post(served_->port(), "/embed", R"({"inputs": ["a", "b"], "chunks": [[0, 1]]})");
  EXPECT_EQ(shape.status, 400);
  EXPECT_NE(shape.body.find("give one list per input"), std::string::npos) << shape.body;
  const auto order = Post(served_->port(), "/embed", R"({"inputs": "The cat", "chunks": [[4, 2]]})");
  EXPECT_EQ(order.status, 400);
}

}  // namespace
}  // namespace stamen::gateway
