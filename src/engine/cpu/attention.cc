// Ragged attention on the CPU. For each sequence and key/value head, the head's keys and
// values are first copied out of the packed qkv rows into contiguous scratch (they sit
// row_size floats apart), then every query head of the group scores against them: per query,
// one dot product per key, a max-subtracted softmax in fp32, and one axpy per key.
// Cost is O(L² · d) per head; a blocked (gemm-shaped) version is the follow-up for long inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/cpu/kernels.h"
#include "engine/cpu/vector_math.h"

namespace stamen::engine::cpu {
namespace {

// Reused across calls (one per thread): grows to the longest sequence seen, then never
// allocates again.
struct AttentionScratch {
  std::vector<float> keys;
  std::vector<float> values;
  std::vector<float> scores;
};

AttentionScratch& Scratch() {
  thread_local AttentionScratch scratch;
  return scratch;
}

}  // namespace

void Attention(const Tensor& qkv, const Tensor& cu_seqlens, const ops::QkvLayout& layout, bool causal,
               Tensor& output) {
  const int64_t d = layout.head_dim;
  const int64_t row_size = layout.row_size();
  const int64_t group = layout.num_heads / layout.num_kv_heads;
  const int64_t output_row = layout.num_heads * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int32_t* bounds = cu_seqlens.data<int32_t>();
  const float* data = qkv.data<float>();

  // One work item per (sequence, key/value head): items are independent, so threads split them.
  const int64_t sequences = cu_seqlens.dim(0) - 1;
  const int64_t items = sequences * layout.num_kv_heads;
#pragma omp parallel for schedule(dynamic, 1) if (items > 1 && qkv.dim(0) * row_size > 65536)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t s = item / layout.num_kv_heads;
    const int64_t kv_head = item % layout.num_kv_heads;
    const int64_t begin = bounds[s];
    const int64_t length = bounds[s + 1] - begin;
    if (length == 0) continue;
    AttentionScratch& scratch = Scratch();
    if (static_cast<int64_t>(scratch.keys.size()) < length * d) {
      scratch.keys.resize(length * d);
      scratch.values.resize(length * d);
    }
    if (static_cast<int64_t>(scratch.scores.size()) < length) scratch.scores.resize(length);
    const int64_t key_offset = (layout.num_heads + kv_head) * d;
    const int64_t value_offset = (layout.num_heads + layout.num_kv_heads + kv_head) * d;
    for (int64_t j = 0; j < length; ++j) {
      const float* row = data + (begin + j) * row_size;
      std::memcpy(&scratch.keys[j * d], row + key_offset, d * sizeof(float));
      std::memcpy(&scratch.values[j * d], row + value_offset, d * sizeof(float));
    }
    for (int64_t head = kv_head * group; head < (kv_head + 1) * group; ++head) {
      for (int64_t i = 0; i < length; ++i) {
        const float* query = data + (begin + i) * row_size + head * d;
        const int64_t visible = causal ? i + 1 : length;
        float maximum = -INFINITY;
        for (int64_t j = 0; j < visible; ++j) {
          scratch.scores[j] = Dot(query, &scratch.keys[j * d], d) * scale;
          maximum = std::max(maximum, scratch.scores[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < visible; ++j) {
          scratch.scores[j] = std::exp(scratch.scores[j] - maximum);
          sum += scratch.scores[j];
        }
        float* out = output.data<float>() + (begin + i) * output_row + head * d;
        std::fill(out, out + d, 0.0f);
        for (int64_t j = 0; j < visible; ++j) Axpy(scratch.scores[j], &scratch.values[j * d], out, d);
        Scale(1.0f / sum, out, d);
      }
    }
  }
}

}  // namespace stamen::engine::cpu
