#include "bench/serve_client.h"

#include <grpcpp/grpcpp.h>
#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstring>

#include "proto/stamen/v1/inference.grpc.pb.h"
#include "server/request_validation.h"

namespace stamen::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using Kind = RequestSpec::Kind;

std::string PackInts(const std::vector<std::vector<int32_t>>& rows, std::string* lengths) {
  std::string bytes;
  for (const auto& row : rows) {
    bytes.append(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(int32_t));
    if (lengths != nullptr) {
      const int32_t length = static_cast<int32_t>(row.size());
      lengths->append(reinterpret_cast<const char*>(&length), sizeof(length));
    }
  }
  return bytes;
}

void AppendJsonString(std::string& out, const std::string& text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// stamen's "priority" field of every route, when the request names one.
void AppendPriority(const RequestSpec& spec, std::string& body) {
  if (spec.priority.empty()) return;
  body += ",\"priority\":";
  AppendJsonString(body, spec.priority);
}

std::vector<std::vector<float>> UnpackRows(const std::string& bytes, size_t rows, size_t columns) {
  std::vector<std::vector<float>> out(rows, std::vector<float>(columns));
  for (size_t row = 0; row < rows; ++row) {
    std::memcpy(out[row].data(), bytes.data() + row * columns * sizeof(float), columns * sizeof(float));
  }
  return out;
}

// --- HTTP ---

class HttpClient final : public Client {
 public:
  HttpClient(std::string host, std::string port) : host_(std::move(host)), port_(std::move(port)), socket_(io_) {}

  Status Connect() {
    beast::error_code error;
    asio::ip::tcp::resolver resolver(io_);
    const auto endpoints = resolver.resolve(host_, port_, error);
    if (error) return Status::Error("cannot resolve " + host_ + ":" + port_ + ": " + error.message());
    asio::connect(socket_, endpoints, error);
    if (error) return Status::Error("cannot connect to " + host_ + ":" + port_ + ": " + error.message());
    socket_.set_option(asio::ip::tcp::no_delay(true), error);
    return Status();
  }

  Status Send(const PreparedRequest& request, std::string* answer) override {
    return Exchange(request.payload.empty() ? bhttp::verb::get : bhttp::verb::post, request.path, request.payload,
                    answer);
  }

  Status Exchange(bhttp::verb verb, const std::string& path, const std::string& body, std::string* answer) {
    // A kept-alive connection the server closed while idle fails at once: reconnect and retry
    // once, as HTTP clients do (the request was not processed).
    const bool reused = socket_.is_open();
    Status status = ExchangeOnce(verb, path, body, answer);
    if (!status.ok() && reused && !socket_.is_open()) status = ExchangeOnce(verb, path, body, answer);
    return status;
  }

  Status ExchangeOnce(bhttp::verb verb, const std::string& path, const std::string& body, std::string* answer) {
    if (!socket_.is_open()) STAMEN_RETURN_IF_ERROR(Connect());
    bhttp::request<bhttp::string_body> message(verb, path, 11);
    message.set(bhttp::field::host, host_);
    message.keep_alive(true);
    if (verb == bhttp::verb::post) {
      message.set(bhttp::field::content_type, "application/json");
      message.body() = body;
      message.prepare_payload();
    }
    beast::error_code error;
    bhttp::write(socket_, message, error);
    if (error) return Reset("writing to " + host_ + ":" + port_ + ": " + error.message());
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(1ULL << 32);
    bhttp::read(socket_, buffer_, parser, error);
    if (error) return Reset("reading from " + host_ + ":" + port_ + ": " + error.message());
    auto& response = parser.get();
    const bool keep_alive = response.keep_alive();
    *answer = std::move(response.body());
    if (!keep_alive) Reset("");
    if (response.result_int() != 200) {
      return Status::Error("HTTP " + std::to_string(response.result_int()) + " from " + path + ": " +
                           answer->substr(0, 300));
    }
    return Status();
  }

 private:
  Status Reset(const std::string& message) {
    beast::error_code ignored;
    socket_.close(ignored);
    buffer_.clear();
    return message.empty() ? Status() : Status::Error(message);
  }

  std::string host_, port_;
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  beast::flat_buffer buffer_;
};

// A stamen server (`stamen serve` / `stamen gateway`), or, when `openai_path` is set, any server
// of the OpenAI embeddings API (the peers: Infinity, sentence-transformers, ONNX Runtime), which
// takes only text at that path and has no /info.
class HttpTarget final : public Target {
 public:
  // `prefix`: a path before every stamen route (/models/NAME: one model of several).
  HttpTarget(std::string url, std::string host, std::string port, std::string prefix, std::string openai_path = "",
             std::string openai_model = "")
      : url_(std::move(url)),
        host_(std::move(host)),
        port_(std::move(port)),
        prefix_(std::move(prefix)),
        openai_path_(std::move(openai_path)),
        openai_model_(std::move(openai_model)) {}

  std::string url() const override { return url_; }
  bool is_grpc() const override { return false; }

  StatusOr<TargetInfo> Info() override {
    if (!openai_path_.empty()) {
      // Nothing to ask: the suites take the model's limits from the --model folder.
      HttpClient client(host_, port_);
      STAMEN_RETURN_IF_ERROR(client.Connect());
      return TargetInfo{openai_model_.empty() ? url_ : openai_model_, "embedding", 0, 0, 0};
    }
    HttpClient client(host_, port_);
    std::string body;
    STAMEN_RETURN_IF_ERROR(client.Exchange(bhttp::verb::get, prefix_ + "/info", "", &body));
    simdjson::dom::parser parser;
    simdjson::dom::element info;
    if (parser.parse(body).get(info) != simdjson::SUCCESS) return Status::Error("/info is not JSON: " + body);
    TargetInfo out;
    std::string_view text;
    if (info["model_id"].get(text) == simdjson::SUCCESS) out.model_id = std::string(text);
    int64_t number = 0;
    if (info["dimensions"].get(number) == simdjson::SUCCESS) out.dimensions = number;
    if (info["max_input_length"].get(number) == simdjson::SUCCESS) out.max_input_length = number;
    simdjson::dom::element model_type;
    out.kind = "embedding";
    if (info["model_type"].get(model_type) == simdjson::SUCCESS && model_type["reranker"].error() == simdjson::SUCCESS) {
      out.kind = "reranker";
    }
    return out;
  }

  StatusOr<std::unique_ptr<Client>> Connect() override {
    auto client = std::make_unique<HttpClient>(host_, port_);
    STAMEN_RETURN_IF_ERROR(client->Connect());
    return std::unique_ptr<Client>(std::move(client));
  }

  bool Supports(Kind kind) const override {
    return openai_path_.empty() ? kind != Kind::kScoreIds : kind == Kind::kEmbedTexts;
  }

  PreparedRequest Prepare(const RequestSpec& spec) const override {
    PreparedRequest request;
    request.kind = spec.kind;
    request.rows = spec.rows();
    std::string& body = request.payload;
    if (!openai_path_.empty() && spec.kind == Kind::kEmbedTexts) {
      request.path = openai_path_;
      body = "{";
      if (!openai_model_.empty()) {
        body += "\"model\":";
        AppendJsonString(body, openai_model_);
        body += ',';
      }
      body += "\"input\":[";
      for (size_t i = 0; i < spec.texts.size(); ++i) {
        if (i) body += ',';
        AppendJsonString(body, spec.texts[i]);
      }
      body += "],\"encoding_format\":\"float\"}";
      return request;
    }
    switch (spec.kind) {
      case Kind::kEmbedIds:
        // TEI's route: token-id arrays in, plain arrays of floats out.
        request.path = "/embed";
        body = "{\"inputs\":[";
        for (size_t i = 0; i < spec.ids.size(); ++i) {
          body += i ? ",[" : "[";
          for (size_t k = 0; k < spec.ids[i].size(); ++k) {
            if (k) body += ',';
            body += std::to_string(spec.ids[i][k]);
          }
          body += ']';
        }
        body += "]";
        AppendPriority(spec, body);
        body += "}";
        break;
      case Kind::kEmbedTexts:
        // The OpenAI route, as most clients call it (floats, not base64, so JSON writing is timed).
        request.path = "/v1/embeddings";
        body = "{\"input\":[";
        for (size_t i = 0; i < spec.texts.size(); ++i) {
          if (i) body += ',';
          AppendJsonString(body, spec.texts[i]);
        }
        body += "],\"encoding_format\":\"float\"";
        AppendPriority(spec, body);
        body += "}";
        break;
      case Kind::kScoreTexts:
      case Kind::kScoreIds:
        request.path = "/rerank";
        body = "{\"query\":";
        AppendJsonString(body, spec.query);
        body += ",\"raw_scores\":true,\"texts\":[";
        for (size_t i = 0; i < spec.texts.size(); ++i) {
          if (i) body += ',';
          AppendJsonString(body, spec.texts[i]);
        }
        body += "]";
        AppendPriority(spec, body);
        body += "}";
        break;
    }
    request.path = prefix_ + request.path;
    return request;
  }

  StatusOr<std::vector<std::vector<float>>> Decode(const PreparedRequest& request,
                                                   const std::string& answer) const override {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(answer).get(root) != simdjson::SUCCESS) return Status::Error("answer is not JSON");
    std::vector<std::vector<float>> rows;
    auto read_vector = [](simdjson::dom::element value, std::vector<float>* out) {
      simdjson::dom::array items;
      if (value.get(items) != simdjson::SUCCESS) return false;
      for (simdjson::dom::element item : items) {
        double number = 0;
        if (item.get(number) != simdjson::SUCCESS) return false;
        out->push_back(static_cast<float>(number));
      }
      return true;
    };
    simdjson::dom::array items;
    if (request.kind == Kind::kEmbedIds) {
      if (root.get(items) != simdjson::SUCCESS) return Status::Error("/embed answer is not an array");
      for (simdjson::dom::element item : items) {
        rows.emplace_back();
        if (!read_vector(item, &rows.back())) return Status::Error("/embed answer row is not an array of numbers");
      }
    } else if (request.kind == Kind::kEmbedTexts) {
      if (root["data"].get(items) != simdjson::SUCCESS) return Status::Error("/v1/embeddings answer has no data");
      for (simdjson::dom::element item : items) {
        rows.emplace_back();
        if (!read_vector(item["embedding"].value_unsafe(), &rows.back())) {
          return Status::Error("/v1/embeddings answer row has no embedding array");
        }
      }
    } else {
      if (root.get(items) != simdjson::SUCCESS) return Status::Error("/rerank answer is not an array");
      rows.assign(request.rows, {});
      for (simdjson::dom::element item : items) {
        int64_t index = 0;
        double score = 0;
        if (item["index"].get(index) != simdjson::SUCCESS || item["score"].get(score) != simdjson::SUCCESS ||
            index < 0 || static_cast<size_t>(index) >= rows.size()) {
          return Status::Error("/rerank answer item lacks index/score");
        }
        rows[static_cast<size_t>(index)] = {static_cast<float>(score)};
      }
    }
    if (rows.size() != request.rows) {
      return Status::Error("answer has " + std::to_string(rows.size()) + " rows for " + std::to_string(request.rows) +
                           " inputs");
    }
    return rows;
  }

 private:
  std::string url_, host_, port_, prefix_;
  std::string openai_path_, openai_model_;
};

