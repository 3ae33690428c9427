// Embedding gather: argument checks and device dispatch.
#include "engine/ops/embedding.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate, float scale) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gather", "table", table, 2));
  STAMEN_RETURN_IF_ERROR(internal::Expect("gather", "ids", ids, DataType::kI32, 1));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("gather", "output", output, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gather", "output", output, 0, ids.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("gather", "output", output, 1, table.dim(1)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("gather", {&table, &ids, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("gather", table.device(), {&table, &output}));
  return internal::Dispatch(
      "gather", table.device(),
      [&] { return cpu::Gather(table, ids, output, accumulate, scale); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Gather(table, ids, output, accumulate, scale); }));
}

Status SequencePositions(const Tensor& cu_seqlens, int32_t offset, Tensor& positions) {
  STAMEN_RETURN_IF_ERROR(internal::Expect("sequence_positions", "cu_seqlens", cu_seqlens, DataType::kI32, 1));
  STAMEN_RETURN_IF_ERROR(internal::Expect("sequence_positions", "positions", positions, DataType::kI32, 1));
  if (cu_seqlens.dim(0) < 1) return Status::Error("sequence_positions: cu_seqlens is empty");
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("sequence_positions", {&cu_seqlens, &positions}));
  return internal::Dispatch(
      "sequence_positions", positions.device(),
      [&] { return cpu::SequencePositions(cu_seqlens, offset, positions); },
      STAMEN_CUDA_KERNEL([&] { return cuda::SequencePositions(cu_seqlens, offset, positions); }));
}

}  // namespace stamen::engine::ops
