#include "server/request_validation.h"

#include <algorithm>
#include <cstring>
#include <string>

#include <google/protobuf/unknown_field_set.h>

#include "model_folder/model_options.h"

namespace stamen::server {

ModelLimits ModelLimits::Of(const engine::ModelProfile& profile) {
  ModelLimits limits;
  limits.vocabulary_size = profile.vocabulary_size;
  limits.max_sequence_length = profile.max_sequence_length;
  limits.embedding_width = profile.embedding_width;
  limits.hidden_size = profile.hidden_size;
  limits.type_vocabulary_size = profile.type_vocabulary_size;
  limits.num_labels = profile.num_labels;
  limits.default_pooling = profile.default_pooling;
  limits.multi_vector = profile.multi_vector;
  limits.bge_m3 = profile.bge_m3;
  limits.task_adapters = profile.task_adapters;
  return limits;
}

namespace {

int32_t ReadInt32(const std::string& bytes, size_t index) {
  int32_t value;
  std::memcpy(&value, bytes.data() + index * sizeof(int32_t), sizeof(value));
  return value;
}

// Packed int32 little-endian bytes into `values`; false when not a whole number of them.
bool ReadInt32s(const std::string& bytes, std::vector<int32_t>& values) {
  if (bytes.size() % sizeof(int32_t) != 0) return false;
  values.resize(bytes.size() / sizeof(int32_t));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return true;
}

Status DecodePriority(v1::Priority priority, WorkRequest& request) {
  switch (priority) {
    case v1::PRIORITY_HIGH: request.priority = Priority::kHigh; return Status();
    case v1::PRIORITY_NORMAL: request.priority = Priority::kNormal; return Status();
    case v1::PRIORITY_LOW: request.priority = Priority::kLow; return Status();
    default: return Status::Error(StatusCode::kInvalidArgument, "unknown priority " + std::to_string(priority));
  }
}

// EmbedRequest's field number of the Pooling enum that pooling_name replaced (reserved in the proto).
constexpr int kRetiredPoolingField = 2;

// The pooling by its name, any spelling --pooling takes; none: the model's default.
Status DecodePooling(const v1::EmbedRequest& message, WorkRequest& request) {
  // A client built before the mode travelled by name sets the retired enum, field 2, instead:
  // pooling with the model's default would answer it with other vectors and no error.
  const google::protobuf::UnknownFieldSet& unknown = message.GetReflection()->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).number() == kRetiredPoolingField) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "field 2 (the retired Pooling enum) is set: name the pooling in pooling_name");
    }
  }
  const std::string& name = message.pooling_name();
  request.pooling.reset();
  if (name.empty()) return Status();
  request.pooling = engine::ParsePoolingOption(name);
  if (request.pooling) return Status();
  // The name is the client's: quoted whole only when short, as it goes back in gRPC trailers.
  constexpr size_t kQuoted = 64;
  const std::string quoted = name.size() <= kQuoted ? name : name.substr(0, kQuoted) + "…";
  return Status::Error(StatusCode::kInvalidArgument,
                       "unknown pooling '" + quoted + "' (" + engine::PoolingOptionNames() + ")");
}

}  // namespace

v1::Priority PriorityMessage(Priority priority) {
  switch (priority) {
    case Priority::kHigh: return v1::PRIORITY_HIGH;
    case Priority::kLow: return v1::PRIORITY_LOW;
    case Priority::kNormal: break;
  }
  return v1::PRIORITY_NORMAL;
}

namespace {

std::string PackedInt32s(const std::vector<int32_t>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int32_t));
}

void EncodeSequences(const WorkRequest& request, v1::TokenSequences& sequences) {
  sequences.set_token_ids(request.token_ids);
  sequences.set_lengths(PackedInt32s(request.lengths));
  sequences.set_token_type_ids(request.token_type_ids);
}

}  // namespace