// --- gRPC ---

class GrpcClient final : public Client {
 public:
  explicit GrpcClient(const std::string& address) {
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(256 * 1024 * 1024);
    arguments.SetMaxSendMessageSize(256 * 1024 * 1024);
    // Its own connection, as a separate client process would have (channels otherwise share one).
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
    stub_ = v1::Inference::NewStub(channel_);
  }

  Status Connect() {
    if (!channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5))) {
      return Status::Error("cannot connect to the gRPC worker");
    }
    return Status();
  }

  Status Send(const PreparedRequest& request, std::string* answer) override {
    grpc::ClientContext context;
    grpc::Status status;
    if (request.kind == Kind::kEmbedIds) {
      v1::EmbedResponse response;
      status = stub_->Embed(&context, static_cast<const v1::EmbedRequest&>(*request.message), &response);
      if (status.ok()) response.SerializeToString(answer);
    } else {
      v1::ScoreResponse response;
      status = stub_->Score(&context, static_cast<const v1::ScoreRequest&>(*request.message), &response);
      if (status.ok()) response.SerializeToString(answer);
    }
    if (!status.ok()) {
      return Status::Error("gRPC " + std::to_string(static_cast<int>(status.error_code())) + ": " +
                           status.error_message());
    }
    return Status();
  }

  v1::Inference::Stub& stub() { return *stub_; }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Inference::Stub> stub_;
};

