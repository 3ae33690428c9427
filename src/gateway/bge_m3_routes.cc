// POST /embed_multi: bge-m3's dense, sparse and ColBERT outputs of each input from one forward
// (FlagEmbedding's BGEM3FlagModel.encode with return_dense, return_sparse, return_colbert_vecs).
// /embed_sparse and /v1/multi-vector give the sparse and ColBERT outputs alone (tei_routes.cc,
// multi_vector_routes.cc); /embed gives the dense vectors as any embedding model's.
#include "gateway/bge_m3_outputs.h"
#include "gateway/route_handlers.h"

namespace stamen::gateway {

using server::WorkKind;

namespace {

void EmbedMulti(Inference& model, const http::Request& request, Reply reply) {
  if (!model.bge_m3()) {
    return reply.Error({400, "model " + model.model_id() + " is not a bge-m3 model: /embed_multi needs colbert_linear.pt and "
                             "sparse_linear.pt beside an encoder's config.json (BAAI/bge-m3's folder); use /embed"});
  }
  auto parsed = ParseEmbedMultiCall(request.body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return reply.Error(*error);
  auto call = std::make_shared<EmbedMultiCall>(std::move(std::get<EmbedMultiCall>(parsed)));
  auto prompt = model.Prompt(call->prompt_name);
  if (auto* error = std::get_if<ApiError>(&prompt)) return reply.Error(*error);
  Inference::TokenRowsJob job{.inputs = std::move(call->inputs),
                              .prompt = std::get<std::string>(prompt),
                              .truncate = model.Truncates(call->truncate),
                              .direction = call->truncation_direction,
                              .priority = call->priority,
                              .kind = WorkKind::kDenseSparseColbert};
  model.RunTokenRows(request, std::move(job), [&model, call](const FinishedRows& done) {
    return EmbedMultiBody(*call, BgeM3RowsOf(done), model.config().hidden_size, model.bge_m3_dropped_ids());
  }, std::move(reply));
}

}  // namespace

void AddBgeM3Routes(RouteTable& routes, Inference& model) {
  // path, method, family, work (counts toward --max-concurrent-requests), open (no API key), handler
  routes.Add({{"/embed_multi", "POST", ApiFamily::kTei, true, false, OnModel(model, EmbedMulti)}});
}

}  // namespace stamen::gateway
