#include "hub/hub_client.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

#include "hub/cache.h"
#include "hub/http.h"
#include "hub/sha256.h"

namespace stamen::hub {
namespace {

using Clock = std::chrono::steady_clock;

std::string Unquote(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

int64_t ParseSize(const std::string& text) {
  if (text.empty()) return -1;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  return end != nullptr && *end == '\0' && value >= 0 ? value : -1;
}

std::string Megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(bytes) / 1e6);
  return text;
}

// "\r  path  45% [#########           ] 12.3/27.0 MB  5.1 MB/s" on stderr, at most 10 times a second.
class ProgressBar {
 public:
  ProgressBar(bool enabled, std::string label, int64_t total, int64_t done)
      : enabled_(enabled), label_(std::move(label)), total_(total), start_done_(done) {
    Draw(done, true);
  }
  void Draw(int64_t done, bool force = false) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(done - start_done_) / seconds / 1e6 : 0.0;
    std::string bar;
    int percent = 0;
    if (total_ > 0) {
      percent = static_cast<int>(100 * done / total_);
      const int filled = static_cast<int>(30 * done / total_);
      bar = "[" + std::string(filled, '#') + std::string(30 - filled, ' ') + "] ";
    }
    std::fprintf(stderr, "\r  %s  %3d%% %s%s/%s MB  %.1f MB/s   ", label_.c_str(), percent, bar.c_str(),
                 Megabytes(done).c_str(), total_ > 0 ? Megabytes(total_).c_str() : "?", rate);
    std::fflush(stderr);
  }
  void Finish(int64_t done) {
    if (!enabled_) return;
    Draw(done, true);
    std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
  std::string label_;
  int64_t total_;
  int64_t start_done_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_{};
};

bool Transient(const HttpResponse& response) { return response.transient; }

// The user-facing error for an answer that was not a success.
Status HttpError(const HubConfig& config, const HttpResponse& response, const std::string& repo_id,
                 const std::string& revision, const std::string& path) {
  const std::string model_url = config.endpoint + "/" + repo_id;
  if (!response.completed()) {
    return Status::Error("cannot " + std::string(path.empty() ? "reach " + config.endpoint : "download " + path) +
                         " for " + repo_id + ": " + response.curl_error +
                         (path.empty() ? " (set HF_ENDPOINT to a mirror the machine reaches, use --offline with a "
                                         "hub cache that has the model, or pass the model's folder)"
                                       : ""));
  }
  const std::string code = response.Header("x-error-code");
  const std::string hub_message = response.Header("x-error-message");
  const std::string said = hub_message.empty() ? "" : " (hub: " + hub_message + ")";
  const std::string token_hint =
      config.token.empty()
          ? "set HF_TOKEN to a Hugging Face token with access (and accept the model's conditions at " + model_url + ")"
          : "the token in HF_TOKEN has no access to it (accept the model's conditions at " + model_url +
                " with that account, or use another token)";
  if (code == "GatedRepo") {
    return Status::Error(repo_id + " is a gated model (HTTP " + std::to_string(response.status) + "): " + token_hint + said);
  }
  if (code == "RepoNotFound" || (response.status == 404 && path.empty() && code.empty())) {
    return Status::Error("model " + repo_id + " not found on " + config.endpoint + " (HTTP " +
                         std::to_string(response.status) + "); if it is private, " +
                         (config.token.empty() ? "set HF_TOKEN to a token with access" : "check that HF_TOKEN has access") +
                         said);
  }
  if (code == "RevisionNotFound") {
    return Status::Error("revision '" + revision + "' not found in " + repo_id + " (HTTP " +
                         std::to_string(response.status) + ")" + said);
  }
  if (code == "EntryNotFound" || response.status == 404) {
    return Status::Error("file '" + path + "' not found in " + repo_id + " at revision " + revision + " (HTTP " +
                         std::to_string(response.status) + ")" + said);
  }
  if (response.status == 401 || response.status == 403) {
    return Status::Error("access to " + repo_id + " denied (HTTP " + std::to_string(response.status) +
                         "): the model is private or gated; " + token_hint + said);
  }
  if (response.status == 429) return Status::Error(config.endpoint + " is rate-limiting requests (HTTP 429); try again later");
  return Status::Error(config.endpoint + " answered HTTP " + std::to_string(response.status) + " for " +
                       (path.empty() ? repo_id : repo_id + "/" + path) + said);
}

// Runs `request` up to config.max_attempts times while the failure is transient.
HttpResponse FetchWithRetries(const HubConfig& config, const HttpRequest& request) {
  HttpResponse response;
  for (int attempt = 1;; ++attempt) {
    response = HttpFetch(request);
    if (response.completed() && !Transient(response)) return response;
    if (!Transient(response) || attempt >= config.max_attempts) return response;
    std::this_thread::sleep_for(std::chrono::milliseconds(config.retry_delay_ms * attempt));
  }
}

// Writes all of `data` to `fd`; false with errno set on failure.
bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t wrote = ::write(fd, data.data(), data.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(wrote));
  }
  return true;
}

