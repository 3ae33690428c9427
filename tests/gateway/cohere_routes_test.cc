// Cohere's /v2/embed over real HTTP (gateway_fixture.h): every embedding type from the engine's
// vector, truncation as Cohere does it, input_type's prompt, and Cohere's error shape.
#include "tests/gateway/gateway_fixture.h"

namespace stamen::gateway {
namespace {

TEST_F(GatewayTest, CohereV2EmbedAnswersEveryTypeFromTheEngineVector) {
  const std::vector<std::string> texts = {"Hello world", "stamen quantizes embeddings"};
  const auto answer = Post(served_->port(), "/v2/embed",
                           R"({"model": "m", "texts": ["Hello world", "stamen quantizes embeddings"], "input_type": "search_document",
                               "embedding_types": ["float", "int8", "uint8", "binary", "ubinary", "base64", "float"]})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto root = Parse(parser_, answer.body);
  EXPECT_EQ(root["id"].get_string().value().size(), 36u);
  EXPECT_EQ(std::string_view(root["response_type"].get_string().value()), "embeddings_by_type");
  EXPECT_EQ(std::string_view(root["texts"].at(1).get_string().value()), texts[1]);
  auto embeddings = root["embeddings"].get_object().value();
  EXPECT_EQ(embeddings.size(), 6u);  // "float" asked twice, answered once
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = served_->Encode(texts[i]);
    tokens += ids.size();
    const std::vector<float> expected = served_->Embed(ids);
    const std::vector<float> floats = Floats(embeddings["float"].at(i).value());
    ExpectNear(floats, expected);
    // The quantized vectors are of the answered floats, exactly.
    EXPECT_EQ(Integers(embeddings["int8"].at(i).value()), Int8OfUnitVector(floats, 128));
    EXPECT_EQ(Integers(embeddings["uint8"].at(i).value()), Int8OfUnitVector(floats, 0));
    EXPECT_EQ(Integers(embeddings["binary"].at(i).value()), PackedSigns(floats, 128));
    EXPECT_EQ(Integers(embeddings["ubinary"].at(i).value()), PackedSigns(floats, 0));
    EXPECT_EQ(Integers(embeddings["binary"].at(i).value()).size(), 48u);
    EXPECT_EQ(DecodeBase64Floats(embeddings["base64"].at(i).get_string().value()), floats);
  }
  EXPECT_EQ(root["meta"]["billed_units"]["input_tokens"].get_int64().value(), static_cast<int64_t>(tokens));
  EXPECT_EQ(std::string_view(root["meta"]["api_version"]["version"].get_string().value()), "2");

  // `inputs` of text content, output_dimension (Matryoshka), default type float.
  simdjson::dom::parser other;
  const auto cut = Post(served_->port(), "/v2/embed",
                        R"({"inputs": [{"content": [{"type": "text", "text": "matryoshka"}]}], "output_dimension": 64, "priority": 3})");
  ASSERT_EQ(cut.status, 200) << cut.body;
  auto cut_root = Parse(other, cut.body);
  ExpectNear(Floats(cut_root["embeddings"]["float"].at(0).value()),
             Renormalized(served_->Embed(served_->Encode("matryoshka"), {}, false), 64));
  EXPECT_EQ(cut_root["embeddings"]["int8"].error(), simdjson::NO_SUCH_FIELD);
}

TEST_F(GatewayTest, CohereV2EmbedTruncatesAsCohereSays) {
  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "word" + std::to_string(i % 7) + " ";
  // END (Cohere's default) and START cut to the model's 256 tokens; NONE refuses.
  for (const std::string truncate : {"", "END", "START"}) {
    const std::string field = truncate.empty() ? "" : R"(, "truncate": ")" + truncate + "\"";
    const auto answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + "\"]" + field + "}");
    ASSERT_EQ(answer.status, 200) << truncate << ": " << answer.body;
    simdjson::dom::parser parser;
    const auto side = truncate == "START" ? tokenizer::TruncationSide::kLeft : tokenizer::TruncationSide::kRight;
    ExpectNear(Floats(Parse(parser, answer.body)["embeddings"]["float"].at(0).value()),
               served_->Embed(served_->Encode(long_text, 256, side)));
  }
  auto answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + R"("], "truncate": "NONE"})");
  EXPECT_EQ(answer.status, 422) << answer.body;
  ExpectErrorShape("/v2/embed", 422, answer.body);
  // max_tokens: a shorter cut.
  answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + R"("], "max_tokens": 10})");
  ASSERT_EQ(answer.status, 200) << answer.body;
  simdjson::dom::parser parser;
  ExpectNear(Floats(Parse(parser, answer.body)["embeddings"]["float"].at(0).value()),
             served_->Embed(served_->Encode(long_text, 10)));
  answer = Post(served_->port(), "/v2/embed", R"({"texts": [")" + long_text + R"("], "max_tokens": 10, "truncate": "NONE"})");
  EXPECT_EQ(answer.status, 422);
  EXPECT_NE(answer.body.find("more than 'max_tokens' 10"), std::string::npos) << answer.body;
}

