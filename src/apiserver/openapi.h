// OpenAPI documents generated from the object model: v3 (/openapi/v3 and its per-group-version
// documents), which kubectl explain, apply and its validation use, and the same in one Swagger
// 2.0 document at /openapi/v2 for clients that read that. /openapi/v2 is JSON only: clients that
// accept nothing but its protobuf form get 406 Not Acceptable, which kubectl (asking for v2 only
// when v3 is missing) treats as "not served".
#pragma once

#include <optional>
#include <string>

namespace kvol::apiserver {

// The document served at /openapi<rest> ("/v2", "/v3", "/v3/api/v1", ...), JSON, or nullopt.
std::optional<std::string> OpenApiDocument(std::string_view rest);

}  // namespace kvol::apiserver
