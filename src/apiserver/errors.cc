// Status objects for API errors.
#include "apiserver/errors.h"

namespace kvol::apiserver {
namespace {

std::string Qualified(const api::KindInfo& k) {
  return k.group.empty() ? std::string(k.resource)
                         : std::string(k.resource) + "." + std::string(k.group);
}

ApiError Make(int code, std::string reason, std::string message) {
  ApiError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}

}  // namespace

ApiError NotFound(const api::KindInfo& kind, std::string_view name) {
  ApiError e = Make(404, "NotFound", Qualified(kind) + " \"" + std::string(name) + "\" not found");
  e.name = name;
  e.group = kind.group;
  e.kind = kind.resource;
  return e;
}

ApiError NamespaceNotFound(std::string_view ns) {
  ApiError e = Make(404, "NotFound", "namespaces \"" + std::string(ns) + "\" not found");
  e.name = ns;
  e.kind = "namespaces";
  return e;
}

ApiError AlreadyExists(const api::KindInfo& kind, std::string_view name) {
  ApiError e =
      Make(409, "AlreadyExists", Qualified(kind) + " \"" + std::string(name) + "\" already exists");
  e.name = name;
  e.group = kind.group;
  e.kind = kind.resource;
  return e;
}

ApiError Conflict(const api::KindInfo& kind, std::string_view name, std::string_view why) {
  ApiError e = Make(409, "Conflict", "Operation cannot be fulfilled on " + Qualified(kind) +
                                         " \"" + std::string(name) + "\": " + std::string(why));
  e.name = name;
  e.group = kind.group;
  e.kind = kind.resource;
  return e;
}

ApiError ObjectModified(const api::KindInfo& kind, std::string_view name) {
  return Conflict(kind, name,
                  "the object has been modified; please apply your changes to the latest version "
                  "and try again");
}

ApiError Invalid(const api::KindInfo& kind, std::string_view name, api::FieldErrors causes) {
  std::string qualified =
      kind.group.empty() ? std::string(kind.kind) : std::string(kind.kind) + "." + std::string(kind.group);
  std::string msg = qualified + " \"" + std::string(name) + "\" is invalid";
  if (!causes.empty()) msg += ": " + api::AggregateMessage(causes);
  ApiError e = Make(422, "Invalid", std::move(msg));
  e.name = name;
  e.group = kind.group;
  e.kind = kind.kind;
  e.causes = std::move(causes);
  return e;
}

ApiError BadRequest(std::string message) { return Make(400, "BadRequest", std::move(message)); }
ApiError UnprocessableEntity(std::string message) {
  return Make(422, "Invalid", std::move(message));
}
ApiError Forbidden(std::string message) { return Make(403, "Forbidden", std::move(message)); }
ApiError MethodNotAllowed() {
  return Make(405, "MethodNotAllowed",
              "the server does not allow this method on the requested resource");
}
ApiError Gone(std::string message) { return Make(410, "Expired", std::move(message)); }
ApiError Unauthorized() { return Make(401, "Unauthorized", "Unauthorized"); }
ApiError RequestEntityTooLarge(std::string message) {
  return Make(413, "RequestEntityTooLarge", std::move(message));
}
ApiError UnsupportedMediaType(std::string message) {
  return Make(415, "UnsupportedMediaType", std::move(message));
}
ApiError NotAcceptable(std::string message) { return Make(406, "NotAcceptable", std::move(message)); }
ApiError Internal(std::string message) {
  return Make(500, "InternalError", "Internal error occurred: " + message);
}
ApiError Unavailable(std::string message) {
  return Make(503, "ServiceUnavailable", std::move(message));
}
ApiError Timeout(std::string message) { return Make(504, "Timeout", std::move(message)); }

ApiError FromStatus(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return BadRequest(s.message());
    case StatusCode::kOutOfRange: return Gone(s.message());
    case StatusCode::kUnavailable: return Unavailable(s.message());
    case StatusCode::kDeadlineExceeded: return Timeout(s.message());
    case StatusCode::kPermissionDenied: return Forbidden(s.message());
    case StatusCode::kUnauthenticated: return Unauthorized();
    default: return Internal(s.ToString());
  }
}

}  // namespace kvol::apiserver
