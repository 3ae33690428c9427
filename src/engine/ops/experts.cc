// Mixture-of-experts ops: argument checks and device dispatch.
#include "engine/ops/experts.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status ExpertLogits(const Tensor& input, const Tensor& router, Tensor& logits) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("expert_logits", "input", input, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("expert_logits", "router", router, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("expert_logits", "logits", logits, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("expert_logits", "router", router, 1, input.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("expert_logits", "logits", logits, 0, input.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("expert_logits", "logits", logits, 1, router.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("expert_logits", {&input, &router, &logits}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("expert_logits", input.device(), {&input}));
  return internal::Dispatch(
      "expert_logits", input.device(),
      [&] { return cpu::ExpertLogits(input, router, logits); },
      STAMEN_CUDA_KERNEL([&] { return cuda::ExpertLogits(input, router, logits); }));
}

Status CombineExperts(const Tensor& expert_rows, const Tensor& positions, const Tensor& weights, const Tensor& bias,
                      Tensor& output) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("combine_experts", "expert_rows", expert_rows, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("combine_experts", "positions", positions, DataType::kI32, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("combine_experts", "weights", weights, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("combine_experts", "bias", bias, 1));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("combine_experts", "output", output, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("combine_experts", "bias", bias, 0, expert_rows.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("combine_experts", "output", output, 1, expert_rows.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("combine_experts", "positions", positions, 0, output.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("combine_experts", "weights", weights, 0, output.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("combine_experts", "weights", weights, 1, positions.dim(1)));
  STAMEN_RETURN_IF_ERROR(
      internal::ExpectSameDevice("combine_experts", {&expert_rows, &positions, &weights, &bias, &output}));
  STAMEN_RETURN_IF_ERROR(
      internal::ExpectComputeType("combine_experts", output.device(), {&expert_rows, &bias, &output}));
  return internal::Dispatch(
      "combine_experts", output.device(),
      [&] { return cpu::CombineExperts(expert_rows, positions, weights, bias, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::CombineExperts(expert_rows, positions, weights, bias, output); }));
}

}  // namespace stamen::engine::ops
