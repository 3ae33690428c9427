// One description of a family's tensors (name, shape from the config, how make-model fills
// it, required or optional), walked alike by the loader and by `stamen make-model`, so the
// names and shapes a model reads and the ones a generated folder holds cannot drift apart.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "engine/status.h"
#include "engine/tensor.h"
#include "engine/weight_store.h"

namespace stamen::engine {

struct Placement;

// How `stamen make-model` fills a tensor, as transformers initialises it.
enum class TensorInit {
  kNormal,   // N(0, σ²): matrices, embeddings, biases
  kNormOne,  // 1 + N(0, σ²): norm weights that multiply
};

enum class TensorPresence {
  kRequired,  // loading fails without it
  kOptional,  // loaded when present; when absent its target stays empty
  kUnread,    // save_pretrained writes it but the model never reads it (BertModel's pooler)
};

struct TensorSpec {
  std::string name;  // as save_pretrained names it, prefix included
  Shape shape;
  TensorInit init = TensorInit::kNormal;
  TensorPresence presence = TensorPresence::kRequired;
  // The loader turns each stored value v into v + load_offset (in F32, before placement), so a
  // family whose checkpoint stores a weight in another form runs the common ops unchanged:
  // Gemma stores its RMSNorm weights as w − 1 (offset 1). make-model writes the stored form.
  float load_offset = 0.0f;
  // The stored tensor's two halves along axis 0 in the other order: GTE's hub checkpoints fuse
  // up|gate into one up_gate_proj, ops::GatedActivation reads gate|up. make-model writes the
  // stored order (its random halves are alike).
  bool swap_row_halves = false;
  // The stored [blocks · rows, columns] tensor is this many [rows, columns] matrices that
  // ops::Gemm needs transposed: megablocks keeps each expert's down projection w2 as
  // [ffn, hidden] (input by output), where Gemm reads [output, input]. Loaded as
  // [blocks · columns, rows], each block turned; make-model writes the stored form. 0: none.
  int64_t transposed_blocks = 0;
  // Placed in F32 whatever the placement's dtype, for a kernel that reads it in fp32 on every
  // device: MPNet's relative position bias table, a mixture-of-experts router (whose fp32
  // product decides which experts a token goes to: ops::ExpertLogits).
  bool keep_float32 = false;
};

// Visits a family's tensors in order. A family's schema is one function that calls Tensor or
// Stacked for each of its weights with the field that receives it.
class TensorVisitor {
 public:
  virtual ~TensorVisitor() = default;
  virtual void Tensor(engine::Tensor& target, const TensorSpec& spec) = 0;
  // `parts` (each [rows_i, columns] or [rows_i]) stacked along axis 0 into one target: fused
  // q|k|v or gate|up projections run as one gemm. Parts share one presence and load transform.
  virtual void Stacked(engine::Tensor& target, std::span<const TensorSpec> parts) = 0;
};

// Loads what the schema names from `weights` onto the placement, keeping the first error, so
// a schema lists its tensors without a check after each; once an error is kept, further
// loads do nothing.
class TensorLoader final : public TensorVisitor {
 public:
  TensorLoader(const WeightStore& weights, const Placement& placement);
  void Tensor(engine::Tensor& target, const TensorSpec& spec) override;
  void Stacked(engine::Tensor& target, std::span<const TensorSpec> parts) override;
  const Status& status() const { return status_; }

 private:
  bool Wanted(const TensorSpec& spec) const;
  void Keep(StatusOr<engine::Tensor> tensor, const TensorSpec& spec, engine::Tensor& target);
  const WeightStore& weights_;
  const Placement& placement_;
  Status status_;
};

// Collects the specs a schema names, stacked parts one by one, as a file holds them.
class TensorCollector final : public TensorVisitor {
 public:
  void Tensor(engine::Tensor& target, const TensorSpec& spec) override { specs_.push_back(spec); }
  void Stacked(engine::Tensor& target, std::span<const TensorSpec> parts) override {
    specs_.insert(specs_.end(), parts.begin(), parts.end());
  }
  std::vector<TensorSpec> Take() { return std::move(specs_); }

 private:
  std::vector<TensorSpec> specs_;
};

}  // namespace stamen::engine
