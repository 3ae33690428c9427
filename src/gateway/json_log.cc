#include "gateway/json_log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "gateway/api.h"

namespace stamen::gateway {

namespace {

// %j: the message as a JSON string, quotes included (spdlog's %v writes it raw).
class JsonMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&, spdlog::memory_buf_t& out) override {
    std::string escaped;
    AppendJsonString(escaped, std::string_view(message.payload.data(), message.payload.size()));
    out.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessage>(); }
};

// %J: the level in upper case, as TEI's logs name it (INFO, WARN, …).
class UpperLevel : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&, spdlog::memory_buf_t& out) override {
    static constexpr const char* kNames[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "OFF"};
    const std::string_view name = kNames[static_cast<int>(message.level)];
    out.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<UpperLevel>(); }
};

}  // namespace

void UseJsonLogs() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc, std::string("\n"));
  formatter->add_flag<JsonMessage>('j').add_flag<UpperLevel>('J').set_pattern(
      R"({"timestamp":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%J","message":%j,"target":"%n"})");
  spdlog::set_formatter(std::move(formatter));
}

}  // namespace stamen::gateway
