// The three patch formats of the Kubernetes API: JSON patch (RFC 6902), JSON merge patch
// (RFC 7386) and strategic merge patch, whose lists merge by Kubernetes' merge keys
// (containers and volumes by name, volumeMounts by mountPath, finalizers as a set, ...) and
// which understands the $patch, $setElementOrder, $deleteFromPrimitiveList and $retainKeys
// directives that kubectl apply and edit send.
#pragma once

#include <string_view>

#include "api/codec.h"
#include "apiserver/errors.h"

namespace kvol::apiserver {

inline constexpr std::string_view kJsonPatch = "application/json-patch+json";
inline constexpr std::string_view kMergePatch = "application/merge-patch+json";
inline constexpr std::string_view kStrategicMergePatch = "application/strategic-merge-patch+json";

// Kubernetes' bounds on a JSON patch: operations per patch, and the bytes its copy operations
// may add (a few copies of a growing value would otherwise double it each time).
inline constexpr size_t kMaxJsonPatchOperations = 10'000;
inline constexpr int64_t kMaxJsonPatchCopyBytes = 3 * 1024 * 1024;
// A patched object larger than a request may be is refused before it is decoded further.
inline constexpr size_t kMaxPatchedObjectBytes = 3 * 1024 * 1024;

// Applies `patch` (of `content_type`, parameters ignored) to `current`.
// BadRequest for a malformed patch, UnsupportedMediaType for an unknown type,
// RequestEntityTooLarge (413) for more than kMaxJsonPatchOperations operations, Invalid (422)
// for a JSON patch whose test or path fails or whose copies add more than
// kMaxJsonPatchCopyBytes (checked before each copy is made), and RequestEntityTooLarge for a
// result larger than kMaxPatchedObjectBytes.
ApiOr<api::Json> ApplyPatch(const api::Json& current, std::string_view content_type,
                            std::string_view patch, std::string_view kind);

// Strategic merge of `patch` into `target` for an object of `kind` (exposed for tests).
ApiOr<api::Json> StrategicMerge(const api::Json& target, const api::Json& patch,
                                std::string_view kind);

}  // namespace kvol::apiserver
