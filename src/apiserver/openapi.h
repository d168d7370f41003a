// OpenAPI v3 documents (/openapi/v3 and its per-group-version documents) generated
// from the object model, so kubectl explain, apply and its validation work with no extra flags.
#pragma once

#include <optional>
#include <string>

namespace kvol::apiserver {

// The document served at /openapi<rest> ("/v2", "/v3", "/v3/api/v1", ...), or nullopt.
std::optional<std::string> OpenApiDocument(std::string_view rest);

}  // namespace kvol::apiserver
