// Activations: names, argument checks and device dispatch.
#include "engine/ops/activation.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status Activate(Activation activation, const Tensor& input, Tensor& output) {
  if (input.empty() || output.empty() || input.dtype() != output.dtype() || !(input.shape() == output.shape())) {
    return Status::Error("activate: expected F32 input and output of one shape, got " + input.Describe() + " and " +
                         output.Describe());
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("activate", {&input, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("activate", input.device(), {&input, &output}));
  return internal::Dispatch(
      "activate", input.device(),
      [&] { return cpu::Activate(activation, input, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Activate(activation, input, output); }));
}

Status GatedActivation(Activation activation, const Tensor& gate_up, Tensor& output) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gated_activation", "gate_up", gate_up, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gated_activation", "output", output, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gated_activation", "output", output, 0, gate_up.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gated_activation", "gate_up", gate_up, 1, 2 * output.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("gated_activation", {&gate_up, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("gated_activation", output.device(), {&gate_up, &output}));
  return internal::Dispatch(
      "gated_activation", output.device(),
      [&] { return cpu::GatedActivation(activation, gate_up, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::GatedActivation(activation, gate_up, output); }));
}

}  // namespace stamen::engine::ops
