// stamen's error type, shared by every module: each fallible call returns a Status or a
// StatusOr<T>, never throws across a module boundary and never aborts on bad input or files.
// Header-only, so using it adds no link dependency (the tokenizer library stays standalone).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace stamen {

// What kind of failure a Status is, for callers that answer differently per kind (the servers
// map them to gRPC and HTTP status codes). Most errors are kError: the message says the rest.
enum class StatusCode {
  kOk,
  kError,              // anything without a more specific kind below
  kInvalidArgument,    // the caller's input is wrong; retrying it unchanged fails again
  kResourceExhausted,  // a queue or limit is full; retry later
  kUnavailable,        // shutting down or no backend reachable
  kCancelled,          // the caller gave up
  kDeadlineExceeded,   // the caller's deadline passed first
};

// An error with a message that names what was wrong (file, field, tensor); `ok()` when none.
class Status {
 public:
  Status() = default;
  static Status Error(std::string message) { return Status(StatusCode::kError, std::move(message)); }
  static Status Error(StatusCode code, std::string message) { return Status(code, std::move(message)); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or the error that prevented it.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : value_(std::move(status)) {}  // NOLINT: must not be ok()
  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace stamen

// Returns early from the enclosing function when `expression` yields a failed Status.
#define STAMEN_RETURN_IF_ERROR(expression)                        \
  do {                                                            \
    ::stamen::Status stamen_status_ = (expression);       \
    if (!stamen_status_.ok()) return stamen_status_;              \
  } while (false)
