// libFuzzer target: HTTP request bodies of every POST route, as the gateway parses them
// (src/gateway/api.h, tei_api.h). The first byte picks the route, the rest is the body. A body parses to
// a call or to a 4xx error with a message; what parses is written back as the answers do.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "fuzz/fuzz_checks.h"
#include "gateway/api.h"
#include "gateway/tei_api.h"

namespace {

using namespace stamen;

void CheckError(const gateway::ApiError& error) {
  fuzz::Require(error.status >= 400 && error.status < 500, "a malformed body is a 4xx");
  fuzz::Require(!error.message.empty(), "an error has a message");
  const std::string body = gateway::ErrorBody(error);
  fuzz::Require(body.front() == '{' && body.back() == '}', "an error body is a JSON object");
}

// Echoes a text as the answers do (model names, documents, token pieces).
void Echo(const std::string& text) {
  std::string out;
  gateway::AppendJsonString(out, text);
  fuzz::Require(out.size() >= text.size() + 2 && out.front() == '"' && out.back() == '"', "a JSON string is quoted");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Every body is also read as TEI's POST / reads it (the route must not matter).
  for (const auto model : {gateway::ModelKind::kEmbedding, gateway::ModelKind::kReranker, gateway::ModelKind::kClassifier}) {
    gateway::RootTask(model, body);
  }
  switch (data[0] % 8) {
    case 0:
    case 1: {  // POST /v1/embeddings (OpenAI), POST /embed (TEI)
      auto parsed = gateway::ParseEmbedCall(body, data[0] % 5 == 0);
      if (auto* error = std::get_if<gateway::ApiError>(&parsed)) return CheckError(*error), 0;
      const auto& call = std::get<gateway::EmbedCall>(parsed);
      fuzz::Require(!call.inputs.empty(), "an embed call has inputs");
      fuzz::Require(call.dimensions >= 0, "dimensions are not negative");
      for (const auto& input : call.inputs) {
        if (const auto* ids = std::get_if<std::vector<int32_t>>(&input)) {
          const std::string_view bytes(reinterpret_cast<const char*>(ids->data()), ids->size() * sizeof(int32_t));
          fuzz::Require(gateway::Base64(bytes).size() == (bytes.size() + 2) / 3 * 4, "base64 length");
        } else {
          Echo(std::get<std::string>(input));
        }
      }
      Echo(call.model);
      return 0;
    }
    case 2:
    case 3: {  // POST /rerank (TEI), POST /v1/rerank (Cohere, Jina)
      auto parsed = gateway::ParseRerankCall(body, data[0] % 5 == 3);
      if (auto* error = std::get_if<gateway::ApiError>(&parsed)) return CheckError(*error), 0;
      const auto& call = std::get<gateway::RerankCall>(parsed);
      fuzz::Require(!call.documents.empty(), "a rerank call has documents");
      fuzz::Require(!call.top_n || *call.top_n > 0, "top_n is positive");
      Echo(call.query);
      for (const auto& document : call.documents) Echo(document);
      return 0;
    }
    case 5: {  // POST /predict (TEI)
      auto parsed = gateway::ParsePredictCall(body);
      if (auto* error = std::get_if<gateway::ApiError>(&parsed)) return CheckError(*error), 0;
      const auto& call = std::get<gateway::PredictCall>(parsed);
      fuzz::Require(!call.sequences.empty(), "a predict call has inputs");
      fuzz::Require(call.batch || call.sequences.size() == 1, "a single input is one sequence");
      for (const auto& sequence : call.sequences) {
        fuzz::Require(!sequence.first.empty() && (!sequence.second || !sequence.second->empty()), "texts are not empty");
        Echo(sequence.first);
      }
      return 0;
    }
    case 6: {  // POST /similarity (TEI)
      auto parsed = gateway::ParseSimilarityCall(body);
      if (auto* error = std::get_if<gateway::ApiError>(&parsed)) return CheckError(*error), 0;
      const auto& call = std::get<gateway::SimilarityCall>(parsed);
      fuzz::Require(!call.source_sentence.empty() && !call.sentences.empty(), "a similarity call has sentences");
      for (const auto& sentence : call.sentences) Echo(sentence);
      return 0;
    }
    case 7: {  // POST /decode (TEI)
      auto parsed = gateway::ParseDecodeCall(body);
      if (auto* error = std::get_if<gateway::ApiError>(&parsed)) return CheckError(*error), 0;
      fuzz::Require(!std::get<gateway::DecodeCall>(parsed).ids.empty(), "a decode call has sequences");
      return 0;
    }
    default: {  // POST /tokenize (TEI)
      auto parsed = gateway::ParseTokenizeCall(body);
      if (auto* error = std::get_if<gateway::ApiError>(&parsed)) return CheckError(*error), 0;
      const auto& call = std::get<gateway::TokenizeCall>(parsed);
      fuzz::Require(!call.inputs.empty(), "a tokenize call has inputs");
      for (const auto& input : call.inputs) Echo(input);
      return 0;
    }
  }
}
