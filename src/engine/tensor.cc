// Tensor and Shape: allocation (aligned, overflow-checked), views, descriptions.
#include "engine/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#if STAMEN_WITH_CUDA
#include "engine/cuda/runtime.h"
#endif

namespace stamen::engine {

size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kF32: return 4;
    case DataType::kBF16: return 2;
    case DataType::kF16: return 2;
    case DataType::kI32: return 4;
    case DataType::kI64: return 8;
  }
  return 0;
}

std::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kF32: return "F32";
    case DataType::kBF16: return "BF16";
    case DataType::kF16: return "F16";
    case DataType::kI32: return "I32";
    case DataType::kI64: return "I64";
  }
  return "?";
}

std::string_view DeviceName(Device device) { return device == Device::kCpu ? "cpu" : "cuda"; }

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t dim : dims) {
    if (rank_ == kMaxRank) break;
    dims_[rank_++] = dim;
  }
}

StatusOr<Shape> Shape::FromDims(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return Status::Error("rank " + std::to_string(dims.size()) + " exceeds the supported " +
                         std::to_string(kMaxRank));
  }
  Shape shape;
  for (int64_t dim : dims) {
    if (dim < 0) return Status::Error("negative dimension " + std::to_string(dim));
    shape.dims_[shape.rank_++] = dim;
  }
  return shape;
}

int64_t Shape::NumElements() const {
  int64_t count = 1;
  for (int axis = 0; axis < rank_; ++axis) count *= dims_[axis];
  return count;
}

std::string Shape::ToString() const {
  std::string text = "[";
  for (int axis = 0; axis < rank_; ++axis) {
    if (axis > 0) text += ", ";
    text += std::to_string(dims_[axis]);
  }
  return text + "]";
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int axis = 0; axis < rank_; ++axis) {
    if (dims_[axis] != other.dims_[axis]) return false;
  }
  return true;
}

StatusOr<Tensor> Tensor::Allocate(DataType type, const Shape& shape, Device device) {
#if !STAMEN_WITH_CUDA
  if (device != Device::kCpu) {
    return Status::Error("cannot allocate on device " + std::string(DeviceName(device)) +
                         ": this build has only the cpu backend");
  }
#endif
  int64_t count = 1;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    const int64_t dim = shape[axis];
    if (dim < 0) return Status::Error("cannot allocate shape " + shape.ToString());
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / 8 / dim) {
      return Status::Error("tensor of shape " + shape.ToString() + " is too large");
    }
    count *= dim;
  }
  // Round up so vector loops may read a full cache line past the last element's line start.
  const size_t bytes = static_cast<size_t>(count) * ElementSize(type);
  const size_t padded = (bytes / kAlignment + 1) * kAlignment;
#if STAMEN_WITH_CUDA
  if (device == Device::kCuda) {
    auto memory = cuda::AllocateDevice(padded);
    if (!memory.ok()) {
      return Status::Error("cannot allocate " + std::string(DataTypeName(type)) + shape.ToString() +
                           " on cuda: " + memory.status().message());
    }
    Tensor tensor;
    tensor.data_ = memory->get();
    tensor.owner_ = std::move(memory.value());
    tensor.dtype_ = type;
    tensor.device_ = device;
    tensor.shape_ = shape;
    return tensor;
  }
#endif
  void* memory = std::aligned_alloc(kAlignment, padded);
  if (memory == nullptr) {
    return Status::Error("out of memory allocating " + std::to_string(bytes) + " bytes for " +
                         std::string(DataTypeName(type)) + shape.ToString());
  }
  std::memset(memory, 0, padded);
  Tensor tensor;
  tensor.owner_ = std::shared_ptr<const void>(memory, [](const void* p) { std::free(const_cast<void*>(p)); });
  tensor.data_ = memory;
  tensor.dtype_ = type;
  tensor.device_ = device;
  tensor.shape_ = shape;
  return tensor;
}

Tensor Tensor::Wrap(void* data, DataType type, const Shape& shape, Device device,
                    std::shared_ptr<const void> keep_alive) {
  Tensor tensor;
  tensor.owner_ = std::move(keep_alive);
  tensor.data_ = data;
  tensor.dtype_ = type;
  tensor.device_ = device;
  tensor.shape_ = shape;
  return tensor;
}

Tensor Tensor::View(const Shape& shape) const {
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (shape[axis] < 0) return Tensor();
  }
  if (empty() || shape.NumElements() > NumElements()) return Tensor();
  Tensor view = *this;
  view.shape_ = shape;
  return view;
}

Tensor Tensor::Rows(int64_t begin, int64_t end) const {
  if (empty() || rank() == 0 || begin < 0 || end < begin || end > dim(0)) return Tensor();
  const int64_t row_elements = dim(0) == 0 ? 0 : NumElements() / dim(0);
  Tensor view = *this;
  view.data_ = static_cast<std::byte*>(data_) + begin * row_elements * ElementSize(dtype_);
  int64_t dims[Shape::kMaxRank];
  for (int axis = 0; axis < rank(); ++axis) dims[axis] = shape_[axis];
  dims[0] = end - begin;
  view.shape_ = *Shape::FromDims(std::span<const int64_t>(dims, rank()));
  return view;
}

std::string Tensor::Describe() const {
  if (empty()) return "empty tensor";
  return std::string(DataTypeName(dtype_)) + shape_.ToString() + " " + std::string(DeviceName(device_));
}

Status CopyTensor(const Tensor& source, Tensor& target) {
  if (source.empty() || target.empty() || source.dtype() != target.dtype() ||
      source.NumElements() != target.NumElements()) {
    return Status::Error("cannot copy " + source.Describe() + " into " + target.Describe());
  }
  if (source.device() == Device::kCpu && target.device() == Device::kCpu) {
    std::memmove(target.raw_data(), source.raw_data(), source.NumBytes());
    return Status();
  }
#if STAMEN_WITH_CUDA
  return cuda::CopyBytes(target.raw_data(), target.device(), source.raw_data(), source.device(), source.NumBytes());
#else
  return Status::Error("cannot copy " + source.Describe() + " into " + target.Describe() +
                       ": this build has only the cpu backend");
#endif
}

}  // namespace stamen::engine
