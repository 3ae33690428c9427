// CUDA runner: input staging, lazily captured full-model graphs, and LazyResult on a pinned
// buffer.
//
// Configurations are (S sequences, T tokens rounded up to a bucket). The token ids, token
// types and cu_seqlens of a step go through one pinned staging buffer into one device buffer:
// a static one per graphed configuration (so a graph's pointers stay valid), a shared growing
// one for eager steps. Padding tokens (id 0, past cu_seqlens[S]) are computed and ignored:
// every op is per row except attention, which only reads keys inside a sequence.
//
// A captured graph holds pointers into the model's workspace; it is only replayed while the
// workspace has not been reallocated since (Workspace::generation), else it is captured again.
#include "engine/cuda/runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <utility>

#include "engine/cuda/context.h"
#include "engine/step_output.h"

namespace stamen::engine::cuda {
namespace {

using Clock = std::chrono::steady_clock;

// What a graph executable costs beyond its static buffers is not reported by CUDA; this is
// an estimate per node (kernel parameters, launch descriptors) used for the memory cap.
constexpr size_t kBytesPerGraphNode = 4096;
// Eager steps before the first inflection measurement (lazy module loading and cuBLASLt
// heuristics make the first steps unrepresentative), and the lowest the limit may fall to.
constexpr int64_t kMeasurementWarmupSteps = 4;
constexpr int64_t kLowestInflection = 256;

struct GraphEntry {
  int64_t sightings = 0;
  uint64_t last_used = 0;
  Tensor inputs;  // device I32 [2·T + S + 1]: ids, token types, cu_seqlens
  cudaGraphExec_t exec = nullptr;
  uint64_t generation = 0;
  Tensor hidden;  // Forward's result at capture (same memory at every replay)
  size_t graph_bytes = 0;
  bool uncapturable = false;

  GraphEntry() = default;
  GraphEntry(const GraphEntry&) = delete;
  GraphEntry& operator=(const GraphEntry&) = delete;
  ~GraphEntry() { DropGraph(); }
  void DropGraph() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    exec = nullptr;
    hidden = Tensor();
  }
};

struct Measurement {
  bool pending = false;
  int64_t tokens = 0;
  double launch_seconds = 0.0;
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
};

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

struct Runner::Impl {
  CudaGraphOptions graphs;
  std::unique_ptr<Context> context;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<GraphEntry>> entries;
  Tensor eager_inputs;
  std::shared_ptr<PinnedBlock> staging;
  cudaEvent_t staged = nullptr;  // recorded after the copy out of `staging`
  Workspace outputs{Device::kCuda};
  DeviceStats stats;
  uint64_t clock = 0;
  int64_t steps = 0;
  Measurement measurement;

  ~Impl() {
    if (context != nullptr) cudaStreamSynchronize(context->stream());
    entries.clear();
    if (staged != nullptr) cudaEventDestroy(staged);
    if (measurement.start != nullptr) cudaEventDestroy(measurement.start);
    if (measurement.end != nullptr) cudaEventDestroy(measurement.end);
  }

  size_t InputBytes(const GraphEntry& entry) const { return entry.inputs.empty() ? 0 : entry.inputs.NumBytes(); }

  void Evict(GraphEntry* keep) {
    while (stats.graph_bytes > graphs.memory_cap_bytes) {
      auto victim = entries.end();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->second.get() == keep || (it->second->exec == nullptr && it->second->inputs.empty())) continue;
        if (victim == entries.end() || it->second->last_used < victim->second->last_used) victim = it;
      }
      if (victim == entries.end()) return;
      stats.graph_bytes -= victim->second->graph_bytes + InputBytes(*victim->second);
      if (victim->second->exec != nullptr) --stats.graphs;
      ++stats.graph_evictions;
      entries.erase(victim);  // its sightings are forgotten too: a new first sight runs eagerly
    }
  }

  // Lowers the graph limit once an eager forward pass is measured to keep the GPU busier
  // than the CPU took to launch it.
  void ReadMeasurement() {
    if (!measurement.pending) return;
    const cudaError_t ready = cudaEventQuery(measurement.end);
    if (ready == cudaErrorNotReady) return;
    measurement.pending = false;
    if (ready != cudaSuccess) return;
    float milliseconds = 0.0f;
    if (cudaEventElapsedTime(&milliseconds, measurement.start, measurement.end) != cudaSuccess) return;
    if (milliseconds / 1000.0 > measurement.launch_seconds && measurement.tokens >= kLowestInflection &&
        measurement.tokens <= stats.inflection_tokens) {
      stats.inflection_tokens = measurement.tokens;
    }
  }

  StatusOr<Tensor> Eager(Model& model, const ModelInput& input, int64_t tokens, bool measure) {
    ++stats.eager_runs;
    if (!measure) return model.Forward(input);
    cudaEventRecord(measurement.start, context->stream());
    const auto begin = Clock::now();
    auto hidden = model.Forward(input);
    measurement.launch_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    cudaEventRecord(measurement.end, context->stream());
    measurement.tokens = tokens;
    measurement.pending = hidden.ok();
    return hidden;
  }

  // Captures the forward pass of `entry`'s configuration and launches it. Returns false in
  // `captured` (after clearing any CUDA error) when the pass cannot be captured; the caller
  // then runs it eagerly.
  StatusOr<Tensor> Capture(Model& model, const ModelInput& input, GraphEntry& entry, bool* captured) {
    *captured = false;
    const auto begin = Clock::now();
    cudaStream_t stream = context->stream();
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      return Tensor();
    }
    auto hidden = model.Forward(input);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (!hidden.ok() || ended != cudaSuccess || graph == nullptr) {
      if (graph != nullptr) cudaGraphDestroy(graph);
      cudaGetLastError();
      return Tensor();
    }
    size_t nodes = 0;
    cudaGraphGetNodes(graph, nullptr, &nodes);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (instantiated != cudaSuccess) {
      cudaGetLastError();
      return Tensor();
    }
    entry.exec = exec;
    entry.hidden = *hidden;
    entry.generation = model.workspace_generation();
    entry.graph_bytes = nodes * kBytesPerGraphNode;
    stats.graph_bytes += entry.graph_bytes;
    ++stats.graphs;
    ++stats.graph_captures;
    stats.capture_seconds += std::chrono::duration<double>(Clock::now() - begin).count();
    *captured = true;
    STAMEN_RETURN_IF_ERROR(CheckCuda(cudaGraphLaunch(exec, stream), "cudaGraphLaunch"));
    return entry.hidden;
  }
};

