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

// output = down(act(up(input))) (added to output when `accumulate`): the two dense layers of a
// feed-forward block, through `intermediate` [m, up rows]. Where the CPU multiplies on AMX tiles
// and the input is long, each thread keeps its rows' intermediate in its cache, in bf16 (the
// results are the same), and `intermediate` is left untouched.
Status FeedForwardGemms(const Tensor& input, const Tensor& up_weight, const Tensor& up_bias, Activation activation,
                        const Tensor& down_weight, const Tensor& down_bias, Tensor& intermediate, Tensor& output,
                        bool accumulate);

}  // namespace stamen::engine::ops
