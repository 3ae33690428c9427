// Engine steps reuse their buffers: after a warm-up step of the largest batch, no step
// allocates activation memory again. What remains per step is small bookkeeping, the same for
// any batch size: the result tensor handed back, and oneDNN's per-execute argument maps (about
// 7 small allocations per GEMM inside `matmul.execute`, which stamen cannot reach). The counts
// and bytes are printed so that a regression in either shows.
#include <gtest/gtest.h>

#include <iostream>
#include <numeric>

#include "bench/allocation_counter.h"
#include "engine/engine.h"

namespace stamen::engine {
namespace {

const std::string kGolden = std::string(STAMEN_SHARED_DIR) + "/models/golden/";

struct Allocations {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

// Counts the allocations of one step of `lengths` (ids 5, 6, 7, …).
Allocations AllocationsOfStep(Engine& engine, const std::vector<int32_t>& lengths, const StepOptions& options) {
  std::vector<int32_t> cu_seqlens = {0};
  for (int32_t length : lengths) cu_seqlens.push_back(cu_seqlens.back() + length);
  std::vector<int32_t> ids(cu_seqlens.back());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = 5 + static_cast<int32_t>(i % 50);
  const uint64_t count = bench::AllocationCount();
  const uint64_t bytes = bench::AllocatedBytes();
  {
    auto result = engine.Step({ids, cu_seqlens, {}}, options);
    EXPECT_TRUE(result.ok() && result->Wait().ok());
  }
  return {bench::AllocationCount() - count, bench::AllocatedBytes() - bytes};
}

class StepAllocationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StepAllocationTest, WarmStepsAllocateOnlyTheirResult) {
  auto engine = Engine::Load(kGolden + GetParam(), {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const StepOptions options = GetParam() == "tiny-xlm-roberta-reranker" ? StepOptions{.output = StepOutput::kScores}
                                                                          : StepOptions{.pooling = ops::PoolingMode::kMean};
  // Warm-up: the largest batch first, so every buffer reaches its size.
  AllocationsOfStep(**engine, {130, 64, 16}, options);
  AllocationsOfStep(**engine, {130, 64, 16}, options);
  std::vector<Allocations> seen;
  for (const auto& lengths : std::vector<std::vector<int32_t>>{{130, 64, 16}, {7}, {64, 64}, {1, 3, 7, 16}}) {
    // First sight of a token count also makes the GEMMs' small per-shape descriptors.
    const Allocations first = AllocationsOfStep(**engine, lengths, options);
    seen.push_back(AllocationsOfStep(**engine, lengths, options));
    std::cout << "[ allocs   ] " << GetParam() << " " << lengths.size() << " sequences: first " << first.count
              << " allocations, " << first.bytes << " bytes; again " << seen.back().count << ", "
              << seen.back().bytes << " bytes\n";
    // 210 tokens × hidden 64 × 4 bytes is 53,760: any activation buffer would show.
    EXPECT_LT(first.bytes, 16 * 1024u) << GetParam();
  }
  // The same bookkeeping whatever the batch: nothing grows with tokens or sequences.
  for (const Allocations& allocations : seen) EXPECT_LE(allocations.count, seen.front().count + 4) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, StepAllocationTest,
                         ::testing::Values("tiny-bert", "tiny-xlm-roberta-reranker", "tiny-qwen2"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace stamen::engine
