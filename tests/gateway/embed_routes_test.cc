// The embedding routes over real HTTP (gateway_fixture.h): OpenAI's /v1/embeddings and TEI's
// /embed in every input shape, base64, dimensions, truncation, prompts and quantized answers,
// compared with the engine's vectors; a static (model2vec) model through them.
#include "tests/gateway/gateway_fixture.h"

namespace stamen::gateway {
namespace {

TEST_F(GatewayTest, OpenAIEmbeddingsMatchTheEngine) {
  const auto answer = Post(served_->port(), "/v1/embeddings",
                           R"({"input": ["Hello world", "A second, longer input text."], "model": "my-model"})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.Header("content-type"), "application/json");
  for (const char* header : {"x-total-time", "x-tokenization-time", "x-queue-time", "x-inference-time"}) {
    EXPECT_FALSE(answer.Header(header).empty()) << header;
  }
  auto root = Parse(parser_, answer.body);
  EXPECT_EQ(std::string_view(root["object"].get_string().value()), "list");
  EXPECT_EQ(std::string_view(root["model"].get_string().value()), "my-model");
  auto data = root["data"].get_array().value();
  ASSERT_EQ(data.size(), 2u);
  const std::vector<std::string> texts = {"Hello world", "A second, longer input text."};
  size_t tokens = 0;
  for (size_t i = 0; i < 2; ++i) {
    auto item = data.at(i).value();
    EXPECT_EQ(std::string_view(item["object"].get_string().value()), "embedding");
    EXPECT_EQ(item["index"].get_int64().value(), static_cast<int64_t>(i));
    const auto ids = served_->Encode(texts[i]);
    tokens += ids.size();
    ExpectNear(Floats(item["embedding"].value()), served_->Embed(ids));
  }
  EXPECT_EQ(root["usage"]["prompt_tokens"].get_int64().value(), static_cast<int64_t>(tokens));
  EXPECT_EQ(root["usage"]["total_tokens"].get_int64().value(), static_cast<int64_t>(tokens));
}

TEST_F(GatewayTest, Base64DecodesToTheSameFloats) {
  const std::string input = R"("input": ["The quick brown fox", "jumps"])";
  const auto as_float = Post(served_->port(), "/embeddings", "{" + input + R"(, "encoding_format": "float"})");
  const auto as_base64 = Post(served_->port(), "/v1/embeddings", "{" + input + R"(, "encoding_format": "base64"})");
  ASSERT_EQ(as_float.status, 200);
  ASSERT_EQ(as_base64.status, 200) << as_base64.body;
  simdjson::dom::parser other;
  auto floats = Parse(parser_, as_float.body)["data"].get_array().value();
  auto encoded = Parse(other, as_base64.body)["data"].get_array().value();
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<float> decoded = DecodeBase64Floats(encoded.at(i)["embedding"].get_string().value());
    const std::vector<float> printed = Floats(floats.at(i)["embedding"].value());
    ASSERT_EQ(decoded.size(), 384u);
    // to_chars prints the shortest text that reads back as the same float.
    for (size_t k = 0; k < decoded.size(); ++k) ASSERT_EQ(decoded[k], printed[k]);
  }
}

TEST_F(GatewayTest, EveryInputShape) {
  const auto ids = served_->Encode("token ids in");
  std::string ids_json = "[";
  for (size_t i = 0; i < ids.size(); ++i) ids_json += (i ? "," : "") + std::to_string(ids[i]);
  ids_json += "]";
  const std::vector<float> expected = served_->Embed(ids);
  for (const std::string& input : {std::string(R"("token ids in")"), std::string(R"(["token ids in"])"), ids_json,
                                   "[" + ids_json + "]"}) {
    const auto answer = Post(served_->port(), "/v1/embeddings", R"({"input": )" + input + "}");
    ASSERT_EQ(answer.status, 200) << input << ": " << answer.body;
    auto data = Parse(parser_, answer.body)["data"].get_array().value();
    ASSERT_EQ(data.size(), 1u) << input;
    ExpectNear(Floats(data.at(0)["embedding"].value()), expected);
  }
}

TEST_F(GatewayTest, DimensionsKeepTheLeadingComponentsRenormalised) {
  const auto answer = Post(served_->port(), "/v1/embeddings", R"({"input": "matryoshka", "dimensions": 64})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  const auto vector = Floats(Parse(parser_, answer.body)["data"].at(0)["embedding"].value());
  ExpectNear(vector, Renormalized(served_->Embed(served_->Encode("matryoshka"), {}, false), 64));
}

TEST_F(GatewayTest, TeiEmbedWithNormalizeTruncateAndPrompts) {
  auto answer = Post(served_->port(), "/embed", R"({"inputs": ["one", "two"], "normalize": false})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto rows = Parse(parser_, answer.body).get_array().value();
  ASSERT_EQ(rows.size(), 2u);
  ExpectNear(Floats(rows.at(1).value()), served_->Embed(served_->Encode("two"), {}, false), 1e-4);

  // 300 words: more than the model's 256 tokens.
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "word" + std::to_string(i % 7) + " ";
  answer = Post(served_->port(), "/embed", R"({"inputs": ")" + long_text + R"("})");
  EXPECT_EQ(answer.status, 422);
  EXPECT_NE(answer.body.find("the model takes at most 256"), std::string::npos) << answer.body;
  for (const std::string direction : {"right", "left"}) {
    answer = Post(served_->port(), "/embed",
                  R"({"inputs": ")" + long_text + R"(", "truncate": true, "truncation_direction": ")" + direction + R"("})");
    ASSERT_EQ(answer.status, 200) << answer.body;
    const auto side = direction == "left" ? tokenizer::TruncationSide::kLeft : tokenizer::TruncationSide::kRight;
    ExpectNear(Floats(Parse(parser_, answer.body).at(0).value()), served_->Embed(served_->Encode(long_text, 256, side)));
  }
  answer = Post(served_->port(), "/embed", R"({"inputs": "x", "prompt_name": "query"})");
  EXPECT_EQ(answer.status, 400);
  EXPECT_NE(answer.body.find("unknown prompt_name 'query'"), std::string::npos) << answer.body;
}

TEST_F(GatewayTest, QuantizedEmbeddingsOnOpenAIAndTei) {
  const auto floats = Post(served_->port(), "/v1/embeddings", R"({"input": "quantize me"})");
  ASSERT_EQ(floats.status, 200);
  const std::vector<float> vector = Floats(Parse(parser_, floats.body)["data"].at(0)["embedding"].value());
  for (const std::string type : {"int8", "uint8", "binary", "ubinary"}) {
    const std::vector<int64_t> expected = type == "int8"    ? Int8OfUnitVector(vector, 128)
                                          : type == "uint8" ? Int8OfUnitVector(vector, 0)
                                          : type == "binary" ? PackedSigns(vector, 128)
                                                             : PackedSigns(vector, 0);
    const auto openai = Post(served_->port(), "/v1/embeddings", R"({"input": "quantize me", "encoding_format": ")" + type + "\"}");
    ASSERT_EQ(openai.status, 200) << openai.body;
    simdjson::dom::parser openai_parser;
    EXPECT_EQ(Integers(Parse(openai_parser, openai.body)["data"].at(0)["embedding"].value()), expected) << type;
    const auto tei = Post(served_->port(), "/embed", R"({"inputs": "quantize me", "embedding_type": ")" + type + "\"}");
    ASSERT_EQ(tei.status, 200) << tei.body;
    simdjson::dom::parser tei_parser;
    EXPECT_EQ(Integers(Parse(tei_parser, tei.body).at(0).value()), expected) << type;
  }
  // Sign bits need no calibration: binary of unnormalized vectors is fine; int8 is not.
  EXPECT_EQ(Post(served_->port(), "/embed", R"({"inputs": "a", "normalize": false, "embedding_type": "binary"})").status, 200);
}

// A static embedding model (issue 44) through the embedding routes: TEI's /embed (raw and
// normalised), OpenAI's /v1/embeddings and Cohere's /v2/embed give model2vec's own
// StaticModel.encode vectors (tests/engine/data/tiny-model2vec/reference.json, written by
// tools/make_static_goldens.py), texts with unknown tokens, with none known and past max_length
// included; /info says what the folder is.
TEST(StaticEmbeddingServingTest, EmbeddingRoutesGiveModel2VecVectors) {
  const std::string folder = std::string(STAMEN_SOURCE_DIR) + "/tests/engine/data/tiny-model2vec";
  Served served(folder);
  simdjson::dom::parser reference_parser;
  simdjson::dom::element reference = reference_parser.load(folder + "/reference.json");
  std::string texts = "[";
  std::vector<std::vector<float>> raw, normalized;
  for (simdjson::dom::element text : reference["texts"].get_array()) {
    if (texts.size() > 1) texts += ",";
    AppendJsonString(texts, std::string_view(text));
  }
  texts += "]";
  for (simdjson::dom::element row : reference["raw"].get_array()) raw.push_back(Floats(row));
  for (simdjson::dom::element row : reference["normalized"].get_array()) normalized.push_back(Floats(row));
  const auto expect_rows = [&](simdjson::dom::array rows, const std::vector<std::vector<float>>& expected,
                               const std::string& route) {
    ASSERT_EQ(rows.size(), expected.size()) << route;
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(route + ": text " + std::to_string(i));
      ExpectNear(Floats(rows.at(i).value()), expected[i], 1e-4);
    }
  };
  simdjson::dom::parser parser;
  auto answer = Post(served.port(), "/embed", R"({"inputs": )" + texts + R"(, "normalize": false})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  expect_rows(Parse(parser, answer.body).get_array().value(), raw, "/embed raw");
  answer = Post(served.port(), "/embed", R"({"inputs": )" + texts + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  expect_rows(Parse(parser, answer.body).get_array().value(), normalized, "/embed");
  answer = Post(served.port(), "/v1/embeddings", R"({"input": )" + texts + "}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  {
    simdjson::dom::array data = Parse(parser, answer.body)["data"].get_array().value();
    ASSERT_EQ(data.size(), normalized.size());
    for (size_t i = 0; i < normalized.size(); ++i) {
      SCOPED_TRACE("/v1/embeddings: text " + std::to_string(i));
      ExpectNear(Floats(data.at(i)["embedding"].value()), normalized[i], 1e-4);
    }
  }
  answer = Post(served.port(), "/v2/embed",
                R"({"texts": )" + texts + R"(, "input_type": "search_document", "embedding_types": ["float"]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  expect_rows(Parse(parser, answer.body)["embeddings"]["float"].get_array().value(), normalized, "/v2/embed");

  answer = Http(served.port(), "GET", "/info");
  ASSERT_EQ(answer.status, 200);
  auto info = Parse(parser, answer.body);
  EXPECT_EQ(std::string_view(info["architecture"].get_string().value()), "StaticModel");
  EXPECT_EQ(info["dimensions"].get_int64().value(), 24);
  EXPECT_EQ(info["max_input_length"].get_int64().value(), 16);  // model2vec's max_length
  EXPECT_EQ(std::string_view(info["model_type"]["embedding"]["pooling"].get_string().value()), "mean");
}

}  // namespace
}  // namespace stamen::gateway
