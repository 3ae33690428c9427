// Embedding gather: argument checks and device dispatch.
#include "engine/ops/embedding.h"

#include "engine/cpu/kernels.h"
#include "engine/ops/checks.h"

namespace stamen::engine::ops {

Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate) {
  STAMEN_RETURN_IF_ERROR(internal::Expect("gather", "table", table, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("gather", "ids", ids, DataType::kI32, 1));
  STAMEN_RETURN_IF_ERROR(internal::Expect("gather", "output", output, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gather", "output", output, 0, ids.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gather", "output", output, 1, table.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("gather", {&table, &ids, &output}));
  if (table.device() == Device::kCpu) return cpu::Gather(table, ids, output, accumulate);
  return internal::DeviceNotBuilt("gather", table.device());
}

}  // namespace stamen::engine::ops
