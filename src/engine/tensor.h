// Tensor: a typed, shaped view of memory on one device, owning (64-byte aligned, shared) or not.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace stamen::engine {

enum class DataType : uint8_t { kF32, kBF16, kF16, kI32, kI64 };
enum class Device : uint8_t { kCpu, kCuda };

size_t ElementSize(DataType type);
std::string_view DataTypeName(DataType type);  // "F32", "BF16", … as safetensors spells them
std::string_view DeviceName(Device device);

// Dimensions of a tensor, up to kMaxRank, stored inline so views never allocate.
class Shape {
 public:
  static constexpr int kMaxRank = 4;

  Shape() = default;  // rank 0: one element
  Shape(std::initializer_list<int64_t> dims);
  // Fails when the rank exceeds kMaxRank or a dimension is negative.
  static StatusOr<Shape> FromDims(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int axis) const { return dims_[axis]; }
  int64_t NumElements() const;
  std::string ToString() const;  // "[3, 64]"
  bool operator==(const Shape& other) const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// A tensor is a pointer, a dtype, a device and a shape; copies alias the same memory (like
// torch.Tensor). Owning tensors share their buffer through a reference count, so a view made
// from one keeps it alive; a view of foreign memory (`Wrap`) may carry a keep-alive handle
// (e.g. the file mapping of a weight). Memory is contiguous, row-major.
class Tensor {
 public:
  static constexpr size_t kAlignment = 64;

  Tensor() = default;  // empty: no memory; ops reject it with an error

  // Allocates `shape` zero-filled; fails on overflow, out-of-memory or a device not built in
  // (or, for cuda, when no GPU is present).
  static StatusOr<Tensor> Allocate(DataType type, const Shape& shape, Device device = Device::kCpu);
  // Views `data` without owning it; `keep_alive` (optional) is held as long as any copy lives.
  static Tensor Wrap(void* data, DataType type, const Shape& shape, Device device = Device::kCpu,
                     std::shared_ptr<const void> keep_alive = nullptr);

  // A view of the first `shape.NumElements()` elements with a new shape; empty if it does not
  // fit (so a workspace buffer of some capacity can be viewed at each step's size).
  Tensor View(const Shape& shape) const;
  // A view of rows [begin, end) along axis 0; empty if out of range.
  Tensor Rows(int64_t begin, int64_t end) const;

  bool empty() const { return data_ == nullptr; }
  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int axis) const { return shape_[axis]; }
  int64_t NumElements() const { return empty() ? 0 : shape_.NumElements(); }
  size_t NumBytes() const { return static_cast<size_t>(NumElements()) * ElementSize(dtype_); }
  bool owns_memory() const { return owner_ != nullptr; }
  // What keeps the memory alive (null for a view of foreign memory without a keep-alive):
  // caches of derived data (packed weights) hold it weakly, to know when their copy is stale.
  const std::shared_ptr<const void>& keep_alive() const { return owner_; }

  void* raw_data() const { return data_; }
  // Typed access; the caller has checked dtype() (ops do, in their device-independent part).
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_);
  }
  // "F32[3, 64] cpu", for error messages.
  std::string Describe() const;

 private:
  std::shared_ptr<const void> owner_;
  void* data_ = nullptr;
  DataType dtype_ = DataType::kF32;
  Device device_ = Device::kCpu;
  Shape shape_;
};

// Copies the elements of `source` into `target` (same dtype and element count) across any
// pair of devices; waits for a device copy to finish.
Status CopyTensor(const Tensor& source, Tensor& target);

}  // namespace stamen::engine