void EncodeEmbedRequest(const WorkRequest& request, v1::EmbedRequest& message) {
  EncodeSequences(request, *message.mutable_sequences());
  message.set_token_embeddings(request.kind == WorkKind::kTokenEmbed);
  message.set_token_vectors(request.kind == WorkKind::kTokenVectors);
  message.set_max_sim(request.kind == WorkKind::kMaxSim);
  message.set_dense_sparse_colbert(request.kind == WorkKind::kDenseSparseColbert);
  message.set_key_lengths(PackedInt32s(request.key_lengths));
  message.set_skip_token_ids(PackedInt32s(request.skip_token_ids));
  message.set_span_counts(PackedInt32s(request.span_counts));
  message.set_spans(PackedInt32s(request.spans));
  if (request.pooling) message.set_pooling_name(engine::PoolingOptionName(*request.pooling));
  message.set_normalize(request.normalize);
  message.set_dimensions(static_cast<uint32_t>(request.dimensions));
  message.set_priority(PriorityMessage(request.priority));
  if (request.adapter >= 0) message.set_adapter(request.adapter);
}

void EncodeScoreRequest(const WorkRequest& request, v1::ScoreRequest& message) {
  EncodeSequences(request, *message.mutable_sequences());
  message.set_priority(PriorityMessage(request.priority));
}

Status DecodeSequences(const v1::TokenSequences& sequences, WorkRequest& request) {
  const std::string& lengths = sequences.lengths();
  if (lengths.size() % sizeof(int32_t) != 0 || sequences.token_ids().size() % sizeof(int32_t) != 0 ||
      sequences.token_type_ids().size() % sizeof(int32_t) != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "token_ids, lengths and token_type_ids must be packed int32 (a multiple of 4 bytes)");
  }
  ReadInt32s(lengths, request.lengths);
  request.token_ids = sequences.token_ids();
  request.token_type_ids = sequences.token_type_ids();
  return Status();
}

Status DecodeEmbedRequest(const v1::EmbedRequest& message, WorkRequest& request) {
  request.kind = message.token_embeddings()       ? WorkKind::kTokenEmbed
                 : message.max_sim()                ? WorkKind::kMaxSim
                 : message.token_vectors()          ? WorkKind::kTokenVectors
                 : message.dense_sparse_colbert()   ? WorkKind::kDenseSparseColbert
                                                    : WorkKind::kEmbed;
  if (int(message.token_embeddings()) + int(message.token_vectors()) + int(message.max_sim()) +
          int(message.dense_sparse_colbert()) > 1) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "token_embeddings, token_vectors, max_sim and dense_sparse_colbert exclude each other");
  }
  if (!ReadInt32s(message.key_lengths(), request.key_lengths) ||
      !ReadInt32s(message.skip_token_ids(), request.skip_token_ids)) {
    return Status::Error(StatusCode::kInvalidArgument, "key_lengths and skip_token_ids must be packed int32 (a multiple of 4 bytes)");
  }
  STAMEN_RETURN_IF_ERROR(DecodeSequences(message.sequences(), request));
  if (!ReadInt32s(message.span_counts(), request.span_counts) || !ReadInt32s(message.spans(), request.spans)) {
    return Status::Error(StatusCode::kInvalidArgument, "span_counts and spans must be packed int32 (a multiple of 4 bytes)");
  }
  STAMEN_RETURN_IF_ERROR(DecodePooling(message, request));
  request.normalize = message.has_normalize() ? message.normalize() : true;
  request.dimensions = message.dimensions();
  request.adapter = message.has_adapter() ? message.adapter() : -1;
  return DecodePriority(message.priority(), request);
}

Status DecodeScoreRequest(const v1::ScoreRequest& message, WorkRequest& request) {
  request.kind = WorkKind::kScore;
  STAMEN_RETURN_IF_ERROR(DecodeSequences(message.sequences(), request));
  return DecodePriority(message.priority(), request);
}