// Hashes the first `size` bytes of `fd` into `hash`.
bool HashPrefix(int fd, int64_t size, Sha256* hash) {
  static thread_local char chunk[1 << 16];
  int64_t offset = 0;
  while (offset < size) {
    const ssize_t got = ::pread(fd, chunk, static_cast<size_t>(std::min<int64_t>(sizeof(chunk), size - offset)), offset);
    if (got <= 0) return false;
    hash->Update(chunk, static_cast<size_t>(got));
    offset += got;
  }
  return true;
}

}  // namespace

HubClient::HubClient(HubConfig config) : config_(std::move(config)) {
  while (config_.endpoint.ends_with('/')) config_.endpoint.pop_back();
  if (config_.max_attempts < 1) config_.max_attempts = 1;
}

std::vector<std::string> HubClient::AuthHeaders() const {
  if (config_.token.empty()) return {};
  return {"Authorization: Bearer " + config_.token};
}

std::string HubClient::ResolveUrl(const std::string& repo_id, const std::string& revision, const std::string& path) const {
  return config_.endpoint + "/" + repo_id + "/resolve/" + UrlEncode(revision, false) + "/" + UrlEncode(path, true);
}

StatusOr<RepoInfo> HubClient::GetRepoInfo(const std::string& repo_id, const std::string& revision) const {
  HttpRequest request;
  request.url = config_.endpoint + "/api/models/" + repo_id + "/revision/" + UrlEncode(revision, false) + "?blobs=true";
  request.headers = AuthHeaders();
  const HttpResponse response = FetchWithRetries(config_, request);
  if (!response.completed() || response.status != 200) return HttpError(config_, response, repo_id, revision, "");

  const auto bad = [&](const std::string& why) {
    return Status::Error("unexpected answer from " + request.url + ": " + why);
  };
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(response.body).get(root) != simdjson::SUCCESS) return bad("not JSON");
  RepoInfo info;
  std::string_view sha;
  if (root["sha"].get(sha) != simdjson::SUCCESS || !IsCommitHash(sha)) return bad("no commit hash in \"sha\"");
  info.commit = std::string(sha);
  simdjson::dom::array siblings;
  if (root["siblings"].get(siblings) != simdjson::SUCCESS) return bad("no \"siblings\" list");
  for (simdjson::dom::element sibling : siblings) {
    RepoFile file;
    std::string_view text;
    if (sibling["rfilename"].get(text) != simdjson::SUCCESS) return bad("a sibling without \"rfilename\"");
    file.path = std::string(text);
    STAMEN_RETURN_IF_ERROR(ValidateRepoFilePath(file.path));
    int64_t size = 0;
    if (sibling["size"].get(size) == simdjson::SUCCESS) file.size = size;
    if (sibling["blobId"].get(text) == simdjson::SUCCESS && IsBlobName(text)) file.blob_id = std::string(text);
    simdjson::dom::object lfs;
    if (sibling["lfs"].get(lfs) == simdjson::SUCCESS) {
      if (lfs["sha256"].get(text) != simdjson::SUCCESS || !IsBlobName(text) || text.size() != 64) {
        return bad("LFS file " + file.path + " without a sha256");
      }
      file.lfs_sha256 = std::string(text);
      if (lfs["size"].get(size) == simdjson::SUCCESS) file.size = size;
    }
    info.files.push_back(std::move(file));
  }
  return info;
}

