// CUDA runner: input staging, lazily captured full-model graphs, and LazyResult on a pinned
// buffer.
//
// Configurations are (S sequences, T tokens rounded up to a bucket). The token ids, token
// types and cu_seqlens of a step go through one pinned staging buffer into one device buffer:
// a static one per graphed configuration (so a graph's pointers stay valid), a shared growing
// one for eager steps. Padding tokens (id 0, past cu_seqlens[S]) are computed and ignored:
// every op is per row except attention, which only reads keys inside a sequence.
//
// Sequence counts are bucketed too (graph_policy.h, SequenceBucket): a graphed step's
// cu_seqlens is padded with empty sequences (the token count repeated), which every kernel
// treats as no tokens; pooling and heads see only the real sequences.
//
// A captured graph holds pointers into the model's Forward workspace; it is only replayed while
// that workspace has not been reallocated since (Model::workspace_generation), and every graph
// is dropped when it has. The output heads use scratch of their own (model.h), so they never
// invalidate a graph.
//
// Graphs are used up to a token limit found by timing the same configuration both ways: its
// eager forward pass and a replay of its graph, each between two CUDA events on the stream
// (graph_policy.h, InflectionEstimate).
#include "engine/cuda/runner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "engine/cuda/context.h"
#include "engine/cuda/graph_policy.h"
#include "engine/step_output.h"

namespace stamen::engine::cuda {
namespace {

using Clock = std::chrono::steady_clock;

// What a graph executable costs beyond its static buffers is not reported by CUDA; this is
// an estimate per node (kernel parameters, launch descriptors) used for the memory cap.
constexpr size_t kBytesPerGraphNode = 4096;
// The lowest the graph token limit may fall to.
constexpr int64_t kLowestInflection = 256;
// Timed forward passes in flight at once (event pairs); a step finding none free is not timed.
constexpr size_t kMeasurementSlots = 4;

// A configuration: (sequence bucket, padded tokens).
using ConfigurationKey = std::pair<int64_t, int64_t>;

struct GraphEntry {
  int64_t sightings = 0;
  uint64_t last_used = 0;
  Tensor inputs;  // device I32 [2·T + S + 1]: ids, token types, cu_seqlens
  cudaGraphExec_t exec = nullptr;
  uint64_t generation = 0;
  Tensor hidden;  // Forward's result at capture (same memory at every replay)
  size_t graph_bytes = 0;  // held in the ledger while exec is
  bool uncapturable = false;
  ConfigurationTiming timing;
  bool judged = false;  // timing given to the inflection estimate

  GraphEntry() = default;
  GraphEntry(const GraphEntry&) = delete;
  GraphEntry& operator=(const GraphEntry&) = delete;
  ~GraphEntry() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  }
};

// One timed forward pass in flight (at most one at a time): eager or replay, of a configuration.
struct Measurement {
  bool pending = false;  // recorded, not read yet
  bool graph = false;
  ConfigurationKey key;
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
};

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

struct Runner::Impl {
  CudaGraphOptions graphs;
  std::unique_ptr<Context> context;
  std::map<ConfigurationKey, std::unique_ptr<GraphEntry>> entries;
  Tensor eager_inputs;
  std::shared_ptr<PinnedBlock> staging;
  cudaEvent_t staged = nullptr;  // recorded after the copy out of `staging`
  Workspace outputs{Device::kCuda};
  std::vector<int32_t> padded_cu_seqlens;  // the host copy of a bucketed step's cu_seqlens
  // Written by the stepping thread only; stats() reads `published`, a copy made under
  // `stats_mutex` at the end of every step.
  DeviceStats stats;
  GraphLedger ledger;
  InflectionEstimate inflection{0, 0};
  uint64_t seen_generation = 0;
  uint64_t clock = 0;
  int64_t steps = 0;
  std::array<Measurement, kMeasurementSlots> measurements;
  mutable std::mutex stats_mutex;
  DeviceStats published;

  void Publish() {
    stats.graph_bytes = ledger.bytes();
    std::lock_guard<std::mutex> lock(stats_mutex);
    published = stats;
  }

