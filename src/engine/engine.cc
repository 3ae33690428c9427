// Engine: loads a model folder, validates each batch on the host, runs the model, then pools,
// truncates and normalises (or applies the classification head) into the step's result.
#include "engine/engine.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <stdexcept>

#include <omp.h>

#include "engine/bge_m3_heads.h"
#include "engine/cpu/cpu_path.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/models/family.h"
#include "engine/ops/attention.h"
#include "engine/ops/pooling.h"
#include "engine/step_output.h"
#include "engine/weight_store.h"
#include "model_folder/model_options.h"
#include "model_folder/yes_no_reranker.h"

#if STAMEN_WITH_CUDA
#include "engine/cuda/attention_choice.h"
#include "engine/cuda/runner.h"
#include "engine/cuda/runtime.h"
#else
namespace stamen::engine::cuda {
class Runner {};  // never made: Load refuses Device::kCuda in a build without the backend
}  // namespace stamen::engine::cuda
#endif

namespace stamen::engine {
namespace {

// The engine checks ids on the host before a device step (CUDA kernels cannot report them);
// the messages are those of the CPU gather.
Status CheckIds(std::span<const int32_t> ids, int64_t rows, const std::string& what) {
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= rows) {
      return Status::Error(what + "id " + std::to_string(ids[t]) + " at index " + std::to_string(t) +
                           " is outside the embedding table of " + std::to_string(rows) + " rows");
    }
  }
  return Status();
}

}  // namespace

Status LazyResult::Wait() {
  if (wait_) {
    status_ = wait_();
    wait_ = nullptr;
  }
  return status_;
}

LazyResult LazyResult::Deferred(Tensor values, std::function<Status()> wait) {
  LazyResult result;
  result.values_ = std::move(values);
  result.wait_ = std::move(wait);
  return result;
}

Tensor LazyResult::SequenceRows(int64_t sequence) const {
  if (sequence < 0 || sequence + 1 >= static_cast<int64_t>(sequence_offsets_.size())) return Tensor();
  return values_.Rows(sequence_offsets_[sequence], sequence_offsets_[sequence + 1]);
}

std::span<const float> LazyResult::Row(int64_t row) const {
  if (values_.empty() || row < 0 || row >= values_.dim(0)) return {};
  const int64_t columns = values_.dim(1);
  return {values_.data<float>() + row * columns, static_cast<size_t>(columns)};
}

DataType DefaultComputeType(const ModelConfig& config, Device device) {
  if (device == Device::kCuda) return DataType::kBF16;
  // A process-wide pin of the CPU default, so that results do not depend on the machine where
  // they must not (the test suite sets it: scripts/test.sh).
  if (const char* pinned = std::getenv("STAMEN_CPU_DTYPE"); pinned != nullptr) {
    if (auto parsed = ParseComputeType(pinned)) return *parsed;
  }
  // The families whose bf16 accuracy bench/dtype_gate.sh measured on real weights and found
  // within the gate (cosine to fp32 ≥ 0.999 on every one of 1,220 udhr texts;
  // docs/BENCHMARKS.md, "On AVX-512 and in bf16"): BERT (all-MiniLM-L6-v2, worst 0.99994).
  // MPNet (all-mpnet-base-v2: one text at 0.9984) and Gemma3 (EmbeddingGemma without a prompt:
  // two at 0.9935 and 0.9974) missed it, and the others are unmeasured: they stay fp32 unless
  // --dtype bfloat16 says otherwise.
  const bool gate_passed = config.family == ModelFamily::kBert;
  return gate_passed && cpu::DefaultsToBFloat16() ? DataType::kBF16 : DataType::kF32;
}

std::optional<DataType> ParseComputeType(std::string_view name) {
  if (name == "float32") return DataType::kF32;
  if (name == "bfloat16") return DataType::kBF16;
  return std::nullopt;
}

Engine::Engine() = default;
Engine::~Engine() = default;

Status Engine::health() const {
#if STAMEN_WITH_CUDA
  if (runner_ != nullptr) return runner_->fault();
#endif
  return Status();
}

