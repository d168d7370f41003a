// Request bodies in Kubernetes' protobuf encoding ("application/vnd.kubernetes.protobuf"), which
// kubectl's generator commands (`kubectl create configmap`, `create secret`, `create namespace`,
// `create deployment`, ...) send, read into the JSON form the rest of the server takes. Responses
// stay JSON: those clients accept it.
#pragma once

#include <string_view>

#include "api/codec.h"
#include "base/status.h"

namespace kvol::api {

inline constexpr std::string_view kProtobufContentType = "application/vnd.kubernetes.protobuf";

// A body is the magic "k8s\0" and a runtime.Unknown carrying apiVersion, kind and the object's
// own message. The object comes back as JSON with apiVersion and kind set, zero values of
// non-optional fields left out as Kubernetes' JSON leaves them. Errors say what is wrong:
// Unimplemented for a kind without a schema here, InvalidArgument for malformed bytes and for a
// field number the schema does not know.
StatusOr<Json> DecodeProtobufObject(std::string_view body);

}  // namespace kvol::api
