// What a worker checks before queueing, without an engine: the gRPC messages decoded into a
// WorkRequest (and the gateway's encoding of one, read back field for field), a request
// validated against the model's limits — each rule at its edge — and the copies the gateway's
// dispatcher makes of a request's sequences.
#include "server/request_validation.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace stamen::server {
namespace {

std::string Packed(const std::vector<int32_t>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int32_t));
}

std::vector<int32_t> Unpacked(const std::string& bytes) {
  std::vector<int32_t> values(bytes.size() / sizeof(int32_t));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// A model like a small BERT with two token types and a default pooling.
ModelLimits Limits() {
  return {.vocabulary_size = 100, .max_sequence_length = 8, .embedding_width = 16, .hidden_size = 16,
          .type_vocabulary_size = 2, .num_labels = 0, .default_pooling = engine::ops::PoolingMode::kMean};
}

// Two sequences, [1 2 3] and [4 5], as an embedding request with the defaults.
void SetTwoSequences(WorkRequest& request) {
  request.token_ids = Packed({1, 2, 3, 4, 5});
  request.lengths = {3, 2};
}

TEST(ModelLimitsTest, TakeTheProfilesFacts) {
  engine::ModelProfile profile;
  profile.kind = engine::ModelKind::kReranker;
  profile.vocabulary_size = 1000;
  profile.max_sequence_length = 512;
  profile.embedding_width = 32;
  profile.hidden_size = 64;
  profile.type_vocabulary_size = 2;
  profile.num_labels = 1;
  profile.default_pooling = engine::ops::PoolingMode::kCls;
  profile.task_adapters = 5;
  profile.bge_m3 = true;
  const ModelLimits limits = ModelLimits::Of(profile);
  EXPECT_EQ(limits.task_adapters, 5);
  EXPECT_TRUE(limits.bge_m3);
  EXPECT_EQ(limits.vocabulary_size, 1000);
  EXPECT_EQ(limits.max_sequence_length, 512);
  EXPECT_EQ(limits.embedding_width, 32);
  EXPECT_EQ(limits.hidden_size, 64);
  EXPECT_EQ(limits.type_vocabulary_size, 2);
  EXPECT_EQ(limits.num_labels, 1);
  EXPECT_EQ(limits.default_pooling, engine::ops::PoolingMode::kCls);
}

TEST(RequestValidationTest, AWellFormedRequestPasses) {
  WorkRequest plain;
  SetTwoSequences(plain);
  EXPECT_TRUE(ValidateWorkRequest(plain, Limits()).ok());
  WorkRequest typed;
  SetTwoSequences(typed);
  typed.token_type_ids = Packed({0, 0, 0, 1, 1});
  EXPECT_TRUE(ValidateWorkRequest(typed, Limits()).ok());
  WorkRequest longest;
  longest.token_ids = Packed(std::vector<int32_t>(8, 99));  // the longest sequence, the last id
  longest.lengths = {8};
  longest.dimensions = 16;
  EXPECT_TRUE(ValidateWorkRequest(longest, Limits()).ok());
}

TEST(RequestValidationTest, EachRuleRefusesJustPastItsEdge) {
  struct Case {
    const char* name;
    std::function<void(WorkRequest&)> change;
    std::string expected;  // in the message
  };
  const std::vector<Case> cases = {
      {"no sequences", [](WorkRequest& r) { r.lengths.clear(); r.token_ids.clear(); }, "no sequences"},
      {"partial int32", [](WorkRequest& r) { r.token_ids.push_back('\0'); }, "whole number of int32"},
      {"empty sequence", [](WorkRequest& r) { r.lengths = {3, 0, 2}; }, "sequence 1 is empty"},
      {"too long", [](WorkRequest& r) { r.token_ids = Packed(std::vector<int32_t>(9, 1)); r.lengths = {9}; },
       "has 9 tokens; the model takes at most 8"},
      {"lengths over ids", [](WorkRequest& r) { r.lengths = {3, 3}; }, "add up to more than the 5"},
      {"lengths under ids", [](WorkRequest& r) { r.lengths = {3, 1}; }, "add up to 4 but 5"},
      {"id past the vocabulary", [](WorkRequest& r) { r.token_ids = Packed({1, 2, 3, 4, 100}); }, "token id 100"},
      {"negative id", [](WorkRequest& r) { r.token_ids = Packed({-1, 2, 3, 4, 5}); }, "token id -1"},
      {"type ids miscounted", [](WorkRequest& r) { r.token_type_ids = Packed({0, 0}); }, "2 values for 5 tokens"},
      {"type id past the types", [](WorkRequest& r) { r.token_type_ids = Packed({0, 0, 0, 0, 2}); }, "token type id 2"},
      {"dimensions past the width", [](WorkRequest& r) { r.dimensions = 17; }, "dimensions 17 outside 1..16"},
      {"negative dimensions", [](WorkRequest& r) { r.dimensions = -1; }, "dimensions -1"},
      {"scores from an embedder", [](WorkRequest& r) { r.kind = WorkKind::kScore; }, "no classification head"},
      {"pooled token states", [](WorkRequest& r) { r.kind = WorkKind::kTokenEmbed; r.pooling = engine::ops::PoolingMode::kCls; },
       "neither pooled nor truncated"},
      {"spans on token states", [](WorkRequest& r) { r.kind = WorkKind::kTokenEmbed; r.span_counts = {1, 1}; },
       "pooled embeddings only"},
  };
  for (const Case& test : cases) {
    WorkRequest request;
    SetTwoSequences(request);
    test.change(request);
    const Status status = ValidateWorkRequest(request, Limits());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << test.name;
    EXPECT_NE(status.message().find(test.expected), std::string::npos) << test.name << ": " << status.message();
  }
}

TEST(RequestValidationTest, TheModelDecidesWhatItServes) {
  ModelLimits reranker = Limits();
  reranker.num_labels = 1;
  WorkRequest embed;
  SetTwoSequences(embed);
  EXPECT_FALSE(ValidateWorkRequest(embed, reranker).ok());
  WorkRequest score;
  SetTwoSequences(score);
  score.kind = WorkKind::kScore;
  EXPECT_TRUE(ValidateWorkRequest(score, reranker).ok());
  // No pooling in the folder: the request must name one.
  ModelLimits no_pooling = Limits();
  no_pooling.default_pooling.reset();
  WorkRequest unpooled;
  SetTwoSequences(unpooled);
  const Status unnamed = ValidateWorkRequest(unpooled, no_pooling);
  EXPECT_NE(unnamed.message().find("names no pooling"), std::string::npos) << unnamed.message();
  embed.pooling = engine::ops::PoolingMode::kCls;
  EXPECT_TRUE(ValidateWorkRequest(embed, no_pooling).ok());
  // Sparse vectors cannot be truncated.
  WorkRequest sparse;
  SetTwoSequences(sparse);
  sparse.pooling = engine::ops::PoolingMode::kSplade;
  EXPECT_TRUE(ValidateWorkRequest(sparse, Limits()).ok());
  sparse.dimensions = 8;
  const Status truncated = ValidateWorkRequest(sparse, Limits());
  EXPECT_NE(truncated.message().find("cannot truncate splade"), std::string::npos) << truncated.message();
  // No token types: only 0.
  ModelLimits untyped = Limits();
  untyped.type_vocabulary_size = 0;
  WorkRequest typed;
  SetTwoSequences(typed);
  typed.token_type_ids = Packed({0, 0, 0, 0, 0});
  EXPECT_TRUE(ValidateWorkRequest(typed, untyped).ok());
  typed.token_type_ids = Packed({0, 0, 0, 0, 1});
  EXPECT_FALSE(ValidateWorkRequest(typed, untyped).ok());
  // Task adapters: the model's, 0..task_adapters - 1; none on a GPU worker, which says so.
  ModelLimits adapted = Limits();
  adapted.task_adapters = 5;
  WorkRequest task;
  SetTwoSequences(task);
  task.adapter = 4;
  EXPECT_TRUE(ValidateWorkRequest(task, adapted).ok());
  task.adapter = 5;
  const Status past = ValidateWorkRequest(task, adapted);
  EXPECT_NE(past.message().find("adapter 5 is not one of the model's 5 task adapters"), std::string::npos) << past.message();
  task.adapter = -2;
  EXPECT_FALSE(ValidateWorkRequest(task, adapted).ok());
}

TEST(RequestValidationTest, SpansMustLieInsideTheirSequence) {
  WorkRequest request;
  SetTwoSequences(request);
  request.span_counts = {2, 1};
  request.spans = {0, 1, 1, 3, 0, 2};
  EXPECT_TRUE(ValidateWorkRequest(request, Limits()).ok());
  request.spans = {0, 1, 1, 4, 0, 2};  // past sequence 0's 3 tokens
  EXPECT_FALSE(ValidateWorkRequest(request, Limits()).ok());
  request.spans = {0, 1, 1, 3};  // three spans counted, two sent
  EXPECT_FALSE(ValidateWorkRequest(request, Limits()).ok());
}

// The rules the tests above check only by ok(), and those of token vectors and MaxSim, each
// with its own message, so that every refusal of ValidateWorkRequest is reached by one case.
TEST(RequestValidationTest, EachRefusalSaysWhichRule) {
  ModelLimits colbert = Limits();
  colbert.multi_vector = true;
  ModelLimits reranker = Limits();
  reranker.num_labels = 1;
  ModelLimits untyped = Limits();
  untyped.type_vocabulary_size = 0;
  ModelLimits sparse = Limits();
  sparse.default_pooling = engine::ops::PoolingMode::kSplade;
  struct Case {
    const char* name;
    ModelLimits limits;
    std::function<void(WorkRequest&)> change;
    std::string expected;  // in the message
  };
  const auto token_vectors = [](WorkRequest& r) { r.kind = WorkKind::kTokenVectors; };
  const std::vector<Case> cases = {
      {"token vectors from a single-vector model", Limits(), token_vectors, "not a multi-vector (ColBERT) model"},
      {"MaxSim from a single-vector model", Limits(), [](WorkRequest& r) { r.kind = WorkKind::kMaxSim; },
       "not a multi-vector (ColBERT) model"},
      {"pooled token vectors", colbert,
       [](WorkRequest& r) { r.kind = WorkKind::kTokenVectors; r.pooling = engine::ops::PoolingMode::kMean; },
       "token vectors are neither pooled nor truncated"},
      {"truncated MaxSim", colbert, [](WorkRequest& r) { r.kind = WorkKind::kMaxSim; r.dimensions = 8; },
       "token vectors are neither pooled nor truncated"},
      {"key lengths on an embedding", colbert, [](WorkRequest& r) { r.key_lengths = {3, 2}; },
       "key_lengths and skip_token_ids apply to token vectors and MaxSim only"},
      {"skipped ids on an embedding", colbert, [](WorkRequest& r) { r.skip_token_ids = {4}; },
       "key_lengths and skip_token_ids apply to token vectors and MaxSim only"},
      {"key lengths miscounted", colbert, [](WorkRequest& r) { r.kind = WorkKind::kTokenVectors; r.key_lengths = {3}; },
       "key_lengths has 1 entries for 2 sequences"},
      {"key length past its sequence", colbert,
       [](WorkRequest& r) { r.kind = WorkKind::kMaxSim; r.key_lengths = {4, 2}; },
       "key length 4 of sequence 0 is outside 0..its 3 tokens"},
      {"negative key length", colbert,
       [](WorkRequest& r) { r.kind = WorkKind::kTokenVectors; r.key_lengths = {3, -1}; },
       "key length -1 of sequence 1"},
      {"embeddings from a reranker", reranker, [](WorkRequest&) {}, "it scores, it does not embed"},
      {"adapter below -1", Limits(), [](WorkRequest& r) { r.adapter = -2; }, "adapter must be -1 (none)"},
      {"a second token type on an untyped model", untyped,
       [](WorkRequest& r) { r.token_type_ids = Packed({0, 0, 0, 0, 1}); },
       "token type id 1 at position 1 of sequence 1 is outside 0..0"},
      {"spans pooled by splade", Limits(),
       [](WorkRequest& r) { r.pooling = engine::ops::PoolingMode::kSplade; r.span_counts = {1, 1}; r.spans = {0, 3, 0, 2}; },
       "spans (late chunking) cannot pool splade vectors"},
      {"spans on a model pooling splade by default", sparse,
       [](WorkRequest& r) { r.span_counts = {1, 1}; r.spans = {0, 3, 0, 2}; },
       "spans (late chunking) cannot pool splade vectors"},
      {"span counts miscounted", Limits(), [](WorkRequest& r) { r.span_counts = {1}; r.spans = {0, 3}; },
       "span_counts has 1 entries for 2 sequences"},
      {"a sequence without spans", Limits(), [](WorkRequest& r) { r.span_counts = {1, 0}; r.spans = {0, 3}; },
       "sequence 1 has no span"},
      {"more spans counted than sent", Limits(), [](WorkRequest& r) { r.span_counts = {1, 2}; r.spans = {0, 3, 0, 1}; },
       "span_counts add up to more spans than the 2 sent"},
      {"a span past its sequence", Limits(), [](WorkRequest& r) { r.span_counts = {1, 1}; r.spans = {0, 3, 1, 3}; },
       "span 0 [1, 3) of sequence 1 is empty or outside its 2 tokens"},
      {"an empty span", Limits(), [](WorkRequest& r) { r.span_counts = {2, 1}; r.spans = {0, 1, 1, 1, 0, 2}; },
       "span 1 [1, 1) of sequence 0 is empty"},
      {"a span before its sequence", Limits(), [](WorkRequest& r) { r.span_counts = {1, 1}; r.spans = {-1, 2, 0, 2}; },
       "span 0 [-1, 2) of sequence 0"},
      {"more spans sent than counted", Limits(),
       [](WorkRequest& r) { r.span_counts = {1, 1}; r.spans = {0, 3, 0, 2, 0, 1}; },
       "span_counts add up to 2 spans but 3 were sent"},
  };
  for (const Case& test : cases) {
    WorkRequest request;
    SetTwoSequences(request);
    test.change(request);
    const Status status = ValidateWorkRequest(request, test.limits);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << test.name;
    EXPECT_NE(status.message().find(test.expected), std::string::npos) << test.name << ": " << status.message();
  }
  // What a multi-vector model does take: its token vectors and MaxSim, with key lengths (0: all
  // keys) and skipped ids.
  for (const WorkKind kind : {WorkKind::kTokenVectors, WorkKind::kMaxSim}) {
    WorkRequest request;
    SetTwoSequences(request);
    request.kind = kind;
    request.key_lengths = {0, 2};
    request.skip_token_ids = {4};
    const Status status = ValidateWorkRequest(request, colbert);
    EXPECT_TRUE(status.ok()) << status.message();
  }
}

// `sent` encoded as the gateway sends it and decoded as the worker reads it.
template <typename Message>
std::unique_ptr<WorkRequest> RoundTrip(const WorkRequest& sent, void (*encode)(const WorkRequest&, Message&),
                                       Status (*decode)(const Message&, WorkRequest&)) {
  Message message;
  encode(sent, message);
  auto read = std::make_unique<WorkRequest>();
  const Status decoded = decode(message, *read);
  EXPECT_TRUE(decoded.ok()) << decoded.message();
  return read;
}

// `read` carries the sequences `sent` had, token types included.
void ExpectSameSequences(const WorkRequest& read, const WorkRequest& sent) {
  EXPECT_EQ(read.token_ids, sent.token_ids);
  EXPECT_EQ(read.lengths, sent.lengths);
  EXPECT_EQ(read.token_type_ids, sent.token_type_ids);
}

TEST(RequestValidationTest, BgeM3OutputsNeedABgeM3ModelAndNoPooling) {
  WorkRequest request;
  SetTwoSequences(request);
  request.kind = WorkKind::kDenseSparseColbert;
  ModelLimits limits = Limits();
  EXPECT_NE(ValidateWorkRequest(request, limits).message().find("bge-m3"), std::string::npos);
  limits.bge_m3 = true;
  EXPECT_TRUE(ValidateWorkRequest(request, limits).ok()) << ValidateWorkRequest(request, limits).message();
  request.pooling = engine::ops::PoolingMode::kCls;
  EXPECT_FALSE(ValidateWorkRequest(request, limits).ok());
  request.pooling.reset();
  request.dimensions = 4;
  EXPECT_FALSE(ValidateWorkRequest(request, limits).ok());
  // One row per token, as kTokenEmbed.
  request.dimensions = 0;
  EXPECT_EQ(RowOffsets(request), (std::vector<int64_t>{0, 3, 5}));
}

TEST(RequestCodingTest, BgeM3OutputsTravelAsTheirOwnFlag) {
  WorkRequest sent;
  SetTwoSequences(sent);
  sent.kind = WorkKind::kDenseSparseColbert;
  v1::EmbedRequest message;
  EncodeEmbedRequest(sent, message);
  EXPECT_TRUE(message.dense_sparse_colbert());
  WorkRequest received;
  ASSERT_TRUE(DecodeEmbedRequest(message, received).ok());
  EXPECT_EQ(received.kind, WorkKind::kDenseSparseColbert);
  message.set_token_vectors(true);
  WorkRequest both;
  EXPECT_FALSE(DecodeEmbedRequest(message, both).ok());
}

TEST(RequestCodingTest, AnEmbedRequestReadsBackAsItWasSent) {
  WorkRequest sent;
  SetTwoSequences(sent);
  sent.kind = WorkKind::kEmbed;
  sent.token_type_ids = Packed({0, 0, 1, 1, 1});
  sent.pooling = engine::ops::PoolingMode::kWeightedMean;
  sent.normalize = false;
  sent.dimensions = 8;
  sent.priority = Priority::kLow;
  sent.span_counts = {1, 1};
  sent.spans = {0, 2, 1, 2};
  sent.adapter = 3;
  const auto read_back = RoundTrip<v1::EmbedRequest>(sent, EncodeEmbedRequest, DecodeEmbedRequest);
  const WorkRequest& read = *read_back;
  EXPECT_EQ(read.kind, WorkKind::kEmbed);
  ExpectSameSequences(read, sent);
  EXPECT_EQ(read.pooling, sent.pooling);
  EXPECT_EQ(read.normalize, false);
  EXPECT_EQ(read.dimensions, 8);
  EXPECT_EQ(read.priority, Priority::kLow);
  EXPECT_EQ(read.span_counts, sent.span_counts);
  EXPECT_EQ(read.spans, sent.spans);
  EXPECT_EQ(read.adapter, 3);
  // Unset fields keep the defaults: the model's pooling, normalised, all dimensions, normal priority.
  WorkRequest token_states;
  SetTwoSequences(token_states);
  token_states.kind = WorkKind::kTokenEmbed;
  const auto defaults_back = RoundTrip<v1::EmbedRequest>(token_states, EncodeEmbedRequest, DecodeEmbedRequest);
  const WorkRequest& defaults = *defaults_back;
  EXPECT_EQ(defaults.kind, WorkKind::kTokenEmbed);
  EXPECT_FALSE(defaults.pooling.has_value());
  EXPECT_TRUE(defaults.normalize);
  EXPECT_EQ(defaults.priority, Priority::kNormal);
  EXPECT_EQ(defaults.adapter, -1);  // no task adapter
}

TEST(RequestCodingTest, AScoreRequestReadsBackAsItWasSent) {
  WorkRequest sent;
  SetTwoSequences(sent);
  sent.kind = WorkKind::kScore;
  sent.priority = Priority::kHigh;
  const auto read_back = RoundTrip<v1::ScoreRequest>(sent, EncodeScoreRequest, DecodeScoreRequest);
  const WorkRequest& read = *read_back;
  EXPECT_EQ(read.kind, WorkKind::kScore);
  ExpectSameSequences(read, sent);
  EXPECT_EQ(read.priority, Priority::kHigh);
}

// Token vectors and MaxSim travel with their key lengths and skipped ids; every pooling mode
// has its own wire value and reads back as itself.
TEST(RequestCodingTest, TokenVectorRequestsAndEveryPoolingReadBackAsSent) {
  for (const WorkKind kind : {WorkKind::kTokenVectors, WorkKind::kMaxSim}) {
    WorkRequest sent;
    SetTwoSequences(sent);
    sent.kind = kind;
    sent.key_lengths = {3, 0};
    sent.skip_token_ids = {7, 9};
    const auto read_back = RoundTrip<v1::EmbedRequest>(sent, EncodeEmbedRequest, DecodeEmbedRequest);
    EXPECT_EQ(read_back->kind, kind);
    ExpectSameSequences(*read_back, sent);
    EXPECT_EQ(read_back->key_lengths, sent.key_lengths);
    EXPECT_EQ(read_back->skip_token_ids, sent.skip_token_ids);
    EXPECT_FALSE(read_back->pooling.has_value());
  }
  std::vector<std::string> wire_values;
  for (const engine::ops::PoolingMode mode : engine::ops::kPoolingModes) {
    WorkRequest sent;
    SetTwoSequences(sent);
    sent.pooling = mode;
    v1::EmbedRequest message;
    EncodeEmbedRequest(sent, message);
    EXPECT_NE(message.pooling_name(), "") << engine::ops::PoolingModeName(mode);
    for (const std::string& other : wire_values) EXPECT_NE(message.pooling_name(), other) << engine::ops::PoolingModeName(mode);
    wire_values.push_back(message.pooling_name());
    WorkRequest read;
    ASSERT_TRUE(DecodeEmbedRequest(message, read).ok());
    EXPECT_EQ(read.pooling, mode) << engine::ops::PoolingModeName(mode);
  }
}

TEST(RequestCodingTest, EachMalformedFieldIsRefusedByName) {
  const auto refusal = [](const v1::EmbedRequest& message) {
    WorkRequest request;
    const Status status = DecodeEmbedRequest(message, request);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    return status.message();
  };
  v1::EmbedRequest two_kinds;
  two_kinds.set_token_embeddings(true);
  two_kinds.set_max_sim(true);
  EXPECT_NE(refusal(two_kinds).find("exclude each other"), std::string::npos);
  v1::EmbedRequest vectors_and_max_sim;
  vectors_and_max_sim.set_token_vectors(true);
  vectors_and_max_sim.set_max_sim(true);
  EXPECT_NE(refusal(vectors_and_max_sim).find("exclude each other"), std::string::npos);
  v1::EmbedRequest key_lengths;
  key_lengths.set_key_lengths("abcde");
  EXPECT_NE(refusal(key_lengths).find("key_lengths and skip_token_ids must be packed int32"), std::string::npos);
  v1::EmbedRequest skip;
  skip.set_skip_token_ids("ab");
  EXPECT_NE(refusal(skip).find("key_lengths and skip_token_ids must be packed int32"), std::string::npos);
  v1::EmbedRequest lengths;
  lengths.mutable_sequences()->set_lengths("abc");
  EXPECT_NE(refusal(lengths).find("token_ids, lengths and token_type_ids must be packed int32"), std::string::npos);
  v1::EmbedRequest types;
  types.mutable_sequences()->set_token_type_ids("a");
  EXPECT_NE(refusal(types).find("token_ids, lengths and token_type_ids must be packed int32"), std::string::npos);
  v1::EmbedRequest span_counts;
  span_counts.set_span_counts("abc");
  EXPECT_NE(refusal(span_counts).find("span_counts and spans must be packed int32"), std::string::npos);
  v1::EmbedRequest priority;
  priority.set_priority(static_cast<v1::Priority>(42));
  EXPECT_NE(refusal(priority).find("unknown priority 42"), std::string::npos);
  v1::ScoreRequest score;
  score.set_priority(static_cast<v1::Priority>(42));
  WorkRequest request;
  EXPECT_NE(DecodeScoreRequest(score, request).message().find("unknown priority 42"), std::string::npos);
  v1::ScoreRequest score_ids;
  score_ids.mutable_sequences()->set_token_ids("abcde");
  EXPECT_EQ(DecodeScoreRequest(score_ids, request).code(), StatusCode::kInvalidArgument);
}

TEST(RequestCodingTest, MalformedMessagesAreRefused) {
  v1::EmbedRequest message;
  message.mutable_sequences()->set_token_ids("abc");  // not a whole int32
  WorkRequest request;
  EXPECT_EQ(DecodeEmbedRequest(message, request).code(), StatusCode::kInvalidArgument);
  v1::EmbedRequest spans;
  spans.set_spans("ab");
  EXPECT_EQ(DecodeEmbedRequest(spans, request).code(), StatusCode::kInvalidArgument);
  v1::EmbedRequest pooling;
  pooling.set_pooling_name("average");
  const Status unknown = DecodeEmbedRequest(pooling, request);
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("unknown pooling 'average' (cls, mean, max, last-token,"), std::string::npos)
      << unknown.message();
}

