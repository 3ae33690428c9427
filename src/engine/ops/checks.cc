// Argument checks with messages like "layer_norm: gamma is F32[32] cpu, expected F32 of rank 1".
#include "engine/ops/checks.h"

#include <string>

namespace stamen::engine::ops::internal {

Status Expect(std::string_view op, std::string_view argument, const Tensor& tensor, DataType type, int rank) {
  if (tensor.empty() || tensor.dtype() != type || tensor.rank() != rank) {
    return Status::Error(std::string(op) + ": " + std::string(argument) + " is " + tensor.Describe() +
                         ", expected " + std::string(DataTypeName(type)) + " of rank " + std::to_string(rank));
  }
  return Status();
}

Status ExpectFloat(std::string_view op, std::string_view argument, const Tensor& tensor, int rank) {
  if (tensor.empty() || (tensor.dtype() != DataType::kF32 && tensor.dtype() != DataType::kBF16) ||
      tensor.rank() != rank) {
    return Status::Error(std::string(op) + ": " + std::string(argument) + " is " + tensor.Describe() +
                         ", expected F32 (or BF16 on cuda) of rank " + std::to_string(rank));
  }
  return Status();
}

DataType ComputeType(Device device) { return device == Device::kCuda ? DataType::kBF16 : DataType::kF32; }

Status ExpectComputeType(std::string_view op, Device device, std::initializer_list<const Tensor*> tensors) {
  const DataType type = ComputeType(device);
  for (const Tensor* tensor : tensors) {
    if (tensor->empty()) continue;
    if (tensor->dtype() != type) {
      return Status::Error(std::string(op) + ": the " + std::string(DeviceName(device)) + " backend computes in " +
                           std::string(DataTypeName(type)) + ", got " + tensor->Describe());
    }
  }
  return Status();
}

Status ExpectDim(std::string_view op, std::string_view argument, const Tensor& tensor, int axis, int64_t size) {
  if (axis >= tensor.rank() || tensor.dim(axis) != size) {
    return Status::Error(std::string(op) + ": " + std::string(argument) + " is " + tensor.Describe() +
                         ", expected size " + std::to_string(size) + " on axis " + std::to_string(axis));
  }
  return Status();
}

Status ExpectSameDevice(std::string_view op, std::initializer_list<const Tensor*> tensors) {
  const Device device = (*tensors.begin())->device();
  for (const Tensor* tensor : tensors) {
    if (tensor->device() != device) {
      return Status::Error(std::string(op) + ": tensors on different devices (" +
                           std::string(DeviceName(device)) + " and " + std::string(DeviceName(tensor->device())) +
                           ")");
    }
  }
  return Status();
}

Status DeviceNotBuilt(std::string_view op, Device device) {
  return Status::Error(std::string(op) + ": no " + std::string(DeviceName(device)) + " backend in this build");
}

}  // namespace stamen::engine::ops::internal