class GrpcTarget final : public Target {
 public:
  GrpcTarget(std::string url, std::string address) : url_(std::move(url)), address_(std::move(address)) {}

  std::string url() const override { return url_; }
  bool is_grpc() const override { return true; }

  StatusOr<TargetInfo> Info() override {
    GrpcClient client(address_);
    STAMEN_RETURN_IF_ERROR(client.Connect());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::InfoResponse info;
    const grpc::Status status = client.stub().Info(&context, v1::InfoRequest(), &info);
    if (!status.ok()) return Status::Error("Info: " + status.error_message());
    TargetInfo out;
    out.model_id = info.model_id();
    out.kind = info.model_kind();
    out.dimensions = info.dimensions();
    out.max_input_length = info.max_input_length();
    out.max_batch_tokens = static_cast<int64_t>(info.max_batch_tokens());
    return out;
  }

  StatusOr<std::unique_ptr<Client>> Connect() override {
    auto client = std::make_unique<GrpcClient>(address_);
    STAMEN_RETURN_IF_ERROR(client->Connect());
    return std::unique_ptr<Client>(std::move(client));
  }

  bool Supports(Kind kind) const override { return kind == Kind::kEmbedIds || kind == Kind::kScoreIds; }

  PreparedRequest Prepare(const RequestSpec& spec) const override {
    PreparedRequest request;
    request.kind = spec.kind;
    request.rows = spec.rows();
    v1::TokenSequences sequences;
    std::string lengths;
    sequences.set_token_ids(PackInts(spec.ids, &lengths));
    sequences.set_lengths(lengths);
    if (!spec.type_ids.empty()) sequences.set_token_type_ids(PackInts(spec.type_ids, nullptr));
    // No priority (or an unknown one) is normal, as the worker reads an unset field.
    const v1::Priority priority =
        server::PriorityMessage(server::ParsePriority(spec.priority).value_or(server::Priority::kNormal));
    if (spec.kind == Kind::kScoreIds) {
      auto message = std::make_shared<v1::ScoreRequest>();
      *message->mutable_sequences() = std::move(sequences);
      message->set_priority(priority);
      request.message = std::move(message);
    } else {
      auto message = std::make_shared<v1::EmbedRequest>();
      *message->mutable_sequences() = std::move(sequences);
      message->set_priority(priority);
      request.message = std::move(message);
    }
    return request;
  }

