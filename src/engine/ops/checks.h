// Argument checks shared by the device-independent part of every op: they turn a wrong
// dtype, rank, shape or device into an error naming the op and argument.
#pragma once

#include <initializer_list>
#include <string_view>

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops::internal {

// Fails unless `tensor` has memory, dtype `type` and rank `rank`.
Status Expect(std::string_view op, std::string_view argument, const Tensor& tensor, DataType type, int rank);
// Fails unless `tensor` has memory, rank `rank` and a floating-point dtype a backend computes
// in (F32 on the CPU, BF16 on CUDA; ComputeType checks which).
Status ExpectFloat(std::string_view op, std::string_view argument, const Tensor& tensor, int rank);
// Fails unless every tensor has the dtype the backend of `device` computes in: F32 on the
// CPU, BF16 on CUDA (weights and activations; fp32 accumulation inside the kernels).
Status ExpectComputeType(std::string_view op, Device device, std::initializer_list<const Tensor*> tensors);
// The dtype of activations and weights on `device`.
DataType ComputeType(Device device);
// Fails unless axis `axis` of `tensor` is `size`.
Status ExpectDim(std::string_view op, std::string_view argument, const Tensor& tensor, int axis, int64_t size);
// Fails unless every tensor lives on the device of the first.
Status ExpectSameDevice(std::string_view op, std::initializer_list<const Tensor*> tensors);
// The error for a device whose backend is not compiled in.
Status DeviceNotBuilt(std::string_view op, Device device);

}  // namespace stamen::engine::ops::internal
