// Which files of a hub repository make a stamen model folder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stamen::hub {

// One file of a repository as the hub's API lists it (`siblings` with `?blobs=true`).
struct RepoFile {
  std::string path;        // "rfilename": "config.json", "1_Pooling/config.json"
  int64_t size = -1;       // bytes; -1 when the API did not say
  std::string blob_id{};   // git blob sha1 ("blobId"); the cache's blob name for non-LFS files
  std::string lfs_sha256{};// "lfs.sha256" for LFS files: the blob name and the checksum
  // The name of the file's blob in the cache: the LFS sha256, else the git blob id.
  const std::string& blob() const { return lfs_sha256.empty() ? blob_id : lfs_sha256; }
};

// A relative path without "..", ".", empty parts, a leading '/', backslashes or control
// characters: safe to join under a snapshot folder.
Status ValidateRepoFilePath(std::string_view path);

// The files stamen loads, in the repository's order:
//   - config.json (required, but for a sentence-transformers StaticEmbedding repository:
//     modules.json and a table, model.safetensors or N_StaticEmbedding/model.safetensors);
//   - weights: model.safetensors, else model.safetensors.index.json with every
//     model-NNNNN-of-NNNNN.safetensors shard; a repository with only other formats
//     (pytorch_model.bin, ONNX, …) is an error, and those are never chosen;
//   - tokenizer files: tokenizer.json, tokenizer_config.json, special_tokens_map.json,
//     added_tokens.json, vocab.txt, vocab.json, merges.txt, sentencepiece.bpe.model,
//     spiece.model, tokenizer.model, spm.model;
//   - sentence-transformers files: modules.json, config_sentence_transformers.json,
//     sentence_*_config.json, and the .json and .safetensors files of the module folders
//     (1_Pooling/config.json, 2_Dense/…, 2_Normalize/…).
//   - bge-m3's heads, colbert_linear.pt and sparse_linear.pt, with or without `weights`.
// Without `weights`, no .safetensors file is chosen (a sharded model's small index still is,
// for the tensor names; a StaticEmbedding repository's table too, whose header describes the
// model): what a gateway reads. The repository must still have weights a
// worker loads.
StatusOr<std::vector<RepoFile>> SelectModelFiles(const std::vector<RepoFile>& files, const std::string& repo_id,
                                                 bool weights = true);

}  // namespace stamen::hub