DeviceStats Engine::device_stats() const {
#if STAMEN_WITH_CUDA
  if (runner_ != nullptr) return runner_->stats();
#endif
  return DeviceStats();
}

StatusOr<std::unique_ptr<Engine>> Engine::Load(const std::string& model_dir, const EngineOptions& options) {
  // The config's sizes are checked against the weights before the model is built; what still
  // runs out of memory (a model too large for this machine) must not abort the process that
  // asked, which may be serving other models.
  try {
    return LoadOrThrow(model_dir, options);
  } catch (const std::bad_alloc&) {
    return Status::Error(model_dir + ": out of memory while loading the model: check config.json's sizes "
                         "(num_hidden_layers, hidden_size, intermediate_size, vocab_size) against the weights");
  } catch (const std::length_error& error) {
    return Status::Error(model_dir + ": a size in config.json is too large to allocate (" + error.what() + ")");
  }
}

StatusOr<std::unique_ptr<Engine>> Engine::LoadOrThrow(const std::string& model_dir, const EngineOptions& options) {
  std::unique_ptr<Engine> engine(new Engine());
  if (options.num_threads < 0) return Status::Error("num_threads must not be negative");
  engine->num_threads_ = options.num_threads;
  auto folder = ReadModelFolder(model_dir);
  if (!folder.ok()) return folder.status();
  engine->config_ = std::move(folder->config);
  engine->sentence_transformers_ = std::move(folder->sentence_transformers);
  const bool decoder = engine->config_.decoder;
  if (options.causal.has_value()) {
    if (!decoder) return Status::Error("causal attention can only be chosen for decoder models, not " + engine->config_.architecture);
    engine->config_.causal = *options.causal;
  }
  STAMEN_RETURN_IF_ERROR(ResolveYesNoReranker(model_dir, options.yes_no_reranker, engine->sentence_transformers_,
                                              &engine->config_));
  engine->profile_ = ProfileOf(engine->config_, engine->sentence_transformers_);
  const bool masked_lm = engine->config_.head == ModelHead::kMaskedLm;
  if (engine->profile_.sparse && !masked_lm) {
    return Status::Error(model_dir + ": SpladePooling needs a masked-LM head, but config.json names " +
                         engine->config_.architecture);
  }
  if (engine->profile_.sparse && !engine->sentence_transformers_.dense.empty()) {
    return Status::Error(model_dir + ": Dense modules after SpladePooling are not supported");
  }
  auto weights = WeightStore::OpenDirectory(engine->config_.weights_folder.empty() ? model_dir
                                                                                  : engine->config_.weights_folder);
  if (!weights.ok()) return weights.status();
  if (engine->config_.bge_m3.enabled) {
    auto heads = LoadBgeM3Heads(engine->config_.bge_m3, engine->config_.hidden_size);
    if (!heads.ok()) return heads.status();
    engine->bge_m3_ = std::make_unique<BgeM3Heads>(std::move(heads.value()));
  }
  engine->device_ = options.device;
  engine->compute_dtype_ = options.compute_dtype.value_or(DefaultComputeType(engine->config_, options.device));
  if (engine->compute_dtype_ != DataType::kF32 && engine->compute_dtype_ != DataType::kBF16) {
    return Status::Error("compute dtype " + std::string(DataTypeName(engine->compute_dtype_)) +
                         " is not supported (float32 or bfloat16)");
  }
  if (options.device == Device::kCuda && engine->compute_dtype_ != DataType::kBF16) {
    return Status::Error("the CUDA backend computes in bfloat16 only: leave --dtype out or give bfloat16");
  }
  if (options.device == Device::kCpu) {
    auto model = LoadModel(engine->config_, *weights);
    if (!model.ok()) return model.status();
    engine->model_ = std::move(model.value());
    auto dense = LoadDenseModules(engine->sentence_transformers_.dense, engine->config_.hidden_size, Placement{});
    if (!dense.ok()) return dense.status();
    engine->dense_ = std::make_unique<DenseModules>(std::move(dense.value()));
    return engine;
  }
#if STAMEN_WITH_CUDA
  auto runner = cuda::Runner::Create(options);
  if (!runner.ok()) return Status::Error("cannot run on cuda: " + runner.status().message());
  engine->runner_ = std::move(runner.value());
  engine->gpu_name_ = cuda::DeviceDescription(options.cuda_device);
  if (engine->config_.family != ModelFamily::kStaticEmbedding) {
    // The rule ops::Attention applies at every call, so /info and the start log name the
    // attention kernel that runs (MPNet's bias and DeBERTa's relative terms are position terms).
    const bool position_terms = engine->config_.family == ModelFamily::kMpnet ||
                                (engine->config_.family == ModelFamily::kDeberta &&
                                 engine->config_.disentangled.relative_attention &&
                                 (engine->config_.disentangled.content_to_position ||
                                  engine->config_.disentangled.position_to_content));
    engine->gpu_name_ += "; attention: " + cuda::ChooseAttentionKernel(engine->config_.head_dim, position_terms,
                                                                       cuda::ComputeCapabilityMajor(options.cuda_device),
                                                                       cuda::ScalarAttentionForced())
                                                 .description;
  }
  const Placement placement{Device::kCuda, DataType::kBF16};
  STAMEN_RETURN_IF_ERROR(engine->runner_->Run([&]() -> Status {
    auto model = LoadModel(engine->config_, *weights, placement);
    if (!model.ok()) return model.status();
    engine->model_ = std::move(model.value());
    auto dense = LoadDenseModules(engine->sentence_transformers_.dense, engine->config_.hidden_size, placement);
    if (!dense.ok()) return dense.status();
    engine->dense_ = std::make_unique<DenseModules>(std::move(dense.value()));
    return Status();
  }));
  return engine;
#else
  return Status::Error("cannot run on cuda: this build has no CUDA backend (build where nvcc is found, e.g. "
                       "with the cuda preset)");
#endif
}

