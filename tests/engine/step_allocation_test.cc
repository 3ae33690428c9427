// Engine steps reuse their buffers: after a warm-up step of the largest batch, no step
// allocates activation memory again. What remains per step is small bookkeeping, the same for
// any batch size: the result tensor handed back, and oneDNN's per-execute argument maps (about
// 7 small allocations per GEMM inside `matmul.execute`, which stamen cannot reach). The counts
// and bytes are printed so that a regression in either shows.
//
// The first sight of a token count costs more, and how much depends on the CPU:
// - oneDNN's f32 matmul on an AVX2 machine (Zen 3) is its `gemm:jit` sgemm, whose kernels exist
//   once per process: a new token count cost 2.6–4.5 KiB in all (57–99 allocations) here, most
//   of it the per-shape GEMM state of engine/cpu/gemm.cc. Bound: 16 KiB.
// - On an AVX-512 machine (Zen 5) oneDNN picks `brg:avx512_core` and JIT-builds brgemm kernels
//   for each new row count inside `execute`: 4,711 allocations, 244,160 bytes for one sequence
//   of 7 tokens, measured there. Bound: 1 MiB, four times that.
// Those kernels are oneDNN's and live in the process-wide primitive that every engine shares
// (engine/cpu/gemm.cc), as does the per-shape GEMM state kept per thread. So the test first runs
// each new token count on a second engine of the same model: that builds oneDNN's kernels for
// it on whatever ISA the machine has, and the engine under test then pays, at first sight, only
// what it allocates itself. That bound (16 KiB, nothing per shape was measured on Zen 3) is the
// same on every ISA, and it is the one that would catch an activation buffer.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <numeric>

#include "bench/allocation_counter.h"
#include "engine/cpu/cpu_path.h"
#include "engine/engine.h"

namespace stamen::engine {
namespace {

const std::string kGolden = std::string(STAMEN_SHARED_DIR) + "/models/golden/";

// ../shared's goldens, else this project's (tests/engine/data).
std::string ModelFolder(const std::string& model) {
  return std::filesystem::exists(kGolden + model) ? kGolden + model : std::string(STAMEN_ENGINE_TEST_DATA) + "/" + model;
}

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

// What a token count seen for the first time in the process may cost, oneDNN's kernels
// included, by the instruction set oneDNN runs (see the top).
uint64_t FirstSightBoundOfTheProcess() {
  const bool avx512 = cpu::DetectCpuPath().onednn_isa.rfind("avx512", 0) == 0;
  return avx512 ? 1024 * 1024u : 16 * 1024u;
}

class StepAllocationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StepAllocationTest, WarmStepsAllocateOnlyTheirResult) {
  auto engine = Engine::Load(ModelFolder(GetParam()), {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  // Runs each token count first, so that oneDNN's per-shape kernels exist (see the top).
  auto shape_warmer = Engine::Load(ModelFolder(GetParam()), {.num_threads = 1});
  ASSERT_TRUE(shape_warmer.ok()) << shape_warmer.status().message();
  const bool reranker = GetParam().ends_with("-reranker");
  const StepOptions options =
      reranker ? StepOptions{.output = StepOutput::kScores} : StepOptions{.pooling = ops::PoolingMode::kMean};
  std::cout << "[ cpu      ] " << cpu::DescribeCpuPath() << "\n";
  // Warm-up: the largest batch first, so every buffer reaches its size.
  AllocationsOfStep(**shape_warmer, {130, 64, 16}, options);
  AllocationsOfStep(**engine, {130, 64, 16}, options);
  AllocationsOfStep(**engine, {130, 64, 16}, options);
  std::vector<Allocations> seen;
  for (const auto& lengths : std::vector<std::vector<int32_t>>{{130, 64, 16}, {7}, {64, 64}, {1, 3, 7, 16}}) {
    const Allocations onednn_first = AllocationsOfStep(**shape_warmer, lengths, options);
    // First sight of a token count in this engine: its own per-shape bookkeeping only.
    const Allocations first = AllocationsOfStep(**engine, lengths, options);
    seen.push_back(AllocationsOfStep(**engine, lengths, options));
    std::cout << "[ allocs   ] " << GetParam() << " " << lengths.size() << " sequences: first sight in the process "
              << onednn_first.count << " allocations, " << onednn_first.bytes << " bytes (oneDNN's kernels included); "
              << "first in this engine " << first.count << ", " << first.bytes << " bytes; again " << seen.back().count
              << ", " << seen.back().bytes << " bytes\n";
    // 210 tokens × hidden 64 × 4 bytes is 53,760: any activation buffer would show.
    EXPECT_LT(first.bytes, 16 * 1024u) << GetParam();
    EXPECT_LT(onednn_first.bytes, FirstSightBoundOfTheProcess()) << GetParam() << " on " << cpu::DescribeCpuPath();
  }
  // The same bookkeeping whatever the batch: nothing grows with tokens or sequences.
  for (const Allocations& allocations : seen) EXPECT_LE(allocations.count, seen.front().count + 4) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, StepAllocationTest,
                         ::testing::Values("tiny-bert", "tiny-xlm-roberta-reranker", "tiny-qwen2",
                                           "tiny-deberta-v3-reranker"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace stamen::engine