TEST_F(GatewayTest, CohereErrorsHaveCohereShape) {
  const std::vector<ErrorCase> cases = {
      {"/v2/embed", "{not json", 400, "not valid JSON"},
      {"/v2/embed", "{}", 400, "give one of 'texts' or 'inputs'"},
      {"/v2/embed", R"({"texts": ["a"], "inputs": []})", 400, "give one of 'texts' or 'inputs'"},
      {"/v2/embed", R"({"texts": []})", 400, "'texts' is empty"},
      {"/v2/embed", R"({"texts": "a"})", 400, "'texts' must be an array of strings"},
      {"/v2/embed", R"({"texts": ["a", ""]})", 400, "'texts'[1] is an empty string"},
      {"/v2/embed", R"({"texts": ["a"], "images": ["data:image/png;base64,AAAA"]})", 400, "text embedding models only"},
      {"/v2/embed", R"({"inputs": [{"content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})", 400,
       R"(stamen embeds only \"text\")"},
      {"/v2/embed", R"({"inputs": [{"content": []}]})", 400, "exactly one text part per input"},
      {"/v2/embed", R"({"texts": ["a"], "input_type": "image"})", 400, "text embedding models only"},
      {"/v2/embed", R"({"texts": ["a"], "input_type": "questions"})", 400, "'input_type' must be"},
      {"/v2/embed", R"({"texts": ["a"], "embedding_types": ["int4"]})", 400, "'embedding_types'[0] must be one of"},
      {"/v2/embed", R"({"texts": ["a"], "embedding_types": []})", 400, "'embedding_types' must be a non-empty array"},
      {"/v2/embed", R"({"texts": ["a"], "truncate": "MIDDLE"})", 400, R"('truncate' must be \"NONE\", \"START\" or \"END\")"},
      {"/v2/embed", R"({"texts": ["a"], "output_dimension": 385})", 400, "'output_dimension' 385 exceeds the model's 384"},
      {"/v2/embed", R"({"texts": ["a"], "output_dimension": 0})", 400, "'output_dimension' must be a positive integer"},
      {"/v2/embed", R"({"texts": ["a"], "priority": -1})", 400, "'priority' must be"},
      {"/v2/embed", R"({"texts": ["1","2","3","4","5","6","7","8","9"]})", 413, "batch of 9 texts exceeds --max-client-batch-size 8"},
      {"/v2/embed", R"({"texts": [")" + std::string(70 * 1024, 'a') + R"("]})", 413, "payload too large"},
      {"/v2/rerank", R"({"query": "q", "documents": ["a"]})", 400, "is an embedding model, not a reranker"},
      {"/v2/rerank", R"({"query": "q"})", 400, "missing 'documents'"},
      {"/v2/rerank", R"({"query": "q", "documents": ["a"], "max_tokens_per_doc": 0})", 400, "'max_tokens_per_doc' must be a positive integer"},
      {"/v2/rerank", R"({"query": "q", "documents": ["a"], "priority": "urgent"})", 400, "'priority' must be"},
      {"/v1/rerank", R"({"query": "q", "documents": []})", 400, "'documents' is empty"},
      {"/embed", R"({"inputs": "a", "embedding_type": "base64"})", 400, "'embedding_type' must be"},
      {"/embed", R"({"inputs": "a", "normalize": false, "embedding_type": "int8"})", 400, "calibrated to unit-length vectors"},
      {"/v1/embeddings", R"({"input": "a", "encoding_format": "int4"})", 400, "'encoding_format' must be"},
  };
  for (const ErrorCase& error : cases) {
    const auto answer = Post(served_->port(), error.path, error.body);
    EXPECT_EQ(answer.status, error.status) << error.path << " " << error.body.substr(0, 80) << ": " << answer.body;
    EXPECT_NE(answer.body.find(error.message), std::string::npos) << error.message << " in " << answer.body;
    ExpectErrorShape(error.path, error.status, answer.body);
  }
  const auto wrong_method = Http(served_->port(), "GET", "/v2/embed");
  EXPECT_EQ(wrong_method.status, 405);
  ExpectErrorShape("/v2/embed", 405, wrong_method.body);
}

// input_type picks the model's prompt: search_query "query", search_document "document".
TEST(GatewayCohereTest, InputTypeAppliesTheModelsPrompt) {
  const std::string folder = server::testing::ScratchFolder() + "/minilm-with-prompts";
  std::filesystem::remove_all(folder);
  std::filesystem::copy(Embedder(), folder, std::filesystem::copy_options::recursive);
  std::ofstream(folder + "/config_sentence_transformers.json")
      << R"({"prompts": {"query": "query: ", "document": "passage: ", "Clustering": "cluster: "}, "default_prompt_name": null})";
  Served served(folder);
  for (const auto& [input_type, prompt] : std::vector<std::pair<std::string, std::string>>{
           {"search_query", "query: "}, {"search_document", "passage: "}, {"clustering", "cluster: "}, {"classification", ""}}) {
    const auto answer = Post(served.port(), "/v2/embed", R"({"texts": ["what is stamen?"], "input_type": ")" + input_type + "\"}");
    ASSERT_EQ(answer.status, 200) << answer.body;
    simdjson::dom::parser parser;
    ExpectNear(Floats(Parse(parser, answer.body)["embeddings"]["float"].at(0).value()),
               served.Embed(served.Encode(prompt + "what is stamen?")));
  }
}

}  // namespace
}  // namespace stamen::gateway
