// What a worker checks on the bytes a client sends before any of it is queued: the packed
// sequences of a gRPC request decoded into a WorkRequest, and the WorkRequest validated
// against the model's limits, so one bad request fails alone instead of failing the batch it
// would have joined. Free of the engine and of gRPC's server side, so that the fuzz target
// links only this and the generated protobuf code.
#pragma once

#include <cstdint>
#include <optional>

#include "common/status.h"
#include "model_folder/model_profile.h"
#include "proto/stamen/v1/inference.pb.h"
#include "server/work_request.h"

namespace stamen::engine {
class Engine;
}

namespace stamen::server {

// What requests are validated against.
struct ModelLimits {
  int64_t vocabulary_size = 0;
  int64_t max_sequence_length = 0;  // 0: no limit known
  int64_t embedding_width = 0;  // of the step's embeddings: after the Dense modules, before truncation
  int64_t hidden_size = 0;      // of every token's last hidden state (kTokenEmbed)
  int64_t type_vocabulary_size = 0;  // 0: token type ids must be 0
  int64_t num_labels = 0;            // > 0 for models with a classification head
  std::optional<engine::ops::PoolingMode> default_pooling;
  bool multi_vector = false;  // a multi-vector (ColBERT) model: kTokenVectors and kMaxSim
  bool bge_m3 = false;        // bge-m3's heads, on a CPU engine: kDenseSparseColbert
  // Task adapters a request may name (WorkRequest::adapter): the model's.
  int64_t task_adapters = 0;

  // The profile's facts (model_folder/model_profile.h), which the gateway works out alike.
  static ModelLimits Of(const engine::ModelProfile& profile);
  static ModelLimits Of(const engine::Engine& engine);  // defined with the scheduler
};

// Decodes packed sequences into `request` (ids and type ids are copied as bytes, lengths read);
// a malformed field is kInvalidArgument.
Status DecodeSequences(const v1::TokenSequences& sequences, WorkRequest& request);
// The whole of an Embed or Score call: sequences and options (kind, pooling, normalize,
// dimensions). An unknown pooling name is kInvalidArgument.
Status DecodeEmbedRequest(const v1::EmbedRequest& message, WorkRequest& request);
Status DecodeScoreRequest(const v1::ScoreRequest& message, WorkRequest& request);
// The inverse, for the gateway's calls to a worker: `request`'s sequences and options as an
// Embed (kEmbed, kTokenEmbed) or Score call (kScore). Beside the decoders, so that the fields
// travel both ways by one list.
void EncodeEmbedRequest(const WorkRequest& request, v1::EmbedRequest& message);
void EncodeScoreRequest(const WorkRequest& request, v1::ScoreRequest& message);
// The wire value of a priority, for clients of the worker such as the gateway.
v1::Priority PriorityMessage(Priority priority);

// Ok when `request` can run on a model with `limits`: ids packed, lengths positive and adding
// up to the ids sent, ids and type ids in range, sequences within the maximum length, the
// kind and options ones the model serves. Otherwise kInvalidArgument saying what is wrong.
Status ValidateWorkRequest(const WorkRequest& request, const ModelLimits& limits);

}  // namespace stamen::server
