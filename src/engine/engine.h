// Public interface of the stamen engine: load a Hugging Face model folder and run ragged
// batches of token ids through it, getting one pooled vector (or classification scores) per
// sequence. `Step` is the one entry point; its result is lazy so a device backend can return
// before the device finishes (on the CPU it is complete on return; on CUDA it is a pinned
// host buffer filled by an asynchronous copy, and Wait() blocks on the copy's event).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_folder/model_config.h"
#include "model_folder/model_profile.h"
#include "engine/ops/pooling.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine {

class Model;
struct DenseModules;
struct BgeM3Heads;
namespace cuda {
class Runner;
}

// Full-model CUDA graphs (device = cuda only). A configuration is (sequence count, token count
// rounded up to a bucket); its first step runs eagerly (warm-up, buffers), its second is
// captured, later ones replay the graph.
struct CudaGraphOptions {
  bool enabled = true;
  int64_t bucket = 64;               // token bucket up to large_bucket_from tokens
  int64_t large_bucket = 256;        // token bucket above it
  int64_t large_bucket_from = 1024;
  // Steps with more tokens than this run eagerly (the inflection point: beyond it a replay is
  // no faster than the eager pass). With measure_inflection, the engine times both at the same
  // configuration and lowers the limit below the fewest tokens at which the graph lost
  // (never below 256; a later win raises it again, up to this value).
  int64_t max_tokens = 8192;
  bool measure_inflection = true;
  int64_t max_sequences = 512;
  // Static input buffers and graph executables of all configurations together; the least
  // recently used graph is dropped to stay under it.
  size_t memory_cap_bytes = size_t{1} << 30;
};

struct EngineOptions {
  // Decoder families only: override config.json's causal attention (false = bidirectional,
  // as pplx-embed-v1 uses).
  std::optional<bool> causal = std::nullopt;
  // A *ForCausalLM folder as a yes/no reranker (yes_no_reranker.h): true / false, or the
  // folder's shape decides (nullopt). Callers pass false when the user chose a pooling mode.
  std::optional<bool> yes_no_reranker = std::nullopt;
  // Threads for the CPU kernels of this engine's steps (0: leave the calling thread's OpenMP
  // setting, by default all cores).
  // Tiny models and loaded machines are faster with 1: a parallel region costs microseconds.
  int num_threads = 0;
  // Where the model runs. kCuda needs a build with the CUDA backend and a GPU; weights are
  // converted to bf16 on the device once at load.
  Device device = Device::kCpu;
  // What the matrix products compute in (`--dtype`): kF32 or kBF16; unset, the device's
  // default: bf16 on CUDA (its only one); on the CPU bf16 where this CPU multiplies bf16
  // faster than fp32 and the family passed the bf16 accuracy gate (DefaultComputeType), else
  // fp32. On the CPU bf16 rounds the weights and each product's input and sums in fp32; the
  // residual stream, norms, attention and pooling stay fp32 (cpu/matrix_precision.h).
  std::optional<DataType> compute_dtype = std::nullopt;
  int cuda_device = 0;
  CudaGraphOptions cuda_graphs = {};
};

// What the CUDA backend did so far (all zero on the CPU).
struct DeviceStats {
  int64_t graph_captures = 0;
  int64_t graph_replays = 0;
  int64_t eager_runs = 0;
  int64_t capture_failures = 0;
  int64_t graphs = 0;             // held now
  int64_t graph_evictions = 0;
  size_t graph_bytes = 0;         // accounted against memory_cap_bytes
  double capture_seconds = 0.0;   // total time spent capturing and instantiating
  int64_t inflection_tokens = 0;  // current graph limit (max_tokens, or lower once a graph lost)
  size_t memory_used_bytes = 0;   // on the whole device (cudaMemGetInfo), as nvidia-smi counts it
};

