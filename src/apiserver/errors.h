// The API errors the server returns, worded as Kubernetes words them. ApiError itself (and its
// Status object form) lives in api/api_error.h, shared with clients.
#pragma once

#include <string>

#include "api/api_error.h"
#include "api/scheme.h"
#include "base/status.h"

namespace kvol::apiserver {

using api::ApiError;
using api::ApiOr;

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
ApiError RequestEntityTooLarge(std::string message);  // 413
ApiError NotAcceptable(std::string message);
ApiError Internal(std::string message);
ApiError Unavailable(std::string message);
ApiError Timeout(std::string message);
// Maps a store/backend Status (codes from base/status.h) onto an API error.
ApiError FromStatus(const Status& s);

}  // namespace kvol::apiserver