Status HubClient::FillBlobFromHeaders(const std::string& repo_id, const std::string& commit, RepoFile* file) const {
  HttpRequest request;
  request.url = ResolveUrl(repo_id, commit, file->path);
  request.headers = AuthHeaders();
  request.head = true;
  request.follow_redirects = false;
  const HttpResponse response = FetchWithRetries(config_, request);
  if (!response.completed() || response.status >= 400) return HttpError(config_, response, repo_id, commit, file->path);
  const std::string linked = Unquote(response.Header("x-linked-etag"));
  const std::string etag = Unquote(response.Header("etag"));
  if (linked.size() == 64 && IsBlobName(linked)) {
    file->lfs_sha256 = linked;
    file->size = ParseSize(response.Header("x-linked-size"));
  } else if (IsBlobName(etag)) {
    file->blob_id = etag;
    if (response.status == 200) file->size = ParseSize(response.Header("content-length"));
  } else {
    return Status::Error("the hub gave no usable ETag for " + repo_id + "/" + file->path);
  }
  return Status();
}

Status HubClient::Download(const std::string& repo_id, const std::string& commit, const RepoFile& file,
                           const std::string& incomplete_path, const std::string& blob_path,
                           const std::function<void(int64_t bytes)>& on_bytes) const {
  Status status;
  for (int attempt = 1;; ++attempt) {
    bool transient = false;
    status = DownloadOnce(repo_id, commit, file, incomplete_path, blob_path, on_bytes, &transient);
    if (status.ok() || !transient) return status;
    if (attempt >= config_.max_attempts) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(config_.retry_delay_ms * attempt));
  }
  struct stat kept {};
  const int64_t have = ::stat(incomplete_path.c_str(), &kept) == 0 ? kept.st_size : 0;
  return Status::Error(status.message() + " (gave up after " + std::to_string(config_.max_attempts) +
                       " attempts; " + std::to_string(have) + " bytes kept in " + incomplete_path +
                       ": run again to resume)");
}

