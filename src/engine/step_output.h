// The tail of every step, shared by the CPU engine and the CUDA runner: the model's last
// hidden state turned into the step's F32 values, on the model's device, by ops only.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/engine.h"
#include "model_folder/model_config.h"
#include "engine/models/model.h"
#include "engine/ops/pooling.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine {

// Gives the F32 tensor of `shape` the values are written into. The CPU engine allocates one
// per step (its result outlives the step); the CUDA runner reuses one device buffer, which it
// then copies into pinned host memory.
using StepValuesBuffer = std::function<StatusOr<Tensor>(const Shape& shape)>;

// The sentence-transformers Dense modules on the model's device (weights in its compute
// dtype), and scratch buffers for the vectors between them.
struct DenseModules {
  struct Layer {
    Tensor weight, bias;  // [out, in], [out] or empty
    ops::Activation activation = ops::Activation::kIdentity;
  };
  std::vector<Layer> layers;
  Workspace scratch;

  // The embedding width after the modules: the last one's out_features, else `hidden_size`.
  int64_t OutputWidth(int64_t hidden_size) const { return layers.empty() ? hidden_size : layers.back().weight.dim(0); }
};

// Loads each module's linear.weight (and linear.bias) from its folder's model.safetensors
// onto `placement`; the first module must take `hidden_size` inputs.
StatusOr<DenseModules> LoadDenseModules(const std::vector<DenseModuleConfig>& modules, int64_t hidden_size,
                                        const Placement& placement);

// By `options.output`: every token's hidden state [T, hidden], the classification head's
// logits [S, labels], SPLADE vectors [S, vocab] (splade pooling, through the masked-LM head),
// or embeddings [S, width] (one per span with options.spans): pooled with `pooling`, passed
// through the Dense modules and, for config.pooled_tanh_int8, turned into round(127·tanh(x));
// whole and not normalised (whoever asked truncates and normalises: FinishRows). `hidden` is
// Forward's result for `input`; rows past input.cu_seqlens_host.back() are padding (a CUDA
// graph's token bucket) and are left out.
StatusOr<Tensor> ComputeStepValues(Model& model, const ModelConfig& config, const ModelInput& input, const Tensor& hidden,
                                   const StepOptions& options, ops::PoolingMode pooling, DenseModules& dense,
                                   const StepValuesBuffer& buffer);

}  // namespace stamen::engine
