// The clients of `stamen bench serve`: one request shape (embed or score, token ids or text)
// sent to a stamen server over HTTP/1.1 (keep-alive, Boost.Beast) or gRPC (stamen.v1 stub).
//
// A request is prepared once (JSON body or protobuf built outside the timed region), then
// sent any number of times; a send is timed from the first byte written to the last byte of
// the answer read. Answers are decoded into rows of floats only when asked (the warm-up check).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace google::protobuf {
class Message;
}

namespace stamen::bench {

// What a request carries.
struct RequestSpec {
  enum class Kind {
    kEmbedIds,    // pre-tokenized sequences → one vector each
    kEmbedTexts,  // texts, tokenized by the server → one vector each
    kScoreIds,    // pre-tokenized (query, document) pairs joined by the pair template → one logit each
    kScoreTexts,  // query + documents as text → one logit each
  };
  Kind kind = Kind::kEmbedIds;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<int32_t>> type_ids;  // kScoreIds: segment per token (may be empty)
  std::vector<std::string> texts;              // kEmbedTexts: inputs; kScoreTexts: documents
  std::string query;                           // kScoreTexts
  std::string priority;                        // "high", "normal", "low" or empty (the server's rule)

  size_t rows() const { return kind == Kind::kEmbedTexts || kind == Kind::kScoreTexts ? texts.size() : ids.size(); }
};

// What the server says about its model.
struct TargetInfo {
  std::string model_id;
  std::string kind;  // "embedding" or "reranker"
  int64_t dimensions = 0;
  int64_t max_input_length = 0;  // 0: unknown
  int64_t max_batch_tokens = 0;  // gRPC workers only
};

// A prepared request; opaque to the suites.
struct PreparedRequest {
  RequestSpec::Kind kind = RequestSpec::Kind::kEmbedIds;
  size_t rows = 0;
  std::string path;     // HTTP route
  std::string payload;  // HTTP: JSON body
  std::shared_ptr<const google::protobuf::Message> message;  // gRPC: the request message
};

// One connection (HTTP) or channel (gRPC); used by one thread at a time.
class Client {
 public:
  virtual ~Client() = default;
  // Sends `request` and reads the whole answer into `answer` (HTTP body or serialized
  // response message). A transport error or an error status is an error with its message.
  virtual Status Send(const PreparedRequest& request, std::string* answer) = 0;
};

class Target {
 public:
  virtual ~Target() = default;
  // `url`: http://host:port[/models/NAME] (a stamen server, or one of its models: the path goes
  // before every route), grpc://host:port (a stamen
  // worker) or openai+http://host:port/path[?model=NAME] (any OpenAI-compatible embeddings
  // server, text only: the peers).
  static StatusOr<std::unique_ptr<Target>> Open(const std::string& url);

  virtual std::string url() const = 0;
  virtual bool is_grpc() const = 0;
  virtual StatusOr<TargetInfo> Info() = 0;
  // A fresh connection: every load-generating client has its own.
  virtual StatusOr<std::unique_ptr<Client>> Connect() = 0;
  // Whether this target can carry `kind` (gRPC takes only token ids; the HTTP API scores text).
  virtual bool Supports(RequestSpec::Kind kind) const = 0;
  virtual PreparedRequest Prepare(const RequestSpec& spec) const = 0;
  // The answer's rows: vectors (embed) or logits (score), in input order.
  virtual StatusOr<std::vector<std::vector<float>>> Decode(const PreparedRequest& request,
                                                           const std::string& answer) const = 0;
};

}  // namespace stamen::bench
