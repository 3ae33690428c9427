// The relative position buckets of MPNet and DeBERTa, written once for both backends: the CPU
// kernel and the CUDA kernel call these same inline functions (host and device), so a bucket
// is the same number on either device. This header needs no CUDA headers; under nvcc the
// functions are also __device__.
//
// Why a double logarithm rounded to float: transformers computes these logs in float32, and a
// float log is not the same function everywhere (glibc's logf and CUDA's logf both miss the
// correctly rounded value on some inputs, on different inputs). A double log rounded to float
// is the correctly rounded float log on both devices (barring a double result within one
// double ulp of a float rounding boundary). Against glibc's logf, which these functions used
// before, no MPNet bucket and no clamped DeBERTa row changes: checked for every offset within
// ±20000, MPNet's num_buckets 4..512 with max_distance 8..4096 and DeBERTa's position_buckets
// 2..1024 with max_relative_positions 24..4096.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define STAMEN_HOST_DEVICE __host__ __device__
#else
#define STAMEN_HOST_DEVICE
#endif

namespace stamen::engine::ops {

// log(x), correctly rounded to float32 (see the file comment).
STAMEN_HOST_DEVICE inline float RoundedLog(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<float>(::log(x));
#else
  return static_cast<float>(std::log(x));
#endif
}

// The bucket of `relative_position` = j − i (key minus query), exactly as Hugging Face's
// MPNetEncoder.relative_position_bucket (T5's bidirectional buckets): keys before the query
// take buckets [0, num_buckets/2), keys after it [num_buckets/2, num_buckets); distances below
// num_buckets/4 have a bucket each, longer ones share logarithmic buckets up to max_distance,
// with torch's float32 arithmetic and truncation.
STAMEN_HOST_DEVICE inline int32_t RelativePositionBucket(int64_t relative_position, int32_t num_buckets,
                                                         int32_t max_distance) {
  // transformers, with n = −relative_position and num_buckets halved:
  //   bucket = (n < 0) · num_buckets;  n = |n|;  max_exact = num_buckets // 2
  //   n < max_exact: bucket + n
  //   else: bucket + min(max_exact + long(log(n.float() / max_exact) / math.log(max_distance /
  //         max_exact) · (num_buckets − max_exact)), num_buckets − 1)
  // torch computes the large case in float32 (the Python double math.log(...) is rounded to
  // float32 first) and long() truncates toward zero. The rounding matters where the quotient is
  // an integer (n = 16, 32, 64 for MPNet: exactly 2, 4, 6 in float32, which truncate up, not down).
  const int32_t half = num_buckets / 2;
  const int32_t max_exact = half / 2;
  const int64_t n = -relative_position;
  const int32_t bucket = n < 0 ? half : 0;
  const int64_t distance = n < 0 ? -n : n;
  if (distance < max_exact) return bucket + static_cast<int32_t>(distance);
  const float log_span = RoundedLog(static_cast<double>(max_distance) / max_exact);
  const float ratio = static_cast<float>(distance) / static_cast<float>(max_exact);
  const float scaled = RoundedLog(ratio) / log_span * static_cast<float>(half - max_exact);
  const int64_t large = max_exact + static_cast<int64_t>(scaled);
  return bucket + static_cast<int32_t>(large < half - 1 ? large : half - 1);
}

// transformers' make_log_bucket_position (relative_position = i − j, query minus key): distances
// below position_buckets / 2 stay as they are, longer ones share logarithmic buckets reaching
// position_buckets − 1 at max_relative_positions − 1, with torch's float32 arithmetic (ceil).
STAMEN_HOST_DEVICE inline int32_t LogBucketPosition(int64_t relative_position, int32_t position_buckets,
                                                    int32_t max_relative_positions) {
  // transformers, in torch's float32 (abs_pos / mid is a float32 division; the Python double
  // (max_position − 1) / mid becomes a float32 tensor before its log):
  //   |rel| <= mid: rel
  //   else: sign(rel) · (ceil(log(|rel| / mid) / log((max_position − 1) / mid) · (mid − 1)) + mid)
  const int32_t mid = position_buckets / 2;
  const int64_t distance = relative_position < 0 ? -relative_position : relative_position;
  if (distance <= mid) return static_cast<int32_t>(relative_position);
  const float log_span = RoundedLog(static_cast<float>(static_cast<double>(max_relative_positions - 1) / mid));
  const float ratio = static_cast<float>(distance) / static_cast<float>(mid);
  const float bucket = ::ceilf(RoundedLog(ratio) / log_span * static_cast<float>(mid - 1)) + static_cast<float>(mid);
  return static_cast<int32_t>(relative_position < 0 ? -bucket : bucket);
}

// The row of DeBERTa's projected relative embeddings that query i reads for key j, with
// relative_position = i − j: clamp(bucket + span, 0, 2·span − 1), bucket being LogBucketPosition
// with position_buckets > 0, else i − j itself.
STAMEN_HOST_DEVICE inline int32_t DisentangledPositionRow(int64_t relative_position, int32_t span,
                                                          int32_t position_buckets, int32_t max_relative_positions) {
  const int64_t bucket = position_buckets > 0
                             ? LogBucketPosition(relative_position, position_buckets, max_relative_positions)
                             : relative_position;
  const int64_t row = bucket + span;
  const int64_t last = 2 * int64_t{span} - 1;
  return static_cast<int32_t>(row < 0 ? 0 : (row > last ? last : row));
}

}  // namespace stamen::engine::ops
