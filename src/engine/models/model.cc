// Shared model plumbing: workspace growth and weight loading helpers.
#include "engine/models/model.h"

#include <algorithm>
#include <cstring>

#include "engine/ops/convert.h"

namespace stamen::engine {

StatusOr<Tensor> Workspace::Get(size_t slot, DataType type, const Shape& shape) {
  if (slot >= buffers_.size()) buffers_.resize(slot + 1);
  Tensor& buffer = buffers_[slot];
  const size_t needed = static_cast<size_t>(shape.NumElements()) * ElementSize(type);
  if (buffer.empty() || buffer.NumBytes() < needed) {
    // Grow by half again so a slowly rising token count reallocates O(log) times.
    const int64_t bytes = static_cast<int64_t>(std::max(needed, buffer.NumBytes() * 3 / 2));
    // Drop the slot's hold on the old buffer first, so device memory is not held twice
    // unless a view still uses it (a view owns its buffer: see below).
    buffer = Tensor();
    auto grown = Tensor::Allocate(DataType::kI32, Shape{(bytes + 3) / 4}, device_);
    if (!grown.ok()) return grown.status();
    buffer = std::move(grown.value());
    ++generation_;
  }
  // Reinterpret the byte buffer at the requested type: every dtype divides 64-byte alignment.
  // The view shares the buffer's ownership: a view held past a growth of its slot (a CUDA
  // graph's captured output, a pending step's input) reads the old memory, never freed memory.
  Tensor typed = Tensor::Wrap(buffer.raw_data(), type, shape, buffer.device(), buffer.keep_alive());
  return typed;
}

StatusOr<Tensor> Model::Classify(const ModelInput& input, const Tensor& hidden) {
  return Status::Error("this model has no classification head");
}

Status Model::SpladeVectors(const ModelInput& input, const Tensor& hidden, Tensor& output) {
  return Status::Error("this model has no masked-LM head");
}

Status Model::PoolIds(const ModelInput& input, ops::PoolingMode pooling, Tensor& output) {
  return Status::Error("this model pools its hidden state, not its token ids");
}

namespace model_weights {

StatusOr<std::string> FindPrefix(const WeightStore& weights, std::span<const std::string_view> candidates,
                                 std::string_view probe) {
  for (std::string_view prefix : candidates) {
    const std::string name = std::string(prefix) + std::string(probe);
    if (weights.Contains(name)) return std::string(prefix);
  }
  std::string tried;
  for (std::string_view prefix : candidates) {
    tried += (tried.empty() ? "'" : ", '") + std::string(prefix) + std::string(probe) + "'";
  }
  return Status::Error("weights have no tensor " + tried);
}

StatusOr<Tensor> LoadStacked(const WeightStore& weights, std::span<const std::string> names,
                             std::span<const int64_t> rows, int64_t columns) {
  int64_t total_rows = 0;
  for (int64_t count : rows) total_rows += count;
  auto stacked = Tensor::Allocate(DataType::kF32, columns > 0 ? Shape{total_rows, columns} : Shape{total_rows});
  if (!stacked.ok()) return stacked.status();
  auto* target = stacked->data<float>();
  for (size_t i = 0; i < names.size(); ++i) {
    auto part = weights.Load(names[i], columns > 0 ? Shape{rows[i], columns} : Shape{rows[i]});
    if (!part.ok()) return part.status();
    std::memcpy(target, part->raw_data(), part->NumBytes());
    target += part->NumElements();
  }
  return stacked;
}

StatusOr<Tensor> Place(const Tensor& tensor, const Placement& placement) {
  if (placement.device == Device::kCpu && placement.dtype == tensor.dtype()) return tensor;
  Tensor host = tensor;
  if (placement.dtype != tensor.dtype()) {
    auto converted = Tensor::Allocate(placement.dtype, tensor.shape());
    if (!converted.ok()) return converted.status();
    STAMEN_RETURN_IF_ERROR(ops::Convert(tensor, *converted));
    host = std::move(converted.value());
  }
  if (placement.device == Device::kCpu) return host;
  auto device = Tensor::Allocate(placement.dtype, tensor.shape(), placement.device);
  if (!device.ok()) return device.status();
  STAMEN_RETURN_IF_ERROR(CopyTensor(host, *device));
  return device;
}

}  // namespace model_weights
}  // namespace stamen::engine
