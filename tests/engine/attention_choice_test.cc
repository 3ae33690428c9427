// Which CUDA attention kernel serves a model (attention_choice.h): the tensor-core kernel only
// where it is written for the call (no position terms, its head sizes, sm_80 or newer) and not
// held off by STAMEN_CUDA_ATTENTION=scalar; the description /info shows names what runs.
#include "engine/cuda/attention_choice.h"

#include <gtest/gtest.h>

namespace stamen::engine::cuda {
namespace {

TEST(AttentionChoiceTest, TensorCoresForPlainAttentionAtTheirHeadSizesOnAmpereAndNewer) {
  for (int64_t head_dim : {32, 64, 128, 256}) {
    const AttentionKernelChoice choice = ChooseAttentionKernel(head_dim, false, 9, false);
    EXPECT_TRUE(choice.tensor_cores) << head_dim;
    EXPECT_EQ(choice.description, "tensor cores (mma.sync bf16, head_dim " + std::to_string(head_dim) + ")");
  }
  EXPECT_TRUE(ChooseAttentionKernel(64, false, 8, false).tensor_cores);
}

TEST(AttentionChoiceTest, ScalarKernelOtherwiseWithTheReason) {
  const AttentionKernelChoice position = ChooseAttentionKernel(64, true, 9, false);
  EXPECT_FALSE(position.tensor_cores);
  EXPECT_EQ(position.description, "scalar FMA (position terms inside attention)");
  for (int64_t head_dim : {24, 48, 80, 96, 112, 160}) {
    const AttentionKernelChoice odd = ChooseAttentionKernel(head_dim, false, 9, false);
    EXPECT_FALSE(odd.tensor_cores) << head_dim;
    EXPECT_EQ(odd.description, "scalar FMA (no tensor-core kernel for head_dim " + std::to_string(head_dim) + ")");
  }
  const AttentionKernelChoice turing = ChooseAttentionKernel(64, false, 7, false);
  EXPECT_FALSE(turing.tensor_cores);
  EXPECT_EQ(turing.description, "scalar FMA (tensor-core kernel needs sm_80, this GPU is sm_7x)");
  const AttentionKernelChoice forced = ChooseAttentionKernel(64, false, 9, true);
  EXPECT_FALSE(forced.tensor_cores);
  EXPECT_EQ(forced.description, "scalar FMA (STAMEN_CUDA_ATTENTION=scalar)");
}

}  // namespace
}  // namespace stamen::engine::cuda