namespace {

Status ValidateSpans(const WorkRequest& request, const ModelLimits& limits) {
  auto invalid = [](std::string message) { return Status::Error(StatusCode::kInvalidArgument, std::move(message)); };
  if (request.pooling.value_or(limits.default_pooling.value_or(engine::ops::PoolingMode::kCls)) ==
      engine::ops::PoolingMode::kSplade) {
    return invalid("spans (late chunking) cannot pool splade vectors");
  }
  if (request.span_counts.size() != request.lengths.size()) {
    return invalid("span_counts has " + std::to_string(request.span_counts.size()) + " entries for " +
                   std::to_string(request.lengths.size()) + " sequences");
  }
  size_t span = 0;
  for (size_t sequence = 0; sequence < request.lengths.size(); ++sequence) {
    const int32_t count = request.span_counts[sequence];
    if (count <= 0) return invalid("sequence " + std::to_string(sequence) + " has no span");
    if ((span + static_cast<size_t>(count)) * 2 > request.spans.size()) {
      return invalid("span_counts add up to more spans than the " + std::to_string(request.spans.size() / 2) + " sent");
    }
    for (int32_t k = 0; k < count; ++k, ++span) {
      const int32_t begin = request.spans[2 * span], end = request.spans[2 * span + 1];
      if (begin < 0 || begin >= end || end > request.lengths[sequence]) {
        return invalid("span " + std::to_string(k) + " [" + std::to_string(begin) + ", " + std::to_string(end) +
                       ") of sequence " + std::to_string(sequence) + " is empty or outside its " +
                       std::to_string(request.lengths[sequence]) + " tokens");
      }
    }
  }
  if (span * 2 != request.spans.size()) {
    return invalid("span_counts add up to " + std::to_string(span) + " spans but " +
                   std::to_string(request.spans.size() / 2) + " were sent");
  }
  return Status();
}

}  // namespace