Status Engine::ValidateSpans(const Batch& batch, std::span<const int32_t> spans) const {
  if (spans.empty()) return Status();
  if (device_ != Device::kCpu) return Status::Error("spans (late chunking) run on the CPU engine only");
  if (spans.size() % 2 != 0) return Status::Error("spans must be (begin, end) pairs");
  const std::span<const int32_t> offsets = batch.cu_seqlens;
  for (size_t i = 0; i < spans.size(); i += 2) {
    const int32_t begin = spans[i], end = spans[i + 1];
    // The sequence holding the span's first token: the last offset ≤ begin.
    const auto after = std::upper_bound(offsets.begin(), offsets.end(), begin);
    const bool inside = begin >= 0 && begin < end && after != offsets.begin() && after != offsets.end() && end <= *after;
    if (!inside) {
      return Status::Error("span " + std::to_string(i / 2) + " [" + std::to_string(begin) + ", " + std::to_string(end) +
                           ") is empty or not within one sequence of the batch");
    }
  }
  return Status();
}

Status Engine::ValidateAdapters(const Batch& batch) const {
  if (batch.adapters.empty()) return Status();
  const size_t sequences = batch.cu_seqlens.size() - 1;
  if (batch.adapters.size() != sequences) {
    return Status::Error("adapters has " + std::to_string(batch.adapters.size()) + " entries for " +
                         std::to_string(sequences) + " sequences");
  }
  const int32_t tasks = static_cast<int32_t>(config_.adapter_tasks.size());
  for (size_t s = 0; s < sequences; ++s) {
    const int32_t adapter = batch.adapters[s];
    if (adapter == -1) continue;
    if (tasks == 0) return Status::Error(config_.architecture + " has no task adapters");
    if (adapter < -1 || adapter >= tasks) {
      return Status::Error("adapter " + std::to_string(adapter) + " of sequence " + std::to_string(s) +
                           " is outside -1.." + std::to_string(tasks - 1) + " (tasks: " + AdapterTaskList(config_) +
                           ")");
    }
  }
  return Status();
}

