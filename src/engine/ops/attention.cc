// Attention: cu_seqlens validation, DeBERTa's position row, argument checks and device dispatch
// (the bucket formulas themselves are in position_buckets.h, shared with the CUDA kernel).
#include "engine/ops/attention.h"

#include <cmath>
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

std::vector<float> AlibiSlopes(int64_t num_heads) {
  // The remote code's get_slopes_power_of_2(n): start = 2^(−2^−(log2 n − 3)) = 2^(−8/n), ratio = start.
  const auto power_of_two_slopes = [](int64_t n) {
    std::vector<float> slopes;
    const double start = std::exp2(-8.0 / static_cast<double>(n));
    for (int64_t h = 0; h < n; ++h) slopes.push_back(static_cast<float>(start * std::pow(start, h)));
    return slopes;
  };
  if (num_heads <= 0) return {};
  int64_t power = 1;
  while (power * 2 <= num_heads) power *= 2;
  std::vector<float> slopes = power_of_two_slopes(power);
  if (power == num_heads) return slopes;
  // AlibiSlopes(2p)[0::2] is power_of_two_slopes(2p)[0::2]: 2p is a power of two.
  const std::vector<float> doubled = power_of_two_slopes(2 * power);
  for (int64_t h = 0; static_cast<int64_t>(slopes.size()) < num_heads; h += 2) slopes.push_back(doubled[h]);
  return slopes;
}

int32_t DisentangledPositionIndex(int64_t relative_position, const DisentangledPositionBias& bias) {
  return DisentangledPositionRow(relative_position, bias.span, bias.position_buckets, bias.max_relative_positions);
}

namespace {

Status CheckDisentangledBias(const DisentangledPositionBias& bias, const Tensor& qkv, const QkvLayout& layout) {
  if (bias.span < 1) return Status::Error("attention: disentangled bias span must be positive");
  if (bias.position_buckets > 0 && (bias.position_buckets < 2 || bias.max_relative_positions - 1 <= bias.position_buckets / 2)) {
    return Status::Error("attention: position_buckets " + std::to_string(bias.position_buckets) +
                         " needs max_relative_positions above position_buckets / 2 + 1, got " +
                         std::to_string(bias.max_relative_positions));
  }
  if (bias.query_column < 0 && bias.key_column < 0) {
    return Status::Error("attention: disentangled bias without a c2p or p2c term");
  }
  STAMEN_RETURN_IF_ERROR(internal::Expect("attention", "disentangled_bias.projections", bias.projections, qkv.dtype(), 2));
  STAMEN_RETURN_IF_ERROR(
      internal::ExpectDim("attention", "disentangled_bias.projections", bias.projections, 0, 2 * int64_t{bias.span}));
  const int64_t width = layout.num_heads * layout.head_dim;
  for (const int64_t column : {bias.query_column, bias.key_column}) {
    if (column >= 0 && column + width > bias.projections.dim(1)) {
      return Status::Error("attention: disentangled bias projections have " + std::to_string(bias.projections.dim(1)) +
                           " columns, too few for " + std::to_string(width) + " from column " + std::to_string(column));
    }
  }
  return internal::ExpectSameDevice("attention", {&qkv, &bias.projections});
}

}  // namespace

Status Attention(const Tensor& qkv, const Tensor& cu_seqlens, const QkvLayout& layout,
                 const AttentionOptions& options, Tensor& output) {
  if (layout.num_heads <= 0 || layout.num_kv_heads <= 0 || layout.head_dim <= 0 ||
      layout.num_heads % layout.num_kv_heads != 0) {
    return Status::Error("attention: " + std::to_string(layout.num_heads) + " query heads cannot share " +
                         std::to_string(layout.num_kv_heads) + " key/value heads");
  }
  if (options.window < 0) return Status::Error("attention: window " + std::to_string(options.window) + " is negative");
  if (!(options.scale >= 0.0f) || !std::isfinite(options.scale)) {
    return Status::Error("attention: scale " + std::to_string(options.scale) + " is not a finite value >= 0");
  }
  if (!(options.softcap >= 0.0f) || !std::isfinite(options.softcap)) {
    return Status::Error("attention: softcap " + std::to_string(options.softcap) + " is not a finite value >= 0");
  }
  if (options.softcap > 0.0f) {
    if (options.position_bias != nullptr || options.disentangled_bias != nullptr || options.alibi != nullptr) {
      return Status::Error("attention: logit soft-capping does not combine with a position bias");
    }
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
  if (const RelativePositionBias* bias = options.position_bias; bias != nullptr) {
    if (bias->num_buckets < 4 || bias->max_distance <= bias->num_buckets / 4) {
      return Status::Error("attention: relative position bias needs num_buckets >= 4 and max_distance > "
                           "num_buckets / 4, got " + std::to_string(bias->num_buckets) + " and " +
                           std::to_string(bias->max_distance));
    }
    STAMEN_RETURN_IF_ERROR(internal::Expect("attention", "position_bias.table", bias->table, DataType::kF32, 2));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim("attention", "position_bias.table", bias->table, 0, bias->num_buckets));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim("attention", "position_bias.table", bias->table, 1, layout.num_heads));
    STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("attention", {&qkv, &bias->table}));
  }
  if (options.disentangled_bias != nullptr) {
    STAMEN_RETURN_IF_ERROR(CheckDisentangledBias(*options.disentangled_bias, qkv, layout));
  }
  if (const AlibiBias* alibi = options.alibi; alibi != nullptr) {
    if (options.position_bias != nullptr || options.disentangled_bias != nullptr) {
      return Status::Error("attention: ALiBi does not combine with another position bias");
    }
    STAMEN_RETURN_IF_ERROR(internal::Expect("attention", "alibi.slopes", alibi->slopes, DataType::kF32, 1));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim("attention", "alibi.slopes", alibi->slopes, 0, layout.num_heads));
    STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("attention", {&qkv, &alibi->slopes}));
  }
  if (options.key_lengths != nullptr) {
    STAMEN_RETURN_IF_ERROR(internal::Expect("attention", "key_lengths", *options.key_lengths, DataType::kI32, 1));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim("attention", "key_lengths", *options.key_lengths, 0, cu_seqlens.dim(0) - 1));
    if (qkv.device() != Device::kCpu) return Status::Error("attention: key_lengths run on the CPU only");
  }
  return internal::Dispatch(
      "attention", qkv.device(),
      [&] { return cpu::Attention(qkv, cu_seqlens, layout, options, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::Attention(qkv, cu_seqlens, layout, options, output); }));
}

}  // namespace stamen::engine::ops
