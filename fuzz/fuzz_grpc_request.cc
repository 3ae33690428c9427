// libFuzzer target: the worker's request decoder. The first byte picks Embed or Score and the
// model the request is checked against; the rest is the protobuf message as it arrives over
// gRPC. Decoding and validation (src/server/request_validation.h) must refuse what the
// scheduler could not run, so whatever passes must be consistent.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz/fuzz_checks.h"
#include "server/request_validation.h"

namespace {

using namespace stamen;

server::ModelLimits Limits(uint8_t selector) {
  server::ModelLimits limits;
  limits.vocabulary_size = (selector & 2) ? 1000 : 30522;
  limits.max_sequence_length = (selector & 4) ? 0 : 512;
  limits.embedding_width = 384;
  limits.type_vocabulary_size = (selector & 8) ? 0 : 2;
  limits.num_labels = (selector & 16) ? 1 : 0;
  if (!(selector & 32)) limits.default_pooling = engine::ops::PoolingMode::kMean;
  return limits;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const server::ModelLimits limits = Limits(data[0]);
  server::WorkRequest work;
  Status decoded;
  if (data[0] & 1) {
    v1::ScoreRequest message;
    if (!message.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    decoded = server::DecodeScoreRequest(message, work);
  } else {
    v1::EmbedRequest message;
    if (!message.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
    decoded = server::DecodeEmbedRequest(message, work);
  }
  if (!decoded.ok()) {
    fuzz::Require(decoded.code() == StatusCode::kInvalidArgument, "a bad message is kInvalidArgument");
    return 0;
  }
  const Status valid = server::ValidateWorkRequest(work, limits);
  if (!valid.ok()) {
    fuzz::Require(valid.code() == StatusCode::kInvalidArgument && !valid.message().empty(),
                  "an invalid request is kInvalidArgument with a message");
    return 0;
  }
  // What passed is what the scheduler relies on.
  fuzz::Require(!work.lengths.empty(), "at least one sequence");
  int64_t total = 0;
  for (int32_t length : work.lengths) {
    fuzz::Require(length > 0, "no empty sequence");
    fuzz::Require(limits.max_sequence_length == 0 || length <= limits.max_sequence_length, "within the maximum length");
    total += length;
  }
  fuzz::Require(total == work.total_tokens(), "lengths add up to the ids");
  fuzz::Require(work.token_type_ids.empty() || work.token_type_ids.size() == work.token_ids.size(),
                "one type id per token");
  for (int64_t i = 0; i < total; ++i) {
    int32_t id;
    std::memcpy(&id, work.token_ids.data() + i * sizeof(int32_t), sizeof(id));
    fuzz::Require(id >= 0 && id < limits.vocabulary_size, "ids inside the vocabulary");
  }
  // Scores only from a model that scores, pooled embeddings only from one that does not; the
  // per-token hidden states (kTokenEmbed) exist for every model.
  fuzz::Require(work.kind == server::WorkKind::kScore   ? limits.num_labels > 0
                : work.kind == server::WorkKind::kEmbed ? limits.num_labels == 0
                                                        : true,
                "the kind is one the model serves");
  return 0;
}
