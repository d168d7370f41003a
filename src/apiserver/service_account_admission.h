// The ServiceAccount admission plugin, as Kubernetes runs it on a pod's create: the pod runs as
// its namespace's "default" account unless it names one, the account must exist, and unless
// the pod or the account says automountServiceAccountToken: false, every container mounts the
// projected volume kube-api-access-XXXXX at /var/run/secrets/kubernetes.io/serviceaccount,
// read-only: a token for the account bound to the pod ("token"), the CA bundle that verifies
// the API server ("ca.crt", from the ConfigMap kube-root-ca.crt) and the pod's namespace
// ("namespace").
#pragma once

#include <cstdint>
#include <string_view>

#include "api/core.h"
#include "api/generic.h"

namespace kvol::apiserver {

// The volume's name is this and five random characters.
inline constexpr std::string_view kServiceAccountVolumePrefix = "kube-api-access-";
// The token's life: Kubernetes' 3607 s, which marks the projected token as the one admission
// asked for.
inline constexpr int64_t kServiceAccountTokenSeconds = 3607;

// The pod's automountServiceAccountToken when set, else the account's, else true.
bool ShouldAutomount(const api::ServiceAccount& account, const api::Pod& pod);

// The projected volume's source: the token, ca.crt and the namespace, mode 0644.
api::ProjectedVolumeSource TokenVolumeSource();

// Mounts the token volume at kServiceAccountTokenMountPath in every init container and
// container that has no mount at that path, and adds the volume when one of them needed it:
// a volume named kube-api-access-* the pod has already, or else one named `volume_name`.
void MountServiceAccountToken(api::Pod& pod, std::string_view volume_name);

}  // namespace kvol::apiserver
