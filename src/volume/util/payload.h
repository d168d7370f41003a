// What the files of configMap, secret, downwardAPI and projected volumes hold, computed from
// the source objects and the pod: pure functions, shared by those plugins.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/core.h"
#include "base/status.h"
#include "volume/util/atomic_writer.h"

namespace kvol::volume::util {

// Mode of files whose source and item give none (0644, as Kubernetes).
inline constexpr int32_t kDefaultFileMode = 0644;

// The files for a ConfigMap: every key of data and binaryData, or only `items` (key -> path,
// with their modes). `cm` is nullptr when the ConfigMap does not exist and the source is
// optional (no files). A key `items` names that the ConfigMap lacks is an error unless
// `optional`: "configmap references non-existent config key: KEY".
StatusOr<Payload> ConfigMapPayload(const api::ConfigMap* cm,
                                   const std::vector<api::KeyToPath>& items, int32_t default_mode,
                                   bool optional);

// The same for a Secret (values are base64 in the object, raw in the files):
// "references non-existent secret key: KEY".
StatusOr<Payload> SecretPayload(const api::Secret* secret, const std::vector<api::KeyToPath>& items,
                                int32_t default_mode, bool optional);

// The files of downwardAPI items for `pod`. `node_allocatable` stands in for limits the
// container does not set.
StatusOr<Payload> DownwardApiPayload(const std::vector<api::DownwardAPIVolumeFile>& items,
                                     const api::Pod& pod, int32_t default_mode,
                                     const api::ResourceList& node_allocatable);

// One value of a fieldRef: metadata.name, metadata.namespace, metadata.uid, metadata.labels,
// metadata.annotations, metadata.labels['k'], metadata.annotations['k'], spec.nodeName,
// spec.serviceAccountName, status.podIP, status.hostIP. InvalidArgument for other paths.
StatusOr<std::string> PodFieldValue(const api::Pod& pod, std::string_view field_path);

// A resourceFieldRef's value: the container's request or limit in units of the divisor,
// rounded up ("limits.memory" with divisor 1Mi -> "128").
StatusOr<std::string> ContainerResourceValue(const api::Pod& pod,
                                             const api::ResourceFieldSelector& ref,
                                             const api::ResourceList& node_allocatable);

// Labels or annotations as downwardAPI writes them: `key="value"` lines sorted by key, values
// quoted as Go's %q does, no newline after the last.
std::string FormatMap(const api::StringMap& m);

// A string quoted as Go's strconv.Quote does.
std::string GoQuote(std::string_view s);

}  // namespace kvol::volume::util