Status ValidateWorkRequest(const WorkRequest& request, const ModelLimits& limits) {
  auto invalid = [](std::string message) { return Status::Error(StatusCode::kInvalidArgument, std::move(message)); };
  if (request.token_ids.size() % sizeof(int32_t) != 0) return invalid("token ids are not a whole number of int32 values");
  if (request.lengths.empty()) return invalid("the request has no sequences");
  const int64_t tokens = request.total_tokens();
  if (!request.token_type_ids.empty() && request.token_type_ids.size() != request.token_ids.size()) {
    return invalid("token type ids: " + std::to_string(request.token_type_ids.size() / sizeof(int32_t)) +
                   " values for " + std::to_string(tokens) + " tokens");
  }
  if (request.kind == WorkKind::kScore && limits.num_labels == 0) {
    return invalid("this model has no classification head: it embeds, it does not score");
  }
  if (request.kind != WorkKind::kEmbed && !(request.span_counts.empty() && request.spans.empty())) {
    return invalid("spans (late chunking) apply to pooled embeddings only");
  }
  if (request.kind == WorkKind::kTokenEmbed && (request.pooling || request.dimensions != 0)) {
    return invalid("token embeddings are neither pooled nor truncated: pooling and dimensions must be unset");
  }
  if (request.kind == WorkKind::kDenseSparseColbert) {
    if (!limits.bge_m3) {
      return invalid("dense, sparse and ColBERT outputs together come from a bge-m3 folder (colbert_linear.pt and "
                     "sparse_linear.pt beside config.json) served on the CPU engine; this worker's model is not one");
    }
    if (request.pooling || request.dimensions != 0) {
      return invalid("bge-m3's outputs are neither pooled nor truncated: pooling and dimensions must be unset");
    }
  }
  const bool token_vectors = request.kind == WorkKind::kTokenVectors || request.kind == WorkKind::kMaxSim;
  if (token_vectors && !limits.multi_vector) {
    return invalid("this model is not a multi-vector (ColBERT) model: it has no token vectors or MaxSim scores");
  }
  if (token_vectors && (request.pooling || request.dimensions != 0)) {
    return invalid("token vectors are neither pooled nor truncated: pooling and dimensions must be unset");
  }
  if (request.adapter < -1) return invalid("adapter must be -1 (none) or the index of a task adapter");
  if (request.adapter >= 0 && request.adapter >= limits.task_adapters) {
    return invalid("adapter " + std::to_string(request.adapter) + " is not one of the model's " +
                   std::to_string(limits.task_adapters) + " task adapters");
  }
  if (!token_vectors && !(request.key_lengths.empty() && request.skip_token_ids.empty())) {
    return invalid("key_lengths and skip_token_ids apply to token vectors and MaxSim only");
  }
  if (!request.key_lengths.empty()) {
    if (request.key_lengths.size() != request.lengths.size()) {
      return invalid("key_lengths has " + std::to_string(request.key_lengths.size()) + " entries for " +
                     std::to_string(request.lengths.size()) + " sequences");
    }
    for (size_t sequence = 0; sequence < request.lengths.size(); ++sequence) {
      if (request.key_lengths[sequence] < 0 || request.key_lengths[sequence] > request.lengths[sequence]) {
        return invalid("key length " + std::to_string(request.key_lengths[sequence]) + " of sequence " +
                       std::to_string(sequence) + " is outside 0..its " + std::to_string(request.lengths[sequence]) +
                       " tokens");
      }
    }
  }
  if (request.kind == WorkKind::kEmbed) {
    if (limits.num_labels > 0) return invalid("this model is a reranker/classifier: it scores, it does not embed");
    if (!request.pooling && !limits.default_pooling) {
      return invalid("the model folder names no pooling; the request must choose one (" +
                     engine::PoolingOptionNames() + ")");
    }
    // Sparse vectors are indexed by vocabulary id: keeping the leading ids means nothing.
    if (request.dimensions != 0 && request.pooling.value_or(limits.default_pooling.value_or(engine::ops::PoolingMode::kCls)) ==
                                       engine::ops::PoolingMode::kSplade) {
      return invalid("dimensions cannot truncate splade (sparse) vectors");
    }
    if (request.dimensions < 0 || request.dimensions > limits.embedding_width) {
      return invalid("dimensions " + std::to_string(request.dimensions) + " outside 1.." +
                     std::to_string(limits.embedding_width));
    }
  }
  if (request.kind == WorkKind::kEmbed && !request.span_counts.empty()) {
    STAMEN_RETURN_IF_ERROR(ValidateSpans(request, limits));
  }
  int64_t offset = 0;
  for (size_t sequence = 0; sequence < request.lengths.size(); ++sequence) {
    const int64_t length = request.lengths[sequence];
    if (length <= 0) return invalid("sequence " + std::to_string(sequence) + " is empty");
    if (limits.max_sequence_length > 0 && length > limits.max_sequence_length) {
      return invalid("sequence " + std::to_string(sequence) + " has " + std::to_string(length) +
                     " tokens; the model takes at most " + std::to_string(limits.max_sequence_length));
    }
    if (length > tokens - offset) {
      return invalid("the lengths add up to more than the " + std::to_string(tokens) + " token ids sent");
    }
    for (int64_t position = 0; position < length; ++position) {
      const int32_t id = ReadInt32(request.token_ids, offset + position);
      if (id < 0 || id >= limits.vocabulary_size) {
        return invalid("token id " + std::to_string(id) + " at position " + std::to_string(position) +
                       " of sequence " + std::to_string(sequence) + " is outside the vocabulary (0.." +
                       std::to_string(limits.vocabulary_size - 1) + ")");
      }
      if (!request.token_type_ids.empty()) {
        const int32_t type = ReadInt32(request.token_type_ids, offset + position);
        if (type < 0 || type >= std::max<int64_t>(limits.type_vocabulary_size, 1)) {
          return invalid("token type id " + std::to_string(type) + " at position " + std::to_string(position) +
                         " of sequence " + std::to_string(sequence) + " is outside 0.." +
                         std::to_string(std::max<int64_t>(limits.type_vocabulary_size, 1) - 1));
        }
      }
    }
    offset += length;
  }
  if (offset != tokens) {
    return invalid("the lengths add up to " + std::to_string(offset) + " but " + std::to_string(tokens) +
                   " token ids were sent");
  }
  return Status();
}

}  // namespace stamen::server