Status HubClient::DownloadOnce(const std::string& repo_id, const std::string& commit, const RepoFile& file,
                               const std::string& incomplete_path, const std::string& blob_path,
                               const std::function<void(int64_t bytes)>& on_bytes, bool* transient) const {
  *transient = false;
  const int fd = ::open(incomplete_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error("cannot create " + incomplete_path + ": " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  std::string expected_sha = file.lfs_sha256;
  int64_t expected_size = file.size;
  int64_t offset = ::lseek(fd, 0, SEEK_END);
  if (offset < 0 || (expected_size >= 0 && offset > expected_size)) {
    if (::ftruncate(fd, 0) != 0) return Status::Error("cannot truncate " + incomplete_path + ": " + std::strerror(errno));
    offset = 0;
  }
  Sha256 hash;
  if (offset > 0 && !HashPrefix(fd, offset, &hash)) {
    if (::ftruncate(fd, 0) != 0) return Status::Error("cannot truncate " + incomplete_path + ": " + std::strerror(errno));
    offset = 0;
    hash.Reset();
  }
  ::lseek(fd, offset, SEEK_SET);

  int64_t written = offset;
  int write_errno = 0;
  std::string start_problem;
  ProgressBar progress(config_.progress, file.path, expected_size, written);
  HttpRequest request;
  request.url = ResolveUrl(repo_id, commit, file.path);
  request.headers = AuthHeaders();
  if (offset > 0 && offset != expected_size) request.range_from = offset;
  const bool skip_transfer = offset > 0 && offset == expected_size;  // all bytes already here: just check them
  HttpResponse response;
  request.on_start = [&](long status, const HttpResponse& headers) {
    if (status == 200 && written > 0) {  // the server ignored the Range: start over
      if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
        write_errno = errno;
        return false;
      }
      written = 0;
      hash.Reset();
    } else if (status == 206) {
      // "bytes <first>-<last>/<total>" must continue exactly where the file ends.
      const std::string range = headers.Header("content-range");
      const std::string want = "bytes " + std::to_string(written) + "-";
      if (!range.starts_with(want)) {
        start_problem = "the server answered a Range request with '" + range + "'";
        return false;
      }
    }
    return true;
  };
  request.sink = [&](std::string_view data) {
    if (!WriteAll(fd, data)) {
      write_errno = errno;
      return false;
    }
    hash.Update(data);
    written += static_cast<int64_t>(data.size());
    progress.Draw(written);
    if (on_bytes) on_bytes(static_cast<int64_t>(data.size()));
    return true;
  };

  if (!skip_transfer) {
    response = HttpFetch(request);
  }
  progress.Finish(written);
  const std::string where = repo_id + "/" + file.path;
  if (write_errno != 0) {
    if (write_errno == ENOSPC || write_errno == EDQUOT) {
      return Status::Error("disk full while downloading " + where + " into " + incomplete_path + " (" +
                           std::to_string(written) + " of " + std::to_string(expected_size) +
                           " bytes written): free some space and run again to resume");
    }
    return Status::Error("cannot write " + incomplete_path + ": " + std::strerror(write_errno));
  }
  if (!start_problem.empty()) {
    ::ftruncate(fd, 0);
    *transient = true;
    return Status::Error("cannot resume " + where + ": " + start_problem);
  }
  if (!skip_transfer) {
    if (!response.completed()) {
      *transient = Transient(response);
      return Status::Error("download of " + where + " interrupted after " + std::to_string(written) + " bytes: " +
                           response.curl_error);
    }
    if (response.status == 416) {
      // Range past the end: what we hold may be the whole file; the checks below decide.
    } else if (response.status < 200 || response.status >= 300) {
      *transient = Transient(response);
      return HttpError(config_, response, repo_id, commit, file.path);
    }
    const std::string linked = Unquote(response.Header("x-linked-etag"));
    if (expected_sha.empty() && linked.size() == 64 && IsBlobName(linked)) expected_sha = linked;
    if (expected_size < 0) expected_size = ParseSize(response.Header("x-linked-size"));
  }
  if (expected_size >= 0 && written < expected_size) {
    *transient = true;
    return Status::Error("download of " + where + " ended after " + std::to_string(written) + " of " +
                         std::to_string(expected_size) + " bytes");
  }
  const std::string got_sha = expected_sha.empty() ? "" : hash.HexDigest();
  if (got_sha != expected_sha || (expected_size >= 0 && written != expected_size)) {
    ::unlink(incomplete_path.c_str());
    const std::string what = got_sha != expected_sha ? "sha256 " + got_sha + ", expected " + expected_sha + " (the hub's LFS oid)"
                                                     : std::to_string(written) + " bytes, expected " +
                                                           std::to_string(expected_size);
    return Status::Error("checksum mismatch for " + where + ": got " + what +
                         "; the corrupt download was removed, run again to fetch it anew");
  }
  if (::fsync(fd) != 0) return Status::Error("cannot write " + incomplete_path + ": " + std::strerror(errno));
  if (::rename(incomplete_path.c_str(), blob_path.c_str()) != 0) {
    return Status::Error("cannot rename " + incomplete_path + " to " + blob_path + ": " + std::strerror(errno));
  }
  return Status();
}

}  // namespace stamen::hub
