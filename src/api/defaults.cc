// Kubernetes' v1 defaulting for the kinds kvol serves.
#include "api/defaults.h"

#include "api/volume_sources.h"
#include "base/strings.h"

namespace kvol::api {
namespace {

void DefaultMode(std::optional<int32_t>& mode) {
  if (!mode) mode = kDefaultFileMode;
}

// "nginx" and "nginx:latest" pull Always; a pinned tag or a digest pulls IfNotPresent.
std::string DefaultPullPolicy(const std::string& image) {
  if (image.find('@') != std::string::npos) return "IfNotPresent";
  size_t slash = image.rfind('/');
  size_t colon = image.rfind(':');
  bool has_tag = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  if (!has_tag || image.substr(colon + 1) == "latest") return "Always";
  return "IfNotPresent";
}

void SetDefaults(Container& c) {
  if (c.image_pull_policy.empty()) c.image_pull_policy = DefaultPullPolicy(c.image);
  if (c.termination_message_path.empty()) c.termination_message_path = "/dev/termination-log";
  if (c.termination_message_policy.empty()) c.termination_message_policy = "File";
  for (auto* probe : {&c.liveness_probe, &c.readiness_probe, &c.startup_probe}) {
    if (!*probe) continue;
    Probe& p = **probe;
    if (p.timeout_seconds == 0) p.timeout_seconds = 1;
    if (p.period_seconds == 0) p.period_seconds = 10;
    if (p.success_threshold == 0) p.success_threshold = 1;
    if (p.failure_threshold == 0) p.failure_threshold = 3;
    if (p.http_get) {
      if (p.http_get->path.empty()) p.http_get->path = "/";
      if (p.http_get->scheme.empty()) p.http_get->scheme = "HTTP";
    }
  }
  // Requests default to limits, per resource.
  for (const auto& [name, q] : c.resources.limits) {
    c.resources.requests.emplace(name, q);
  }
  for (auto& e : c.env) {
    if (e.value_from && e.value_from->field_ref && e.value_from->field_ref->api_version.empty()) {
      e.value_from->field_ref->api_version = "v1";
    }
  }
}

void SetDefaults(std::vector<DownwardAPIVolumeFile>& items) {
  for (auto& f : items) {
    if (f.field_ref && f.field_ref->api_version.empty()) f.field_ref->api_version = "v1";
  }
}

void SetDefaults(Volume& v) {
  if (PresentSources(v).empty()) v.empty_dir.emplace();
  if (v.host_path && !v.host_path->type) v.host_path->type = "";
  if (v.secret) DefaultMode(v.secret->default_mode);
  if (v.config_map) DefaultMode(v.config_map->default_mode);
  if (v.ephemeral && v.ephemeral->volume_claim_template) {
    SetDefaults(v.ephemeral->volume_claim_template->spec);
  }
  if (v.downward_api) {
    DefaultMode(v.downward_api->default_mode);
    SetDefaults(v.downward_api->items);
  }
  if (v.projected) {
    DefaultMode(v.projected->default_mode);
    for (auto& src : v.projected->sources) {
      if (src.service_account_token && !src.service_account_token->expiration_seconds) {
        src.service_account_token->expiration_seconds = 3600;
      }
      if (src.downward_api) SetDefaults(src.downward_api->items);
    }
  }
}

}  // namespace

void SetDefaults(PodSpec& spec) {
  for (auto& v : spec.volumes) SetDefaults(v);
  for (auto& c : spec.init_containers) SetDefaults(c);
  for (auto& c : spec.containers) SetDefaults(c);
  if (spec.restart_policy.empty()) spec.restart_policy = "Always";
  if (spec.dns_policy.empty()) spec.dns_policy = "ClusterFirst";
  if (!spec.termination_grace_period_seconds) spec.termination_grace_period_seconds = 30;
  if (spec.scheduler_name.empty()) spec.scheduler_name = "default-scheduler";
  if (!spec.security_context) spec.security_context.emplace();
  if (!spec.unknown_fields.contains("enableServiceLinks")) {
    spec.unknown_fields["enableServiceLinks"] = true;
  }
}

void SetDefaults(PersistentVolumeClaimSpec& spec) {
  if (!spec.volume_mode) spec.volume_mode = "Filesystem";
}

void SetDefaults(Namespace& obj) {
  if (!obj.metadata.name.empty()) {
    obj.metadata.labels["kubernetes.io/metadata.name"] = obj.metadata.name;
  }
  if (obj.status.phase.empty()) obj.status.phase = "Active";
}

void SetDefaults(Node& obj) {
  if (obj.status.allocatable.empty() && !obj.status.capacity.empty()) {
    obj.status.allocatable = obj.status.capacity;
  }
}

void SetDefaults(Pod& obj) {
  SetDefaults(obj.spec);
  if (obj.status.phase.empty()) obj.status.phase = "Pending";
}

void SetDefaults(PersistentVolume& obj) {
  if (obj.status.phase.empty()) obj.status.phase = "Pending";
  if (obj.spec.host_path && !obj.spec.host_path->type) obj.spec.host_path->type = "";
  if (obj.spec.persistent_volume_reclaim_policy.empty()) {
    obj.spec.persistent_volume_reclaim_policy = "Retain";
  }
  if (!obj.spec.volume_mode) obj.spec.volume_mode = "Filesystem";
}

void SetDefaults(PersistentVolumeClaim& obj) {
  SetDefaults(obj.spec);
  if (obj.status.phase.empty()) obj.status.phase = "Pending";
}

void SetDefaults(ConfigMap&) {}

void SetDefaults(Secret& obj) {
  if (obj.type.empty()) obj.type = "Opaque";
  // stringData is write-only: the API server merges it into data (its values win) and never
  // stores or returns it, as Kubernetes' conversion does.
  for (const auto& [key, value] : obj.string_data) obj.data[key] = Base64Encode(value);
  obj.string_data.clear();
}

void SetDefaults(Event&) {}

void SetDefaults(StorageClass& obj) {
  if (!obj.reclaim_policy) obj.reclaim_policy = "Delete";
  if (!obj.volume_binding_mode) obj.volume_binding_mode = "Immediate";
}

void SetDefaults(VolumeAttachment&) {}

void SetDefaults(CSIDriver& obj) {
  auto& s = obj.spec;
  if (!s.attach_required) s.attach_required = true;
  if (!s.pod_info_on_mount) s.pod_info_on_mount = false;
  if (!s.storage_capacity) s.storage_capacity = false;
  if (!s.fs_group_policy) s.fs_group_policy = "ReadWriteOnceWithFSType";
  if (s.volume_lifecycle_modes.empty()) s.volume_lifecycle_modes = {"Persistent"};
  if (!s.requires_republish) s.requires_republish = false;
  if (!s.se_linux_mount) s.se_linux_mount = false;
}

void SetDefaults(CSINode&) {}

void SetDefaults(CSIStorageCapacity&) {}
void SetDefaults(ResourceQuota&) {}

void SetDefaults(Lease&) {}
// The CRDs give no defaults.
void SetDefaults(VolumeSnapshotClass&) {}
void SetDefaults(VolumeSnapshot&) {}
void SetDefaults(VolumeSnapshotContent&) {}

}  // namespace kvol::api
