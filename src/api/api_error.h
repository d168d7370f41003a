// API errors as Kubernetes reports them: an HTTP code, a reason, a message and details, carried
// on the wire as a meta/v1 Status object so kubectl prints its usual
// "Error from server (NotFound): ..." lines. The server builds them (apiserver/errors.h); clients
// read them back from a response (FromStatusJson) and test them with IsNotFound and friends.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "api/codec.h"
#include "api/field_errors.h"

namespace kvol::api {

struct ApiError {
  int code = 500;
  std::string reason;  // NotFound, AlreadyExists, Conflict, Invalid, BadRequest, Expired, ...
  std::string message;
  // details
  std::string name;
  std::string group;
  std::string kind;  // the resource (plural) for most reasons, the Kind for Invalid
  FieldErrors causes;

  // The Status object, as JSON and as JSON text.
  Json ToStatusJson() const;
  std::string ToJson() const;
  // The error a Status object describes. `http_code` stands in when the object has no code;
  // a body that is not a Status becomes an error with that code and the body as message.
  static ApiError FromStatusJson(const Json& status, int http_code);
};

inline bool IsNotFound(const ApiError& e) { return e.reason == "NotFound"; }
inline bool IsAlreadyExists(const ApiError& e) { return e.reason == "AlreadyExists"; }
inline bool IsConflict(const ApiError& e) { return e.reason == "Conflict"; }
inline bool IsInvalid(const ApiError& e) { return e.reason == "Invalid"; }
// The resourceVersion asked for is older than the server keeps: list again.
inline bool IsGone(const ApiError& e) { return e.code == 410; }

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
  T&& operator*() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace kvol::api
