// Gemm: argument checks and device dispatch.
#include "engine/ops/gemm.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const GemmOptions& options) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gemm", "input", input, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gemm", "weight", weight, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gemm", "output", output, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "weight", weight, 1, input.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "output", output, 0, input.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "output", output, 1, weight.dim(0)));
  if (!bias.empty()) {
    STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gemm", "bias", bias, 1));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "bias", bias, 0, weight.dim(0)));
    STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("gemm", {&input, &bias}));
  }
  if (options.accumulate && options.activation != Activation::kIdentity) {
    return Status::Error("gemm: accumulate and an activation cannot be combined");
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("gemm", {&input, &weight, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("gemm", input.device(), {&input, &weight, &bias, &output}));
  return internal::Dispatch(
      "gemm", input.device(),
      [&] { return cpu::Gemm(input, weight, bias, output, options); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Gemm(input, weight, bias, output, options); }));
}

}  // namespace stamen::engine::ops