  StatusOr<std::vector<std::vector<float>>> Decode(const PreparedRequest& request,
                                                   const std::string& answer) const override {
    if (request.kind == Kind::kScoreIds) {
      v1::ScoreResponse response;
      if (!response.ParseFromString(answer)) return Status::Error("bad ScoreResponse");
      if (response.count() != request.rows || response.scores().size() != request.rows * response.num_labels() * 4) {
        return Status::Error("ScoreResponse has the wrong size");
      }
      return UnpackRows(response.scores(), response.count(), response.num_labels());
    }
    v1::EmbedResponse response;
    if (!response.ParseFromString(answer)) return Status::Error("bad EmbedResponse");
    if (response.count() != request.rows || response.embeddings().size() != request.rows * response.dimensions() * 4) {
      return Status::Error("EmbedResponse has the wrong size");
    }
    return UnpackRows(response.embeddings(), response.count(), response.dimensions());
  }

 private:
  std::string url_, address_;
};

}  // namespace

StatusOr<std::unique_ptr<Target>> Target::Open(const std::string& url) {
  auto split = [](std::string rest, std::string default_port, std::string* host, std::string* port) {
    rest = rest.substr(0, rest.find('/'));
    const size_t colon = rest.rfind(':');
    *host = colon == std::string::npos ? rest : rest.substr(0, colon);
    *port = colon == std::string::npos ? default_port : rest.substr(colon + 1);
    return !host->empty() && !port->empty();
  };
  std::string host, port;
  if (url.rfind("grpc://", 0) == 0) {
    if (!split(url.substr(7), "50051", &host, &port)) return Status::Error("bad target " + url);
    return std::unique_ptr<Target>(new GrpcTarget(url, host + ":" + port));
  }
  if (url.rfind("http://", 0) == 0) {
    if (!split(url.substr(7), "80", &host, &port)) return Status::Error("bad target " + url);
    // A path after HOST:PORT goes before every route: http://HOST:PORT/models/NAME.
    const std::string rest = url.substr(7);
    std::string prefix = rest.find('/') == std::string::npos ? "" : rest.substr(rest.find('/'));
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    return std::unique_ptr<Target>(new HttpTarget(url, host, port, prefix));
  }
  if (url.rfind("openai+http://", 0) == 0) {
    // openai+http://HOST:PORT/PATH[?model=NAME]
    std::string rest = url.substr(14), model;
    if (const size_t query = rest.find("?model="); query != std::string::npos) {
      model = rest.substr(query + 7);
      rest.resize(query);
    }
    const size_t slash = rest.find('/');
    const std::string path = slash == std::string::npos ? "/v1/embeddings" : rest.substr(slash);
    if (!split(rest, "80", &host, &port)) return Status::Error("bad target " + url);
    return std::unique_ptr<Target>(new HttpTarget(url, host, port, "", path, model));
  }
  return Status::Error("--target must be http://HOST:PORT, grpc://HOST:PORT or openai+http://HOST:PORT/PATH, not " +
                       url);
}

}  // namespace stamen::bench
