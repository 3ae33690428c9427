// Activations: names, argument checks and device dispatch.
#include "engine/ops/activation.h"

#include "engine/cpu/kernels.h"
#include "engine/ops/checks.h"

namespace stamen::engine::ops {

std::optional<Activation> ActivationFromName(std::string_view name) {
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "relu") return Activation::kRelu;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "tanh") return Activation::kTanh;
  return std::nullopt;
}

Status Activate(Activation activation, const Tensor& input, Tensor& output) {
  if (input.empty() || input.dtype() != DataType::kF32 || output.empty() || output.dtype() != DataType::kF32 ||
      !(input.shape() == output.shape())) {
    return Status::Error("activate: expected F32 input and output of one shape, got " + input.Describe() + " and " +
                         output.Describe());
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("activate", {&input, &output}));
  if (input.device() == Device::kCpu) {
    cpu::Activate(activation, input, output);
    return Status();
  }
  return internal::DeviceNotBuilt("activate", input.device());
}

Status SiluMul(const Tensor& gate_up, Tensor& output) {
  STAMEN_RETURN_IF_ERROR(internal::Expect("silu_mul", "gate_up", gate_up, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("silu_mul", "output", output, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("silu_mul", "output", output, 0, gate_up.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("silu_mul", "gate_up", gate_up, 1, 2 * output.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("silu_mul", {&gate_up, &output}));
  if (output.device() == Device::kCpu) {
    cpu::SiluMul(gate_up, output);
    return Status();
  }
  return internal::DeviceNotBuilt("silu_mul", output.device());
}

}  // namespace stamen::engine::ops
