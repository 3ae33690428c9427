// PullModel and the environment defaults of ResolveOptions.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include <spdlog/spdlog.h>

#include "hub/cache.h"
#include "hub/file_selection.h"
#include "hub/hub_client.h"
#include "hub/progress_log.h"
#include "hub/resolve_model.h"

namespace stamen::hub {
namespace {

namespace fs = std::filesystem;

bool IsTrue(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::toupper(c); });
  return value == "1" || value == "ON" || value == "YES" || value == "TRUE";
}

int64_t FileSize(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? info.st_size : -1;
}

// An exclusive flock on huggingface_hub's lock file of a blob, so that two processes (stamen
// or Python) never write the same blob at once.
class BlobLock {
 public:
  static StatusOr<std::unique_ptr<BlobLock>> Acquire(const std::string& path) {
    std::error_code error;
    fs::create_directories(fs::path(path).parent_path(), error);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::Error("cannot create lock file " + path + ": " + std::strerror(errno));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int saved = errno;
        ::close(fd);
        return Status::Error("cannot lock " + path + ": " + std::strerror(saved));
      }
    }
    return std::unique_ptr<BlobLock>(new BlobLock(fd));
  }
  ~BlobLock() { ::close(fd_); }  // closing releases the lock

 private:
  explicit BlobLock(int fd) : fd_(fd) {}
  int fd_;
};

std::string Megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

}  // namespace

std::string EffectiveCacheDir(const ResolveOptions& options) {
  return options.cache_dir.empty() ? DefaultCacheDir() : options.cache_dir;
}

std::string EffectiveEndpoint(const ResolveOptions& options) {
  if (!options.endpoint.empty()) return options.endpoint;
  const std::string endpoint = EnvironmentValue("HF_ENDPOINT");
  return endpoint.empty() ? "https://huggingface.co" : endpoint;
}

std::string EffectiveToken(const ResolveOptions& options) {
  if (!options.token.empty()) return options.token;
  if (std::string token = EnvironmentValue("HF_TOKEN"); !token.empty()) return token;
  std::string path = EnvironmentValue("HF_TOKEN_PATH");
  if (path.empty()) {
    const std::string home = EnvironmentValue("HF_HOME");
    if (!home.empty()) {
      path = home + "/token";
    } else {
      const std::string xdg = EnvironmentValue("XDG_CACHE_HOME");
      path = (xdg.empty() ? EnvironmentValue("HOME") + "/.cache" : xdg) + "/huggingface/token";
    }
  }
  std::ifstream file(path);
  std::string token;
  file >> token;
  return token;
}

bool EffectiveOffline(const ResolveOptions& options) {
  return options.offline || IsTrue(EnvironmentValue("HF_HUB_OFFLINE")) ||
         IsTrue(EnvironmentValue("TRANSFORMERS_OFFLINE"));
}

StatusOr<std::string> PullModel(const std::string& repo_id, const ResolveOptions& options) {
  STAMEN_RETURN_IF_ERROR(ValidateRepoId(repo_id));
  STAMEN_RETURN_IF_ERROR(ValidateRevision(options.revision));
  if (EffectiveOffline(options)) {
    return Status::Error("cannot pull " + repo_id + ": offline mode is on (--offline or HF_HUB_OFFLINE=1)");
  }
  const bool tty = options.progress && ::isatty(STDERR_FILENO) == 1;
  const HubClient client({.endpoint = EffectiveEndpoint(options), .token = EffectiveToken(options), .progress = tty});
  const RepoCache cache(EffectiveCacheDir(options), repo_id);

  auto info = client.GetRepoInfo(repo_id, options.revision);
  if (!info.ok()) return info.status();
  const std::string& commit = info->commit;
  auto chosen = SelectModelFiles(info->files, repo_id, options.weights);
  if (!chosen.ok()) return chosen.status();
  std::vector<RepoFile>& files = *chosen;
  for (RepoFile& file : files) {
    if (file.blob().empty()) STAMEN_RETURN_IF_ERROR(client.FillBlobFromHeaders(repo_id, commit, &file));
  }

  std::error_code error;
  const std::string blobs = cache.dir() + "/blobs";
  fs::create_directories(blobs, error);
  if (error) return Status::Error("cannot create the cache folder " + blobs + ": " + error.message());

  // Fail before downloading anything when the files cannot fit.
  int64_t needed = 0;
  for (const RepoFile& file : files) {
    if (file.size < 0 || FileSize(cache.BlobPath(file.blob())) >= 0) continue;
    needed += file.size - std::max<int64_t>(0, FileSize(cache.IncompletePath(file.blob())));
  }
  struct statvfs disk {};
  if (needed > 0 && ::statvfs(blobs.c_str(), &disk) == 0) {
    const int64_t free_bytes = static_cast<int64_t>(disk.f_bavail) * static_cast<int64_t>(disk.f_frsize);
    if (free_bytes < needed) {
      return Status::Error("not enough disk space to pull " + repo_id + " into " + cache.cache_dir() + ": " +
                           Megabytes(needed) + " needed, " + Megabytes(free_bytes) +
                           " free (set HF_HUB_CACHE or --cache to another disk)");
    }
  }
  if (tty && needed > 0) {
    std::fprintf(stderr, "pulling %s (commit %.12s) into %s: %s\n", repo_id.c_str(), commit.c_str(),
                 cache.cache_dir().c_str(), Megabytes(needed).c_str());
  }
  // Without a terminal (docker, Kubernetes) a multi-GB pull is logged as lines instead.
  std::unique_ptr<ProgressLog> log;
  if (options.progress && !tty && needed > 0) {
    spdlog::info("pull: {} (commit {}) into {}: {} to download", repo_id, commit.substr(0, 12), cache.cache_dir(),
                 Megabytes(needed));
    log = std::make_unique<ProgressLog>("pull: " + repo_id, needed,
                                        [](const std::string& line) { spdlog::info("{}", line); });
  }
  const std::function<void(int64_t)> on_bytes = [&log](int64_t bytes) {
    if (log) log->Add(bytes);
  };

  for (const RepoFile& file : files) {
    const std::string& blob = file.blob();
    if (FileSize(cache.BlobPath(blob)) < 0) {
      auto lock = BlobLock::Acquire(cache.LockPath(blob));
      if (!lock.ok()) return lock.status();
      if (FileSize(cache.BlobPath(blob)) < 0) {  // another process may have finished it meanwhile
        STAMEN_RETURN_IF_ERROR(
            client.Download(repo_id, commit, file, cache.IncompletePath(blob), cache.BlobPath(blob), on_bytes));
      }
    }
    STAMEN_RETURN_IF_ERROR(cache.LinkSnapshotFile(commit, file.path, blob));
  }
  STAMEN_RETURN_IF_ERROR(cache.WriteRef(options.revision, commit));
  if (log) log->Finish();
  return cache.SnapshotDir(commit);
}

}  // namespace stamen::hub
