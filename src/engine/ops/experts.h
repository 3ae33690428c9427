// The two steps of a mixture-of-experts layer (models/mixture_of_experts.cc) that are neither a
// gemm nor a gather: the router's logits, in fp32 on every device, and each token's weighted
// sum of its experts' rows.
#pragma once

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

// logits[t, e] = Σ_h input[t, h] · router[e, h], multiplied and summed in fp32 whatever the
// device computes in: input [T, H] in the device's compute type, router F32 [E, H], logits F32
// [T, E]. The routing is a discrete choice, which a product rounded to bf16 would flip for near
// ties and so move a token's whole output.
Status ExpertLogits(const Tensor& input, const Tensor& router, Tensor& logits);

// output[t] = bias + Σ_k weights[t, k] · expert_rows[positions[t, k]], summed in fp32 and
// rounded once: expert_rows [R, H], bias [H] and output [T, H] in the compute type, positions
// I32 [T, K], weights F32 [T, K]. A position outside [0, R) is an error on the CPU; on a device
// (where the routing code made them) it is not checked.
Status CombineExperts(const Tensor& expert_rows, const Tensor& positions, const Tensor& weights, const Tensor& bias,
                      Tensor& output);

}  // namespace stamen::engine::ops
