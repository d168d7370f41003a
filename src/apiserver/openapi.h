// OpenAPI documents generated from the object model: v3 (/openapi/v3 and its per-group-version
// documents), which kubectl explain, apply and its validation use, and the same in one Swagger
// 2.0 document at /openapi/v2 for clients that read that.
//
// /openapi/v2 also comes in the protobuf form kubectl asks for when it validates a `List` file
// on the client (gnostic's openapi_v2.Document). That form carries the document's swagger
// version and info but no definitions: kvol keeps the fields it does not model (a container's
// ports, probes, ...), and kubectl checking a manifest against kvol's definitions would call
// them unknown. Without definitions kubectl leaves validation to the server, which checks every
// field it models, in Kubernetes' words, and keeps the rest.
#pragma once

#include <optional>
#include <string>

namespace kvol::apiserver {

// The document served at /openapi<rest> ("/v2", "/v3", "/v3/api/v1", ...), JSON, or nullopt.
std::optional<std::string> OpenApiDocument(std::string_view rest);

// The protobuf form's media type as clients ask for it ('@', kubectl) and as the server names
// it in its answer (the form without '@', which Go's mime parser accepts).
inline constexpr std::string_view kOpenApiV2ProtobufAsked =
    "com.github.proto-openapi.spec.v2@v1.0+protobuf";
inline constexpr std::string_view kOpenApiV2Protobuf =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

// /openapi/v2 as an openapi_v2.Document in protobuf: swagger "2.0" (field 1) and info (field 2:
// title 1, version 2).
std::string OpenApiV2Protobuf();

}  // namespace kvol::apiserver
