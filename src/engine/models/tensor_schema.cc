// The schema visitors that touch weights: the loader.
#include "engine/models/tensor_schema.h"

#include "engine/models/model.h"

namespace stamen::engine {

TensorLoader::TensorLoader(const WeightStore& weights, const Placement& placement)
    : weights_(weights), placement_(placement) {}

bool TensorLoader::Wanted(const TensorSpec& spec) const {
  switch (spec.presence) {
    case TensorPresence::kRequired:
      return true;
    case TensorPresence::kOptional:
      return weights_.Contains(spec.name);
    case TensorPresence::kUnread:
      return false;
  }
  return true;
}

void TensorLoader::Keep(StatusOr<engine::Tensor> tensor, engine::Tensor& target) {
  if (!tensor.ok()) {
    status_ = tensor.status();
    return;
  }
  auto placed = model_weights::Place(*tensor, placement_);
  if (placed.ok()) {
    target = std::move(placed.value());
  } else {
    status_ = placed.status();
  }
}

void TensorLoader::Tensor(engine::Tensor& target, const TensorSpec& spec) {
  if (!status_.ok() || !Wanted(spec)) return;
  Keep(weights_.Load(spec.name, spec.shape), target);
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
  Keep(model_weights::LoadStacked(weights_, names, rows, columns), target);
}

}  // namespace stamen::engine
