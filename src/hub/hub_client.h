// The Hugging Face hub's HTTP API as stamen uses it: a repository's file list at a revision
// (`/api/models/{repo}/revision/{revision}?blobs=true`) and file downloads
// (`/{repo}/resolve/{commit}/{path}`, redirected to a CDN for LFS files), with the token as a
// Bearer header. Error messages say what went wrong in the user's terms (model not found,
// gated, disk full, checksum).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "hub/file_selection.h"

namespace stamen::hub {

struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string token;                                 // empty: anonymous
  bool progress = false;                             // draw a progress bar per file on stderr
  int max_attempts = 4;                              // per request, for interrupted transfers and 5xx/429
  int retry_delay_ms = 500;                          // grows linearly with the attempt
};

struct RepoInfo {
  std::string commit;           // 40 hex digits
  std::vector<RepoFile> files;  // paths validated
};

class HubClient {
 public:
  explicit HubClient(HubConfig config);

  StatusOr<RepoInfo> GetRepoInfo(const std::string& repo_id, const std::string& revision) const;

  // Fills the blob name and size of `file` from the headers of its resolve URL (HEAD, redirects
  // not followed), for listings that came without blob ids.
  Status FillBlobFromHeaders(const std::string& repo_id, const std::string& commit, RepoFile* file) const;

  // Downloads `file` of `repo_id` at `commit` into `incomplete_path`, continuing what it
  // already holds with a Range request and retrying interrupted transfers; checks the size
  // and, for LFS files, the sha256 (from the listing or X-Linked-Etag); then renames it to
  // `blob_path`. An interrupted download keeps the .incomplete file for the next run; one
  // that fails its checksum is removed. `on_bytes`, when set, is told of every block written.
  Status Download(const std::string& repo_id, const std::string& commit, const RepoFile& file,
                  const std::string& incomplete_path, const std::string& blob_path,
                  const std::function<void(int64_t bytes)>& on_bytes = {}) const;

  const HubConfig& config() const { return config_; }

 private:
  std::vector<std::string> AuthHeaders() const;
  std::string ResolveUrl(const std::string& repo_id, const std::string& revision, const std::string& path) const;
  Status DownloadOnce(const std::string& repo_id, const std::string& commit, const RepoFile& file,
                      const std::string& incomplete_path, const std::string& blob_path,
                      const std::function<void(int64_t bytes)>& on_bytes, bool* transient) const;

  HubConfig config_;
};

}  // namespace stamen::hub
