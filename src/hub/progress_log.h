// Progress of a pull as log lines, for a stderr that is not a terminal (docker and Kubernetes
// logs), where a redrawn progress bar would be one endless line or nothing: a line when the
// pull starts, one each time another tenth of the bytes has arrived (or half a minute has
// passed, so that a stalled pull still shows it is alive) but at most one per interval, and a
// line when it ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace stamen::hub {

class ProgressLog {
 public:
  using Clock = std::chrono::steady_clock;
  // `what` names the pull in every line ("org/name"); `total_bytes` is what is to be
  // downloaded; `write` gets each line. No line is written between two that are closer than
  // `interval`.
  ProgressLog(std::string what, int64_t total_bytes, std::function<void(const std::string&)> write,
              Clock::duration interval = std::chrono::seconds(5), Clock::time_point start = Clock::now());

  // `bytes` more have arrived, at `now`.
  void Add(int64_t bytes, Clock::time_point now = Clock::now());
  // The last line: what arrived and how long it took.
  void Finish(Clock::time_point now = Clock::now());

 private:
  std::string Line(Clock::time_point now) const;

  std::string what_;
  int64_t total_;
  std::function<void(const std::string&)> write_;
  Clock::duration interval_;
  Clock::time_point start_;
  Clock::time_point last_line_;
  int64_t done_ = 0;
  int64_t next_mark_;  // the bytes at which the next tenth is reached
};

}  // namespace stamen::hub