Status Engine::ValidateBatch(const Batch& batch, const StepOptions& options, ops::PoolingMode* pooling) const {
  if (batch.cu_seqlens.size() < 2) return Status::Error("a batch needs at least one sequence");
  STAMEN_RETURN_IF_ERROR(ops::ValidateCuSeqlens(batch.cu_seqlens, static_cast<int64_t>(batch.token_ids.size()),
                                                /*allow_empty=*/false));
  if (!batch.token_type_ids.empty() && batch.token_type_ids.size() != batch.token_ids.size()) {
    return Status::Error("token_type_ids has " + std::to_string(batch.token_type_ids.size()) + " entries for " +
                         std::to_string(batch.token_ids.size()) + " tokens");
  }
  if (!batch.token_type_ids.empty() && config_.type_vocab_size == 0) {
    return Status::Error(config_.architecture + " takes no token type ids");
  }
  STAMEN_RETURN_IF_ERROR(ValidateAdapters(batch));
  if (!options.spans.empty() && options.output != StepOutput::kEmbeddings) {
    return Status::Error("spans (late chunking) apply to pooled embeddings only");
  }
  switch (options.output) {
    case StepOutput::kScores:
      if (config_.head != ModelHead::kSequenceClassification) {
        return Status::Error(config_.architecture + " has no classification head: it gives embeddings, not scores");
      }
      break;
    case StepOutput::kEmbeddings: {
      const std::optional<ops::PoolingMode> chosen = options.pooling.has_value() ? options.pooling : profile_.default_pooling;
      if (!chosen.has_value()) {
        return Status::Error("the model folder has no sentence-transformers pooling config: choose a pooling mode");
      }
      *pooling = *chosen;
      STAMEN_RETURN_IF_ERROR(CheckPoolingFitsModel(config_, *chosen));
      if (*chosen == ops::PoolingMode::kSplade) {
        if (!options.spans.empty()) return Status::Error("spans (late chunking) cannot pool splade vectors");
        break;
      }
      STAMEN_RETURN_IF_ERROR(ValidateSpans(batch, options.spans));
      break;
    }
    case StepOutput::kTokenEmbeddings:
      break;
    case StepOutput::kDenseSparseColbert:
      if (bge_m3_ == nullptr) {
        return Status::Error("dense, sparse and ColBERT outputs together come from a bge-m3 folder (colbert_linear.pt and "
                             "sparse_linear.pt beside config.json); " + config_.architecture + " here is not one");
      }
      if (device_ != Device::kCpu) return Status::Error("bge-m3's outputs run on the CPU engine only");
      break;
    case StepOutput::kTokenVectors:
      if (!sentence_transformers_.multi_vector.enabled) {
        return Status::Error("token vectors come from a multi-vector (ColBERT) model; " + config_.architecture +
                             " here is not one");
      }
      break;
  }
  if (!batch.key_lengths.empty()) {
    if (device_ != Device::kCpu) return Status::Error("key lengths (unattended query expansion) run on the CPU engine only");
    if (!model_->LimitsKeys()) return Status::Error(config_.architecture + " does not take key lengths");
    if (batch.key_lengths.size() + 1 != batch.cu_seqlens.size()) {
      return Status::Error("key_lengths has " + std::to_string(batch.key_lengths.size()) + " entries for " +
                           std::to_string(batch.cu_seqlens.size() - 1) + " sequences");
    }
    for (size_t s = 0; s < batch.key_lengths.size(); ++s) {
      if (batch.key_lengths[s] < 1 || batch.key_lengths[s] > batch.cu_seqlens[s + 1] - batch.cu_seqlens[s]) {
        return Status::Error("key length " + std::to_string(batch.key_lengths[s]) + " of sequence " + std::to_string(s) +
                             " is outside 1..its length");
      }
    }
  }
  const int64_t longest = model_->max_sequence_length();
  for (size_t s = 0; s + 1 < batch.cu_seqlens.size(); ++s) {
    const int64_t length = int64_t{batch.cu_seqlens[s + 1]} - batch.cu_seqlens[s];
    if (longest > 0 && length > longest) {
      return Status::Error("sequence " + std::to_string(s) + " has " + std::to_string(length) +
                           " tokens; the model takes at most " + std::to_string(longest));
    }
  }
  if (device_ != Device::kCpu) {
    STAMEN_RETURN_IF_ERROR(CheckIds(batch.token_ids, config_.vocab_size, ""));
    if (!batch.token_type_ids.empty()) {
      STAMEN_RETURN_IF_ERROR(CheckIds(batch.token_type_ids, config_.type_vocab_size, "token type ids: "));
    }
  }
  return Status();
}

