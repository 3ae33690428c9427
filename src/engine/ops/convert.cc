// Convert: argument checks and device dispatch.
#include "engine/ops/convert.h"

#include <cstring>

#include "engine/cpu/kernels.h"
#include "engine/ops/checks.h"
#if STAMEN_WITH_CUDA
#include "engine/cuda/kernels.h"
#endif

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
#if STAMEN_WITH_CUDA
  if (input.device() == Device::kCuda) return cuda::Convert(input, output);
#endif
  return internal::DeviceNotBuilt("convert", input.device());
}

Status Zero(Tensor& tensor) {
  if (tensor.empty()) return Status::Error("zero: the tensor is empty");
  if (tensor.device() == Device::kCpu) {
    std::memset(tensor.raw_data(), 0, tensor.NumBytes());
    return Status();
  }
#if STAMEN_WITH_CUDA
  if (tensor.device() == Device::kCuda) return cuda::Zero(tensor);
#endif
  return internal::DeviceNotBuilt("zero", tensor.device());
}

}  // namespace stamen::engine::ops
