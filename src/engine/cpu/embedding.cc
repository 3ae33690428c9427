// Embedding gather on the CPU: one row copy (or add) per token.
#include <cstring>
#include <string>

#include "engine/cpu/kernels.h"

namespace stamen::engine::cpu {

Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate, float scale) {
  const int64_t rows = table.dim(0);
  const int64_t n = table.dim(1);
  const int32_t* id_data = ids.data<int32_t>();
  for (int64_t t = 0; t < ids.dim(0); ++t) {
    if (id_data[t] < 0 || id_data[t] >= rows) {
      return Status::Error("id " + std::to_string(id_data[t]) + " at index " + std::to_string(t) +
                           " is outside the embedding table of " + std::to_string(rows) + " rows");
    }
  }
  for (int64_t t = 0; t < ids.dim(0); ++t) {
    const float* source = table.data<float>() + static_cast<int64_t>(id_data[t]) * n;
    float* target = output.data<float>() + t * n;
    if (accumulate) {
      for (int64_t i = 0; i < n; ++i) target[i] += source[i] * scale;
    } else if (scale != 1.0f) {
      for (int64_t i = 0; i < n; ++i) target[i] = source[i] * scale;
    } else {
      std::memcpy(target, source, n * sizeof(float));
    }
  }
  return Status();
}

Status SequencePositions(const Tensor& cu_seqlens, int32_t offset, Tensor& positions) {
  const int32_t* bounds = cu_seqlens.data<int32_t>();
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  int32_t* out = positions.data<int32_t>();
  const int64_t tokens = positions.dim(0);
  int64_t t = 0;
  for (int64_t s = 0; s < sequences; ++s) {
    for (; t < bounds[s + 1] && t < tokens; ++t) out[t] = offset + static_cast<int32_t>(t - bounds[s]);
  }
  for (; t < tokens; ++t) out[t] = offset;
  return Status();
}

}  // namespace stamen::engine::cpu
