#include "engine/cuda/attention_choice.h"

#include <cstdlib>
#include <string_view>

namespace stamen::engine::cuda {

AttentionKernelChoice ChooseAttentionKernel(int64_t head_dim, bool position_terms, int compute_major,
                                            bool scalar_forced) {
  const std::string scalar = "scalar FMA";
  if (scalar_forced) return {false, scalar + " (STAMEN_CUDA_ATTENTION=scalar)"};
  if (position_terms) return {false, scalar + " (position terms inside attention)"};
  if (head_dim != 32 && head_dim != 64 && head_dim != 128 && head_dim != 256) {
    return {false, scalar + " (no tensor-core kernel for head_dim " + std::to_string(head_dim) + ")"};
  }
  // mma.sync with bf16 operands arrived with Ampere (sm_80).
  if (compute_major < 8) {
    return {false, scalar + " (tensor-core kernel needs sm_80, this GPU is sm_" + std::to_string(compute_major) + "x)"};
  }
  return {true, "tensor cores (mma.sync bf16, head_dim " + std::to_string(head_dim) + ")"};
}

bool ScalarAttentionForced() {
  static const bool forced = [] {
    const char* value = std::getenv("STAMEN_CUDA_ATTENTION");
    return value != nullptr && std::string_view(value) == "scalar";
  }();
  return forced;
}

}  // namespace stamen::engine::cuda
