// Small random-weight model folders for the server tests, written by `stamen make-model`
// into a folder that lives as long as the test process.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace stamen::server::testing {

inline const std::string& ScratchFolder() {
  static const std::string folder = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "stamen_server_XXXXXX").string();
    std::string made = mkdtemp(pattern.data()) != nullptr ? pattern : "";
    static struct Remover {
      std::string path;
      ~Remover() {
        std::error_code error;
        std::filesystem::remove_all(path, error);
      }
    } remover{made};
    return made;
  }();
  return folder;
}

// `stamen make-model --like <like>` with one layer and a `vocabulary`-token vocabulary
// (with the real model's tokenizer: texts are only safe when it covers the tokenizer's ids).
inline std::string MakeModel(const std::string& like, int vocabulary = 1000) {
  const std::string out = ScratchFolder() + "/" + like + "-" + std::to_string(vocabulary);
  if (!std::filesystem::exists(out + "/config.json")) {
    const std::string command = std::string("'") + STAMEN_CLI + "' make-model --like " + like +
                                " --random-seed 11 --layers 1 --vocab-size " + std::to_string(vocabulary) +
                                " --out '" + out + "' > /dev/null 2>&1";
    if (std::system(command.c_str()) != 0) return "";
  }
  return out;
}

inline std::string TinyEmbedder() { return MakeModel("all-MiniLM-L6-v2"); }
inline std::string TinyReranker() { return MakeModel("bge-reranker-base"); }

// Packs int32 values as the wire format's little-endian bytes.
inline std::string Pack(const std::vector<int32_t>& values) {
  std::string bytes(values.size() * sizeof(int32_t), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

inline std::vector<float> UnpackFloats(const std::string& bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// Sequences of random ids (from 1, so never a pad id) with the given lengths.
inline std::vector<std::vector<int32_t>> RandomSequences(std::mt19937& random, const std::vector<int>& lengths,
                                                         int32_t vocabulary = 1000) {
  std::uniform_int_distribution<int32_t> id(1, vocabulary - 1);
  std::vector<std::vector<int32_t>> sequences;
  for (int length : lengths) {
    std::vector<int32_t> sequence(length);
    for (int32_t& value : sequence) value = id(random);
    sequences.push_back(std::move(sequence));
  }
  return sequences;
}

// What the engine gives for `sequences` run alone, one Step for all: the reference the
// batched results are compared with.
inline std::vector<std::vector<float>> ComputeAlone(engine::Engine& engine,
                                                    const std::vector<std::vector<int32_t>>& sequences,
                                                    const engine::StepOptions& options, int64_t dimensions = 0,
                                                    bool normalize = true) {
  // Dense embeddings are finished as a request asks (here, not by the code under test): cut
  // to `dimensions` (0: all), then L2-normalised when `normalize`. Scores, token states and
  // SPLADE vectors come as the step gives them.
  const std::optional<engine::ops::PoolingMode> pooling = options.pooling ? options.pooling : engine.default_pooling();
  const bool embeddings = options.output == engine::StepOutput::kEmbeddings && pooling != engine::ops::PoolingMode::kSplade;
  std::vector<std::vector<float>> rows;
  for (const auto& sequence : sequences) {
    const std::vector<int32_t> cu_seqlens = {0, static_cast<int32_t>(sequence.size())};
    auto result = engine.Step({sequence, cu_seqlens, {}}, options);
    if (!result.ok() || !result->Wait().ok()) return {};
    auto row = result->Row(0);
    std::vector<float> values(row.begin(), row.end());
    if (embeddings && dimensions > 0) values.resize(static_cast<size_t>(dimensions));
    if (embeddings && normalize) {
      double squares = 0;
      for (float v : values) squares += double{v} * v;
      const double norm = std::max(std::sqrt(squares), 1e-12);  // torch.nn.functional.normalize's eps
      for (float& v : values) v = static_cast<float>(v / norm);
    }
    rows.push_back(std::move(values));
  }
  return rows;
}

}  // namespace stamen::server::testing
