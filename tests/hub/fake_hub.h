// A fake Hugging Face hub on 127.0.0.1 for the tests: serves repositories in the hub's URL
// layout (`/api/models/{repo}[/revision/{rev}]`, `/{repo}/resolve/{rev}/{path}`, LFS files
// redirected with 302 to `/cdn/{sha256}` with X-Linked-Etag / X-Linked-Size / X-Repo-Commit),
// honours Range, records every request, and injects faults on demand. One thread serves one
// connection at a time ("Connection: close"), which is all a sequential client needs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stamen::hub::testing {

struct FakeFile {
  std::string path;
  std::string content;
  bool lfs = false;
};

struct FakeRepo {
  std::string id;      // org/name
  std::string commit;  // 40 hex digits; "main" points at it
  std::vector<FakeFile> files;
};

struct FakeFaults {
  int cut_downloads = 0;         // the next N CDN answers send half the body, then close the connection
  bool corrupt = false;          // CDN bodies have one byte flipped
  bool ignore_range = false;     // CDN answers 200 with the whole file even to Range requests
  int status = 0;                // non-zero: every API and resolve request gets this status …
  std::string error_code{};      // … with this X-Error-Code (e.g. "GatedRepo", "RepoNotFound")
  std::string missing_file{};    // resolve of this path answers 404 EntryNotFound
  bool list_without_blobs = false;  // the API lists names only (no blobId, size, lfs)
};

struct FakeRequest {
  std::string method;
  std::string target;  // path and query as sent
  std::string range;   // the Range header, if any
  std::string authorization;
};

class FakeHub {
 public:
  FakeHub();
  ~FakeHub();
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  bool running() const { return port_ != 0; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void AddRepo(const FakeRepo& repo);
  void SetFaults(const FakeFaults& faults);
  std::vector<FakeRequest> requests() const;
  void ClearRequests();

  // The names the hub gives a file: its sha256 (LFS oid) and a 40-hex blob id.
  static std::string Sha256Hex(const std::string& content);
  static std::string BlobId(const std::string& content);

 private:
  void Serve();
  void Handle(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<std::string, FakeRepo> repos_;
  std::map<std::string, std::string> cdn_;  // sha256 -> content
  FakeFaults faults_;
  std::vector<FakeRequest> requests_;
};

}  // namespace stamen::hub::testing
