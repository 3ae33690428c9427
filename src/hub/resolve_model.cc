#include "hub/resolve_model.h"

#include <filesystem>

#include "hub/cache.h"

namespace stamen::hub {

StatusOr<std::string> ResolveModel(const std::string& model, const ResolveOptions& options) {
  if (model.empty()) return Status::Error("no model given");
  std::error_code error;
  if (std::filesystem::is_directory(model, error)) return model;
  if (const Status id = ValidateRepoId(model); !id.ok()) {
    return Status::Error("no model folder '" + model + "', and " + id.message());
  }
  STAMEN_RETURN_IF_ERROR(ValidateRevision(options.revision));
  const bool offline = EffectiveOffline(options);
  const RepoCache cache(EffectiveCacheDir(options), model);
  std::string partly;
  if (const auto commit = cache.ResolveRevision(options.revision)) {
    const std::string snapshot = cache.SnapshotDir(*commit);
    if (std::filesystem::is_directory(snapshot, error)) {
      const std::vector<std::string> missing = MissingModelFiles(snapshot, options.weights);
      if (missing.empty()) return snapshot;
      for (const std::string& file : missing) partly += (partly.empty() ? "" : ", ") + file;
      partly = " (" + snapshot + " lacks " + partly + ")";
    }
  }
  if (offline) {
    return Status::Error("model " + model + " (revision " + options.revision + ") is not " +
                         (partly.empty() ? "in" : "complete in") + " the Hugging Face cache " + cache.cache_dir() +
                         partly + " and offline mode is on (--offline or HF_HUB_OFFLINE=1): run `stamen pull " +
                         model + "` where the hub is reachable, set HF_HUB_CACHE to a cache that has it, or pass "
                         "the model's folder instead");
  }
  auto pulled = PullModel(model, options);
  if (!pulled.ok() && (model.find('/') == std::string::npos ||
                       std::filesystem::is_directory(model.substr(0, model.find('/')), error))) {
    // "models/x", or a legacy name "x", may have been meant as a local path.
    return Status::Error("no model folder '" + model + "', and as a hub id: " + pulled.status().message());
  }
  return pulled;
}

}  // namespace stamen::hub
