// Convert: argument checks and device dispatch.
#include "engine/ops/convert.h"

#include "engine/cpu/kernels.h"
#include "engine/ops/checks.h"

namespace stamen::engine::ops {
namespace {

bool IsFloat(DataType type) { return type == DataType::kF32 || type == DataType::kF16 || type == DataType::kBF16; }

}  // namespace

Status Convert(const Tensor& input, Tensor& output) {
  if (input.empty() || output.empty() || !(input.shape() == output.shape())) {
    return Status::Error("convert: cannot copy " + input.Describe() + " into " + output.Describe());
  }
  if (input.dtype() != output.dtype() && !(IsFloat(input.dtype()) && IsFloat(output.dtype()))) {
    return Status::Error("convert: no conversion from " + std::string(DataTypeName(input.dtype())) + " to " +
                         std::string(DataTypeName(output.dtype())));
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("convert", {&input, &output}));
  if (input.device() == Device::kCpu) {
    cpu::Convert(input, output);
    return Status();
  }
  return internal::DeviceNotBuilt("convert", input.device());
}

}  // namespace stamen::engine::ops