// The pooling travels by name, in any spelling --pooling takes; a client built before that sends
// the retired enum (field 2), which must not be served silently with the model's default pooling.
TEST(RequestCodingTest, PoolingIsReadByNameAndTheRetiredEnumIsRefused) {
  WorkRequest request;
  for (const auto& [name, mode] : {std::pair{"last-token", engine::ops::PoolingMode::kLastToken},
                                   std::pair{"last_token", engine::ops::PoolingMode::kLastToken},
                                   std::pair{"lasttoken", engine::ops::PoolingMode::kLastToken},
                                   std::pair{"mean-sqrt-len-tokens", engine::ops::PoolingMode::kMeanSqrtLen}}) {
    v1::EmbedRequest message;
    message.set_pooling_name(name);
    ASSERT_TRUE(DecodeEmbedRequest(message, request).ok()) << name;
    EXPECT_EQ(request.pooling, mode) << name;
  }
  v1::EmbedRequest unset;
  ASSERT_TRUE(DecodeEmbedRequest(unset, request).ok());
  EXPECT_FALSE(request.pooling.has_value());

  const std::string long_name(1000, 'x');
  v1::EmbedRequest long_message;
  long_message.set_pooling_name(long_name);
  const Status too_long = DecodeEmbedRequest(long_message, request);
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
  EXPECT_LT(too_long.message().size(), 200u) << "the client's name is quoted cut short";

  // Field 2, varint 2 (the retired POOLING_MEAN), as an old client encodes it.
  v1::EmbedRequest retired;
  ASSERT_TRUE(retired.ParseFromString(std::string("\x10\x02", 2)));
  const Status refused = DecodeEmbedRequest(retired, request);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("pooling_name"), std::string::npos) << refused.message();
}

