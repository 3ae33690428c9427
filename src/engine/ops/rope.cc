// Rotary embedding: argument checks and device dispatch.
#include "engine/ops/rope.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status RopeTable(const Tensor& positions, double base, Tensor& table, const RopeScaling& scaling,
                 const Tensor& cu_seqlens) {
  STAMEN_RETURN_IF_ERROR(internal::Expect("rope_table", "positions", positions, DataType::kI32, 1));
  STAMEN_RETURN_IF_ERROR(internal::Expect("rope_table", "table", table, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("rope_table", "table", table, 0, positions.dim(0)));
  if (table.dim(1) % 2 != 0 || !(base > 0)) return Status::Error("rope_table: odd head_dim or base <= 0");
  if (scaling.factor > 0 && !(scaling.high_freq_factor > scaling.low_freq_factor && scaling.low_freq_factor > 0 &&
                              scaling.original_max_position_embeddings > 0)) {
    return Status::Error("rope_table: llama3 scaling needs 0 < low_freq_factor < high_freq_factor and a positive original length");
  }
  const bool dynamic = scaling.factor > 0 && scaling.type == RopeScalingType::kDynamicNtk;
  if (dynamic) {
    if (!(scaling.original_max_position_embeddings > 0) || table.dim(1) <= 2) {
      return Status::Error("rope_table: dynamic NTK scaling needs a positive trained length and more than 2 rotated dimensions");
    }
    STAMEN_RETURN_IF_ERROR(internal::Expect("rope_table", "cu_seqlens", cu_seqlens, DataType::kI32, 1));
    STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("rope_table", {&positions, &table, &cu_seqlens}));
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("rope_table", {&positions, &table}));
  // The kernels read boundaries only when given: the other scalings never look at them.
  const Tensor none;
  const Tensor& bounds = dynamic ? cu_seqlens : none;
  return internal::Dispatch(
      "rope_table", table.device(),
      [&] { return cpu::RopeTable(positions, base, table, scaling, bounds); },
      STAMEN_CUDA_KERNEL([&] { return cuda::RopeTable(positions, base, table, scaling, bounds); }));
}

Status ApplyRope(Tensor& qkv, const QkvLayout& layout, const Tensor& table) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("apply_rope", "qkv", qkv, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("apply_rope", "qkv", qkv, 1, layout.row_size()));
  STAMEN_RETURN_IF_ERROR(internal::Expect("apply_rope", "table", table, DataType::kF32, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("apply_rope", "table", table, 0, qkv.dim(0)));
  if (table.dim(1) % 2 != 0 || table.dim(1) < 2 || table.dim(1) > layout.head_dim) {
    return Status::Error("apply_rope: the table's rotated dimensions must be even and at most head_dim");
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("apply_rope", {&qkv, &table}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("apply_rope", qkv.device(), {&qkv}));
  return internal::Dispatch(
      "apply_rope", qkv.device(),
      [&] { return cpu::ApplyRope(qkv, layout, table); },
      STAMEN_CUDA_KERNEL([&] { return cuda::ApplyRope(qkv, layout, table); }));
}

}  // namespace stamen::engine::ops
