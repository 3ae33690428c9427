// The handlers of the routes that run on a model: each parses its body (api.cc, tei_api.cc,
// cohere_api.cc), asks the model's Inference for the checks, runs its work through
// Inference::Run and writes the answer. Gateway's route table (gateway.cc) binds them to their
// paths; they are defined by API family: embed_routes.cc, rerank_routes.cc, tokenizer_routes.cc,
// tei_routes.cc, cohere_routes.cc, multi_vector_routes.cc and bge_m3_routes.cc.
#pragma once

#include "gateway/inference.h"
#include "gateway/routes.h"
#include "gateway/tei_api.h"
#include "http/http_server.h"

namespace stamen::gateway {

// POST /v1/embeddings (OpenAI's body and answer when `openai`) and TEI's POST /embed.
void Embed(Inference& model, const http::Request& request, bool openai, Reply reply);
// POST /rerank, /v1/rerank and /v2/rerank: a reranker's scores, or a multi-vector model's MaxSim.
void Rerank(Inference& model, const http::Request& request, RerankShape shape, Reply reply);
// POST /tokenize and /decode: the tokenizer alone, no worker.
void Tokenize(Inference& model, const http::Request& request, Reply reply);
void Decode(Inference& model, const http::Request& request, Reply reply);
// TEI's catch-all POST / (and SageMaker's /invocations): the route the body and model call for.
void TeiRoot(Inference& model, const http::Request& request, Reply reply);
void Predict(Inference& model, const http::Request& request, Reply reply);
void Similarity(Inference& model, const http::Request& request, Reply reply);
void EmbedAll(Inference& model, const http::Request& request, Reply reply);     // every token's vector
void EmbedSparse(Inference& model, const http::Request& request, Reply reply);  // SPLADE's or bge-m3's sparse vectors
// The body of TEI's GET /info: the model, its limits, prompts and tasks, and what its first
// worker to answer runs on.
std::string InfoBody(const Inference& model);
// Cohere's POST /v2/embed.
void CohereEmbed(Inference& model, const http::Request& request, Reply reply);
// Jina's POST /v1/multi-vector: a multi-vector model's (or bge-m3's ColBERT) token vectors.
void MultiVector(Inference& model, const http::Request& request, Reply reply);
// POST /embed_multi: bge-m3's dense, sparse and ColBERT outputs from one forward.
void EmbedMulti(Inference& model, const http::Request& request, Reply reply);

}  // namespace stamen::gateway
