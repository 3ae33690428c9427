// The Prometheus metrics alone: what the text format (version 0.0.4) requires of a rendering —
// cumulative `le` buckets whose bound includes an observation equal to it, a +Inf bucket equal
// to _count, one HELP and TYPE line a name with its samples together, label sets joined by
// commas — and a scoped registry's labels added to every series it registers.
#include "common/metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace stamen::metrics {
namespace {

bool Contains(const std::string& text, const std::string& line) { return text.find(line) != std::string::npos; }

TEST(MetricsTest, ExponentialBucketsGrowByTheirFactor) {
  EXPECT_EQ(ExponentialBuckets(0.5, 2, 4), (std::vector<double>{0.5, 1, 2, 4}));
  EXPECT_TRUE(ExponentialBuckets(1, 2, 0).empty());
}

TEST(MetricsTest, HistogramBucketsAreInclusiveUpperBounds) {
  Histogram histogram({4, 1, 2});  // sorted on construction
  for (double value : {0.5, 1.0, 1.5, 2.0, 3.0, 100.0}) histogram.Observe(value);
  EXPECT_EQ(histogram.upper_bounds(), (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(histogram.bucket_count(0), 2u);  // 0.5, 1 (le="1" includes 1)
  EXPECT_EQ(histogram.bucket_count(1), 2u);  // 1.5, 2
  EXPECT_EQ(histogram.bucket_count(2), 1u);  // 3
  EXPECT_EQ(histogram.bucket_count(3), 1u);  // 100: +Inf
  EXPECT_EQ(histogram.count(), 6u);
  EXPECT_DOUBLE_EQ(histogram.sum(), 108.0);
}

TEST(MetricsTest, RenderingFollowsTheTextFormat) {
  Registry registry;
  Counter& ok = registry.AddCounter("requests_total", "Requests by outcome", "status=\"ok\"");
  Gauge& depth = registry.AddGauge("queue_depth", "Sequences waiting");
  Counter& failed = registry.AddCounter("requests_total", "", "status=\"error\"");  // apart from its name's first
  Histogram& seconds = registry.AddHistogram("request_seconds", "Request time", {0.1, 1}, "route=\"/embed\"");
  ok.Increment(3);
  failed.Increment();
  depth.Set(7);
  depth.Add(-2);
  seconds.Observe(0.05);
  seconds.Observe(0.1);
  seconds.Observe(5);
  const std::string text = registry.Render();
  EXPECT_EQ(text,
            "# HELP requests_total Requests by outcome\n"
            "# TYPE requests_total counter\n"
            "requests_total{status=\"ok\"} 3\n"
            "requests_total{status=\"error\"} 1\n"
            "# HELP queue_depth Sequences waiting\n"
            "# TYPE queue_depth gauge\n"
            "queue_depth 5\n"
            "# HELP request_seconds Request time\n"
            "# TYPE request_seconds histogram\n"
            "request_seconds_bucket{route=\"/embed\",le=\"0.1\"} 2\n"
            "request_seconds_bucket{route=\"/embed\",le=\"1\"} 2\n"
            "request_seconds_bucket{route=\"/embed\",le=\"+Inf\"} 3\n"
            "request_seconds_sum{route=\"/embed\"} 5.15\n"
            "request_seconds_count{route=\"/embed\"} 3\n");
}

TEST(MetricsTest, AScopedRegistryLabelsItsSeriesAndRendersTheWhole) {
  Registry registry;
  Registry first(registry, "model=\"a\"");
  Registry second(registry, "model=\"b\"");
  first.AddCounter("tokens_total", "Tokens").Increment(5);
  second.AddCounter("tokens_total", "Tokens", "kind=\"query\"").Increment(2);
  registry.AddGauge("up", "Up").Set(1);
  const std::string text = first.Render();
  EXPECT_EQ(text, registry.Render());
  EXPECT_TRUE(Contains(text, "tokens_total{model=\"a\"} 5\n")) << text;
  EXPECT_TRUE(Contains(text, "tokens_total{model=\"b\",kind=\"query\"} 2\n")) << text;
  EXPECT_TRUE(Contains(text, "\nup 1\n")) << text;
}

// An observation just above a bound falls in the next bucket, one exactly on it (the float
// the bound is) in the bucket itself; below the first bound is the first bucket, and a
// histogram without bounds has only +Inf.
TEST(MetricsTest, BucketBoundariesAreExact) {
  Registry registry;
  Histogram& latency = registry.AddHistogram("latency_seconds", "Latency", {0.005, 0.25, 2.5});
  for (double value : {-1.0, 0.0, 0.005, 0.0050000001, 0.25, 0.2500001, 2.5, 2.5000001}) latency.Observe(value);
  registry.AddHistogram("unbounded", "No bounds", {}).Observe(7);
  EXPECT_EQ(registry.Render(),
            "# HELP latency_seconds Latency\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{le=\"0.005\"} 3\n"
            "latency_seconds_bucket{le=\"0.25\"} 5\n"
            "latency_seconds_bucket{le=\"2.5\"} 7\n"
            "latency_seconds_bucket{le=\"+Inf\"} 8\n"
            "latency_seconds_sum 4.5100002001\n"
            "latency_seconds_count 8\n"
            "# HELP unbounded No bounds\n"
            "# TYPE unbounded histogram\n"
            "unbounded_bucket{le=\"+Inf\"} 1\n"
            "unbounded_sum 7\n"
            "unbounded_count 1\n");
}

// A gauge goes below zero, samples with no updates render as 0, and histograms of one name
// with different labels are listed under one HELP and TYPE, each with its own buckets.
TEST(MetricsTest, NegativeGaugesUnusedSeriesAndLabelledHistograms) {
  Registry registry;
  registry.AddGauge("balance", "Balance").Add(-3);
  registry.AddCounter("idle_total", "Never incremented");
  Histogram& embed = registry.AddHistogram("batch_size", "Batch sizes", {1, 8}, "route=\"embed\"");
  Histogram& rerank = registry.AddHistogram("batch_size", "", {1, 8}, "route=\"rerank\"");
  embed.Observe(4);
  rerank.Observe(1);
  rerank.Observe(16);
  EXPECT_EQ(registry.Render(),
            "# HELP balance Balance\n"
            "# TYPE balance gauge\n"
            "balance -3\n"
            "# HELP idle_total Never incremented\n"
            "# TYPE idle_total counter\n"
            "idle_total 0\n"
            "# HELP batch_size Batch sizes\n"
            "# TYPE batch_size histogram\n"
            "batch_size_bucket{route=\"embed\",le=\"1\"} 0\n"
            "batch_size_bucket{route=\"embed\",le=\"8\"} 1\n"
            "batch_size_bucket{route=\"embed\",le=\"+Inf\"} 1\n"
            "batch_size_sum{route=\"embed\"} 4\n"
            "batch_size_count{route=\"embed\"} 1\n"
            "batch_size_bucket{route=\"rerank\",le=\"1\"} 1\n"
            "batch_size_bucket{route=\"rerank\",le=\"8\"} 1\n"
            "batch_size_bucket{route=\"rerank\",le=\"+Inf\"} 2\n"
            "batch_size_sum{route=\"rerank\"} 17\n"
            "batch_size_count{route=\"rerank\"} 2\n");
  EXPECT_EQ(Registry().Render(), "");
}

TEST(MetricsTest, ConcurrentUpdatesAreAllCounted) {
  Registry registry;
  Counter& counter = registry.AddCounter("events_total", "Events");
  Histogram& histogram = registry.AddHistogram("sizes", "Sizes", {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.Increment();
        histogram.Observe(0.5);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter.value(), 40000u);
  EXPECT_EQ(histogram.count(), 40000u);
  EXPECT_DOUBLE_EQ(histogram.sum(), 20000.0);
}

}  // namespace
}  // namespace stamen::metrics
