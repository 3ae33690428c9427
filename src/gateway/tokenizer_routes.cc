// TEI's POST /tokenize and /decode: the model's tokenizer alone, on the pool, no worker.
// Bodies are parsed by api.cc and tei_api.cc.
#include "gateway/least_tokens.h"
#include "gateway/route_handlers.h"
#include "gateway/tei_api.h"

namespace stamen::gateway {

namespace {

void Tokenize(Inference& model, const http::Request& request, Reply respond) {
  auto parsed = ParseTokenizeCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return respond.Error(*error);
  auto call = std::make_shared<TokenizeCall>(std::move(std::get<TokenizeCall>(parsed)));
  if (auto error = model.CheckBatchSize(call->inputs.size(), "inputs")) return respond.Error(*error);
  auto prompt = model.Prompt(call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return respond.Error(*error);
  const int64_t most = model.options().max_tokenize_tokens;
  model.OnPool([call, prompt = std::get<std::string>(prompt), most, respond](engine::ModelTokenizer& tokenizer) {
    // Each token is ~60 bytes of JSON and ~50 bytes while listed with its text, so the answer
    // is bounded by --max-tokenize-tokens before an input's tokens are listed. A text gives at
    // most one token per byte and a few special tokens: only an input that could pass the
    // bound is counted first, as bare ids (4 bytes each). Encode always adds the template's
    // special tokens (those of an empty text); an answer without them lists that many fewer.
    constexpr int64_t kSpecialTokensAtMost = 8;
    int64_t total = 0;
    std::optional<int64_t> template_tokens;
    std::vector<int32_t> ids;
    std::string body = "[";
    const auto too_many = [&](int64_t answered, size_t i) {
      return ApiError{413, "/tokenize would answer at least " + std::to_string(answered) + " tokens (with input " +
                               std::to_string(i) + "), more than --max-tokenize-tokens " + std::to_string(most) +
                               ": send fewer or shorter inputs"};
    };
    for (size_t i = 0; i < call->inputs.size(); ++i) {
      const std::string text = prompt + call->inputs[i];
      // Its words first (a lower bound of its tokens, least_tokens.h): a flood of words is
      // refused without tokenizing it, whose buffers the allocator would keep (+200 MB for a
      // 5 MB body of 2.5 M words in the soak).
      if (const int64_t words = LeastTokens(text, 0); total + words > most) return respond.Error(too_many(total + words, i));
      if (total + static_cast<int64_t>(text.size()) + kSpecialTokensAtMost > most) {
        if (!template_tokens) {
          ids.clear();
          if (!call->add_special_tokens) tokenizer.Encode("", 0, &ids);
          template_tokens = static_cast<int64_t>(ids.size());
        }
        ids.clear();
        tokenizer.Encode(text, 0, &ids);
        const int64_t answered = total + static_cast<int64_t>(ids.size()) - *template_tokens;
        if (answered > most) return respond.Error(too_many(answered, i));
      }
      const auto tokens = tokenizer.Tokenize(text, call->add_special_tokens);
      total += static_cast<int64_t>(tokens.size());
      body += i ? ",[" : "[";
      for (size_t k = 0; k < tokens.size(); ++k) {
        const auto& token = tokens[k];
        body += k ? ",{\"id\":" : "{\"id\":";
        body += std::to_string(token.id) + ",\"text\":";
        AppendJsonString(body, token.piece);
        body += std::string(",\"special\":") + (token.special ? "true" : "false");
        if (token.special) {
          body += ",\"start\":null,\"stop\":null}";
        } else {
          body += ",\"start\":" + std::to_string(token.begin) + ",\"stop\":" + std::to_string(token.end) + "}";
        }
      }
      body += ']';
    }
    body += ']';
    respond(JsonResponse(200, std::move(body)));
  });
}

void Decode(Inference& model, const http::Request& request, Reply reply) {
  auto parsed = ParseDecodeCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  auto call = std::make_shared<DecodeCall>(std::move(std::get<DecodeCall>(parsed)));
  if (auto error = model.CheckBatchSize(call->ids.size(), "sequences")) return reply.Error(*error);
  const int64_t vocabulary = model.tokenizer_vocabulary_size();
  for (size_t i = 0; i < call->ids.size(); ++i) {
    for (int32_t id : call->ids[i]) {
      if (id < 0 || id >= vocabulary) {
        return reply.Error({400, "sequence " + std::to_string(i) + ": token id " + std::to_string(id) +
                                     " is outside the tokenizer's vocabulary (0.." + std::to_string(vocabulary - 1) + ")"});
      }
    }
  }
  model.OnPool([call, reply](engine::ModelTokenizer& tokenizer) {
    std::string body = "[";
    for (size_t i = 0; i < call->ids.size(); ++i) {
      if (i) body += ',';
      AppendJsonString(body, tokenizer.Decode(call->ids[i], call->skip_special_tokens));
    }
    body += ']';
    reply(JsonResponse(200, std::move(body)));
  });
}

}  // namespace

void AddTokenizerRoutes(RouteTable& routes, Inference& model) {
  using enum ApiFamily;
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes.Add({
      {"/tokenize", "POST", kTei, true, false, OnModel(model, Tokenize)},
      {"/decode", "POST", kTei, true, false, OnModel(model, Decode)},
  });
}

}  // namespace stamen::gateway
