// Helpers shared by the validation files; not part of the api library's interface.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"
#include "api/field_errors.h"
#include "api/meta.h"
#include "api/quantity.h"

namespace kvol::api::validation_internal {

inline constexpr std::string_view kFieldImmutable = "field is immutable";
inline constexpr std::string_view kFileModeMsg =
    "must be a number between 0 and 0777 (octal), both inclusive";

// Appends Invalid(path, value, msg) for each message.
void AddInvalid(FieldErrors& errs, const Path& path, std::string_view value,
                const std::vector<std::string>& msgs);

// q > 0, else Invalid(path, q.String(), "must be greater than zero").
void ValidatePositiveQuantity(FieldErrors& errs, const Quantity& q, const Path& path);
// q >= 0, else Invalid(path, q.String(), "must be greater than or equal to 0").
void ValidateNonNegativeQuantity(FieldErrors& errs, const Quantity& q, const Path& path);

// A container's probes: each with one handler and sane numbers; none on an init container.
void ValidateProbes(FieldErrors& errs, const Container& c, bool init, const Path& p);

// Relative path without ".." elements (Kubernetes' validateLocalDescendingPath).
void ValidateLocalDescendingPath(FieldErrors& errs, std::string_view p, const Path& path);
// ...and not starting with ".." (ValidateLocalNonReservedPath).
void ValidateLocalNonReservedPath(FieldErrors& errs, std::string_view p, const Path& path);
bool HasBackstep(std::string_view p);  // an element is ".."

// A JSON rendering of a value for error messages (maps, lists, optional strings).
BadValue JsonBadValue(const Json& j);

// Access modes shared by PV and PVC validation.
void ValidateAccessModes(FieldErrors& errs, const std::vector<std::string>& modes,
                         const Path& path);

// CSI driver names: required, at most 63 characters, a DNS subdomain.
void ValidateCSIDriverName(FieldErrors& errs, std::string_view driver, const Path& path);

// One node selector term: operators, arity, keys and values.
// Preferred terms (`allow_invalid_values`) do not check label values, as in Kubernetes.
void ValidateNodeSelectorTerm(FieldErrors& errs, const NodeSelectorTerm& t, const Path& path,
                              bool allow_invalid_values = false);

inline bool IsAbsolute(std::string_view p) { return !p.empty() && p[0] == '/'; }

// Volume sources (validation_volume.cc). A pod volume's one source, with its errors:
FieldErrors ValidateVolumeSource(const Volume& v, const Path& path);
// ...and the sources a PersistentVolume shares with pods.
void ValidateHostPath(FieldErrors& errs, const HostPathVolumeSource& hp, const Path& path);
void ValidateNFS(FieldErrors& errs, const NFSVolumeSource& nfs, const Path& path);
void ValidateFlexOptions(FieldErrors& errs, const StringMap& options, const Path& path);
void ValidateSecretReference(FieldErrors& errs, const SecretReference& ref, const Path& path);
void ValidateCSIPersistentVolume(FieldErrors& errs, const CSIPersistentVolumeSource& csi,
                                 const Path& path);
// The downward API's selectors, for volumes and environment variables: `allowed` field paths;
// a resource selector of a volume (`volume`) must name its container.
void ValidateObjectFieldSelector(FieldErrors& errs, const ObjectFieldSelector& fs,
                                 const std::vector<std::string_view>& allowed, const Path& path);
void ValidateResourceFieldSelector(FieldErrors& errs, const ResourceFieldSelector& fs,
                                   bool volume, const Path& path);

}  // namespace kvol::api::validation_internal