  ~Impl() {
    if (context != nullptr) cudaStreamSynchronize(context->stream());
    entries.clear();
    if (staged != nullptr) cudaEventDestroy(staged);
    for (Measurement& measurement : measurements) {
      if (measurement.start != nullptr) cudaEventDestroy(measurement.start);
      if (measurement.end != nullptr) cudaEventDestroy(measurement.end);
    }
  }

  static size_t InputBytes(const GraphEntry& entry) { return entry.inputs.empty() ? 0 : entry.inputs.NumBytes(); }

  // Drops `entry`'s graph (not its inputs or sightings), releasing its bytes once.
  void DropGraph(GraphEntry& entry) {
    if (entry.exec == nullptr) return;
    cudaGraphExecDestroy(entry.exec);
    entry.exec = nullptr;
    entry.hidden = Tensor();
    ledger.Release(entry.graph_bytes);
    entry.graph_bytes = 0;
    --stats.graphs;
  }

  // Every graph points into Forward's workspace as it was at capture; once the workspace has
  // been reallocated none can ever replay again, so all are dropped at once (and the old
  // buffers a captured `hidden` kept alive with them).
  void DropStaleGraphs(uint64_t generation) {
    if (generation == seen_generation) return;
    seen_generation = generation;
    for (auto& [key, entry] : entries) DropGraph(*entry);
  }

  void Evict(GraphEntry* keep) {
    while (ledger.bytes() > graphs.memory_cap_bytes) {
      auto victim = entries.end();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        if (it->second.get() == keep || (it->second->exec == nullptr && it->second->inputs.empty())) continue;
        if (victim == entries.end() || it->second->last_used < victim->second->last_used) victim = it;
      }
      if (victim == entries.end()) return;
      DropGraph(*victim->second);
      ledger.Release(InputBytes(*victim->second));
      ++stats.graph_evictions;
      entries.erase(victim);  // its sightings are forgotten too: a new first sight runs eagerly
    }
  }

  // Reads finished measurements into their configurations' timings; once a configuration has
  // both, the inflection estimate judges it (graph against eager wall time, graph_policy.h).
  void ReadMeasurements() {
    for (Measurement& measurement : measurements) {
      if (!measurement.pending) continue;
      const cudaError_t ready = cudaEventQuery(measurement.end);
      if (ready == cudaErrorNotReady) continue;
      measurement.pending = false;
      if (ready != cudaSuccess) {
        CheckCuda(ready, "timing a forward pass");  // remembers a sticky fault
        continue;
      }
      float milliseconds = 0.0f;
      if (cudaEventElapsedTime(&milliseconds, measurement.start, measurement.end) != cudaSuccess) continue;
      auto found = entries.find(measurement.key);
      if (found == entries.end() || milliseconds <= 0.0f) continue;  // evicted meanwhile
      GraphEntry& entry = *found->second;
      (measurement.graph ? entry.timing.graph_seconds : entry.timing.eager_seconds) = milliseconds / 1000.0;
      if (!entry.judged && entry.timing.complete()) {
        entry.judged = true;
        inflection.Record(measurement.key.second, GraphPaysOff(entry.timing));
        stats.inflection_tokens = inflection.limit();
      }
    }
  }

  // A free measurement slot for this step's forward pass of `entry` (eager, or a replay when
  // `graph`), or null when it is not to be timed. An eager pass is timed at the configuration's
  // second sighting: its first loaded the kernels and made the gemm plans of its shapes, which
  // would count as launch gaps, so the comparison with the replay is like for like.
  Measurement* MeasurementFor(const GraphEntry* entry, bool graph) {
    if (!graphs.measure_inflection || entry == nullptr || entry->judged) return nullptr;
    if (graph ? entry->timing.graph_seconds > 0.0 : (entry->timing.eager_seconds > 0.0 || entry->sightings < 2)) {
      return nullptr;
    }
    for (Measurement& measurement : measurements) {
      if (!measurement.pending) return &measurement;
    }
    return nullptr;
  }

