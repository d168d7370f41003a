// API errors as Kubernetes reports them: an HTTP code, a reason, a message and details, sent as
// a Status object so kubectl prints its usual "Error from server (NotFound): ..." lines.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "api/codec.h"
#include "api/field_errors.h"
#include "api/scheme.h"
#include "base/status.h"

namespace kvol::apiserver {

struct ApiError {
  int code = 500;
  std::string reason;  // NotFound, AlreadyExists, Conflict, Invalid, BadRequest, Expired, ...
  std::string message;
  // details
  std::string name;
  std::string group;
  std::string kind;  // the resource (plural) for most reasons, the Kind for Invalid
  api::FieldErrors causes;

  // The Status object, as JSON text.
  std::string ToJson() const;
  api::Json ToStatusJson() const;
};

// The usual errors, worded as Kubernetes words them.
ApiError NotFound(const api::KindInfo& kind, std::string_view name);
ApiError NamespaceNotFound(std::string_view ns);
ApiError AlreadyExists(const api::KindInfo& kind, std::string_view name);
ApiError Conflict(const api::KindInfo& kind, std::string_view name, std::string_view why);
ApiError ObjectModified(const api::KindInfo& kind, std::string_view name);
ApiError Invalid(const api::KindInfo& kind, std::string_view name, api::FieldErrors causes);
ApiError BadRequest(std::string message);
ApiError UnprocessableEntity(std::string message);  // 422 without field causes
ApiError Forbidden(std::string message);
ApiError MethodNotAllowed();
ApiError Gone(std::string message);      // reason Expired (410)
ApiError Unauthorized();
ApiError UnsupportedMediaType(std::string message);
ApiError Internal(std::string message);
ApiError Unavailable(std::string message);
ApiError Timeout(std::string message);
// Maps a store/backend Status (codes from base/status.h) onto an API error.
ApiError FromStatus(const Status& s);

// A value or an ApiError.
template <class T>
class ApiOr {
 public:
  ApiOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit like StatusOr
  ApiOr(ApiError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const ApiError& error() const { return std::get<ApiError>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace kvol::apiserver
