// What kvol's built-in CSI provisioner asks a driver for, and the PersistentVolume it writes, as
// external-provisioner derives them from a claim and its StorageClass. Pure functions: the
// controller (provisioner.h) reads the objects and calls the driver.
//
// The class's parameters go to CreateVolume except those prefixed csi.storage.k8s.io/, which
// kvol reads itself: fstype, and the name and namespace of each secret (provisioner,
// controller-publish, node-stage, node-publish, controller-expand, node-expand). A secret's
// name may use ${pv.name}, ${pvc.name}, ${pvc.namespace} and ${pvc.annotations['KEY']}; its
// namespace ${pv.name} and ${pvc.namespace}.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/core.h"
#include "api/storage.h"
#include "base/status.h"
#include "csi/proto/csi.pb.h"

namespace kvol::controller::provisioner {

inline constexpr std::string_view kParamPrefix = "csi.storage.k8s.io/";
inline constexpr std::string_view kParamFsType = "csi.storage.k8s.io/fstype";
// On the PersistentVolume: the provisioner secret DeleteVolume is called with.
inline constexpr std::string_view kAnnDeletionSecretName =
    "volume.kubernetes.io/provisioner-deletion-secret-name";
inline constexpr std::string_view kAnnDeletionSecretNamespace =
    "volume.kubernetes.io/provisioner-deletion-secret-namespace";

// The secrets a class names, resolved for one claim.
struct SecretRefs {
  std::optional<api::SecretReference> provisioner;
  std::optional<api::SecretReference> controller_publish;
  std::optional<api::SecretReference> node_stage;
  std::optional<api::SecretReference> node_publish;
  std::optional<api::SecretReference> controller_expand;
  std::optional<api::SecretReference> node_expand;
};

// The class's secret references for the claim and the volume `pv_name`, templates resolved.
// InvalidArgument naming the parameter when only one of a name and namespace is given, or a
// template cannot be resolved.
StatusOr<SecretRefs> ResolveSecrets(const api::StorageClass& cls,
                                    const api::PersistentVolumeClaim& claim,
                                    const std::string& pv_name);

struct CreateVolumeInput {
  std::string pv_name;  // "pvc-<claim uid>": the volume's name, so a retry finds it
  const api::PersistentVolumeClaim* claim = nullptr;
  const api::StorageClass* storage_class = nullptr;
  // The driver's topology keys (its CSINode entry) when it has accessibility constraints;
  // empty otherwise.
  std::vector<std::string> topology_keys;
  // The node the claim's pod goes to (delayed binding); nullptr when there is none.
  const api::Node* selected_node = nullptr;
  bool single_node_multi_writer = false;       // the driver offers SINGLE_NODE_MULTI_WRITER
  std::map<std::string, std::string> secrets;  // the provisioner secret's data
  // What the volume is made from (a snapshot, or a volume to clone); nullptr for an empty one.
  const ::csi::v1::VolumeContentSource* content_source = nullptr;
};

// The CreateVolume request. InvalidArgument naming the field when the claim asks for no storage
// or the selected node lacks a topology label.
StatusOr<::csi::v1::CreateVolumeRequest> MakeCreateVolumeRequest(const CreateVolumeInput& in);

// The PersistentVolume for what CreateVolume answered.
api::PersistentVolume MakePersistentVolume(const CreateVolumeInput& in, const SecretRefs& secrets,
                                           const ::csi::v1::Volume& volume);

}  // namespace kvol::controller::provisioner
