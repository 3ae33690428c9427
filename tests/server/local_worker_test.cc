// The worker's start: it runs warm-up steps before it takes requests, so that the first
// request does not pay the CPU engine's one-time costs (packed weights, generated kernels).
#include "server/local_worker.h"

#include <gtest/gtest.h>

#include "engine/cpu/prepared_weights.h"
#include "tests/server/test_models.h"

namespace stamen::server {
namespace {

LocalWorkerOptions Options(const std::string& model_dir) {
  LocalWorkerOptions options;
  options.model_dir = model_dir;
  options.scheduler = {.max_batch_tokens = 512, .max_batch_sequences = 64, .max_queued_tokens = 1 << 20};
  options.engine.num_threads = 1;
  return options;
}

TEST(LocalWorkerTest, WarmUpPreparesTheWeightsBeforeTheFirstRequest) {
  metrics::Registry registry;
  const size_t before = engine::cpu::PreparedWeightBytes();
  auto embedder = LocalWorker::Load(Options(testing::TinyEmbedder()), registry);
  ASSERT_TRUE(embedder.ok()) << embedder.status().message();
  // The short warm-up step packed every weight of the small-m GEMM.
  const size_t after_embedder = engine::cpu::PreparedWeightBytes();
  EXPECT_GT(after_embedder, before);
  // A reranker warms up through its scoring head.
  metrics::Registry reranker_registry;
  auto reranker = LocalWorker::Load(Options(testing::TinyReranker()), reranker_registry);
  ASSERT_TRUE(reranker.ok()) << reranker.status().message();
  EXPECT_GT(engine::cpu::PreparedWeightBytes(), after_embedder);
}

}  // namespace
}  // namespace stamen::server
