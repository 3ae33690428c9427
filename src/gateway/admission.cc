// AdmissionControl: fail-fast admission of whole requests (see admission.h).
#include "gateway/admission.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace stamen::gateway {
namespace {

// A rate sample spans at least this much saturated time.
constexpr auto kWindow = std::chrono::milliseconds(1000);
// Weight of a new sample in the rate (the rest: the rate so far).
constexpr double kSampleWeight = 0.5;

double Seconds(AdmissionControl::Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

}  // namespace

AdmissionControl::AdmissionControl(int64_t saturation_tokens, double headroom)
    : saturation_tokens_(std::max<int64_t>(saturation_tokens, 1)), headroom_(headroom) {}

void AdmissionControl::set_saturation_tokens(int64_t tokens) {
  std::lock_guard lock(mutex_);
  saturation_tokens_ = std::max<int64_t>(tokens, 1);
}

int64_t AdmissionControl::WorkBesideLocked(int64_t tokens) const {
  int64_t work = 0;
  for (const auto& [key, admitted] : admitted_) work += std::min(admitted.remaining, tokens);
  return work;
}

std::string AdmissionControl::Admit(const void* key, int64_t tokens, Clock::time_point deadline,
                                    Clock::time_point now) {
  return Hold(key, tokens, deadline, now, /*reserved=*/false);
}

std::string AdmissionControl::Reserve(const void* key, int64_t tokens, Clock::time_point deadline,
                                      Clock::time_point now) {
  return Hold(key, tokens, deadline, now, /*reserved=*/true);
}

std::string AdmissionControl::Hold(const void* key, int64_t tokens, Clock::time_point deadline, Clock::time_point now,
                                   bool reserved) {
  std::lock_guard lock(mutex_);
  std::string refusal = RefusalLocked(tokens, deadline, now);
  if (!refusal.empty()) return refusal;
  admitted_[key] = {tokens, deadline, next_order_++, reserved};
  if (!reserved) outstanding_ += tokens;
  return refusal;
}

std::string AdmissionControl::Refusal(int64_t tokens, Clock::time_point deadline, Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  return RefusalLocked(tokens, deadline, now);
}

std::string AdmissionControl::RefusalLocked(int64_t tokens, Clock::time_point deadline, Clock::time_point now) const {
  if (admitted_.empty()) return {};  // alone, it takes whatever time it takes
  if (rate_ <= 0) {
    // A small request finishes in a few batches beside any other; a large one waits for a rate.
    if (tokens <= saturation_tokens_) return {};
    return "the workers are busy and their rate is not measured yet";
  }
  // Its own finish, then each admitted request's, which it delays.
  const double budget = headroom_ * Seconds(deadline - now);
  const double own = static_cast<double>(tokens + WorkBesideLocked(tokens)) / rate_;
  if (own > budget) {
    char text[160];
    std::snprintf(text, sizeof(text), "about %.0f s of work is queued at %.0f tokens/s; this request could not "
                  "finish within its deadline", static_cast<double>(outstanding_) / rate_, rate_);
    return text;
  }
  for (const auto& [other, admitted] : admitted_) {
    // Its own share (WorkBeside counts it) and the others', now with the new request's.
    const int64_t work = WorkBesideLocked(admitted.remaining) + std::min(tokens, admitted.remaining);
    if (static_cast<double>(work) / rate_ > headroom_ * Seconds(admitted.deadline - now)) {
      return "admitting it would make requests already queued miss their deadlines";
    }
  }
  return {};
}

std::vector<const void*> AdmissionControl::Computed(const void* key, int64_t tokens, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  const auto found = admitted_.find(key);
  if (found == admitted_.end()) return {};
  const int64_t taken = std::min(tokens, found->second.remaining);
  found->second.remaining -= taken;
  outstanding_ -= taken;
  if (!MeasureLocked(tokens, now)) return {};
  return ShedLocked(now);
}

bool AdmissionControl::MeasureLocked(int64_t tokens, Clock::time_point now) {
  // Only while every worker is busy is what comes back per second the workers' rate; below,
  // it is the clients' pace.
  if (outstanding_ < saturation_tokens_) {
    window_open_ = false;
    return false;
  }
  if (!window_open_) {
    window_open_ = true;
    window_start_ = now;
    window_tokens_ = 0;
    return false;  // these tokens were computed before the window opened
  }
  window_tokens_ += tokens;
  if (now - window_start_ < kWindow) return false;
  const double sample = static_cast<double>(window_tokens_) / Seconds(now - window_start_);
  rate_ = rate_ <= 0 ? sample : (1 - kSampleWeight) * rate_ + kSampleWeight * sample;
  window_start_ = now;
  window_tokens_ = 0;
  return true;
}

std::vector<const void*> AdmissionControl::ShedLocked(Clock::time_point now) {
  std::vector<const void*> shed;
  while (admitted_.size() > 1) {
    // Admitted with headroom, a request is shed only once it would miss its deadline itself.
    bool late = false;
    for (const auto& [key, admitted] : admitted_) {
      late |= static_cast<double>(WorkBesideLocked(admitted.remaining)) / rate_ > Seconds(admitted.deadline - now);
    }
    if (!late) break;
    const auto youngest = std::max_element(admitted_.begin(), admitted_.end(), [](const auto& a, const auto& b) {
      return a.second.order < b.second.order;
    });
    shed.push_back(youngest->first);  // a reservation's key ends nothing: its body is admitted by its count
    if (!youngest->second.reserved) outstanding_ -= youngest->second.remaining;
    admitted_.erase(youngest);
  }
  return shed;
}

void AdmissionControl::Release(const void* key) {
  std::lock_guard lock(mutex_);
  const auto found = admitted_.find(key);
  if (found == admitted_.end()) return;
  if (!found->second.reserved) outstanding_ -= found->second.remaining;
  admitted_.erase(found);
}

void AdmissionControl::SeedRate(double tokens_per_second) {
  std::lock_guard lock(mutex_);
  if (rate_ <= 0 && tokens_per_second > 0) rate_ = tokens_per_second;
}

double AdmissionControl::rate() const {
  std::lock_guard lock(mutex_);
  return rate_;
}

int AdmissionControl::RetryAfterSeconds() const {
  std::lock_guard lock(mutex_);
  if (rate_ <= 0) return 1;
  return std::max(1, static_cast<int>(std::ceil(static_cast<double>(outstanding_) / rate_)));
}

}  // namespace stamen::gateway
