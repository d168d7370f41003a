// Annotations, finalizers and labels with a meaning Kubernetes gives them, shared by the API
// server's admission and the controllers.
#pragma once

#include <array>
#include <string_view>

namespace kvol::api {

// Phases (status.phase) of PersistentVolumes and of claims.
inline constexpr std::string_view kVolumePending = "Pending";
inline constexpr std::string_view kVolumeAvailable = "Available";
inline constexpr std::string_view kVolumeBound = "Bound";
inline constexpr std::string_view kVolumeReleased = "Released";
inline constexpr std::string_view kVolumeFailed = "Failed";
inline constexpr std::string_view kClaimPending = "Pending";
inline constexpr std::string_view kClaimBound = "Bound";
inline constexpr std::string_view kClaimLost = "Lost";

// kvol's pod condition: True once every volume of the pod is set up and every volumeMount's
// subPath resolves inside its volume (the node agent's pod runtime starts containers then).
inline constexpr std::string_view kPodVolumesReady = "kvol.io/VolumesReady";

// Finalizers.
inline constexpr std::string_view kPVCProtectionFinalizer = "kubernetes.io/pvc-protection";
inline constexpr std::string_view kPVProtectionFinalizer = "kubernetes.io/pv-protection";
// On volumes the PV controller provisioned with the Delete policy: the object stays until the
// controller has deleted the storage, whether the volume or its claim was deleted first.
inline constexpr std::string_view kPVControllerFinalizer = "kubernetes.io/pv-controller";

// The namespace controller's finalizer in a Namespace's spec.finalizers: it removes it (through
// the finalize subresource) once everything in the namespace is gone.
inline constexpr std::string_view kNamespaceFinalizer = "kubernetes";
// The garbage collector's finalizers (DeleteOptions.propagationPolicy Orphan and Foreground).
inline constexpr std::string_view kOrphanFinalizer = "orphan";
inline constexpr std::string_view kForegroundFinalizer = "foregroundDeletion";
inline constexpr std::string_view kNamespaceActive = "Active";
// The namespaces the API server creates at start and refuses to delete.
inline constexpr std::array<std::string_view, 4> kSystemNamespaces = {
    "default", "kube-system", "kube-public", "kube-node-lease"};
inline constexpr std::string_view kNamespaceTerminating = "Terminating";

// StorageClass.
inline constexpr std::string_view kDefaultClassAnnotation =
    "storageclass.kubernetes.io/is-default-class";
inline constexpr std::string_view kBetaDefaultClassAnnotation =
    "storageclass.beta.kubernetes.io/is-default-class";

// Binding (set by the PV controller on claims and volumes).
inline constexpr std::string_view kAnnBindCompleted = "pv.kubernetes.io/bind-completed";
inline constexpr std::string_view kAnnBoundByController = "pv.kubernetes.io/bound-by-controller";
// Provisioning.
inline constexpr std::string_view kAnnDynamicallyProvisioned = "pv.kubernetes.io/provisioned-by";
inline constexpr std::string_view kAnnStorageProvisioner =
    "volume.kubernetes.io/storage-provisioner";
inline constexpr std::string_view kAnnBetaStorageProvisioner =
    "volume.beta.kubernetes.io/storage-provisioner";
inline constexpr std::string_view kAnnSelectedNode = "volume.kubernetes.io/selected-node";
// On a claim whose volume an external resizer (of that CSI driver) is to expand.
inline constexpr std::string_view kAnnStorageResizer = "volume.kubernetes.io/storage-resizer";

// A claim's conditions while its volume grows: the controller expanding the storage, then the
// node agent growing the filesystem where the volume is mounted.
inline constexpr std::string_view kClaimResizing = "Resizing";
inline constexpr std::string_view kClaimFileSystemResizePending = "FileSystemResizePending";
// The class before spec.storageClassName existed; still honoured when the field is unset.
inline constexpr std::string_view kAnnBetaStorageClass = "volume.beta.kubernetes.io/storage-class";

// Node: the attach/detach controller attaches and detaches the node's volumes (set to "true" by
// the node's agent unless --enable-controller-attach-detach=false).
inline constexpr std::string_view kAnnControllerManagedAttachDetach =
    "volumes.kubernetes.io/controller-managed-attach-detach";

// Node: the SHA-256 (hex) of the certificate the node's agent serves logs and exec with, which
// the API server pins when it dials the agent (set by the agent itself).
inline constexpr std::string_view kAnnAgentCertificateSha256 = "kvol.io/agent-certificate-sha256";
// On a Node whose agent makes and removes the kvol.io/local-path volumes of claims given to it:
// the directory it makes them in.
inline constexpr std::string_view kAnnLocalPathRoot = "kvol.io/local-path-root";

// Node: the node ID each registered CSI driver gave, as JSON {"driver": "node id"} (set by the
// node's agent, as kubelet does).
inline constexpr std::string_view kAnnCSINodeID = "csi.volume.kubernetes.io/nodeid";

// The ConfigMap the root CA publisher keeps in every namespace, with the CA bundle that verifies
// the API server under key "ca.crt"; and where the ServiceAccount admission mounts it, with the
// pod's token and namespace, in every container.
inline constexpr std::string_view kRootCaConfigMap = "kube-root-ca.crt";
inline constexpr std::string_view kRootCaKey = "ca.crt";
inline constexpr std::string_view kServiceAccountTokenMountPath =
    "/var/run/secrets/kubernetes.io/serviceaccount";

}  // namespace kvol::api