TEST(CopySequencesTest, ASliceCarriesItsTokensTypesSpansAndTheOptions) {
  WorkRequest source;
  source.token_ids = Packed({1, 2, 3, 4, 5, 6, 7, 8, 9});
  source.lengths = {2, 3, 4};
  source.token_type_ids = Packed({0, 0, 0, 1, 1, 0, 0, 1, 1});
  source.span_counts = {1, 2, 1};
  source.spans = {0, 2, 0, 1, 1, 3, 0, 4};
  source.pooling = engine::ops::PoolingMode::kMax;
  source.normalize = false;
  source.dimensions = 4;
  source.priority = Priority::kHigh;
  source.adapter = 2;
  source.deadline = Clock::now() + std::chrono::seconds(3);
  source.output = "not copied";
  source.columns = 7;
  const auto middle = CopySequences(source, 1, 2);
  EXPECT_EQ(middle->lengths, (std::vector<int32_t>{3}));
  EXPECT_EQ(Unpacked(middle->token_ids), (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(Unpacked(middle->token_type_ids), (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(middle->span_counts, (std::vector<int32_t>{2}));
  EXPECT_EQ(middle->spans, (std::vector<int32_t>{0, 1, 1, 3}));
  EXPECT_EQ(middle->pooling, engine::ops::PoolingMode::kMax);
  EXPECT_FALSE(middle->normalize);
  EXPECT_EQ(middle->dimensions, 4);
  EXPECT_EQ(middle->priority, Priority::kHigh);
  EXPECT_EQ(middle->adapter, 2);
  EXPECT_EQ(middle->deadline, source.deadline);
  EXPECT_TRUE(middle->output.empty());
  EXPECT_EQ(middle->columns, 0);
  const auto tail = CopySequences(source, 1, 3);
  EXPECT_EQ(Unpacked(tail->token_ids), (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(tail->spans, (std::vector<int32_t>{0, 1, 1, 3, 0, 4}));
  const auto whole = CopySequences(source, 0, 3);
  EXPECT_EQ(whole->token_ids, source.token_ids);
  EXPECT_EQ(whole->spans, source.spans);
  ModelLimits adapted = Limits();
  adapted.task_adapters = 3;  // the source names adapter 2
  EXPECT_TRUE(ValidateWorkRequest(*whole, adapted).ok());
  // Without types or spans, none are made up.
  WorkRequest plain;
  SetTwoSequences(plain);
  const auto second = CopySequences(plain, 1, 2);
  EXPECT_EQ(Unpacked(second->token_ids), (std::vector<int32_t>{4, 5}));
  EXPECT_TRUE(second->token_type_ids.empty());
  EXPECT_TRUE(second->span_counts.empty() && second->spans.empty());
}

}  // namespace
}  // namespace stamen::server
