// Model folders from the Hugging Face hub: `--model` takes either a local folder or a hub id
// "org/name", which is found in (or pulled into) the hub cache that Python's huggingface_hub
// uses, so a model downloaded by either is shared. Link `stamen_hub`.
//
//   auto dir = stamen::hub::ResolveModel("sentence-transformers/all-MiniLM-L6-v2", {});
//   if (!dir.ok()) ... dir.status().message();
//   auto engine = stamen::engine::Engine::Load(*dir);
#pragma once

#include <string>

#include "common/status.h"

namespace stamen::hub {

struct ResolveOptions {
  std::string revision = "main";  // branch, tag or commit hash
  std::string cache_dir{};        // empty: $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub
  std::string endpoint{};         // empty: $HF_ENDPOINT, else https://huggingface.co
  std::string token{};            // empty: $HF_TOKEN, else the file $HF_TOKEN_PATH or $HF_HOME/token
  bool offline = false;           // never touch the network (also when HF_HUB_OFFLINE=1)
  bool progress = true;           // progress bars on stderr, when stderr is a terminal
  // false: only the files that describe the model (config, tokenizer, sentence-transformers
  // configs), never weights: what a gateway in front of workers reads.
  bool weights = true;
};

// The folder to load for `model`:
//   - an existing directory is returned as it is;
//   - an "org/name" id resolves through the cache (refs/<revision> -> snapshots/<commit>)
//     when that snapshot has config.json and (unless !options.weights) the safetensors
//     weights, without any request;
//   - otherwise the model is pulled (PullModel), unless offline, which is an error naming the
//     cache that was searched.
StatusOr<std::string> ResolveModel(const std::string& model, const ResolveOptions& options = {});

// Downloads the files of `repo_id` that stamen needs (config, safetensors weights unless
// !options.weights, tokenizer, sentence-transformers modules; never pytorch_model.bin or ONNX) at `options.revision` into
// the cache, reusing blobs already there and resuming interrupted downloads, and returns the
// snapshot folder (<cache>/models--org--name/snapshots/<commit>). Always asks the hub which
// commit the revision names. An error when offline.
StatusOr<std::string> PullModel(const std::string& repo_id, const ResolveOptions& options = {});

// The options' settings with the environment's defaults filled in.
std::string EffectiveCacheDir(const ResolveOptions& options);
std::string EffectiveEndpoint(const ResolveOptions& options);
std::string EffectiveToken(const ResolveOptions& options);
bool EffectiveOffline(const ResolveOptions& options);

}  // namespace stamen::hub
