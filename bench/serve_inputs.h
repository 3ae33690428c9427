// Inputs of exact token counts for the serving benchmarks, made with the model's own
// tokenizer from an English corpus, and the reference the served answers are checked
// against: the engine run directly in this process on the CPU in fp32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/engine.h"
#include "model_folder/model_config.h"
#include "model_folder/model_tokenizer.h"

namespace stamen::bench {

// The corpus used when --corpus is not given: ../shared/corpus/botchan.txt beside the
// source tree if it exists, else a paragraph built in.
std::string DefaultCorpusPath();

class InputMaker {
 public:
  static StatusOr<std::unique_ptr<InputMaker>> Load(const std::string& model_dir, const std::string& corpus_path);

  // A text that the model's tokenizer encodes (special tokens included) to exactly `tokens`
  // ids; `variant` picks where in the corpus it starts, so variants differ.
  StatusOr<std::string> Text(int64_t tokens, int variant);
  // Its ids.
  StatusOr<std::vector<int32_t>> Ids(int64_t tokens, int variant);
  // A (query, document) pair whose pair encoding has exactly `tokens` ids; `ids` and
  // `type_ids` get that encoding. The query is the same for every variant.
  struct Pair {
    std::string query, document;
    std::vector<int32_t> ids, type_ids;
  };
  StatusOr<Pair> MakePair(int64_t tokens, int variant);

  const engine::ModelConfig& config() const { return config_; }
  engine::ModelTokenizer& tokenizer() { return *tokenizer_; }

 private:
  InputMaker() = default;
  // The first `count` words from word `start` on (wrapping around), space-separated.
  std::string Words(size_t start, size_t count) const;
  size_t Count(const std::string& text);
  size_t CountPair(const std::string& query, const std::string& document);

  engine::ModelConfig config_;
  std::unique_ptr<engine::ModelTokenizer> tokenizer_;
  std::vector<std::string> words_;
  std::vector<int32_t> scratch_, scratch_types_;
};

// The engine on the CPU in fp32, the answers every served result is compared with.
class Reference {
 public:
  static StatusOr<std::unique_ptr<Reference>> Load(const std::string& model_dir);
  // Pooled, L2-normalised embedding (the servers' default), or the classification logits.
  StatusOr<std::vector<float>> Embed(const std::vector<int32_t>& ids);
  StatusOr<std::vector<float>> Score(const std::vector<int32_t>& ids, const std::vector<int32_t>& type_ids);
  engine::Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<engine::Engine> engine_;
};

// 1 − cos(a, b): 0 for the same direction. The published gate is ≤ 0.001 (0.1%).
double CosineDivergence(const std::vector<float>& a, const std::vector<float>& b);
// |a − b| / max(1, |b|), largest over the logits: the gate for scores.
double ScoreDivergence(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace stamen::bench
