#include "fake_hub.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <sstream>

#include "hub/sha256.h"

namespace stamen::hub::testing {
namespace {

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string UrlDecode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

struct Answer {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  size_t send_only = std::string::npos;  // cut the body after this many bytes
};

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 302: return "Found";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    default: return "Status";
  }
}

}  // namespace

std::string FakeHub::Sha256Hex(const std::string& content) {
  Sha256 hash;
  hash.Update(content);
  return hash.HexDigest();
}

std::string FakeHub::BlobId(const std::string& content) { return Sha256Hex("blob " + content).substr(0, 40); }

FakeHub::FakeHub() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return;
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

FakeHub::~FakeHub() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void FakeHub::AddRepo(const FakeRepo& repo) {
  std::lock_guard lock(mutex_);
  repos_[repo.id] = repo;
  for (const FakeFile& file : repo.files) {
    if (file.lfs) cdn_[Sha256Hex(file.content)] = file.content;
  }
}

void FakeHub::SetFaults(const FakeFaults& faults) {
  std::lock_guard lock(mutex_);
  faults_ = faults;
}

std::vector<FakeRequest> FakeHub::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void FakeHub::ClearRequests() {
  std::lock_guard lock(mutex_);
  requests_.clear();
}

void FakeHub::Serve() {
  while (!stopping_) {
    pollfd poll_fd{listen_fd_, POLLIN, 0};
    if (::poll(&poll_fd, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval timeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    Handle(fd);
    ::close(fd);
  }
}

void FakeHub::Handle(int fd) {
  std::string head;
  char chunk[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return;
    head.append(chunk, static_cast<size_t>(n));
  }
  std::istringstream lines(head.substr(0, head.find("\r\n\r\n")));
  std::string line;
  std::getline(lines, line);
  FakeRequest request;
  std::istringstream first(line);
  first >> request.method >> request.target;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = Lower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (name == "range") request.range = value;
    if (name == "authorization") request.authorization = value;
  }

  std::unique_lock lock(mutex_);
  requests_.push_back(request);
  const std::string path = request.target.substr(0, request.target.find('?'));
  Answer answer;
  const auto not_found = [&](const std::string& code) {
    answer.status = 404;
    answer.headers.push_back({"X-Error-Code", code});
    answer.body = "{\"error\":\"" + code + "\"}";
  };
  // Finds "org/name" (or a legacy "name" without an org) at the start of `rest` and the part
  // after it.
  const auto find_repo = [&](const std::string& rest, std::string* after) -> const FakeRepo* {
    const size_t slash = rest.find('/');
    if (slash == std::string::npos) return nullptr;
    if (const auto legacy = repos_.find(rest.substr(0, slash)); legacy != repos_.end()) {
      *after = rest.substr(slash);
      return &legacy->second;
    }
    const size_t end = rest.find('/', slash + 1);
    const auto found = repos_.find(rest.substr(0, end));
    if (found == repos_.end()) return nullptr;
    *after = end == std::string::npos ? "" : rest.substr(end);
    return &found->second;
  };
  const auto check_revision = [&](const FakeRepo& repo, const std::string& revision) {
    return revision == "main" || revision == repo.commit;
  };

  if (path.starts_with("/cdn/")) {
    const auto found = cdn_.find(path.substr(5));
    if (found == cdn_.end()) {
      not_found("EntryNotFound");
    } else {
      std::string body = found->second;
      if (faults_.corrupt && !body.empty()) body[body.size() / 2] ^= 0x5a;
      size_t from = 0;
      if (!request.range.empty() && !faults_.ignore_range && request.range.starts_with("bytes=")) {
        from = std::stoul(request.range.substr(6));
        if (from >= body.size()) {
          answer.status = 416;
          answer.headers.push_back({"Content-Range", "bytes */" + std::to_string(body.size())});
          body.clear();
        } else {
          answer.status = 206;
          answer.headers.push_back({"Content-Range", "bytes " + std::to_string(from) + "-" +
                                                         std::to_string(body.size() - 1) + "/" +
                                                         std::to_string(body.size())});
        }
      }
      answer.headers.push_back({"ETag", "\"cdn-" + found->first.substr(0, 8) + "\""});
      answer.body = body.substr(std::min(from, body.size()));
      if (faults_.cut_downloads > 0 && answer.status != 416) {
        --faults_.cut_downloads;
        answer.send_only = answer.body.size() / 2;
      }
    }
  } else if (faults_.status != 0) {
    answer.status = faults_.status;
    if (!faults_.error_code.empty()) answer.headers.push_back({"X-Error-Code", faults_.error_code});
    answer.body = "{\"error\":\"refused\"}";
  } else if (path.starts_with("/api/models/")) {
    std::string after;
    const FakeRepo* repo = find_repo(path.substr(12), &after);
    std::string revision = "main";
    if (repo != nullptr && after.starts_with("/revision/")) revision = UrlDecode(after.substr(10));
    if (repo == nullptr) {
      not_found("RepoNotFound");
    } else if (!check_revision(*repo, revision)) {
      not_found("RevisionNotFound");
    } else {
      std::string json = "{\"id\":\"" + repo->id + "\",\"sha\":\"" + repo->commit + "\",\"siblings\":[";
      for (size_t i = 0; i < repo->files.size(); ++i) {
        const FakeFile& file = repo->files[i];
        json += (i > 0 ? "," : "") + std::string("{\"rfilename\":\"") + file.path + "\"";
        if (!faults_.list_without_blobs) {
          json += ",\"blobId\":\"" + BlobId(file.content) + "\",\"size\":" + std::to_string(file.content.size());
          if (file.lfs) {
            json += ",\"lfs\":{\"sha256\":\"" + Sha256Hex(file.content) + "\",\"size\":" +
                    std::to_string(file.content.size()) + ",\"pointerSize\":134}";
          }
        }
        json += "}";
      }
      answer.body = json + "]}";
      answer.headers.push_back({"Content-Type", "application/json"});
    }
  } else {
    std::string after;
    const FakeRepo* repo = path.size() > 1 ? find_repo(path.substr(1), &after) : nullptr;
    if (repo == nullptr || !after.starts_with("/resolve/")) {
      not_found("RepoNotFound");
    } else {
      const std::string rest = after.substr(9);
      const size_t slash = rest.find('/');
      const std::string revision = UrlDecode(rest.substr(0, slash));
      const std::string file_path = slash == std::string::npos ? "" : UrlDecode(rest.substr(slash + 1));
      const FakeFile* file = nullptr;
      for (const FakeFile& candidate : repo->files) {
        if (candidate.path == file_path) file = &candidate;
      }
      if (!check_revision(*repo, revision)) {
        not_found("RevisionNotFound");
      } else if (file == nullptr || file_path == faults_.missing_file) {
        not_found("EntryNotFound");
      } else {
        answer.headers.push_back({"X-Repo-Commit", repo->commit});
        if (file->lfs) {
          const std::string sha = Sha256Hex(file->content);
          answer.status = 302;
          answer.headers.push_back({"Location", "/cdn/" + sha});
          answer.headers.push_back({"X-Linked-Etag", "\"" + sha + "\""});
          answer.headers.push_back({"X-Linked-Size", std::to_string(file->content.size())});
          answer.headers.push_back({"ETag", "\"" + sha + "\""});
        } else {
          answer.headers.push_back({"ETag", "\"" + BlobId(file->content) + "\""});
          answer.body = file->content;
        }
      }
    }
  }
  lock.unlock();

  std::string out = "HTTP/1.1 " + std::to_string(answer.status) + " " + Reason(answer.status) + "\r\n";
  for (const auto& [name, value] : answer.headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(answer.body.size()) + "\r\nConnection: close\r\n\r\n";
  if (request.method != "HEAD") out += answer.body.substr(0, answer.send_only);
  SendAll(fd, out);
}

}  // namespace stamen::hub::testing
