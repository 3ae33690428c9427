// The interface every model family implements, the ragged input it receives, and the
// workspace of reusable activation buffers. Models call ops only; they hold no device code.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_folder/kinds.h"
#include "model_folder/model_config.h"
#include "engine/status.h"
#include "engine/tensor.h"
#include "engine/weight_store.h"

namespace stamen::engine {

// Where a model's weights and activations live: F32 on the CPU; BF16 on CUDA (weights are
// converted once at load and uploaded; kernels accumulate in fp32).
struct Placement {
  Device device = Device::kCpu;
  DataType dtype = DataType::kF32;
};

// One step's batch, already validated by the engine: token ids and token types are in range
// for the embedding tables only after the gather checks them.
// All tensors live on the model's device. T may exceed cu_seqlens[S] (a CUDA graph's token
// bucket): the extra tokens are padding whose outputs nobody reads.
struct ModelInput {
  Tensor token_ids;                      // I32 [T]
  Tensor token_type_ids;                 // I32 [T], or empty for all zeros
  Tensor cu_seqlens;                     // I32 [S + 1]; empty sequences only at the end (a
                                         // CUDA graph's sequence bucket), never inside
  std::span<const int32_t> cu_seqlens_host;  // the same boundaries, readable on the host
  // Per sequence, on the host: the index of the task adapter it runs with (config.adapter_tasks),
  // −1 for none; empty: none for every sequence (Batch::adapters, checked by the engine).
  std::span<const int32_t> adapters_host = {};
  // I32 [S]: keys attended per sequence (its leading tokens), or empty for all (Batch::key_lengths).
  Tensor key_lengths;
};

// Activation buffers that grow to the largest step seen and are then reused, so steady-state
// steps allocate nothing. Each slot is one buffer; a view shares ownership of its buffer, so
// it stays valid (the old memory, no longer the slot's) after the slot grows.
class Workspace {
 public:
  explicit Workspace(Device device = Device::kCpu) : device_(device) {}
  StatusOr<Tensor> Get(size_t slot, DataType type, const Shape& shape);
  // Counts reallocations: a CUDA graph captured at one generation holds pointers into the
  // buffers, so it may only be replayed while the generation is unchanged.
  uint64_t generation() const { return generation_; }
  Device device() const { return device_; }

 private:
  Device device_;
  uint64_t generation_ = 0;
  std::vector<Tensor> buffers_;
};

class Model {
 public:
  explicit Model(const Placement& placement)
      : placement_(placement), workspace_(placement.device), head_workspace_(placement.device) {}
  virtual ~Model() = default;
  // The last hidden state [T, hidden] (after the final norm for decoders) in the placement's
  // dtype; a view into the model's workspace, valid until the next call. Enqueues device work
  // only (no host reads of device data, no synchronisation), so it can be captured as a graph,
  // unless Graphable says otherwise.
  virtual StatusOr<Tensor> Forward(const ModelInput& input) = 0;
  // Classification logits [S, num_labels] from Forward's result; only for models with a head.
  virtual StatusOr<Tensor> Classify(const ModelInput& input, const Tensor& hidden);
  // SPLADE vectors F32 [S, vocab] into `output` from Forward's result, through the masked-LM
  // head; only for models with one (ModelHead::kMaskedLm).
  virtual Status SpladeVectors(const ModelInput& input, const Tensor& hidden, Tensor& output);
  // The width of SpladeVectors' output: the vocabulary size with a masked-LM head, else 0.
  virtual int64_t splade_width() const { return 0; }
  // The most tokens one sequence may have (0: no limit); the engine checks it on the host.
  virtual int64_t max_sequence_length() const = 0;
  // Whether Forward honours ModelInput::key_lengths (the BERT family and ModernBERT: the
  // backbones of PyLate's ColBERT models).
  virtual bool LimitsKeys() const { return false; }
  // Whether Forward keeps to its contract of enqueuing only, so that a CUDA graph of it replays
  // right for another batch of the same shape. A model that decides on the host from device
  // values (nomic-embed-text-v2-moe's routing of tokens to experts) says no, and the CUDA
  // runner runs each of its steps eagerly.
  virtual bool Graphable() const { return true; }
  // Whether PoolIds gives `pooling`'s vectors straight from the token ids, without Forward's
  // hidden state [T, hidden]: a static embedding table's mean is an embedding bag, which need
  // not copy every token's row first. The engine then skips Forward (no Dense modules, no spans).
  virtual bool PoolsIds(ops::PoolingMode pooling) const { return false; }
  // Pooled vectors F32 [S, D] (D ≤ hidden: the leading columns) from the ids, as Forward then
  // ops::Pool would give them; only where PoolsIds says so.
  virtual Status PoolIds(const ModelInput& input, ops::PoolingMode pooling, Tensor& output);

  const Placement& placement() const { return placement_; }
  // Forward's workspace only: a CUDA graph of Forward stays valid while it is unchanged. The
  // output heads (Classify, SpladeVectors) run eagerly after the graph on head_workspace_, so
  // a step with more sequences or a vocabulary-wide head never invalidates the graphs.
  uint64_t workspace_generation() const { return workspace_.generation(); }
  uint64_t head_workspace_generation() const { return head_workspace_.generation(); }

 protected:
  Placement placement_;
  Workspace workspace_;       // Forward's activations
  Workspace head_workspace_;  // the output heads' scratch
};

// Weight loading helpers shared by the families.
namespace model_weights {

// The first of `candidates` (e.g. "", "bert.") for which `probe` names a tensor; errors
// name the probe and the file.
StatusOr<std::string> FindPrefix(const WeightStore& weights, std::span<const std::string_view> candidates,
                                 std::string_view probe);
// Loads each of `names` (each [rows_i, columns], or [rows_i] when columns is 0) and stacks
// them along axis 0: fused q|k|v or gate|up projections run as one gemm.
StatusOr<Tensor> LoadStacked(const WeightStore& weights, std::span<const std::string> names,
                             std::span<const int64_t> rows, int64_t columns);
// `tensor` (F32 on the host) as the placement wants it: itself on the CPU; converted to the
// placement's dtype and copied to the device otherwise.
StatusOr<Tensor> Place(const Tensor& tensor, const Placement& placement);

}  // namespace model_weights
}  // namespace stamen::engine
