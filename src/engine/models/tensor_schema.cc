// The schema visitors that touch weights: the loader.
#include "engine/models/tensor_schema.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "engine/models/model.h"

namespace stamen::engine {
namespace {

// The name `name` has in `weights`: itself, or for a norm's ".weight" / ".bias" the older
// ".gamma" / ".beta" that TensorFlow-era checkpoints use (transformers renames them on load).
std::string StoredName(const WeightStore& weights, const std::string& name) {
  if (weights.Contains(name)) return name;
  constexpr std::pair<std::string_view, std::string_view> kOldSuffixes[] = {{".weight", ".gamma"}, {".bias", ".beta"}};
  for (const auto& [suffix, old_suffix] : kOldSuffixes) {
    if (name.size() > suffix.size() && name.ends_with(suffix) && name.find("LayerNorm") != std::string::npos) {
      std::string old_name = name.substr(0, name.size() - suffix.size()) + std::string(old_suffix);
      if (weights.Contains(old_name)) return old_name;
    }
  }
  return name;
}

}  // namespace

TensorLoader::TensorLoader(const WeightStore& weights, const Placement& placement)
    : weights_(weights), placement_(placement) {}

bool TensorLoader::Wanted(const TensorSpec& spec) const {
  switch (spec.presence) {
    case TensorPresence::kRequired:
      return true;
    case TensorPresence::kOptional:
      return weights_.Contains(StoredName(weights_, spec.name));
    case TensorPresence::kUnread:
      return false;
  }
  return true;
}

void TensorLoader::Keep(StatusOr<engine::Tensor> tensor, const TensorSpec& spec, engine::Tensor& target) {
  if (!tensor.ok()) {
    status_ = tensor.status();
    return;
  }
  // Loads are F32 on the host (WeightStore::Load's default), so the transform is exact fp32
  // arithmetic whatever the placement's dtype, as transformers computes 1 + w in fp32. An F32
  // load may be a view of the read-only mapped file, so the result goes to a new tensor.
  if (spec.load_offset != 0.0f) {
    auto transformed = engine::Tensor::Allocate(DataType::kF32, tensor->shape());
    if (!transformed.ok()) {
      status_ = transformed.status();
      return;
    }
    const float* stored = tensor->data<float>();
    float* values = transformed->data<float>();
    const int64_t count = tensor->NumElements();
    for (int64_t i = 0; i < count; ++i) values[i] = stored[i] + spec.load_offset;
    tensor = std::move(transformed);
  }
  if (spec.swap_row_halves) {
    const int64_t rows = tensor->dim(0);
    if (rows % 2 != 0) {
      status_ = Status::Error("tensor '" + spec.name + "' has an odd number of rows, so no two halves to swap");
      return;
    }
    auto swapped = engine::Tensor::Allocate(DataType::kF32, tensor->shape());
    if (!swapped.ok()) {
      status_ = swapped.status();
      return;
    }
    const int64_t half = tensor->NumElements() / 2;
    const float* stored = tensor->data<float>();
    std::copy(stored + half, stored + 2 * half, swapped->data<float>());
    std::copy(stored, stored + half, swapped->data<float>() + half);
    tensor = std::move(swapped);
  }
  if (spec.transposed_blocks > 0) {
    const int64_t blocks = spec.transposed_blocks;
    if (tensor->rank() != 2 || tensor->dim(0) % blocks != 0) {
      status_ = Status::Error("tensor '" + spec.name + "' of shape " + tensor->shape().ToString() +
                              " does not split into " + std::to_string(blocks) + " matrices by rows");
      return;
    }
    const int64_t rows = tensor->dim(0) / blocks;
    const int64_t columns = tensor->dim(1);
    auto turned = engine::Tensor::Allocate(DataType::kF32, {blocks * columns, rows});
    if (!turned.ok()) {
      status_ = turned.status();
      return;
    }
    const float* stored = tensor->data<float>();
    float* values = turned->data<float>();
    for (int64_t block = 0; block < blocks; ++block) {
      const float* from = stored + block * rows * columns;
      float* to = values + block * rows * columns;
      for (int64_t row = 0; row < rows; ++row) {
        for (int64_t column = 0; column < columns; ++column) to[column * rows + row] = from[row * columns + column];
      }
    }
    tensor = std::move(turned);
  }
  const Placement placement = spec.keep_float32 ? Placement{placement_.device, DataType::kF32} : placement_;
  auto placed = model_weights::Place(*tensor, placement);
  if (placed.ok()) {
    target = std::move(placed.value());
  } else {
    status_ = placed.status();
  }
}

void TensorLoader::Tensor(engine::Tensor& target, const TensorSpec& spec) {
  if (!status_.ok() || !Wanted(spec)) return;
  Keep(weights_.Load(StoredName(weights_, spec.name), spec.shape), spec, target);
}

void TensorLoader::Stacked(engine::Tensor& target, std::span<const TensorSpec> parts) {
  if (!status_.ok() || parts.empty() || !Wanted(parts[0])) return;
  std::vector<std::string> names;
  std::vector<int64_t> rows;
  for (const TensorSpec& part : parts) {
    names.push_back(part.name);
    rows.push_back(part.shape[0]);
  }
  const int64_t columns = parts[0].shape.rank() > 1 ? parts[0].shape[1] : 0;
  Keep(model_weights::LoadStacked(weights_, names, rows, columns), parts[0], target);
}

}  // namespace stamen::engine