// A batch of sequences packed end to end: sequence s is token_ids[cu_seqlens[s] :
// cu_seqlens[s + 1]]. The spans must stay valid until Step returns.
struct Batch {
  std::span<const int32_t> token_ids;
  std::span<const int32_t> cu_seqlens;      // S + 1 offsets: 0, …, token_ids.size()
  std::span<const int32_t> token_type_ids = {};  // empty: all 0 (segment A)
  // Per sequence: the index among config().adapter_tasks of the task adapter it runs with
  // (jina-embeddings-v3's LoRA, applied to that sequence alone), −1 for none; empty: none.
  // Sequences of different tasks may share a batch (on CUDA such a step runs without a graph).
  std::span<const int32_t> adapters = {};
  // Per sequence, how many of its leading tokens are attended as keys (the rest still attend to
  // them and give outputs: PyLate's query expansion tokens when attend_to_expansion_tokens is
  // false); empty: every token. Each count is in 1..the sequence's length. CPU engine only.
  std::span<const int32_t> key_lengths = {};
};

enum class StepOutput {
  // [S, width]: pooled (and through the Dense modules), whole and not normalised: the caller
  // truncates and normalises (FinishRows, finish_rows.h). With splade pooling (a …ForMaskedLM model)
  // [S, vocab]: the SPLADE vector of each sequence, dense but mostly zeros, never normalised
  // (as TEI's /embed_sparse and sentence-transformers' SparseEncoder give it); callers keep
  // the non-zero entries (index = vocabulary id).
  kEmbeddings,
  kScores,           // [S, num_labels]: raw logits of a classification head
  // [T, hidden]: the last hidden state of every token (special tokens included), neither
  // pooled nor normalised, with the batch's cu_seqlens in the result (SequenceRows): what
  // TEI's /embed_all and late chunking (pooling spans of a long text's tokens) start from.
  kTokenEmbeddings,
  // [T, width]: every token's hidden state through the sentence-transformers Dense modules, each
  // row L2-normalised (a multi-vector model's token vectors, PyLate's encode before its masks),
  // with the batch's cu_seqlens in the result as for kTokenEmbeddings.
  kTokenVectors,
  // bge-m3 only (config().bge_m3): FlagEmbedding's dense, sparse and ColBERT outputs from one forward,
  // one row per token laid out as BgeM3RowLayout says (model_folder/bge_m3.h; the dense vector and
  // the ColBERT vectors already normalised, the sparse weights per token before each id keeps its
  // largest), with the batch's cu_seqlens in the result as for kTokenEmbeddings. CPU engine only.
  kDenseSparseColbert,
};

struct StepOptions {
  StepOutput output = StepOutput::kEmbeddings;
  // Overrides the model's pooling (sentence-transformers config, else the family's default).
  std::optional<ops::PoolingMode> pooling = std::nullopt;
  // Late chunking (kEmbeddings with a pooling other than splade): when not empty, one
  // embedding per span instead of one per sequence, in span order. Spans are (begin, end)
  // pairs of token indices into the batch, each within one sequence and not empty; each is
  // pooled over its own tokens as if it were a sequence, then passed through the Dense
  // modules as whole sequences are. The tokens still attend over
  // their whole sequence, so each span's vector carries that context. CPU engine only.
  std::span<const int32_t> spans = {};
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
  // kTokenEmbeddings only: the step's cu_seqlens (S + 1 offsets into the rows of values()),
  // and sequence s's rows [tokens of s, hidden] (an empty tensor for another s or output).
  std::span<const int32_t> sequence_offsets() const { return sequence_offsets_; }
  Tensor SequenceRows(int64_t sequence) const;

  // For device backends: `values` (host memory, e.g. a pinned buffer) becomes valid once
  // `wait` has returned ok; Wait() calls it once.
  static LazyResult Deferred(Tensor values, std::function<Status()> wait);

 private:
  friend class Engine;
  Tensor values_;
  std::vector<int32_t> sequence_offsets_;
  Status status_;
  std::function<Status()> wait_;
};

