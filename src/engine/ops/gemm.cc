// Gemm: argument checks and device dispatch.
#include "engine/ops/gemm.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

namespace {

Status CheckGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& output,
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
  return internal::ExpectComputeType("gemm", input.device(), {&input, &weight, &bias, &output});
}

}  // namespace

Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const GemmOptions& options) {
  STAMEN_RETURN_IF_ERROR(CheckGemm(input, weight, bias, output, options));
  return internal::Dispatch(
      "gemm", input.device(),
      [&] { return cpu::Gemm(input, weight, bias, output, options); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Gemm(input, weight, bias, output, options); }));
}

Status FeedForwardGemms(const Tensor& input, const Tensor& up_weight, const Tensor& up_bias, Activation activation,
                        const Tensor& down_weight, const Tensor& down_bias, Tensor& intermediate, Tensor& output,
                        bool accumulate) {
  const GemmOptions up{.activation = activation}, down{.accumulate = accumulate};
  STAMEN_RETURN_IF_ERROR(CheckGemm(input, up_weight, up_bias, intermediate, up));
  STAMEN_RETURN_IF_ERROR(CheckGemm(intermediate, down_weight, down_bias, output, down));
  return internal::Dispatch(
      "gemm", input.device(),
      [&] {
        return cpu::FeedForwardGemms(input, up_weight, up_bias, activation, down_weight, down_bias, intermediate,
                                     output, accumulate);
      },
      STAMEN_CUDA_KERNEL([&] {
        STAMEN_RETURN_IF_ERROR(cuda::Gemm(input, up_weight, up_bias, intermediate, up));
        return cuda::Gemm(intermediate, down_weight, down_bias, output, down);
      }));
}

}  // namespace stamen::engine::ops
