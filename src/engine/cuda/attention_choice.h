// Which CUDA attention kernel serves a model: the tensor-core kernel (tensor_core_attention.cu)
// or the scalar one (attention.cu). Decided by a pure function, so that CPU tests hold the rule
// and the engine can say in /info and its start log what actually runs.
// No CUDA headers: tests/engine builds this file without the toolkit.
#pragma once

#include <cstdint>
#include <string>

namespace stamen::engine::cuda {

struct AttentionKernelChoice {
  bool tensor_cores = false;
  std::string description;  // e.g. "tensor cores (mma.sync bf16, head_dim 64)"
};

// head_dim: the model's; position_terms: MPNet's relative bias or DeBERTa's disentangled
// terms inside attention (JinaBERT's ALiBi is not one: the tensor-core kernel adds it); compute_major: the GPU's compute capability major version;
// scalar_forced: ScalarAttentionForced().
AttentionKernelChoice ChooseAttentionKernel(int64_t head_dim, bool position_terms, int compute_major,
                                            bool scalar_forced);

// STAMEN_CUDA_ATTENTION=scalar keeps every call on the scalar kernel (to compare the two on one
// GPU, or to step around a tensor-core fault); read once.
bool ScalarAttentionForced();

}  // namespace stamen::engine::cuda
