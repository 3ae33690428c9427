// Admission control that fails fast: a request is admitted only when the work admitted before
// it, and its own, can be computed before its deadline and before theirs, at the rate the
// workers were measured to compute while saturated. Otherwise it is refused at once (429 with
// Retry-After), instead of being computed in part and answered 504 a minute later while it
// made every other request late too (issue 45).
//
// The workers take turns between requests (the scheduler's round robin), so they share the
// rate like processor sharing: a request of T tokens beside requests with r_j tokens left
// finishes after T + Σ_j min(r_j, T) tokens are computed, and it delays each of them by
// min(T, r_j). Whole requests are counted, from admission until their last chunk returns,
// not the chunks in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace stamen::gateway {

class AdmissionControl {
 public:
  using Clock = std::chrono::steady_clock;

  // `saturation_tokens`: outstanding tokens beyond which every worker is busy (the rate is
  // measured only then). `headroom`: the share of the time to a deadline that admitted work
  // may fill (the rest absorbs the estimate's error and the answer's formatting).
  explicit AdmissionControl(int64_t saturation_tokens, double headroom = 0.8);

  void set_saturation_tokens(int64_t tokens);

  // Admits the request `key` of `tokens` due at `deadline`, or says why not (empty: admitted).
  // Without a rate, a request alone or one within `saturation_tokens` is admitted, a larger one
  // beside others is not: nothing is known of how long it would take.
  std::string Admit(const void* key, int64_t tokens, Clock::time_point deadline, Clock::time_point now = Clock::now());
  // Why a request of `tokens` due at `deadline` would be refused now (empty: it would be
  // admitted), admitting nothing. The gateway asks Reserve, which holds what this admits; the
  // question alone lets a caller (the tests) look without changing the budget.
  std::string Refusal(int64_t tokens, Clock::time_point deadline, Clock::time_point now = Clock::now()) const;
  // Refusal's question, and when the answer is to admit, holds `tokens` under `key` until
  // Release(key): a body that passed with a lower bound of its tokens keeps that much in the
  // budget while it is tokenized, so that the bodies arriving meanwhile are counted against it
  // (otherwise all of them pass, are tokenized, and only then refused). A reservation counts
  // in the budget of later requests but is not work sent to the workers (outstanding tokens).
  std::string Reserve(const void* key, int64_t tokens, Clock::time_point deadline, Clock::time_point now = Clock::now());
  // `tokens` of request `key` came back computed. When that updates the rate and the workers
  // have slowed (other load on the machine) so that admitted requests would now miss their
  // deadlines, returns the most recently admitted ones to shed (answered 429 now rather than
  // 504 later, all of them), youngest first, until the rest can finish; they are released.
  std::vector<const void*> Computed(const void* key, int64_t tokens, Clock::time_point now = Clock::now());
  // Request (or reservation) `key` ended (answered, failed, cancelled, or admitted by its real
  // count): what it had left leaves the budget.
  void Release(const void* key);

  // A first rate (the workers' warm-up), used until one is measured.
  void SeedRate(double tokens_per_second);
  // Tokens per second the workers computed while saturated; 0 until measured or seeded.
  double rate() const;
  // Seconds a refused client should wait: until the work admitted now is computed (at least 1).
  int RetryAfterSeconds() const;

 private:
  struct Admitted {
    int64_t remaining;
    Clock::time_point deadline;
    uint64_t order;  // admission order: the youngest is shed first
    bool reserved = false;  // Reserve's: not sent to the workers, not in outstanding_
  };
  // Tokens the admitted requests compute while one of `tokens` (left) is computed beside them,
  // under processor sharing: Σ_j min(r_j, tokens).
  int64_t WorkBesideLocked(int64_t tokens) const;
  std::string RefusalLocked(int64_t tokens, Clock::time_point deadline, Clock::time_point now) const;
  // Admit's and Reserve's: holds `tokens` under `key` unless RefusalLocked refuses them.
  std::string Hold(const void* key, int64_t tokens, Clock::time_point deadline, Clock::time_point now, bool reserved);
  // Whether a new rate sample was taken.
  bool MeasureLocked(int64_t tokens, Clock::time_point now);
  // The admitted requests to give up so that the others finish by their deadlines at rate_.
  std::vector<const void*> ShedLocked(Clock::time_point now);

  mutable std::mutex mutex_;
  int64_t saturation_tokens_;
  double headroom_;
  std::map<const void*, Admitted> admitted_;
  int64_t outstanding_ = 0;  // Σ remaining of the admitted requests, reservations aside
  uint64_t next_order_ = 0;
  double rate_ = 0;          // tokens per second, 0 until measured
  // The measurement window: tokens computed since `window_start_` while saturated.
  bool window_open_ = false;
  Clock::time_point window_start_;
  int64_t window_tokens_ = 0;
};

}  // namespace stamen::gateway
