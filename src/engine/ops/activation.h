// Elementwise activations (standalone, or fused into gemm) and gated ones: SwiGLU's
// silu(gate) · up, GeGLU's gelu(gate) · up.
#pragma once

#include <optional>
#include <string_view>

#include "engine/status.h"
#include "engine/tensor.h"
#include "model_folder/kinds.h"

namespace stamen::engine::ops {

// output = f(input), F32, same shape; `output` may be `input`.
Status Activate(Activation activation, const Tensor& input, Tensor& output);

// output[t, j] = f(gate_up[t, j]) · gate_up[t, n + j] for gate_up [T, 2n], output [T, n]:
// the gate and up projections run as one gemm whose halves this op combines.
Status GatedActivation(Activation activation, const Tensor& gate_up, Tensor& output);

}  // namespace stamen::engine::ops
