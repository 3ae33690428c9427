// Attention: cu_seqlens validation, argument checks and device dispatch.
#include "engine/ops/attention.h"

#include <string>

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status ValidateCuSeqlens(std::span<const int32_t> cu_seqlens, int64_t total_tokens, bool allow_empty) {
  if (cu_seqlens.empty() || cu_seqlens.front() != 0) {
    return Status::Error("cumulative sequence lengths must start with 0");
  }
  for (size_t i = 1; i < cu_seqlens.size(); ++i) {
    if (cu_seqlens[i] < cu_seqlens[i - 1] || (!allow_empty && cu_seqlens[i] == cu_seqlens[i - 1])) {
      return Status::Error("sequence " + std::to_string(i - 1) + " has length " +
                           std::to_string(int64_t{cu_seqlens[i]} - cu_seqlens[i - 1]) +
                           (allow_empty ? "" : "; every sequence needs at least one token"));
    }
  }
  if (cu_seqlens.back() != total_tokens) {
    return Status::Error("cumulative sequence lengths end at " + std::to_string(cu_seqlens.back()) + " but there are " +
                         std::to_string(total_tokens) + " tokens");
  }
  return Status();
}

Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const QkvLayout& layout, bool causal,
                 Tensor& output) {
  if (layout.num_heads <= 0 || layout.num_kv_heads <= 0 || layout.head_dim <= 0 ||
      layout.num_heads % layout.num_kv_heads != 0) {
    return Status::Error("attention: " + std::to_string(layout.num_heads) + " query heads cannot share " +
                         std::to_string(layout.num_kv_heads) + " key/value heads");
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("attention", "qkv", qkv, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("attention", "qkv", qkv, 1, layout.row_size()));
  STAMEN_RETURN_IF_ERROR(internal::Expect("attention", "cu_seqlens", cu_seqlens, DataType::kI32, 1));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("attention", "output", output, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("attention", "output", output, 0, qkv.dim(0)));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("attention", "output", output, 1, layout.num_heads * layout.head_dim));
  if (cu_seqlens.dim(0) < 1) return Status::Error("attention: cu_seqlens is empty");
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("attention", {&qkv, &cu_seqlens, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("attention", qkv.device(), {&qkv, &output}));
  return internal::Dispatch(
      "attention", qkv.device(),
      [&] { return cpu::Attention(qkv, cu_seqlens, layout, causal, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Attention(qkv, cu_seqlens, layout, causal, output); }));
}

}  // namespace stamen::engine::ops
