// The CUDA runner's GPU-free decisions: the graph inflection criterion (graph against eager wall
// time at one configuration), sequence buckets, clamped graph-byte accounting and pointer
// alignment classes for cuBLASLt plans.
#include "engine/cuda/graph_policy.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace stamen::engine::cuda {
namespace {

TEST(GraphPolicyTest, GraphPaysOffOnlyWhenReplayBeatsEagerAtTheSameConfiguration) {
  // Launch-bound: eager 2.0 ms with idle gaps, replay 0.8 ms.
  EXPECT_TRUE(GraphPaysOff({.eager_seconds = 2.0e-3, .graph_seconds = 0.8e-3}));
  // GPU-bound: the replay saves nothing beyond noise.
  EXPECT_FALSE(GraphPaysOff({.eager_seconds = 10.0e-3, .graph_seconds = 9.9e-3}));
  EXPECT_FALSE(GraphPaysOff({.eager_seconds = 10.0e-3, .graph_seconds = 10.5e-3}));
  // Just past the minimum gain.
  EXPECT_TRUE(GraphPaysOff({.eager_seconds = 10.0e-3, .graph_seconds = 10.0e-3 * (1.0 - kGraphMinimumGain) - 1e-6}));
  // Half-measured configurations decide nothing (and count as no gain).
  EXPECT_FALSE(GraphPaysOff({.eager_seconds = 2.0e-3, .graph_seconds = 0.0}));
  EXPECT_FALSE(GraphPaysOff({.eager_seconds = 0.0, .graph_seconds = 1.0e-3}));
}

TEST(GraphPolicyTest, InflectionStartsAtTheCeilingAndFallsOnlyOnALoss) {
  InflectionEstimate estimate(/*ceiling=*/8192, /*floor=*/256);
  EXPECT_EQ(estimate.limit(), 8192);
  // Wins never lower it (the old rule lowered the limit on the first measured step of at
  // least 256 tokens, because an eager step's GPU time always exceeds its launch time).
  estimate.Record(256, true);
  estimate.Record(512, true);
  EXPECT_EQ(estimate.limit(), 8192);
  estimate.Record(2048, false);
  EXPECT_EQ(estimate.limit(), 2047);
  estimate.Record(1536, false);
  EXPECT_EQ(estimate.limit(), 1535);
}

TEST(GraphPolicyTest, InflectionRisesAgainWhenGraphsWinAboveALoss) {
  InflectionEstimate estimate(8192, 256);
  estimate.Record(1024, false);
  EXPECT_EQ(estimate.limit(), 1023);
  // A loss below a measured win is noise: the win at more tokens stands.
  estimate.Record(1024, true);
  EXPECT_EQ(estimate.limit(), 8192);
  estimate.Record(4096, false);
  EXPECT_EQ(estimate.limit(), 4095);
  estimate.Record(512, false);  // below the win at 1024: ignored
  EXPECT_EQ(estimate.limit(), 4095);
}

TEST(GraphPolicyTest, InflectionStaysWithinFloorAndCeiling) {
  InflectionEstimate estimate(8192, 256);
  estimate.Record(64, false);
  EXPECT_EQ(estimate.limit(), 256);
  InflectionEstimate low_ceiling(128, 256);  // max_tokens set below the floor: the ceiling wins
  low_ceiling.Record(64, false);
  EXPECT_EQ(low_ceiling.limit(), 128);
}

TEST(GraphPolicyTest, SequenceCountsShareBuckets) {
  EXPECT_EQ(SequenceBucket(1, 512), 1);
  EXPECT_EQ(SequenceBucket(2, 512), 2);
  EXPECT_EQ(SequenceBucket(3, 512), 4);
  EXPECT_EQ(SequenceBucket(5, 512), 8);
  EXPECT_EQ(SequenceBucket(100, 512), 128);
  EXPECT_EQ(SequenceBucket(300, 512), 512);
  EXPECT_EQ(SequenceBucket(300, 400), 400);  // capped at max_sequences, never below the count
  EXPECT_EQ(SequenceBucket(450, 400), 450);
  // 1..512 sequences: ten buckets instead of 512 graphs per token bucket.
  int buckets = 0;
  for (int64_t s = 1, last = 0; s <= 512; ++s) {
    const int64_t bucket = SequenceBucket(s, 512);
    EXPECT_GE(bucket, s);
    EXPECT_LT(bucket, 2 * s);
    if (bucket != last) ++buckets;
    last = bucket;
  }
  EXPECT_EQ(buckets, 10);
}

TEST(GraphPolicyTest, LedgerReleaseClampsAtZero) {
  GraphLedger ledger;
  ledger.Hold(4096);
  ledger.Hold(100);
  ledger.Release(4096);
  EXPECT_EQ(ledger.bytes(), 100u);
  // A graph dropped twice (stale, then evicted) must not wrap the counter.
  ledger.Release(4096);
  EXPECT_EQ(ledger.bytes(), 0u);
  ledger.Release(1);
  EXPECT_EQ(ledger.bytes(), 0u);
}

TEST(GraphPolicyTest, PointerAlignmentClasses) {
  alignas(256) static unsigned char buffer[1024];
  EXPECT_EQ(PointerAlignment(buffer), 256u);
  EXPECT_EQ(PointerAlignment(buffer + 512), 256u);
  EXPECT_EQ(PointerAlignment(buffer + 2), 2u);
  EXPECT_EQ(PointerAlignment(buffer + 16), 16u);
  EXPECT_EQ(PointerAlignment(buffer + 96), 32u);
  EXPECT_EQ(PointerAlignment(buffer + 1), 1u);
  EXPECT_EQ(PointerAlignment(nullptr), 256u);
}

}  // namespace
}  // namespace stamen::engine::cuda
