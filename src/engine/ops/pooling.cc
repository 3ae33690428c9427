// Pooling and normalisation: names, argument checks and device dispatch.
#include "engine/ops/pooling.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status Pool(const Tensor& hidden, const Tensor& cu_seqlens, PoolingMode mode, Tensor& output) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("pool", "hidden", hidden, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("pool", "cu_seqlens", cu_seqlens, DataType::kI32, 1));
  STAMEN_RETURN_IF_ERROR(internal::Expect("pool", "output", output, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("pool", "output", output, 0, cu_seqlens.dim(0) - 1));
  if (output.dim(1) > hidden.dim(1)) {
    return Status::Error("pool: output is " + output.Describe() + ", wider than hidden " + hidden.Describe());
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("pool", {&hidden, &cu_seqlens, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("pool", hidden.device(), {&hidden}));
  if (mode == PoolingMode::kSplade) {
    return Status::Error("pool: splade pooling runs on masked-LM logits, through SpladePool");
  }
  return internal::Dispatch(
      "pool", hidden.device(),
      [&] { return cpu::Pool(hidden, cu_seqlens, mode, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Pool(hidden, cu_seqlens, mode, output); }));
}

Status SpladePool(const Tensor& logits, const Tensor& cu_seqlens, int64_t first_token, Tensor& output) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("splade_pool", "logits", logits, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("splade_pool", "cu_seqlens", cu_seqlens, DataType::kI32, 1));
  STAMEN_RETURN_IF_ERROR(internal::Expect("splade_pool", "output", output, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("splade_pool", "output", output, 0, cu_seqlens.dim(0) - 1));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("splade_pool", "output", output, 1, logits.dim(1)));
  if (first_token < 0) return Status::Error("splade_pool: first_token " + std::to_string(first_token) + " < 0");
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("splade_pool", {&logits, &cu_seqlens, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("splade_pool", logits.device(), {&logits}));
  return internal::Dispatch(
      "splade_pool", logits.device(),
      [&] { return cpu::SpladePool(logits, cu_seqlens, first_token, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::SpladePool(logits, cu_seqlens, first_token, output); }));
}

Status L2Normalize(const Tensor& input, Tensor& output) {
  STAMEN_RETURN_IF_ERROR(internal::Expect("l2_normalize", "input", input, DataType::kF32, 2));
  if (output.dtype() != DataType::kF32 || !(output.shape() == input.shape())) {
    return Status::Error("l2_normalize: output is " + output.Describe() + ", input " + input.Describe());
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("l2_normalize", {&input, &output}));
  return internal::Dispatch(
      "l2_normalize", input.device(),
      [&] { return cpu::L2Normalize(input, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::L2Normalize(input, output); }));
}

Status ScaledTanhRound(Tensor& values, float scale) {
  if (values.dtype() != DataType::kF32) return Status::Error("scaled_tanh_round: expected F32, got " + values.Describe());
  return internal::Dispatch(
      "scaled_tanh_round", values.device(),
      [&] { return cpu::ScaledTanhRound(values, scale); },
      STAMEN_CUDA_KERNEL([&] { return cuda::ScaledTanhRound(values, scale); }));
}

}  // namespace stamen::engine::ops
