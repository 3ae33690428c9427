// ProgressLog: a pull's progress as rate-limited log lines (see progress_log.h).
#include "hub/progress_log.h"

#include <algorithm>
#include <cstdio>

namespace stamen::hub {
namespace {

// A stalled pull still writes a line this many intervals apart.
constexpr int kQuietIntervals = 6;

std::string Size(int64_t bytes) {
  char text[32];
  if (bytes >= 1'000'000'000) {
    std::snprintf(text, sizeof(text), "%.2f GB", static_cast<double>(bytes) / 1e9);
  } else {
    std::snprintf(text, sizeof(text), "%.1f MB", static_cast<double>(bytes) / 1e6);
  }
  return text;
}

double Seconds(ProgressLog::Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

}  // namespace

ProgressLog::ProgressLog(std::string what, int64_t total_bytes, std::function<void(const std::string&)> write,
                         Clock::duration interval, Clock::time_point start)
    : what_(std::move(what)),
      total_(std::max<int64_t>(total_bytes, 0)),
      write_(std::move(write)),
      interval_(interval),
      start_(start),
      last_line_(start),
      next_mark_(total_ / 10) {}

void ProgressLog::Add(int64_t bytes, Clock::time_point now) {
  done_ += bytes;
  if (now - last_line_ < interval_) return;
  const bool tenth = total_ > 0 && done_ >= next_mark_;
  if (!tenth && now - last_line_ < kQuietIntervals * interval_) return;
  write_(Line(now));
  last_line_ = now;
  // The next line waits for the next tenth after what has arrived.
  if (total_ > 0) next_mark_ = (done_ * 10 / total_ + 1) * total_ / 10;
}

void ProgressLog::Finish(Clock::time_point now) {
  char text[64];
  std::snprintf(text, sizeof(text), " in %.1f s", Seconds(now - start_));
  write_(what_ + ": " + Size(done_) + " downloaded" + text);
}

std::string ProgressLog::Line(Clock::time_point now) const {
  const double seconds = Seconds(now - start_);
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0;
  std::string line = what_ + ": " + Size(done_);
  char text[96];
  if (total_ > 0) {
    const int64_t shown = std::min(done_, total_);
    std::snprintf(text, sizeof(text), " of %s (%d%%)", Size(total_).c_str(), static_cast<int>(100 * shown / total_));
    line += text;
  }
  std::snprintf(text, sizeof(text), ", %.1f MB/s", rate / 1e6);
  line += text;
  if (total_ > done_ && rate > 0) {
    std::snprintf(text, sizeof(text), ", about %.0f s left", static_cast<double>(total_ - done_) / rate);
    line += text;
  }
  return line;
}

}  // namespace stamen::hub
