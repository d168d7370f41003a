// storage.k8s.io/v1 kinds: StorageClass, VolumeAttachment, CSIDriver, CSINode,
// CSIStorageCapacity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/core.h"
#include "api/meta.h"

namespace kvol::api {

struct TopologySelectorLabelRequirement {
  std::string key;
  std::vector<std::string> values;
  KVOL_FIELDS(TopologySelectorLabelRequirement) {
    v("key", s.key, Emit::kAlways);
    v("values", s.values);
  }
};

struct TopologySelectorTerm {
  std::vector<TopologySelectorLabelRequirement> match_label_expressions;
  KVOL_FIELDS(TopologySelectorTerm) { v("matchLabelExpressions", s.match_label_expressions); }
};

// StorageClass has no spec: its fields sit at the top level.
struct StorageClass {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  std::string provisioner;
  StringMap parameters;
  std::optional<std::string> reclaim_policy;  // Delete (default), Retain
  std::vector<std::string> mount_options;
  std::optional<bool> allow_volume_expansion;
  std::optional<std::string> volume_binding_mode;  // Immediate (default), WaitForFirstConsumer
  std::vector<TopologySelectorTerm> allowed_topologies;
  KVOL_FIELDS(StorageClass) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("provisioner", s.provisioner, Emit::kAlways);
    v("parameters", s.parameters);
    v("reclaimPolicy", s.reclaim_policy);
    v("mountOptions", s.mount_options);
    v("allowVolumeExpansion", s.allow_volume_expansion);
    v("volumeBindingMode", s.volume_binding_mode);
    v("allowedTopologies", s.allowed_topologies);
  }
};

struct VolumeAttachmentSource {
  std::optional<std::string> persistent_volume_name;
  std::optional<PersistentVolumeSpec> inline_volume_spec;
  KVOL_FIELDS(VolumeAttachmentSource) {
    v("persistentVolumeName", s.persistent_volume_name);
    v("inlineVolumeSpec", s.inline_volume_spec);
  }
};

struct VolumeAttachmentSpec {
  std::string attacher;
  VolumeAttachmentSource source;
  std::string node_name;
  KVOL_FIELDS(VolumeAttachmentSpec) {
    v("attacher", s.attacher, Emit::kAlways);
    v("source", s.source);
    v("nodeName", s.node_name, Emit::kAlways);
  }
};

struct VolumeError {
  std::optional<Time> time;
  std::string message;
  std::optional<int32_t> error_code;
  KVOL_FIELDS(VolumeError) {
    v("time", s.time);
    v("message", s.message);
    v("errorCode", s.error_code);
  }
};

struct VolumeAttachmentStatus {
  bool attached = false;
  StringMap attachment_metadata;
  std::optional<VolumeError> attach_error;
  std::optional<VolumeError> detach_error;
  KVOL_FIELDS(VolumeAttachmentStatus) {
    v("attached", s.attached, Emit::kAlways);
    v("attachmentMetadata", s.attachment_metadata);
    v("attachError", s.attach_error);
    v("detachError", s.detach_error);
  }
};

struct VolumeAttachment {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  VolumeAttachmentSpec spec;
  std::optional<VolumeAttachmentStatus> status;
  KVOL_FIELDS(VolumeAttachment) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

struct TokenRequest {
  std::string audience;
  std::optional<int64_t> expiration_seconds;
  KVOL_FIELDS(TokenRequest) {
    v("audience", s.audience, Emit::kAlways);
    v("expirationSeconds", s.expiration_seconds);
  }
};

struct CSIDriverSpec {
  std::optional<bool> attach_required;
  std::optional<bool> pod_info_on_mount;
  std::vector<std::string> volume_lifecycle_modes;  // Persistent, Ephemeral
  std::optional<bool> storage_capacity;
  std::optional<std::string> fs_group_policy;  // ReadWriteOnceWithFSType, File, None
  std::vector<TokenRequest> token_requests;
  std::optional<bool> requires_republish;
  std::optional<bool> se_linux_mount;
  KVOL_FIELDS(CSIDriverSpec) {
    v("attachRequired", s.attach_required);
    v("podInfoOnMount", s.pod_info_on_mount);
    v("volumeLifecycleModes", s.volume_lifecycle_modes);
    v("storageCapacity", s.storage_capacity);
    v("fsGroupPolicy", s.fs_group_policy);
    v("tokenRequests", s.token_requests);
    v("requiresRepublish", s.requires_republish);
    v("seLinuxMount", s.se_linux_mount);
  }
};

struct CSIDriver {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  CSIDriverSpec spec;
  KVOL_FIELDS(CSIDriver) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

struct VolumeNodeResources {
  std::optional<int32_t> count;
  KVOL_FIELDS(VolumeNodeResources) { v("count", s.count); }
};

struct CSINodeDriver {
  std::string name;
  std::string node_id;
  std::vector<std::string> topology_keys;
  std::optional<VolumeNodeResources> allocatable;
  KVOL_FIELDS(CSINodeDriver) {
    v("name", s.name, Emit::kAlways);
    v("nodeID", s.node_id, Emit::kAlways);
    v("topologyKeys", s.topology_keys);
    v("allocatable", s.allocatable);
  }
};

struct CSINodeSpec {
  std::vector<CSINodeDriver> drivers;
  KVOL_FIELDS(CSINodeSpec) { v("drivers", s.drivers); }
};

struct CSINode {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  CSINodeSpec spec;
  KVOL_FIELDS(CSINode) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

// The capacity a CSI driver reported (GetCapacity) for one StorageClass in one topology
// segment; namespaced, as external-provisioner keeps them beside itself.
struct CSIStorageCapacity {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  std::optional<LabelSelector> node_topology;
  std::string storage_class_name;
  std::optional<Quantity> capacity;
  std::optional<Quantity> maximum_volume_size;
  KVOL_FIELDS(CSIStorageCapacity) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("nodeTopology", s.node_topology);
    v("storageClassName", s.storage_class_name, Emit::kAlways);
    v("capacity", s.capacity);
    v("maximumVolumeSize", s.maximum_volume_size);
  }
};

// coordination.k8s.io/v1 Lease: leader election and node heartbeats.
struct LeaseSpec {
  std::optional<std::string> holder_identity;
  std::optional<int32_t> lease_duration_seconds;
  std::optional<MicroTime> acquire_time;
  std::optional<MicroTime> renew_time;
  std::optional<int32_t> lease_transitions;
  KVOL_FIELDS(LeaseSpec) {
    v("holderIdentity", s.holder_identity);
    v("leaseDurationSeconds", s.lease_duration_seconds);
    v("acquireTime", s.acquire_time);
    v("renewTime", s.renew_time);
    v("leaseTransitions", s.lease_transitions);
  }
};

struct Lease {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  LeaseSpec spec;
  KVOL_FIELDS(Lease) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

}  // namespace kvol::api
