// Gemm: the dense layer y = x · Wᵀ + b, with W stored [out, in] as PyTorch's nn.Linear does.
#pragma once

#include "engine/ops/activation.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

struct GemmOptions {
  // Add the product to what `output` holds (a residual connection) instead of overwriting.
  bool accumulate = false;
  // Applied to x · Wᵀ + b before storing (not combinable with accumulate).
  Activation activation = Activation::kIdentity;
};

// output[m, n] = act(input[m, k] · weight[n, k]ᵀ + bias[n]); F32; `bias` may be empty.
// `output` must not overlap `input` or `weight`.
Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const GemmOptions& options = {});

}  // namespace stamen::engine::ops