  void BeginMeasurement(Measurement* measurement, const ConfigurationKey& key, bool graph) {
    if (measurement == nullptr) return;
    cudaEventRecord(measurement->start, context->stream());
    measurement->key = key;
    measurement->graph = graph;
  }

  void EndMeasurement(Measurement* measurement, bool ok) {
    if (measurement == nullptr) return;
    cudaEventRecord(measurement->end, context->stream());
    measurement->pending = ok;
  }

  StatusOr<Tensor> Eager(Model& model, const ModelInput& input, const ConfigurationKey& key, GraphEntry* entry) {
    ++stats.eager_runs;
    Measurement* measurement = MeasurementFor(entry, /*graph=*/false);
    BeginMeasurement(measurement, key, /*graph=*/false);
    auto hidden = model.Forward(input);
    EndMeasurement(measurement, hidden.ok());
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
    ledger.Hold(entry.graph_bytes);
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
  impl.inflection = InflectionEstimate(impl.graphs.max_tokens, kLowestInflection);
  impl.stats.inflection_tokens = impl.inflection.limit();
  impl.Publish();
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventCreateWithFlags(&impl.staged, cudaEventDisableTiming), "cudaEventCreate"));
  for (Measurement& measurement : impl.measurements) {
    STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventCreate(&measurement.start), "cudaEventCreate"));
    STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventCreate(&measurement.end), "cudaEventCreate"));
  }
  return runner;
}

Status Runner::Run(const std::function<Status()>& body) {
  ScopedContext scope(impl_->context.get());
  Status status = body();
  if (status.ok()) status = impl_->context->Synchronize();
  return status;
}

Status Runner::fault() const { return StickyFault(); }

DeviceStats Runner::stats() const {
  DeviceStats stats;
  {
    std::lock_guard<std::mutex> lock(impl_->stats_mutex);
    stats = impl_->published;
  }
  ScopedContext scope(impl_->context.get());
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) stats.memory_used_bytes = total_bytes - free_bytes;
  return stats;
}

