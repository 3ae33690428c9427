// The Hugging Face hub cache, laid out exactly as Python's huggingface_hub lays it out, so
// either side finds what the other downloaded:
//   <cache>/models--<org>--<name>/blobs/<etag>            file contents (sha256 for LFS files,
//                                                          git blob sha1 for the others)
//   <cache>/models--<org>--<name>/blobs/<etag>.incomplete  a download in progress (resumable)
//   <cache>/models--<org>--<name>/snapshots/<commit>/<path> relative symlink to ../../blobs/<etag>
//   <cache>/models--<org>--<name>/refs/<revision>          the commit the revision pointed at
//   <cache>/.locks/models--<org>--<name>/<etag>.lock       flock held while a blob is written
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stamen::hub {

// The environment variable `name`, or "" when it is unset.
std::string EnvironmentValue(const char* name);

// $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string DefaultCacheDir();

// A model id "org/name", or a legacy one without an org ("bert-base-uncased"): each part
// letters, digits, '-', '_', '.', not starting or ending with '-' or '.', no "--" or "..", 96
// characters at most.
Status ValidateRepoId(std::string_view repo_id);
// A branch, tag or commit: no "..", no leading '/', no spaces, backslashes or control characters.
Status ValidateRevision(std::string_view revision);
// 40 lowercase hex digits.
bool IsCommitHash(std::string_view text);
// 40 (git sha1) or 64 (sha256) lowercase hex digits: the only blob names the cache accepts.
bool IsBlobName(std::string_view text);

// "models--org--name".
std::string RepoFolderName(std::string_view repo_id);

// One repository's folder in the cache.
class RepoCache {
 public:
  RepoCache(std::string cache_dir, std::string repo_id);
  const std::string& cache_dir() const { return cache_dir_; }
  const std::string& repo_id() const { return repo_id_; }
  const std::string& dir() const { return dir_; }
  std::string BlobPath(const std::string& blob) const { return dir_ + "/blobs/" + blob; }
  std::string IncompletePath(const std::string& blob) const { return BlobPath(blob) + ".incomplete"; }
  std::string LockPath(const std::string& blob) const;
  std::string SnapshotDir(const std::string& commit) const { return dir_ + "/snapshots/" + commit; }
  std::string RefPath(const std::string& revision) const { return dir_ + "/refs/" + revision; }

  // The commit `revision` names: itself when it is a commit hash, else the content of
  // refs/<revision>; nullopt when not cached.
  std::optional<std::string> ResolveRevision(const std::string& revision) const;
  Status WriteRef(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<path> -> ../../blobs/<blob> (more ../ for nested paths), replaced
  // atomically.
  Status LinkSnapshotFile(const std::string& commit, const std::string& path, const std::string& blob) const;

 private:
  std::string cache_dir_;
  std::string repo_id_;
  std::string dir_;
};

// What a model folder lacks to be loaded: "config.json" and, when `weights`, the weights
// (model.safetensors, or model.safetensors.index.json and every shard it names). Empty when
// complete. A folder with modules.json and no config.json (a sentence-transformers
// StaticEmbedding model) lacks nothing here: its module files are checked as modules' are.
std::vector<std::string> MissingModelFiles(const std::string& dir, bool weights = true);

}  // namespace stamen::hub
