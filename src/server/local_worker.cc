#include "server/local_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <vector>

#include "engine/cpu/cpu_path.h"
#include "engine/cpu/kernels.h"
#include "model_folder/model_options.h"

namespace stamen::server {
namespace {

// Steps run before the worker takes requests, so that no request pays the one-time costs of
// the CPU engine (weights packed into panels or copied to bf16 on their first use, oneDNN's
// kernels generated per shape, the weight file's pages read from disk; for EmbeddingGemma
// most of a second). One of 8 tokens, under every small-m GEMM cut, and one as large as the
// scheduler's steps get, up to 544 tokens: over every cut a step can cross (128 rows with the
// AVX-512 fp32 tiles, 256 with the bf16 pair tiles, 512 with the AVX2 ones), in sequences of
// at most the model's length.
constexpr int64_t kWarmUpTokens[] = {8, 544};

// The tokens of each warm-up step, at most max_batch_tokens.
std::array<int64_t, 2> WarmUpTokens(int64_t max_batch_tokens) {
  const int64_t most = std::max<int64_t>(max_batch_tokens, 1);
  return {std::min(kWarmUpTokens[0], most), std::min(kWarmUpTokens[1], most)};
}

// Runs the warm-up steps; `tokens_per_second` gets the rate of the largest, a first estimate
// of the worker's (low: it includes its own one-time costs and one long sequence's attention).
Status WarmUp(engine::Engine& engine, int64_t max_sequence_length, const std::array<int64_t, 2>& step_tokens,
              double* tokens_per_second) {
  engine::StepOptions step;
  if (engine.config().head == engine::ModelHead::kSequenceClassification) {
    step.output = engine::StepOutput::kScores;
  } else if (engine.sentence_transformers().multi_vector.enabled) {
    step.output = engine::StepOutput::kTokenVectors;  // what all its work runs
  } else if (!engine.default_pooling()) {
    step.pooling = engine::ops::PoolingMode::kMean;
  }
  const int64_t longest = std::max<int64_t>(max_sequence_length, 1);
  for (const int64_t tokens : step_tokens) {
    const std::vector<int32_t> ids(static_cast<size_t>(tokens), 0);  // id 0 is in every vocabulary
    std::vector<int32_t> cu_seqlens = {0};
    for (int64_t start = 0; start < tokens; start += longest) {
      cu_seqlens.push_back(static_cast<int32_t>(std::min(tokens, start + longest)));
    }
    const auto start = std::chrono::steady_clock::now();
    StatusOr<engine::LazyResult> result = engine.Step({ids, cu_seqlens, {}}, step);
    if (!result.ok()) return result.status();
    STAMEN_RETURN_IF_ERROR(result->Wait());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0) *tokens_per_second = static_cast<double>(tokens) / seconds;
  }
  return Status();
}

}  // namespace

