// The tail of every step, shared by the CPU engine and the CUDA runner: the model's last
// hidden state turned into the step's F32 values, on the model's device, by ops only.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/engine.h"
#include "engine/models/model.h"
#include "engine/ops/pooling.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine {

// Gives the F32 tensor of `shape` the values are written into. The CPU engine allocates one
// per step (its result outlives the step); the CUDA runner reuses one device buffer, which it
// then copies into pinned host memory.
using StepValuesBuffer = std::function<StatusOr<Tensor>(const Shape& shape)>;

// By `options.output`: every token's hidden state [T, hidden], the classification head's
// logits [S, labels], or embeddings [S, width] pooled with `pooling`, truncated to
// `options.dimensions` (0: `hidden_size`) and L2-normalised when asked. `hidden` is
// Forward's result for `input`; rows past input.cu_seqlens_host.back() are padding (a CUDA
// graph's token bucket) and are left out.
StatusOr<Tensor> ComputeStepValues(Model& model, const ModelInput& input, const Tensor& hidden,
                                   const StepOptions& options, ops::PoolingMode pooling, int64_t hidden_size,
                                   const StepValuesBuffer& buffer);

}  // namespace stamen::engine