// The compute dtype an engine for `config` on `device` takes when the options name none (see
// EngineOptions::compute_dtype). STAMEN_CPU_DTYPE=float32|bfloat16 in the environment replaces
// the CPU's rule (the test suite pins float32, so that no result depends on the machine).
DataType DefaultComputeType(const ModelConfig& config, Device device);
// "float32" → kF32, "bfloat16" → kBF16 (TEI's --dtype names); nullopt for anything else.
std::optional<DataType> ParseComputeType(std::string_view name);

class Engine {
 public:
  // Loads config.json, the sentence-transformers files and the safetensors weights of
  // `model_dir`. Errors name the file, key or tensor at fault; running out of memory while
  // loading is an error too, never an exception.
  static StatusOr<std::unique_ptr<Engine>> Load(const std::string& model_dir, const EngineOptions& options = {});
  ~Engine();

  // Runs one batch. Bad input (ids outside the vocabulary, malformed cu_seqlens, sequences
  // longer than the model allows, options the model cannot honour) is an error and leaves the
  // engine ready for the next step. Not thread-safe: one caller drives an engine.
  StatusOr<LazyResult> Step(const Batch& batch, const StepOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const SentenceTransformersConfig& sentence_transformers() const { return sentence_transformers_; }
  // What the model serves, its widths, limits and default pooling (model_folder/model_profile.h),
  // as the gateway works them out from the folder without loading it.
  const ModelProfile& profile() const { return profile_; }
  // The pooling used when a step names none: the sentence-transformers Pooling (or
  // SpladePooling) module, else last-token for causal decoders, mean for bidirectional ones
  // and splade for …ForMaskedLM models; unset for other encoders without one (steps must
  // then name it).
  std::optional<ops::PoolingMode> default_pooling() const { return profile_.default_pooling; }
  int64_t hidden_size() const { return config_.hidden_size; }
  // The width of the embeddings a step gives by default (before Matryoshka truncation): the
  // vocabulary size for a SPLADE model, else the last sentence-transformers Dense module's
  // out_features, else the hidden size.
  int64_t embedding_width() const { return profile_.embedding_width; }
  Device device() const { return device_; }
  // What the matrix products compute in, as TEI's /info names it: "float32" or "bfloat16".
  std::string_view compute_dtype() const { return compute_dtype_ == DataType::kBF16 ? "bfloat16" : "float32"; }
  DeviceStats device_stats() const;
  // Ok while the engine can compute; on CUDA, an error once the GPU hit a sticky fault (an
  // illegal address, a trap: every later step would fail), which a worker reports as not ready.
  Status health() const;
  // The GPU on CUDA, e.g. "NVIDIA H200 (sm_90, 139.8 GiB)"; empty on the CPU.
  const std::string& gpu_name() const { return gpu_name_; }

 private:
  Engine();
  // Load, which may throw std::bad_alloc (or std::length_error) where memory runs out.
  static StatusOr<std::unique_ptr<Engine>> LoadOrThrow(const std::string& model_dir, const EngineOptions& options);
  Status ValidateBatch(const Batch& batch, const StepOptions& options, ops::PoolingMode* pooling) const;
  Status ValidateSpans(const Batch& batch, std::span<const int32_t> spans) const;
  Status ValidateAdapters(const Batch& batch) const;

  ModelConfig config_;
  SentenceTransformersConfig sentence_transformers_;
  ModelProfile profile_;
  int num_threads_ = 0;
  Device device_ = Device::kCpu;
  DataType compute_dtype_ = DataType::kF32;
  std::string gpu_name_;
  // Declared before model_ so the model's device memory goes before the context.
  std::unique_ptr<cuda::Runner> runner_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<DenseModules> dense_;  // on the model's device, like its weights
  std::unique_ptr<BgeM3Heads> bge_m3_;   // bge-m3's heads (host memory), else null
};

}  // namespace stamen::engine
