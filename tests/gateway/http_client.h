// A blocking HTTP/1.1 client for the gateway tests (one connection per call).
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <string>
#include <utility>
#include <vector>

namespace stamen::gateway::testing {

struct HttpAnswer {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string Header(const std::string& name) const {
    for (const auto& [key, value] : headers) {
      if (boost::beast::iequals(key, name)) return value;
    }
    return "";
  }
};

inline HttpAnswer Http(int port, const std::string& method, const std::string& path, const std::string& body = "",
                       const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)});
  http::request<http::string_body> request(http::string_to_verb(method), path, 11);
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1 << 30);
  parser.skip(method == "HEAD");  // a HEAD answer's Content-Length announces no body
  beast::error_code error;
  http::read(stream, buffer, parser, error);
  HttpAnswer answer;
  if (error) return answer;
  auto& response = parser.get();
  answer.status = response.result_int();
  answer.body = response.body();
  for (const auto& field : response) answer.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  return answer;
}

inline HttpAnswer Post(int port, const std::string& path, const std::string& body,
                       const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  return Http(port, "POST", path, body, headers);
}

}  // namespace stamen::gateway::testing
