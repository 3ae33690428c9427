// Convert: argument checks and device dispatch.
#include "engine/ops/convert.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

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
  return internal::Dispatch(
      "convert", input.device(),
      [&] { return cpu::Convert(input, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Convert(input, output); }));
}

Status Zero(Tensor& tensor) {
  if (tensor.empty()) return Status::Error("zero: the tensor is empty");
  return internal::Dispatch(
      "zero", tensor.device(),
      [&] { return cpu::Zero(tensor); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Zero(tensor); }));
}

}  // namespace stamen::engine::ops