Runner::Runner() : impl_(std::make_unique<Impl>()) {}
Runner::~Runner() = default;

StatusOr<std::unique_ptr<Runner>> Runner::Create(const EngineOptions& options) {
  auto context = Context::Create(options.cuda_device);
  if (!context.ok()) return context.status();
  std::unique_ptr<Runner> runner(new Runner());
  Impl& impl = *runner->impl_;
  impl.graphs = options.cuda_graphs;
  impl.context = std::move(context.value());
  impl.stats.inflection_tokens = impl.graphs.max_tokens;
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventCreateWithFlags(&impl.staged, cudaEventDisableTiming), "cudaEventCreate"));
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventCreate(&impl.measurement.start), "cudaEventCreate"));
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventCreate(&impl.measurement.end), "cudaEventCreate"));
  return runner;
}

Status Runner::Run(const std::function<Status()>& body) {
  ScopedContext scope(impl_->context.get());
  Status status = body();
  if (status.ok()) status = impl_->context->Synchronize();
  return status;
}

DeviceStats Runner::stats() const {
  DeviceStats stats = impl_->stats;
  ScopedContext scope(impl_->context.get());
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) stats.memory_used_bytes = total_bytes - free_bytes;
  return stats;
}

StatusOr<LazyResult> Runner::Step(Model& model, const ModelConfig& config, DenseModules& dense, const Batch& batch,
                                  const StepOptions& options, ops::PoolingMode pooling) {
  Impl& impl = *impl_;
  Context& context = *impl.context;
  ScopedContext scope(&context);
  cudaStream_t stream = context.stream();
  ++impl.steps;
  impl.ReadMeasurement();

  const int64_t tokens = static_cast<int64_t>(batch.token_ids.size());
  const int64_t sequences = static_cast<int64_t>(batch.cu_seqlens.size()) - 1;
  const CudaGraphOptions& graphs = impl.graphs;
  bool graphable = graphs.enabled && sequences <= graphs.max_sequences && tokens <= impl.stats.inflection_tokens;
  int64_t padded = tokens;
  if (graphable) {
    padded = RoundUp(tokens, tokens <= graphs.large_bucket_from ? graphs.bucket : graphs.large_bucket);
    if (padded > impl.stats.inflection_tokens) {
      graphable = false;
      padded = tokens;
    }
  }
  GraphEntry* entry = nullptr;
  if (graphable) {
    auto& slot = impl.entries[{sequences, padded}];
    if (slot == nullptr) slot = std::make_unique<GraphEntry>();
    entry = slot.get();
    ++entry->sightings;
    entry->last_used = ++impl.clock;
  }

  // Inputs: [ids (padded with 0) | token types (0 when absent) | cu_seqlens].
  const int64_t words = 2 * padded + sequences + 1;
  Tensor device_inputs;
  if (entry != nullptr) {
    if (entry->inputs.empty()) {
      auto inputs = Tensor::Allocate(DataType::kI32, {words}, Device::kCuda);
      if (!inputs.ok()) return inputs.status();
      entry->inputs = std::move(inputs.value());
      impl.stats.graph_bytes += entry->inputs.NumBytes();
    }
    device_inputs = entry->inputs;
  } else {
    if (impl.eager_inputs.NumElements() < words) {
      const int64_t capacity = std::max(words, impl.eager_inputs.NumElements() * 3 / 2);
      impl.eager_inputs = Tensor();
      auto inputs = Tensor::Allocate(DataType::kI32, {capacity}, Device::kCuda);
      if (!inputs.ok()) return inputs.status();
      impl.eager_inputs = std::move(inputs.value());
    }
    device_inputs = impl.eager_inputs.View({words});
  }
  const size_t input_bytes = static_cast<size_t>(words) * sizeof(int32_t);
  // The previous step's copy out of the staging buffer must be done before it is rewritten
  // (only that copy: the previous forward pass may still be running).
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventSynchronize(impl.staged), "waiting for the input copy"));
  if (impl.staging == nullptr || impl.staging->capacity < input_bytes) {
    impl.staging = nullptr;
    auto block = context.pinned().Acquire(input_bytes);
    if (!block.ok()) return block.status();
    impl.staging = std::move(block.value());
  }
  auto* staged = static_cast<int32_t*>(impl.staging->data);
  std::memcpy(staged, batch.token_ids.data(), static_cast<size_t>(tokens) * sizeof(int32_t));
  std::fill(staged + tokens, staged + padded, 0);
  if (batch.token_type_ids.empty()) {
    std::fill(staged + padded, staged + 2 * padded, 0);
  } else {
    std::memcpy(staged + padded, batch.token_type_ids.data(), static_cast<size_t>(tokens) * sizeof(int32_t));
    std::fill(staged + padded + tokens, staged + 2 * padded, 0);
  }
  std::memcpy(staged + 2 * padded, batch.cu_seqlens.data(), static_cast<size_t>(sequences + 1) * sizeof(int32_t));
  STAMEN_RETURN_IF_ERROR(CheckCuda(
      cudaMemcpyAsync(device_inputs.raw_data(), staged, input_bytes, cudaMemcpyHostToDevice, stream), "input copy"));
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventRecord(impl.staged, stream), "cudaEventRecord"));

  auto* device_words = device_inputs.data<int32_t>();
  ModelInput input;
  input.token_ids = Tensor::Wrap(device_words, DataType::kI32, {padded}, Device::kCuda);
  if (config.type_vocab_size > 0) {
    input.token_type_ids = Tensor::Wrap(device_words + padded, DataType::kI32, {padded}, Device::kCuda);
  }
  input.cu_seqlens = Tensor::Wrap(device_words + 2 * padded, DataType::kI32, {sequences + 1}, Device::kCuda);
  input.cu_seqlens_host = batch.cu_seqlens;

  // The forward pass: replay, capture, or eager.
  StatusOr<Tensor> hidden = Tensor();
  if (entry != nullptr && entry->exec != nullptr && entry->generation == model.workspace_generation()) {
    STAMEN_RETURN_IF_ERROR(CheckCuda(cudaGraphLaunch(entry->exec, stream), "cudaGraphLaunch"));
    hidden = entry->hidden;
    ++impl.stats.graph_replays;
  } else {
    bool captured = false;
    if (entry != nullptr && entry->sightings >= 2 && !entry->uncapturable) {
      if (entry->exec != nullptr) {  // stale: the workspace moved since capture
        impl.stats.graph_bytes -= entry->graph_bytes;
        --impl.stats.graphs;
        entry->DropGraph();
      }
      impl.Evict(entry);
      hidden = impl.Capture(model, input, *entry, &captured);
      if (!captured) {
        entry->uncapturable = true;
        ++impl.stats.capture_failures;
      }
    }
    if (!captured) {
      const bool measure = graphs.measure_inflection && entry != nullptr && !impl.measurement.pending &&
                           impl.steps > kMeasurementWarmupSteps;
      hidden = impl.Eager(model, input, padded, measure);
    }
  }
  if (!hidden.ok()) return hidden.status();

  // Outputs, eagerly: pooling / head / conversion to F32, then the copy to a pinned buffer.
  auto output = ComputeStepValues(model, input, *hidden, options, pooling, dense,
                                  [&impl](const Shape& shape) { return impl.outputs.Get(0, DataType::kF32, shape); });
  if (!output.ok()) return output.status();
  const size_t bytes = output->NumBytes();
  auto block = context.pinned().Acquire(bytes);
  if (!block.ok()) return block.status();
  std::shared_ptr<PinnedBlock> pinned = std::move(block.value());
  STAMEN_RETURN_IF_ERROR(
      CheckCuda(cudaMemcpyAsync(pinned->data, output->raw_data(), bytes, cudaMemcpyDeviceToHost, stream), "result copy"));
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventRecord(pinned->ready, stream), "cudaEventRecord"));
  Tensor values = Tensor::Wrap(pinned->data, DataType::kF32, output->shape(), Device::kCpu, pinned);
  return LazyResult::Deferred(std::move(values), [pinned]() {
    return CheckCuda(cudaEventSynchronize(pinned->ready), "waiting for the step's result");
  });
}

}  // namespace stamen::engine::cuda
