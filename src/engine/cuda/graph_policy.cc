// The CUDA runner's GPU-free decisions (graph_policy.h).
#include "engine/cuda/graph_policy.h"

#include <algorithm>

namespace stamen::engine::cuda {

bool GraphPaysOff(const ConfigurationTiming& timing) {
  if (!timing.complete()) return false;
  return timing.graph_seconds < timing.eager_seconds * (1.0 - kGraphMinimumGain);
}

void InflectionEstimate::Record(int64_t tokens, bool graph_paid_off) {
  if (graph_paid_off) {
    highest_win_ = std::max(highest_win_, tokens);
  } else {
    losses_.insert(tokens);
  }
}

int64_t InflectionEstimate::limit() const {
  const auto loss = losses_.upper_bound(highest_win_);
  if (loss == losses_.end()) return ceiling_;
  return std::min(ceiling_, std::max(floor_, *loss - 1));
}
int64_t SequenceBucket(int64_t sequences, int64_t max_sequences) {
  int64_t bucket = 1;
  while (bucket < sequences) bucket *= 2;
  return std::max(sequences, std::min(bucket, max_sequences));
}

uint32_t PointerAlignment(const void* address) {
  const auto value = reinterpret_cast<uintptr_t>(address);
  if (value == 0) return 256;
  const uintptr_t lowest = value & (~value + 1);
  return static_cast<uint32_t>(std::min<uintptr_t>(lowest, 256));
}

}  // namespace stamen::engine::cuda