StatusOr<std::unique_ptr<LocalWorker>> LocalWorker::Load(const LocalWorkerOptions& options,
                                                         metrics::Registry& registry) {
  auto worker = std::unique_ptr<LocalWorker>(new LocalWorker());
  const auto start = Clock::now();
  auto engine = engine::Engine::Load(options.model_dir, options.engine);
  if (!engine.ok()) return engine.status();
  worker->engine_ = std::move(engine.value());
  const engine::Engine& model = *worker->engine_;

  SchedulerOptions scheduler_options = options.scheduler;
  const bool on_gpu = model.device() == engine::Device::kCuda;
  if (scheduler_options.max_batch_tokens <= 0) {
    scheduler_options.max_batch_tokens = on_gpu ? kCudaDefaultMaxBatchTokens : kCpuDefaultMaxBatchTokens;
  }
  if (scheduler_options.max_queued_tokens <= 0) {
    scheduler_options.max_queued_tokens = kDefaultQueuedBatches * scheduler_options.max_batch_tokens;
  }
  if (scheduler_options.query_batch_tokens <= 0) {
    scheduler_options.query_batch_tokens = std::max<int64_t>(scheduler_options.max_batch_tokens / 2, 1);
  }
  // A GPU step only enqueues work: the next batch is launched while one computes.
  scheduler_options.steps_in_flight = on_gpu ? 2 : 1;
  const ModelLimits limits = ModelLimits::Of(model);
  // A batch must hold at least one sequence of the longest length the model takes.
  if (limits.max_sequence_length > scheduler_options.max_queued_tokens) {
    return Status::Error("--max-queued-tokens " + std::to_string(scheduler_options.max_queued_tokens) +
                         " is below the model's maximum sequence length " +
                         std::to_string(limits.max_sequence_length));
  }

  v1::InfoResponse& info = worker->info_;
  info.set_model_id(engine::ModelIdOf(options.model_dir, options.model_id));
  info.set_architecture(model.config().architecture);
  info.set_model_kind(limits.num_labels > 0 ? "reranker" : "embedding");
  info.set_dimensions(static_cast<uint32_t>(limits.embedding_width));
  info.set_num_labels(static_cast<uint32_t>(limits.num_labels));
  if (limits.num_labels > 0) {
    for (const std::string& label : model.config().id2label) info.add_labels(label);
  }
  info.set_max_input_length(static_cast<uint32_t>(limits.max_sequence_length));
  info.set_vocabulary_size(static_cast<uint32_t>(limits.vocabulary_size));
  if (limits.default_pooling) info.set_pooling(engine::PoolingOptionName(*limits.default_pooling));
  info.set_normalize(model.sentence_transformers().normalize);
  info.set_dtype(std::string(model.compute_dtype()));
  info.set_backend(std::string(engine::DeviceName(model.device())));
  info.set_gpu(model.gpu_name());
  info.set_version(STAMEN_VERSION);  // CMake's project version
  if (!on_gpu) {
    const engine::cpu::CpuPath& cpu = engine::cpu::DetectCpuPath();
    info.mutable_cpu()->set_kernels(cpu.kernels);
    info.mutable_cpu()->set_gemm(engine::cpu::DescribeGemm(model.compute_dtype() == "bfloat16"));
    info.mutable_cpu()->set_features(cpu.features);
  }
  // On a GPU the graph runner has its own first-use costs (captures per bucket); warm-up is
  // for the CPU engine, the one measured.
  if (!on_gpu) {
    const auto warm_up_start = Clock::now();
    const std::array<int64_t, 2> step_tokens = WarmUpTokens(scheduler_options.max_batch_tokens);
    double tokens_per_second = 0;
    const Status warmed = WarmUp(*worker->engine_, limits.max_sequence_length, step_tokens, &tokens_per_second);
    if (!warmed.ok()) return Status::Error("warm-up step failed: " + warmed.message());
    info.set_warm_up_tokens_per_second(tokens_per_second);
    spdlog::info("worker: warmed up ({} and {} token steps) in {:.2f} s", step_tokens[0], step_tokens[1],
                 std::chrono::duration<double>(Clock::now() - warm_up_start).count());
  }
  info.set_max_batch_tokens(static_cast<uint64_t>(scheduler_options.max_batch_tokens));
  info.set_max_batch_requests(static_cast<uint32_t>(scheduler_options.max_batch_sequences));
  info.set_max_queued_tokens(static_cast<uint64_t>(scheduler_options.max_queued_tokens));

  worker->metrics_ = std::make_unique<SchedulerMetrics>(registry);
  if (on_gpu) worker->device_metrics_ = std::make_unique<DeviceMetrics>(registry);
  engine::Engine* engine_pointer = worker->engine_.get();
  DeviceMetrics* device_metrics = worker->device_metrics_.get();
  worker->scheduler_ = std::make_unique<Scheduler>(
      [engine_pointer, device_metrics](const engine::Batch& batch, const engine::StepOptions& step) {
        StatusOr<engine::LazyResult> result = engine_pointer->Step(batch, step);
        if (device_metrics) device_metrics->Publish(engine_pointer->device_stats());
        return result;
      },
      limits, scheduler_options, worker->metrics_.get());
  spdlog::info("worker: loaded {} ({}, {} dimensions, max {} tokens per sequence) in {:.1f} s; batches of up to {} "
               "tokens / {} sequences ({} tokens when one starts a query beside bulk work), queue up to {} tokens",
               info.model_id(), info.architecture(), info.dimensions(), info.max_input_length(),
               std::chrono::duration<double>(Clock::now() - start).count(), scheduler_options.max_batch_tokens,
               scheduler_options.max_batch_sequences, scheduler_options.query_batch_tokens,
               scheduler_options.max_queued_tokens);
  spdlog::info("worker: {} {} on {}; {} step(s) in flight", info.backend(), info.dtype(),
               on_gpu ? model.gpu_name() : engine::cpu::DescribeCpuPath() + "; GEMM: " + info.cpu().gemm(),
               scheduler_options.steps_in_flight);
  return worker;
}

}  // namespace stamen::server
