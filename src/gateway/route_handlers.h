// The routes that run on a model, one file per API family: each file lists its routes' rows
// (path, method, API family, flags) beside their handlers, which parse the body (api.cc,
// tei_api.cc, cohere_api.cc), ask the model's Inference for the checks, run the work through
// Inference::Run and write the answer. Gateway::Routes (gateway.cc) adds each family's rows,
// then the gateway's own, so a new route of a family touches neither this header nor gateway.cc.
#pragma once

#include <string>
#include <utility>

#include "gateway/inference.h"
#include "gateway/routes.h"
#include "http/http_server.h"

namespace stamen::gateway {

// `handler(model, request, arguments..., reply)` as a route's handler: `model` outlives the
// route table that holds it.
template <typename Handler, typename... Arguments>
RouteHandler OnModel(Inference& model, Handler handler, Arguments... arguments) {
  return [&model, handler, arguments...](const http::Request& request, Reply reply) {
    handler(model, request, arguments..., std::move(reply));
  };
}

// OpenAI's POST /v1/embeddings (and /embeddings) and TEI's POST /embed (embed_routes.cc).
void AddEmbedRoutes(RouteTable& routes, Inference& model);
// POST /rerank (TEI), /v1/rerank and /v2/rerank (Cohere) (rerank_routes.cc).
void AddRerankRoutes(RouteTable& routes, Inference& model);
// Cohere's POST /v2/embed (cohere_routes.cc).
void AddCohereRoutes(RouteTable& routes, Inference& model);
// TEI's POST /tokenize and /decode: the tokenizer alone, no worker (tokenizer_routes.cc).
void AddTokenizerRoutes(RouteTable& routes, Inference& model);
// TEI's POST /predict, /similarity, /embed_all, /embed_sparse and the catch-all POST / (and
// SageMaker's /invocations), which answers as the route of `routes` its body calls for
// (tei_routes.cc).
void AddTeiRoutes(RouteTable& routes, Inference& model);
// Jina's POST /v1/multi-vector (multi_vector_routes.cc).
void AddMultiVectorRoutes(RouteTable& routes, Inference& model);
// POST /embed_multi: bge-m3's dense, sparse and ColBERT outputs (bge_m3_routes.cc).
void AddBgeM3Routes(RouteTable& routes, Inference& model);

// The body of TEI's GET /info: the model, its limits, prompts and tasks, and what its first
// worker to answer runs on (tei_routes.cc).
std::string InfoBody(const Inference& model);

}  // namespace stamen::gateway
