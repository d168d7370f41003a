// Small helpers for objects on their way into and out of the store: storage keys, the
// resourceVersion that is not stored but spliced in on the way out, uids and generated names.
#pragma once

#include <string>
#include <string_view>

#include "api/scheme.h"
#include "store/store.h"

namespace kvol::apiserver {

// "/registry/<resource>/<namespace>/<name>" or "/registry/<resource>/<name>".
std::string StorageKey(const api::KindInfo& kind, std::string_view ns, std::string_view name);
// The prefix of every key of a resource, or of one namespace of it.
std::string StoragePrefix(const api::KindInfo& kind, std::string_view ns = {});

// The stored JSON with "resourceVersion":"<rv>" added to its top-level metadata object.
// Stored objects never carry a resourceVersion; it is the store's mod revision.
std::string WithResourceVersion(std::string_view json, store::Revision rv);

// A random (version 4) UUID.
std::string NewUid();
// Five random characters from Kubernetes' alphabet for generateName ("bcdfghjklmnpqrstvwxz2456789").
std::string RandomSuffix();

}  // namespace kvol::apiserver