StatusOr<LazyResult> Engine::Step(const Batch& batch, const StepOptions& options) {
  ops::PoolingMode pooling = ops::PoolingMode::kCls;
  STAMEN_RETURN_IF_ERROR(ValidateBatch(batch, options, &pooling));
#if STAMEN_WITH_CUDA
  if (runner_ != nullptr) {
    auto result = runner_->Step(*model_, config_, *dense_, batch, options, pooling);
    if (result.ok() && (options.output == StepOutput::kTokenEmbeddings || options.output == StepOutput::kTokenVectors)) {
      result->sequence_offsets_.assign(batch.cu_seqlens.begin(), batch.cu_seqlens.end());
    }
    return result;
  }
#endif
  // OpenMP's thread count is per calling thread, so each engine's driver thread sets its own,
  // and so is the precision of the matrix products.
  if (num_threads_ > 0) omp_set_num_threads(num_threads_);
  const cpu::MatrixPrecisionScope precision(compute_dtype_ == DataType::kBF16 ? cpu::MatrixPrecision::kBFloat16
                                                                              : cpu::MatrixPrecision::kFloat32);
  const int64_t tokens = static_cast<int64_t>(batch.token_ids.size());
  const int64_t sequences = static_cast<int64_t>(batch.cu_seqlens.size()) - 1;
  // The model only reads the batch: views of the caller's memory need no staging copy on the CPU.
  ModelInput input;
  input.token_ids = Tensor::Wrap(const_cast<int32_t*>(batch.token_ids.data()), DataType::kI32, {tokens});
  if (!batch.token_type_ids.empty()) {
    input.token_type_ids = Tensor::Wrap(const_cast<int32_t*>(batch.token_type_ids.data()), DataType::kI32, {tokens});
  }
  input.cu_seqlens = Tensor::Wrap(const_cast<int32_t*>(batch.cu_seqlens.data()), DataType::kI32, {sequences + 1});
  input.cu_seqlens_host = batch.cu_seqlens;
  input.adapters_host = batch.adapters;
  if (!batch.key_lengths.empty()) {
    input.key_lengths = Tensor::Wrap(const_cast<int32_t*>(batch.key_lengths.data()), DataType::kI32, {sequences});
  }

  // A model that pools its ids itself (a static table's embedding bag) needs no hidden state
  // when the step wants nothing else of the tokens.
  const bool pool_ids = options.output == StepOutput::kEmbeddings && options.spans.empty() &&
                        dense_->layers.empty() && model_->PoolsIds(pooling);
  Tensor hidden;
  if (!pool_ids) {
    auto forward = model_->Forward(input);
    if (!forward.ok()) return forward.status();
    hidden = std::move(forward.value());
  }
  // The values outlive the step (callers read them after the next Step), so each step
  // allocates its own.
  auto values = options.output == StepOutput::kDenseSparseColbert
                    ? ComputeBgeM3Rows(*bge_m3_, hidden, batch.cu_seqlens)
                    : ComputeStepValues(*model_, config_, input, hidden, options, pooling, *dense_,
                                  [](const Shape& shape) { return Tensor::Allocate(DataType::kF32, shape); });
  if (!values.ok()) return values.status();
  LazyResult result;
  result.values_ = std::move(values.value());
  if (options.output == StepOutput::kTokenEmbeddings || options.output == StepOutput::kTokenVectors ||
      options.output == StepOutput::kDenseSparseColbert) {
    result.sequence_offsets_.assign(batch.cu_seqlens.begin(), batch.cu_seqlens.end());
  }
  return result;
}

}  // namespace stamen::engine
