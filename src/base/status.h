// Status and StatusOr<T>: kvol's error values, shaped like absl::Status. Codes are the canonical
// gRPC codes, so CSI errors pass through unchanged and the API server maps each code once.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kvol {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,  // do not retry until the state changes
  kAborted = 10,            // redo the read-modify-write (HTTP 409 Conflict)
  kOutOfRange = 11,         // e.g. a resourceVersion that was compacted (HTTP 410 Gone)
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,  // retry the call
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

// A Status is either OK (no allocation, empty message) or a code with a message for humans.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NOT_FOUND: pod \"x\" not found", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>"; OK stays OK.
  Status Annotate(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status CancelledError(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status ResourceExhaustedError(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status OutOfRangeError(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status UnimplementedError(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }

// Either a value or a non-OK Status. Accessing value() of an error is a programming error.
// Built from an OK status (a programming error too) it holds an Internal error saying so, in
// every build, so that the caller sees a failure rather than an OK status without a value.
template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : v_(value) {}  // NOLINT: implicit like absl
  StatusOr(T&& value) : v_(std::move(value)) {}  // NOLINT
  StatusOr(Status status)  // NOLINT
      : v_(status.ok() ? InternalError("StatusOr built from an OK status") : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace kvol

#define KVOL_STATUS_CONCAT_INNER(a, b) a##b
#define KVOL_STATUS_CONCAT(a, b) KVOL_STATUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define KVOL_RETURN_IF_ERROR(expr)                   \
  do {                                               \
    ::kvol::Status kvol_status_ = (expr);            \
    if (!kvol_status_.ok()) return kvol_status_;     \
  } while (0)

// `lhs` = the value of the StatusOr `expr`, or return its Status.
#define KVOL_ASSIGN_OR_RETURN(lhs, expr) \
  KVOL_ASSIGN_OR_RETURN_IMPL(KVOL_STATUS_CONCAT(kvol_statusor_, __LINE__), lhs, expr)
#define KVOL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
