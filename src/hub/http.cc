#include "hub/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>


namespace stamen::hub {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

struct Transfer {
  const HttpRequest* request;
  HttpResponse* response;
  CURL* curl;
  bool started = false;
};

std::string Trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    // A new hop: its status is the one that counts from now on.
    const size_t space = line.find(' ');
    if (space != std::string_view::npos) transfer->response->status = std::atol(std::string(line.substr(space + 1, 3)).c_str());
  } else if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    transfer->response->headers[name] = Trim(line.substr(colon + 1));
  }
  return size * count;
}

bool Start(Transfer* transfer) {
  if (transfer->started) return true;
  transfer->started = true;
  long status = 0;
  curl_easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &status);
  transfer->response->status = status;
  if (transfer->request->on_start && !transfer->request->on_start(status, *transfer->response)) {
    transfer->response->aborted_by_callback = true;
    return false;
  }
  return true;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  if (!Start(transfer)) return CURL_WRITEFUNC_ERROR;
  HttpResponse& response = *transfer->response;
  const bool success = response.status >= 200 && response.status < 300;
  if (success && transfer->request->sink) {
    if (!transfer->request->sink(std::string_view(data, bytes))) {
      response.aborted_by_callback = true;
      return CURL_WRITEFUNC_ERROR;
    }
  } else if (success || response.body.size() < kMaxErrorBody) {
    response.body.append(data, success ? bytes : std::min(bytes, kMaxErrorBody - response.body.size()));
  }
  return bytes;
}

}  // namespace

std::string UrlEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

HttpResponse HttpFetch(const HttpRequest& request) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

  HttpResponse response;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    response.curl_code = CURLE_FAILED_INIT;
    response.curl_error = "cannot initialise libcurl";
    return response;
  }
  Transfer transfer{&request, &response, curl};
  char error[CURL_ERROR_SIZE] = "";
  curl_slist* headers = nullptr;
  for (const std::string& header : request.headers) headers = curl_slist_append(headers, header.c_str());
  const std::string user_agent = std::string("stamen/") + STAMEN_VERSION + "; " + curl_version();
  const std::string range = request.range_from >= 0 ? std::to_string(request.range_from) + "-" : "";

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(request.connect_timeout_s));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(request.stall_timeout_s));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  if (request.head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());

  const CURLcode code = curl_easy_perform(curl);
  response.curl_code = code;
  if (code != CURLE_OK) {
    response.curl_error = error[0] != '\0' ? error : curl_easy_strerror(code);
  } else {
    Start(&transfer);  // an empty body still reports its status
    if (response.aborted_by_callback) {
      response.curl_code = CURLE_ABORTED_BY_CALLBACK;
      response.curl_error = "aborted";
    }
  }
  switch (response.curl_code) {
    case CURLE_OK:
      response.transient = response.status >= 500 || response.status == 429 || response.status == 408;
      break;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_WRITE_ERROR:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_FAILED_INIT:
      break;
    default:
      response.transient = !response.aborted_by_callback;
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return response;
}

}  // namespace stamen::hub
