// Public interface of the stamen engine: load a Hugging Face model folder and run ragged
// batches of token ids through it, getting one pooled vector (or classification scores) per
// sequence. `Step` is the one entry point; its result is lazy so a device backend can return
// before the device finishes (on the CPU it is complete on return).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "engine/model_config.h"
#include "engine/ops/pooling.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine {

class Model;

struct EngineOptions {
  // Decoder families only: override config.json's causal attention (false = bidirectional,
  // as pplx-embed-v1 uses).
  std::optional<bool> causal = std::nullopt;
  // Threads for the CPU kernels of this engine's steps (0: leave the calling thread's OpenMP
  // setting, by default all cores).
  // Tiny models and loaded machines are faster with 1: a parallel region costs microseconds.
  int num_threads = 0;
};

// A batch of sequences packed end to end: sequence s is token_ids[cu_seqlens[s] :
// cu_seqlens[s + 1]]. The spans must stay valid until Step returns.
struct Batch {
  std::span<const int32_t> token_ids;
  std::span<const int32_t> cu_seqlens;      // S + 1 offsets: 0, …, token_ids.size()
  std::span<const int32_t> token_type_ids;  // empty: all 0 (segment A)
};

enum class StepOutput {
  kEmbeddings,       // [S, dimensions]: pooled, optionally normalised
  kScores,           // [S, num_labels]: raw logits of a classification head
  kTokenEmbeddings,  // [T, hidden]: the last hidden state of every token
};

struct StepOptions {
  StepOutput output = StepOutput::kEmbeddings;
  // Overrides the model's pooling (sentence-transformers config, else the family's default).
  std::optional<ops::PoolingMode> pooling = std::nullopt;
  // L2-normalise embeddings (after truncation to `dimensions`), as TEI does by default.
  bool normalize = true;
  // Keep only the leading `dimensions` of each embedding (Matryoshka); 0 keeps all.
  int64_t dimensions = 0;
};

// The values of one step, available after Wait().
class LazyResult {
 public:
  LazyResult() = default;
  // Blocks until the values are ready; returns the error of the step if it failed on the device.
  Status Wait();
  // F32 [rows, columns] in host memory, row-major. Valid after a successful Wait().
  const Tensor& values() const { return values_; }
  std::span<const float> Row(int64_t row) const;

 private:
  friend class Engine;
  Tensor values_;
  Status status_;
};

class Engine {
 public:
  // Loads config.json, the sentence-transformers files and the safetensors weights of
  // `model_dir`. Errors name the file, key or tensor at fault.
  static StatusOr<std::unique_ptr<Engine>> Load(const std::string& model_dir, const EngineOptions& options = {});
  ~Engine();

  // Runs one batch. Bad input (ids outside the vocabulary, malformed cu_seqlens, sequences
  // longer than the model allows, options the model cannot honour) is an error and leaves the
  // engine ready for the next step. Not thread-safe: one caller drives an engine.
  StatusOr<LazyResult> Step(const Batch& batch, const StepOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const SentenceTransformersConfig& sentence_transformers() const { return sentence_transformers_; }
  // The pooling used when a step names none: the sentence-transformers Pooling module, else
  // last-token for causal decoders and mean for bidirectional ones; unset for encoders
  // without one (steps must then name it).
  std::optional<ops::PoolingMode> default_pooling() const { return default_pooling_; }
  int64_t hidden_size() const { return config_.hidden_size; }

 private:
  Engine() = default;
  Status ValidateBatch(const Batch& batch, const StepOptions& options, ops::PoolingMode* pooling) const;

  ModelConfig config_;
  SentenceTransformersConfig sentence_transformers_;
  std::optional<ops::PoolingMode> default_pooling_;
  int num_threads_ = 0;
  std::unique_ptr<Model> model_;
};

}  // namespace stamen::engine
