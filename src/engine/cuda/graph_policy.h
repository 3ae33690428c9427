// The CUDA runner's decisions that need no GPU, as pure functions and small value types so that
// CPU tests hold them: when a graph pays off (the inflection), how a step's sequence count is
// bucketed, how graph bytes are accounted, and a pointer's alignment for cuBLASLt plans.
// No CUDA headers: tests/engine builds this file without the toolkit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>

namespace stamen::engine::cuda {

// Wall time of one configuration's forward pass (same sequence and token buckets) run eagerly
// and replayed as a graph, each from its first enqueued work to its last completed work on the
// stream (CUDA events). Eager time includes the GPU's idle gaps while the CPU launches kernels;
// a replay has none, so the difference is what the graph buys at that configuration.
struct ConfigurationTiming {
  double eager_seconds = 0.0;  // 0: not measured yet
  double graph_seconds = 0.0;  // 0: not measured yet
  bool complete() const { return eager_seconds > 0.0 && graph_seconds > 0.0; }
};

// A replay must beat eager by this fraction to count as paying off; below it the two are
// within noise and the graph's memory and capture time are not worth holding.
constexpr double kGraphMinimumGain = 0.03;

// True when graphs pay off at a configuration: its replay took less wall time than its eager
// run by at least kGraphMinimumGain. Both times must be measured (complete()).
bool GraphPaysOff(const ConfigurationTiming& timing);

// The token limit for graphs, from configurations judged so far. It starts at `ceiling`
// (CudaGraphOptions::max_tokens). The limit is just below the fewest tokens at which a graph
// lost, counting only losses above every win (a loss below a measured win is noise: the win
// at more tokens stands), so a later win raises the limit again. Never below `floor` (graphs
// pay off for small steps, where launch overhead dominates) nor above `ceiling`.
class InflectionEstimate {
 public:
  InflectionEstimate(int64_t ceiling, int64_t floor) : ceiling_(ceiling), floor_(floor) {}
  void Record(int64_t tokens, bool graph_paid_off);
  // Steps of at most this many (padded) tokens may use graphs.
  int64_t limit() const;

 private:
  int64_t ceiling_;
  int64_t floor_;
  std::set<int64_t> losses_;  // token counts at which a graph lost
  int64_t highest_win_ = -1;  // most tokens at which a graph won, -1: none
};

// The sequence count a step is graphed at: the next power of two, at most `max_sequences`
// (never below `sequences`). The extra sequences are empty (cu_seqlens repeats the token
// count), which every kernel treats as no tokens, so one graph serves a range of counts.
int64_t SequenceBucket(int64_t sequences, int64_t max_sequences);

// Bytes and graphs held against CudaGraphOptions::memory_cap_bytes. Release never takes more
// than is held (a double release clamps at zero instead of wrapping to 2^64 and evicting
// every graph).
class GraphLedger {
 public:
  void Hold(size_t bytes) { bytes_ += bytes; }
  void Release(size_t bytes) { bytes_ -= bytes < bytes_ ? bytes : bytes_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

// The largest power of two dividing `address`, at most 256 (cuBLASLt's alignment classes);
// 256 for null.
uint32_t PointerAlignment(const void* address);

}  // namespace stamen::engine::cuda
