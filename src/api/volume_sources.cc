// Volume source bookkeeping shared by defaulting, validation and the volume plugins.
#include "api/volume_sources.h"

#include <algorithm>

namespace kvol::api {
namespace {

bool HasUnknown(const Json& unknown, std::string_view key) {
  if (!unknown.is_object()) return false;
  auto it = unknown.find(key);
  return it != unknown.end() && !it->is_null();
}

}  // namespace

const std::vector<std::string_view>& PodVolumeSourceKeys() {
  static const std::vector<std::string_view> kKeys = {
      "emptyDir",       "hostPath",       "gitRepo",        "gcePersistentDisk",
      "awsElasticBlockStore", "secret",   "nfs",            "iscsi",
      "glusterfs",      "flocker",        "persistentVolumeClaim", "rbd",
      "cinder",         "cephfs",         "quobyte",        "downwardAPI",
      "fc",             "flexVolume",     "configMap",      "azureFile",
      "vsphereVolume",  "photonPersistentDisk", "portworxVolume", "azureDisk",
      "storageos",      "projected",      "scaleIO",        "csi",
      "ephemeral",      "image",
  };
  return kKeys;
}

const std::vector<std::string_view>& PersistentVolumeSourceKeys() {
  static const std::vector<std::string_view> kKeys = {
      "hostPath",   "gcePersistentDisk", "awsElasticBlockStore", "glusterfs",
      "flocker",    "nfs",               "rbd",                  "quobyte",
      "cephfs",     "iscsi",             "cinder",               "fc",
      "flexVolume", "azureFile",         "vsphereVolume",        "photonPersistentDisk",
      "portworxVolume", "azureDisk",     "scaleIO",              "local",
      "storageos",  "csi",
  };
  return kKeys;
}

std::vector<std::string_view> PresentSources(const Volume& v) {
  std::vector<std::string_view> out;
  for (std::string_view k : PodVolumeSourceKeys()) {
    bool present;
    if (k == "emptyDir") {
      present = v.empty_dir.has_value();
    } else if (k == "hostPath") {
      present = v.host_path.has_value();
    } else if (k == "secret") {
      present = v.secret.has_value();
    } else if (k == "nfs") {
      present = v.nfs.has_value();
    } else if (k == "persistentVolumeClaim") {
      present = v.persistent_volume_claim.has_value();
    } else if (k == "downwardAPI") {
      present = v.downward_api.has_value();
    } else if (k == "flexVolume") {
      present = v.flex_volume.has_value();
    } else if (k == "configMap") {
      present = v.config_map.has_value();
    } else if (k == "projected") {
      present = v.projected.has_value();
    } else if (k == "csi") {
      present = v.csi.has_value();
    } else if (k == "ephemeral") {
      present = v.ephemeral.has_value();
    } else {
      present = HasUnknown(v.unknown_fields, k);
    }
    if (present) out.push_back(k);
  }
  return out;
}

std::optional<std::string> ClaimNameOf(const Pod& pod, const Volume& v) {
  if (v.persistent_volume_claim) return v.persistent_volume_claim->claim_name;
  if (v.ephemeral) return pod.metadata.name + "-" + v.name;
  return std::nullopt;
}

std::optional<std::string> EphemeralClaimNotForPod(const Pod& pod,
                                                   const PersistentVolumeClaim& claim) {
  bool owned = claim.metadata.namespace_ == pod.metadata.namespace_;
  if (owned) {
    owned = std::any_of(claim.metadata.owner_references.begin(),
                        claim.metadata.owner_references.end(), [&](const OwnerReference& r) {
                          return r.controller.value_or(false) && r.uid == pod.metadata.uid;
                        });
  }
  if (owned) return std::nullopt;
  return "PVC " + claim.metadata.namespace_ + "/" + claim.metadata.name + " was not created for pod " +
         pod.metadata.namespace_ + "/" + pod.metadata.name + " (pod is not owner)";
}

std::vector<std::string_view> PresentSources(const PersistentVolumeSpec& spec) {
  std::vector<std::string_view> out;
  for (std::string_view k : PersistentVolumeSourceKeys()) {
    bool present;
    if (k == "hostPath") {
      present = spec.host_path.has_value();
    } else if (k == "nfs") {
      present = spec.nfs.has_value();
    } else if (k == "flexVolume") {
      present = spec.flex_volume.has_value();
    } else if (k == "local") {
      present = spec.local.has_value();
    } else if (k == "csi") {
      present = spec.csi.has_value();
    } else {
      present = HasUnknown(spec.unknown_fields, k);
    }
    if (present) out.push_back(k);
  }
  return out;
}

bool SamePersistentVolumeSource(const PersistentVolumeSpec& a, const PersistentVolumeSpec& b) {
  if (a.host_path != b.host_path || a.nfs != b.nfs || a.flex_volume != b.flex_volume ||
      a.local != b.local || a.csi != b.csi) {
    return false;
  }
  static const Json kNull;
  for (std::string_view k : PersistentVolumeSourceKeys()) {
    const Json* va = &kNull;
    const Json* vb = &kNull;
    if (a.unknown_fields.is_object()) {
      auto it = a.unknown_fields.find(k);
      if (it != a.unknown_fields.end()) va = &*it;
    }
    if (b.unknown_fields.is_object()) {
      auto it = b.unknown_fields.find(k);
      if (it != b.unknown_fields.end()) vb = &*it;
    }
    if (*va != *vb) return false;
  }
  return true;
}

}  // namespace kvol::api
