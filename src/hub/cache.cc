#include "hub/cache.h"

#include <simdjson.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace stamen::hub {
namespace {

namespace fs = std::filesystem;

std::string ExpandHome(std::string path) {
  if (path == "~" || path.starts_with("~/")) path = EnvironmentValue("HOME") + path.substr(1);
  return path;
}

bool IsHex(std::string_view text, size_t length) {
  if (text.size() != length) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status ValidateIdPart(std::string_view id, std::string_view part) {
  const auto bad = [&](const std::string& why) {
    return Status::Error("'" + std::string(id) + "' is not a Hugging Face model id (org/name): " + why);
  };
  if (part.empty()) return bad("empty organisation or name");
  for (char c : part) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return bad(std::string("character '") + c + "' is not allowed");
    }
  }
  if (part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.') {
    return bad("a part starts or ends with '-' or '.'");
  }
  if (part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos) {
    return bad("\"--\" and \"..\" are not allowed");
  }
  return Status();
}

}  // namespace

std::string EnvironmentValue(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::string DefaultCacheDir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    if (const std::string value = EnvironmentValue(name); !value.empty()) return ExpandHome(value);
  }
  if (const std::string home = EnvironmentValue("HF_HOME"); !home.empty()) return ExpandHome(home) + "/hub";
  if (const std::string xdg = EnvironmentValue("XDG_CACHE_HOME"); !xdg.empty()) {
    return ExpandHome(xdg) + "/huggingface/hub";
  }
  return EnvironmentValue("HOME") + "/.cache/huggingface/hub";
}

Status ValidateRepoId(std::string_view repo_id) {
  const size_t slash = repo_id.find('/');
  if (repo_id.size() > 96) return Status::Error("'" + std::string(repo_id) + "' is longer than 96 characters");
  // The hub's legacy models have no org ("bert-base-uncased"); huggingface_hub and TEI take them.
  if (slash == std::string_view::npos && !repo_id.empty()) return ValidateIdPart(repo_id, repo_id);
  if (slash == std::string_view::npos || repo_id.find('/', slash + 1) != std::string_view::npos) {
    return Status::Error("'" + std::string(repo_id) + "' is not a Hugging Face model id: expected org/name (or a "
                         "legacy name without an org)");
  }
  STAMEN_RETURN_IF_ERROR(ValidateIdPart(repo_id, repo_id.substr(0, slash)));
  return ValidateIdPart(repo_id, repo_id.substr(slash + 1));
}

Status ValidateRevision(std::string_view revision) {
  const auto bad = [&](const std::string& why) {
    return Status::Error("revision '" + std::string(revision) + "' is not valid: " + why);
  };
  if (revision.empty()) return bad("empty");
  if (revision.size() > 255) return bad("longer than 255 characters");
  if (revision.front() == '/' || revision.back() == '/') return bad("starts or ends with '/'");
  if (revision.find("..") != std::string_view::npos || revision.find("//") != std::string_view::npos) {
    return bad("\"..\" and \"//\" are not allowed");
  }
  for (char c : revision) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '\\' || c == 0x7f) return bad("spaces, backslashes and control characters are not allowed");
  }
  return Status();
}

bool IsCommitHash(std::string_view text) { return IsHex(text, 40); }
bool IsBlobName(std::string_view text) { return IsHex(text, 40) || IsHex(text, 64); }

std::string RepoFolderName(std::string_view repo_id) {
  std::string name = "models";
  size_t begin = 0;
  while (true) {
    const size_t slash = repo_id.find('/', begin);
    name += "--";
    name += repo_id.substr(begin, slash - begin);
    if (slash == std::string_view::npos) break;
    begin = slash + 1;
  }
  return name;
}

RepoCache::RepoCache(std::string cache_dir, std::string repo_id)
    : cache_dir_(std::move(cache_dir)), repo_id_(std::move(repo_id)), dir_(cache_dir_ + "/" + RepoFolderName(repo_id_)) {}

std::string RepoCache::LockPath(const std::string& blob) const {
  return cache_dir_ + "/.locks/" + RepoFolderName(repo_id_) + "/" + blob + ".lock";
}

std::optional<std::string> RepoCache::ResolveRevision(const std::string& revision) const {
  if (IsCommitHash(revision)) return revision;
  std::ifstream file(RefPath(revision));
  std::string commit;
  if (!(file >> commit) || !IsCommitHash(commit)) return std::nullopt;
  return commit;
}

Status RepoCache::WriteRef(const std::string& revision, const std::string& commit) const {
  if (IsCommitHash(revision)) return Status();  // huggingface_hub writes no ref for a commit either
  const fs::path path = RefPath(revision);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  const std::string temporary = path.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << commit;
    if (!file.flush()) return Status::Error("cannot write " + temporary);
  }
  fs::rename(temporary, path, error);
  if (error) {
    fs::remove(temporary, error);
    return Status::Error("cannot write " + path.string() + ": " + error.message());
  }
  return Status();
}

Status RepoCache::LinkSnapshotFile(const std::string& commit, const std::string& path, const std::string& blob) const {
  const fs::path link = SnapshotDir(commit) + "/" + path;
  std::string target;
  for (size_t depth = 2 + std::count(path.begin(), path.end(), '/'); depth > 0; --depth) target += "../";
  target += "blobs/" + blob;
  std::error_code error;
  fs::create_directories(link.parent_path(), error);
  if (error) return Status::Error("cannot create " + link.parent_path().string() + ": " + error.message());
  if (fs::is_symlink(link, error) && fs::read_symlink(link, error) == target) return Status();
  const std::string temporary = link.string() + ".tmp" + std::to_string(getpid());
  fs::remove(temporary, error);
  fs::create_symlink(target, temporary, error);
  if (!error) fs::rename(temporary, link, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return Status::Error("cannot link " + link.string() + " to " + target + ": " + error.message());
  }
  return Status();
}

std::vector<std::string> MissingModelFiles(const std::string& dir, bool weights) {
  std::vector<std::string> missing;
  std::error_code error;
  const auto present = [&](const std::string& name) { return fs::is_regular_file(dir + "/" + name, error); };
  // A sentence-transformers StaticEmbedding snapshot has modules.json and no config.json; its
  // table (at the root or in its module's folder) is checked as module weights are: not here.
  if (!present("config.json")) {
    if (present("modules.json")) return missing;
    missing.push_back("config.json");
  }
  if (!weights || present("model.safetensors")) return missing;
  const std::string index_name = "model.safetensors.index.json";
  if (!present(index_name)) {
    missing.push_back("model.safetensors");
    return missing;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element index;
  simdjson::dom::object weight_map;
  if (parser.load(dir + "/" + index_name).get(index) != simdjson::SUCCESS ||
      index["weight_map"].get(weight_map) != simdjson::SUCCESS) {
    missing.push_back(index_name + " (unreadable)");
    return missing;
  }
  std::set<std::string> shards;
  for (auto field : weight_map) {
    std::string_view shard;
    if (field.value.get(shard) == simdjson::SUCCESS) shards.emplace(shard);
  }
  for (const std::string& shard : shards) {
    if (!present(shard)) missing.push_back(shard);
  }
  return missing;
}

}  // namespace stamen::hub
