// Gemm: argument checks and device dispatch.
#include "engine/ops/gemm.h"

#include "engine/cpu/kernels.h"
#include "engine/ops/checks.h"

namespace stamen::engine::ops {

Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const GemmOptions& options) {
  STAMEN_RETURN_IF_ERROR(internal::Expect("gemm", "input", input, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("gemm", "weight", weight, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("gemm", "output", output, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "weight", weight, 1, input.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "output", output, 0, input.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "output", output, 1, weight.dim(0)));
  if (!bias.empty()) {
    STAMEN_RETURN_IF_ERROR(internal::Expect("gemm", "bias", bias, DataType::kF32, 1));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gemm", "bias", bias, 0, weight.dim(0)));
    STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("gemm", {&input, &bias}));
  }
  if (options.accumulate && options.activation != Activation::kIdentity) {
    return Status::Error("gemm: accumulate and an activation cannot be combined");
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("gemm", {&input, &weight, &output}));
  if (input.device() == Device::kCpu) return cpu::Gemm(input, weight, bias, output, options);
  return internal::DeviceNotBuilt("gemm", input.device());
}

}  // namespace stamen::engine::ops