StatusOr<LazyResult> Runner::Step(Model& model, const ModelConfig& config, DenseModules& dense, const Batch& batch,
                                  const StepOptions& options, ops::PoolingMode pooling) {
  Impl& impl = *impl_;
  // A sticky fault: every CUDA call would fail from now on; say so once, clearly.
  STAMEN_RETURN_IF_ERROR(StickyFault());
  Context& context = *impl.context;
  ScopedContext scope(&context);
  cudaStream_t stream = context.stream();
  // Whatever path the step leaves by, stats() sees its counters.
  struct PublishOnExit {
    Impl& impl;
    ~PublishOnExit() { impl.Publish(); }
  } publish{impl};
  ++impl.steps;
  impl.ReadMeasurements();
  impl.DropStaleGraphs(model.workspace_generation());

  const int64_t tokens = static_cast<int64_t>(batch.token_ids.size());
  const int64_t sequences = static_cast<int64_t>(batch.cu_seqlens.size()) - 1;
  const CudaGraphOptions& graphs = impl.graphs;
  // A step naming task adapters launches one adapter product per run of a task's sequences, which
  // a graph captured for one batch would replay for another: such steps run eagerly, as every
  // step of a model that decides on the host (Model::Graphable).
  const bool adapted = std::any_of(batch.adapters.begin(), batch.adapters.end(), [](int32_t task) { return task >= 0; });
  bool graphable = graphs.enabled && model.Graphable() && !adapted && sequences <= graphs.max_sequences &&
                   tokens <= impl.stats.inflection_tokens;
  int64_t padded = tokens;
  int64_t bucket_sequences = sequences;
  if (graphable) {
    padded = RoundUp(tokens, tokens <= graphs.large_bucket_from ? graphs.bucket : graphs.large_bucket);
    bucket_sequences = SequenceBucket(sequences, graphs.max_sequences);
    if (padded > impl.stats.inflection_tokens) {
      graphable = false;
      padded = tokens;
      bucket_sequences = sequences;
    }
  }
  const ConfigurationKey key{bucket_sequences, padded};
  GraphEntry* entry = nullptr;
  if (graphable) {
    auto& slot = impl.entries[key];
    if (slot == nullptr) slot = std::make_unique<GraphEntry>();
    entry = slot.get();
    ++entry->sightings;
    entry->last_used = ++impl.clock;
  }

  // Inputs: [ids (padded with 0) | token types (0 when absent) | cu_seqlens (padded with
  // empty sequences)].
  const int64_t words = 2 * padded + bucket_sequences + 1;
  Tensor device_inputs;
  if (entry != nullptr) {
    if (entry->inputs.empty()) {
      auto inputs = Tensor::Allocate(DataType::kI32, {words}, Device::kCuda);
      if (!inputs.ok()) return inputs.status();
      entry->inputs = std::move(inputs.value());
      impl.ledger.Hold(entry->inputs.NumBytes());
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
  int32_t* staged_offsets = staged + 2 * padded;
  std::memcpy(staged_offsets, batch.cu_seqlens.data(), static_cast<size_t>(sequences + 1) * sizeof(int32_t));
  std::fill(staged_offsets + sequences + 1, staged_offsets + bucket_sequences + 1, static_cast<int32_t>(tokens));
  impl.padded_cu_seqlens.assign(staged_offsets, staged_offsets + bucket_sequences + 1);
  STAMEN_RETURN_IF_ERROR(CheckCuda(
      cudaMemcpyAsync(device_inputs.raw_data(), staged, input_bytes, cudaMemcpyHostToDevice, stream), "input copy"));
  STAMEN_RETURN_IF_ERROR(CheckCuda(cudaEventRecord(impl.staged, stream), "cudaEventRecord"));

  auto* device_words = device_inputs.data<int32_t>();
  ModelInput input;
  input.token_ids = Tensor::Wrap(device_words, DataType::kI32, {padded}, Device::kCuda);
  if (config.type_vocab_size > 0) {
    input.token_type_ids = Tensor::Wrap(device_words + padded, DataType::kI32, {padded}, Device::kCuda);
  }
  input.cu_seqlens = Tensor::Wrap(device_words + 2 * padded, DataType::kI32, {bucket_sequences + 1}, Device::kCuda);
  input.cu_seqlens_host = impl.padded_cu_seqlens;
  input.adapters_host = batch.adapters;

  // The forward pass: replay, capture, or eager.
  StatusOr<Tensor> hidden = Tensor();
  if (entry != nullptr && entry->exec != nullptr && entry->generation == model.workspace_generation()) {
    Measurement* measurement = impl.MeasurementFor(entry, /*graph=*/true);
    impl.BeginMeasurement(measurement, key, /*graph=*/true);
    const Status launched = CheckCuda(cudaGraphLaunch(entry->exec, stream), "cudaGraphLaunch");
    impl.EndMeasurement(measurement, launched.ok());
    STAMEN_RETURN_IF_ERROR(launched);
    hidden = entry->hidden;
    ++impl.stats.graph_replays;
  } else {
    bool captured = false;
    // First sight eager, second sight eager and timed (when measuring the inflection), then
    // capture: the graph's replays are timed against that eager pass.
    const int64_t capture_at = graphs.measure_inflection ? 3 : 2;
    if (entry != nullptr && entry->sightings >= capture_at && !entry->uncapturable) {
      impl.DropGraph(*entry);  // a stale one (DropStaleGraphs leaves none, but be sure)
      impl.Evict(entry);
      hidden = impl.Capture(model, input, *entry, &captured);
      if (!captured) {
        entry->uncapturable = true;
        ++impl.stats.capture_failures;
      }
    }
    if (!captured) hidden = impl.Eager(model, input, key, entry);
  }
  if (!hidden.ok()) return hidden.status();

  // Outputs, eagerly, over the real sequences only: pooling / head / conversion to F32, then
  // the copy to a pinned buffer.
  ModelInput output_input = input;
  output_input.cu_seqlens = input.cu_seqlens.View({sequences + 1});
  output_input.cu_seqlens_host = batch.cu_seqlens;
  auto output = ComputeStepValues(model, config, output_input, *hidden, options, pooling, dense,
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
