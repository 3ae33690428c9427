// Pooling and normalisation: names, argument checks and device dispatch.
#include "engine/ops/pooling.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

std::optional<PoolingMode> PoolingModeFromName(std::string_view name) {
  if (name == "cls") return PoolingMode::kCls;
  if (name == "mean") return PoolingMode::kMean;
  if (name == "max") return PoolingMode::kMax;
  if (name == "last_token" || name == "lasttoken") return PoolingMode::kLastToken;
  return std::nullopt;
}

std::string_view PoolingModeName(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kCls: return "cls";
    case PoolingMode::kMean: return "mean";
    case PoolingMode::kMax: return "max";
    case PoolingMode::kLastToken: return "last_token";
  }
  return "?";
}

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
  return internal::Dispatch(
      "pool", hidden.device(),
      [&] { return cpu::Pool(hidden, cu_seqlens, mode, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Pool(hidden, cu_seqlens, mode, output); }));
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

}  // namespace stamen::engine::ops
