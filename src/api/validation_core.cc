// Validation of the core/v1 kinds: PersistentVolume, PersistentVolumeClaim, Pod and the volume
// sources, Node, Namespace, ConfigMap, Secret, Event.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "api/validation.h"
#include "api/validation_internal.h"
#include "api/volume_sources.h"
#include "base/strings.h"

namespace kvol::api {

using namespace validation_internal;

namespace {

const std::vector<std::string_view> kEnvFieldPaths = {
    "metadata.name",  "metadata.namespace", "metadata.uid",  "spec.nodeName",
    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs"};

using VolumeMap = std::map<std::string, const Volume*>;

void ValidateVolumeMounts(FieldErrors& errs, const Container& c, const VolumeMap& volumes,
                          const Path& path) {
  std::set<std::string> mount_paths;
  for (size_t j = 0; j < c.volume_mounts.size(); ++j) {
    const auto& m = c.volume_mounts[j];
    Path p = path.Index(j);
    if (m.name.empty()) errs.push_back(Required(p.Child("name")));
    if (!volumes.count(m.name)) errs.push_back(NotFound(p.Child("name"), m.name));
    if (m.mount_path.empty()) {
      errs.push_back(Required(p.Child("mountPath")));
    } else if (!IsAbsolute(m.mount_path)) {
      errs.push_back(Invalid(p.Child("mountPath"), m.mount_path, "must be an absolute path"));
    }
    if (!mount_paths.insert(m.mount_path).second) {
      errs.push_back(Invalid(p.Child("mountPath"), m.mount_path, "must be unique"));
    }
    for (const auto& d : c.volume_devices) {
      if (d.name == m.name) {
        errs.push_back(Invalid(p.Child("name"), m.name, "must not already exist in volumeDevices"));
      }
      if (d.device_path == m.mount_path) {
        errs.push_back(Invalid(p.Child("mountPath"), m.mount_path,
                               "must not already exist as a path in volumeDevices"));
      }
    }
    // Kubernetes reports subPath problems without the mount's index.
    if (!m.sub_path.empty()) ValidateLocalDescendingPath(errs, m.sub_path, path.Child("subPath"));
    if (!m.sub_path_expr.empty()) {
      if (!m.sub_path.empty()) {
        errs.push_back(Invalid(p.Child("subPathExpr"), m.sub_path_expr,
                               "subPathExpr and subPath are mutually exclusive"));
      }
      ValidateLocalDescendingPath(errs, m.sub_path_expr, path.Child("subPathExpr"));
    }
    if (m.mount_propagation) {
      static const std::vector<std::string_view> kModes = {"Bidirectional", "HostToContainer",
                                                           "None"};
      if (std::find(kModes.begin(), kModes.end(), *m.mount_propagation) == kModes.end()) {
        errs.push_back(NotSupported(path.Child("mountPropagation"), *m.mount_propagation, kModes));
      }
    }
  }
}

void ValidateVolumeDevices(FieldErrors& errs, const Container& c, const VolumeMap& volumes,
                           const Path& path) {
  std::set<std::string> names, paths;
  for (size_t j = 0; j < c.volume_devices.size(); ++j) {
    const auto& d = c.volume_devices[j];
    Path p = path.Index(j);
    auto vol = volumes.find(d.name);
    if (d.name.empty()) errs.push_back(Required(p.Child("name")));
    if (names.count(d.name)) errs.push_back(Invalid(p.Child("name"), d.name, "must be unique"));
    if (vol != volumes.end() && !vol->second->persistent_volume_claim &&
        !vol->second->ephemeral) {
      errs.push_back(Invalid(p.Child("name"), d.name,
                             "can only use volume source type of PersistentVolumeClaim or "
                             "Ephemeral for block mode"));
    }
    if (vol == volumes.end()) errs.push_back(NotFound(p.Child("name"), d.name));
    if (d.device_path.empty()) errs.push_back(Required(p.Child("devicePath")));
    if (paths.count(d.device_path)) {
      errs.push_back(Invalid(p.Child("devicePath"), d.device_path, "must be unique"));
    }
    if (!d.device_path.empty() && HasBackstep(d.device_path)) {
      errs.push_back(Invalid(p.Child("devicePath"), d.device_path,
                             "can not contain backsteps ('..')"));
    } else {
      paths.insert(d.device_path);
    }
    for (const auto& m : c.volume_mounts) {
      if (m.name == d.name) {
        errs.push_back(Invalid(p.Child("name"), d.name, "must not already exist in volumeMounts"));
      }
      if (m.mount_path == d.device_path) {
        errs.push_back(Invalid(p.Child("devicePath"), d.device_path,
                               "must not already exist as a path in volumeMounts"));
      }
    }
    if (!d.name.empty()) names.insert(d.name);
  }
}

void ValidateEnv(FieldErrors& errs, const std::vector<EnvVar>& env, const Path& path) {
  for (size_t j = 0; j < env.size(); ++j) {
    const auto& e = env[j];
    Path p = path.Index(j);
    if (e.name.empty()) errs.push_back(Required(p.Child("name")));
    if (!e.value_from) continue;
    Path vp = p.Child("valueFrom");
    int n = 0;
    if (e.value_from->field_ref) {
      ++n;
      ValidateObjectFieldSelector(errs, *e.value_from->field_ref, kEnvFieldPaths,
                                  vp.Child("fieldRef"));
    }
    if (e.value_from->resource_field_ref) {
      ++n;
      ValidateResourceFieldSelector(errs, *e.value_from->resource_field_ref, false,
                                    vp.Child("resourceFieldRef"));
    }
    if (e.value_from->config_map_key_ref) {
      ++n;
      const auto& r = *e.value_from->config_map_key_ref;
      AddInvalid(errs, vp.Child("configMapKeyRef").Child("name"), r.name, IsDNS1123Subdomain(r.name));
      if (r.key.empty()) {
        errs.push_back(Required(vp.Child("configMapKeyRef").Child("key")));
      } else {
        AddInvalid(errs, vp.Child("configMapKeyRef").Child("key"), r.key, IsConfigMapKey(r.key));
      }
    }
    if (e.value_from->secret_key_ref) {
      ++n;
      const auto& r = *e.value_from->secret_key_ref;
      AddInvalid(errs, vp.Child("secretKeyRef").Child("name"), r.name, IsDNS1123Subdomain(r.name));
      if (r.key.empty()) {
        errs.push_back(Required(vp.Child("secretKeyRef").Child("key")));
      } else {
        AddInvalid(errs, vp.Child("secretKeyRef").Child("key"), r.key, IsConfigMapKey(r.key));
      }
    }
    if (n == 0) {
      errs.push_back(Invalid(vp, BadValue::String(""), "must specify one of: `fieldRef`, "
                                                   "`resourceFieldRef`, `configMapKeyRef` or "
                                                   "`secretKeyRef`"));
    } else if (!e.value.empty()) {
      errs.push_back(Invalid(vp, BadValue::String(""),
                             "may not be specified when `value` is not empty"));
    } else if (n > 1) {
      errs.push_back(Invalid(vp, BadValue::String(""),
                             "may not have more than one field specified at a time"));
    }
  }
}

// Kubernetes' IsValidUserID and IsValidGroupID.
void ValidateId(FieldErrors& errs, const std::optional<int64_t>& id, const Path& path) {
  if (id && (*id < 0 || *id > 2147483647)) {
    errs.push_back(Invalid(path, *id, "must be between 0 and 2147483647, inclusive"));
  }
}

void ValidateSeccompProfile(FieldErrors& errs, const std::optional<SeccompProfile>& profile,
                            const Path& path) {
  if (!profile) return;
  // Kubernetes lists the valid types sorted (a set).
  static const std::vector<std::string_view> kTypes = {"Localhost", "RuntimeDefault",
                                                       "Unconfined"};
  if (profile->type == "Localhost") {
    if (!profile->localhost_profile) {
      errs.push_back(Required(path.Child("localhostProfile"),
                              "must be set when seccomp type is Localhost"));
    } else if (profile->localhost_profile->empty() ||
               profile->localhost_profile->front() == '/' ||
               ("/" + *profile->localhost_profile + "/").find("/../") != std::string::npos) {
      errs.push_back(Invalid(path.Child("localhostProfile"), *profile->localhost_profile,
                             "must be a relative path that does not contain '..'"));
    }
  } else if (profile->type == "RuntimeDefault" || profile->type == "Unconfined") {
    if (profile->localhost_profile) {
      errs.push_back(Invalid(path.Child("localhostProfile"), *profile->localhost_profile,
                             "can only be set when seccomp type is Localhost"));
    }
  } else {
    errs.push_back(NotSupported(path.Child("type"), profile->type, kTypes));
  }
}

void ValidateSecurityContext(FieldErrors& errs, const std::optional<SecurityContext>& sc,
                             const Path& path) {
  if (!sc) return;
  ValidateId(errs, sc->run_as_user, path.Child("runAsUser"));
  ValidateId(errs, sc->run_as_group, path.Child("runAsGroup"));
  ValidateSeccompProfile(errs, sc->seccomp_profile, path.Child("seccompProfile"));
  if (sc->allow_privilege_escalation.value_or(true)) return;
  // Kubernetes' messages, backquotes included.
  if (sc->privileged.value_or(false)) {
    errs.push_back(Invalid(path, BadValue::None(),
                           "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"));
  }
  if (sc->capabilities) {
    for (const auto& cap : sc->capabilities->add) {
      if (cap == "CAP_SYS_ADMIN") {
        errs.push_back(Invalid(path, BadValue::None(),
                               "cannot set `allowPrivilegeEscalation` to false and "
                               "`capabilities.Add` CAP_SYS_ADMIN"));
      }
    }
  }
}

void ValidateContainers(FieldErrors& errs, const std::vector<Container>& containers,
                        const VolumeMap& volumes, std::set<std::string>& names, const Path& path) {
  static const std::vector<std::string_view> kPullPolicies = {"Always", "IfNotPresent", "Never"};
  static const std::vector<std::string_view> kMessagePolicies = {"File",
                                                                 "FallbackToLogsOnError"};
  for (size_t i = 0; i < containers.size(); ++i) {
    const auto& c = containers[i];
    Path p = path.Index(i);
    if (c.name.empty()) {
      errs.push_back(Required(p.Child("name")));
    } else {
      AddInvalid(errs, p.Child("name"), c.name, IsDNS1123Label(c.name));
    }
    if (!c.name.empty() && !names.insert(c.name).second) {
      errs.push_back(Duplicate(p.Child("name"), c.name));
    }
    if (c.image.empty()) errs.push_back(Required(p.Child("image")));
    if (c.termination_message_policy.empty()) {
      errs.push_back(Required(p.Child("terminationMessagePolicy")));
    } else if (std::find(kMessagePolicies.begin(), kMessagePolicies.end(),
                         c.termination_message_policy) == kMessagePolicies.end()) {
      errs.push_back(NotSupported(p.Child("terminationMessagePolicy"),
                                  c.termination_message_policy, kMessagePolicies));
    }
    if (c.image_pull_policy.empty()) {
      errs.push_back(Required(p.Child("imagePullPolicy")));
    } else if (std::find(kPullPolicies.begin(), kPullPolicies.end(), c.image_pull_policy) ==
               kPullPolicies.end()) {
      errs.push_back(NotSupported(p.Child("imagePullPolicy"), c.image_pull_policy, kPullPolicies));
    }
    ValidateEnv(errs, c.env, p.Child("env"));
    for (const auto* list : {&c.resources.limits, &c.resources.requests}) {
      Path rp = p.Child("resources").Child(list == &c.resources.limits ? "limits" : "requests");
      for (const auto& [name, q] : *list) ValidateNonNegativeQuantity(errs, q, rp.Key(name));
    }
    ValidateVolumeMounts(errs, c, volumes, p.Child("volumeMounts"));
    ValidateVolumeDevices(errs, c, volumes, p.Child("volumeDevices"));
    ValidateSecurityContext(errs, c.security_context, p.Child("securityContext"));
    ValidateProbes(errs, c, path.str().ends_with("initContainers"), p);
  }
}

void ValidateTolerations(FieldErrors& errs, const std::vector<Toleration>& ts, const Path& path) {
  static const std::vector<std::string_view> kEffects = {"NoSchedule", "PreferNoSchedule",
                                                         "NoExecute"};
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto& t = ts[i];
    Path p = path.Index(i);
    if (!t.key.empty()) Append(errs, ValidateLabelName(t.key, p.Child("key")));
    if (t.key.empty() && t.operator_ != "Exists") {
      errs.push_back(Invalid(p.Child("operator"), t.operator_,
                             "operator must be Exists when `key` is empty, which means \"match "
                             "all values and all keys\""));
    }
    if (t.toleration_seconds && t.effect != "NoExecute") {
      errs.push_back(Invalid(p.Child("effect"), t.effect,
                             "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (t.operator_.empty() || t.operator_ == "Equal") {
      AddInvalid(errs, p.Child("value"), t.value, IsValidLabelValue(t.value));
    } else if (t.operator_ == "Exists") {
      if (!t.value.empty()) {
        errs.push_back(Invalid(p.Child("operator"), t.value,
                               "value must be empty when `operator` is 'Exists'"));
      }
    } else {
      errs.push_back(NotSupported(p.Child("operator"), t.operator_, {"Equal", "Exists"}));
    }
    if (!t.effect.empty() &&
        std::find(kEffects.begin(), kEffects.end(), t.effect) == kEffects.end()) {
      errs.push_back(NotSupported(p.Child("effect"), t.effect, kEffects));
    }
  }
}

// Checks the keys (and base64 values) of a data map; adds the size of the values, decoded.
void ValidateDataMap(FieldErrors& errs, const StringMap& data, bool base64, const Path& path,
                     size_t* total) {
  for (const auto& [k, v] : data) {
    AddInvalid(errs, path.Key(k), k, IsConfigMapKey(k));
    size_t size = v.size();
    if (base64) {
      size_t bad = 0;
      auto decoded = Base64Decode(v, &bad);
      if (decoded) {
        size = decoded->size();
      } else {
        errs.push_back(Invalid(path.Key(k), BadValue::None(),
                               "illegal base64 data at input byte " + std::to_string(bad)));
      }
    }
    *total += size;
  }
}

constexpr size_t kMaxDataSize = 1024 * 1024;

// The one volume source a PersistentVolume has (flexVolume may come with another), checked.
void ValidatePersistentVolumeSource(FieldErrors& errs, const PersistentVolumeSpec& spec,
                                    const Path& path) {
  auto sources = PresentSources(spec);
  if (sources.empty()) errs.push_back(Required(path, "must specify a volume type"));
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string_view src = sources[i];
    if (i > 0 && src != "flexVolume") {
      errs.push_back(Forbidden(path.Child(src == "cephfs" ? "cephFS" : src),
                               "may not specify more than 1 volume type"));
      continue;
    }
    if (src == "hostPath") {
      ValidateHostPath(errs, *spec.host_path, path.Child("hostPath"));
    } else if (src == "nfs") {
      ValidateNFS(errs, *spec.nfs, path.Child("nfs"));
    } else if (src == "flexVolume") {
      if (spec.flex_volume->driver.empty()) {
        errs.push_back(Required(path.Child("flexVolume").Child("driver")));
      }
      ValidateFlexOptions(errs, spec.flex_volume->options, path.Child("flexVolume").Child("options"));
      if (spec.flex_volume->secret_ref) {
        ValidateSecretReference(errs, *spec.flex_volume->secret_ref,
                                path.Child("flexVolume").Child("secretRef"));
      }
    } else if (src == "local") {
      Path lp = path.Child("local").Child("path");
      if (spec.local->path.empty()) {
        errs.push_back(Required(lp));
      } else if (HasBackstep(spec.local->path)) {
        errs.push_back(Invalid(lp, spec.local->path, "must not contain '..'"));
      }
      if (!spec.node_affinity.has_value()) {
        errs.push_back(Required(path.Child("nodeAffinity"), "Local volume requires node affinity"));
      }
    } else if (src == "csi") {
      ValidateCSIPersistentVolume(errs, *spec.csi, path.Child("csi"));
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PersistentVolume

FieldErrors ValidatePersistentVolumeSpec(const PersistentVolumeSpec& spec, const Path& path) {
  FieldErrors errs;
  if (spec.access_modes.empty()) errs.push_back(Required(path.Child("accessModes")));
  ValidateAccessModes(errs, spec.access_modes, path.Child("accessModes"));

  Path cap = path.Child("capacity");
  if (spec.capacity.empty()) errs.push_back(Required(cap));
  if (!spec.capacity.count("storage") || spec.capacity.size() > 1) {
    Json rendered = spec.capacity.empty() ? Json() : Json::object();
    for (const auto& [k, q] : spec.capacity) rendered[k] = q.ToString();
    errs.push_back(NotSupported(cap, JsonBadValue(rendered), {"storage"}));
  }
  for (const auto& [name, q] : spec.capacity) {
    if (q.Sign() < 0) {
      errs.push_back(Invalid(cap.Key(name), q.Value(), "must be a valid resource quantity"));
    }
    ValidatePositiveQuantity(errs, q, cap.Key(name));
  }

  if (!spec.persistent_volume_reclaim_policy.empty()) {
    static const std::vector<std::string_view> kPolicies = {"Delete", "Recycle", "Retain"};
    if (std::find(kPolicies.begin(), kPolicies.end(), spec.persistent_volume_reclaim_policy) ==
        kPolicies.end()) {
      errs.push_back(NotSupported(path.Child("persistentVolumeReclaimPolicy"),
                                  spec.persistent_volume_reclaim_policy, kPolicies));
    }
  }

  // Any nodeAffinity counts as specified (a local volume needs one); a missing `required` is
  // reported on its own.
  if (spec.node_affinity) {
    Path na = path.Child("nodeAffinity");
    if (!spec.node_affinity->required) {
      errs.push_back(Required(na.Child("required"), "must specify required node constraints"));
    } else {
      Append(errs, ValidateNodeSelector(*spec.node_affinity->required, na.Child("required")));
    }
  }

  ValidatePersistentVolumeSource(errs, spec, path);

  if (spec.host_path && spec.persistent_volume_reclaim_policy == "Recycle") {
    std::string_view p = spec.host_path->path;
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    if (p == "/") {
      errs.push_back(Forbidden(path.Child("persistentVolumeReclaimPolicy"),
                               "may not be 'recycle' for a hostPath mount of '/'"));
    }
  }
  if (!spec.storage_class_name.empty()) {
    AddInvalid(errs, path.Child("storageClassName"), spec.storage_class_name,
               IsDNS1123Subdomain(spec.storage_class_name));
  }
  if (spec.volume_mode && *spec.volume_mode != "Block" && *spec.volume_mode != "Filesystem") {
    errs.push_back(NotSupported(path.Child("volumeMode"), *spec.volume_mode, {"Block", "Filesystem"}));
  }
  return errs;
}

FieldErrors Validate(const PersistentVolume& pv) {
  FieldErrors errs =
      ValidateObjectMeta(pv.metadata, false, NameRule::kDNS1123Subdomain, Path("metadata"));
  Append(errs, ValidatePersistentVolumeSpec(pv.spec, Path("spec")));
  return errs;
}

FieldErrors ValidateUpdate(const PersistentVolume& pv, const PersistentVolume& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(pv.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(pv));
  bool same_source;
  if (old.spec.csi && pv.spec.csi && !old.spec.csi->controller_expand_secret_ref &&
      pv.spec.csi->controller_expand_secret_ref) {
    // A CSI volume may gain a controllerExpandSecretRef it did not have.
    PersistentVolumeSpec was = old.spec;
    was.csi->controller_expand_secret_ref = pv.spec.csi->controller_expand_secret_ref;
    same_source = SamePersistentVolumeSource(pv.spec, was);
  } else {
    same_source = SamePersistentVolumeSource(pv.spec, old.spec);
  }
  if (!same_source) {
    errs.push_back(Forbidden(Path("spec").Child("persistentvolumesource"),
                             "spec.persistentvolumesource is immutable after creation"));
  }
  if (pv.spec.volume_mode != old.spec.volume_mode) {
    errs.push_back(Invalid(Path("volumeMode"),
                           pv.spec.volume_mode ? BadValue::String(*pv.spec.volume_mode)
                                               : BadValue::Raw("null"),
                           std::string(kFieldImmutable)));
  }
  if (old.spec.node_affinity && pv.spec.node_affinity != old.spec.node_affinity) {
    Json rendered = pv.spec.node_affinity ? EncodeStruct(*pv.spec.node_affinity) : Json();
    errs.push_back(Invalid(Path("nodeAffinity"), JsonBadValue(rendered),
                           "field is immutable, except for updating from beta label to GA"));
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// PersistentVolumeClaim

FieldErrors ValidatePersistentVolumeClaimSpec(const PersistentVolumeClaimSpec& spec,
                                              const Path& path) {
  FieldErrors errs;
  if (spec.access_modes.empty()) {
    errs.push_back(Required(path.Child("accessModes"), "at least 1 access mode is required"));
  }
  if (spec.selector) Append(errs, ValidateLabelSelector(*spec.selector, path.Child("selector")));
  ValidateAccessModes(errs, spec.access_modes, path.Child("accessModes"));
  Path storage = path.Child("resources").Key("storage");
  auto it = spec.resources.requests.find("storage");
  if (it == spec.resources.requests.end()) {
    errs.push_back(Required(storage));
  } else {
    ValidatePositiveQuantity(errs, it->second, storage);
  }
  if (spec.storage_class_name && !spec.storage_class_name->empty()) {
    AddInvalid(errs, path.Child("storageClassName"), *spec.storage_class_name,
               IsDNS1123Subdomain(*spec.storage_class_name));
  }
  if (spec.volume_mode && *spec.volume_mode != "Block" && *spec.volume_mode != "Filesystem") {
    errs.push_back(NotSupported(path.Child("volumeMode"), *spec.volume_mode, {"Block", "Filesystem"}));
  }
  auto check_ref = [&](const std::optional<std::string>& group, const std::string& kind,
                       const std::string& name, const Path& p) {
    if (name.empty()) errs.push_back(Required(p.Child("name")));
    if (kind.empty()) errs.push_back(Required(p.Child("kind")));
    if (!group || group->empty()) {
      if (!kind.empty() && kind != "PersistentVolumeClaim") {
        errs.push_back(Invalid(p, kind,
                               "must be 'PersistentVolumeClaim' when referencing the default "
                               "apiGroup"));
      }
    } else {
      AddInvalid(errs, p.Child("apiGroup"), *group, IsDNS1123Subdomain(*group));
    }
  };
  if (spec.data_source) {
    check_ref(spec.data_source->api_group, spec.data_source->kind, spec.data_source->name,
              path.Child("dataSource"));
  }
  if (spec.data_source_ref) {
    const auto& r = *spec.data_source_ref;
    check_ref(r.api_group, r.kind, r.name, path.Child("dataSourceRef"));
    if (r.namespace_ && !r.namespace_->empty()) {
      AddInvalid(errs, path.Child("dataSourceRef").Child("namespace"), *r.namespace_,
                 IsDNS1123Label(*r.namespace_));
      if (spec.data_source) {
        errs.push_back(Invalid(path, "dataSource",
                               "may not be specified when dataSourceRef.namespace is specified"));
      }
    } else if (spec.data_source &&
               (spec.data_source->api_group.value_or("") != r.api_group.value_or("") ||
                spec.data_source->kind != r.kind || spec.data_source->name != r.name)) {
      errs.push_back(Invalid(path, "dataSource", "must match dataSourceRef"));
    }
  }
  return errs;
}

FieldErrors Validate(const PersistentVolumeClaim& pvc) {
  FieldErrors errs =
      ValidateObjectMeta(pvc.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  Append(errs, ValidatePersistentVolumeClaimSpec(pvc.spec, Path("spec")));
  return errs;
}

namespace {

// Whether an update leaves a claim's spec as it may: unchanged, except that volumeName may be
// filled in once, storageClassName may be set once (e.g. to the default class), and a bound
// claim may change its storage request (growth is checked separately). Compares field by
// field, without copying either spec: a new field of PersistentVolumeClaimSpec belongs here.
bool SameClaimSpecForUpdate(const PersistentVolumeClaimSpec& now,
                            const PersistentVolumeClaimSpec& was, bool bound) {
  auto same_requests = [&] {
    const ResourceList& a = now.resources.requests;
    const ResourceList& b = was.resources.requests;
    if (!bound) return a == b;
    // Equal apart from "storage": walk both in key order, skipping it.
    auto skip = [](const ResourceList& l, ResourceList::const_iterator it) {
      return it != l.end() && it->first == "storage" ? std::next(it) : it;
    };
    auto i = skip(a, a.begin());
    auto j = skip(b, b.begin());
    for (; i != a.end() && j != b.end(); i = skip(a, std::next(i)), j = skip(b, std::next(j))) {
      if (*i != *j) return false;
    }
    return i == a.end() && j == b.end();
  };
  return now.access_modes == was.access_modes && now.selector == was.selector &&
         now.resources.limits == was.resources.limits && same_requests() &&
         (was.volume_name.empty() || now.volume_name == was.volume_name) &&
         (!was.storage_class_name || now.storage_class_name == was.storage_class_name) &&
         now.volume_mode == was.volume_mode && now.data_source == was.data_source &&
         now.data_source_ref == was.data_source_ref &&
         now.resources.unknown_fields == was.resources.unknown_fields &&
         now.unknown_fields == was.unknown_fields;
}

}  // namespace

FieldErrors ValidateUpdate(const PersistentVolumeClaim& pvc, const PersistentVolumeClaim& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(pvc.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(pvc));
  if (!SameClaimSpecForUpdate(pvc.spec, old.spec, pvc.status.phase == "Bound")) {
    errs.push_back(Forbidden(Path("spec"),
                             "spec is immutable after creation except resources.requests and "
                             "volumeAttributesClassName for bound claims"));
  }
  auto new_storage = pvc.spec.resources.requests.find("storage");
  auto old_storage = old.spec.resources.requests.find("storage");
  if (new_storage != pvc.spec.resources.requests.end() &&
      old_storage != old.spec.resources.requests.end() && new_storage->second < old_storage->second) {
    // As Kubernetes 1.32 (RecoverVolumeExpansionFailure): a failed expansion may be retried with
    // a smaller size, as long as it stays above what the volume already has.
    auto cap = old.status.capacity.find("storage");
    if (cap != old.status.capacity.end() && new_storage->second <= cap->second) {
      errs.push_back(Forbidden(Path("spec").Child("resources").Child("requests").Child("storage"),
                               "field can not be less than status.capacity"));
    }
  }
  if (pvc.spec.volume_mode != old.spec.volume_mode) {
    errs.push_back(Invalid(Path("volumeMode"),
                           pvc.spec.volume_mode ? BadValue::String(*pvc.spec.volume_mode)
                                                : BadValue::Raw("null"),
                           std::string(kFieldImmutable)));
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Pod

FieldErrors ValidatePodSpec(const PodSpec& spec, const Path& path) {
  FieldErrors errs;
  if (!spec.termination_grace_period_seconds) {
    errs.push_back(Required(path.Child("terminationGracePeriodSeconds")));
  }

  VolumeMap volumes;
  for (size_t i = 0; i < spec.volumes.size(); ++i) {
    const auto& v = spec.volumes[i];
    Path p = path.Child("volumes").Index(i);
    FieldErrors el = ValidateVolumeSource(v, p);
    if (v.name.empty()) {
      el.push_back(Required(p.Child("name")));
    } else {
      AddInvalid(el, p.Child("name"), v.name, IsDNS1123Label(v.name));
    }
    if (volumes.count(v.name)) el.push_back(Duplicate(p.Child("name"), v.name));
    if (el.empty()) {
      volumes.emplace(v.name, &v);
    } else {
      Append(errs, std::move(el));
    }
  }

  std::set<std::string> names;
  if (spec.containers.empty()) errs.push_back(Required(path.Child("containers")));
  ValidateContainers(errs, spec.containers, volumes, names, path.Child("containers"));
  ValidateContainers(errs, spec.init_containers, volumes, names, path.Child("initContainers"));

  static const std::vector<std::string_view> kRestart = {"Always", "OnFailure", "Never"};
  if (spec.restart_policy.empty()) {
    errs.push_back(Required(path.Child("restartPolicy")));
  } else if (std::find(kRestart.begin(), kRestart.end(), spec.restart_policy) == kRestart.end()) {
    errs.push_back(NotSupported(path.Child("restartPolicy"), spec.restart_policy, kRestart));
  }
  static const std::vector<std::string_view> kDNS = {"ClusterFirstWithHostNet", "ClusterFirst",
                                                     "Default", "None"};
  if (!spec.dns_policy.empty() &&
      std::find(kDNS.begin(), kDNS.end(), spec.dns_policy) == kDNS.end()) {
    errs.push_back(NotSupported(path.Child("dnsPolicy"), spec.dns_policy, kDNS));
  }
  Append(errs, ValidateLabels(spec.node_selector, path.Child("nodeSelector")));
  if (spec.affinity && spec.affinity->node_affinity) {
    const auto& na = *spec.affinity->node_affinity;
    Path np = path.Child("affinity").Child("nodeAffinity");
    if (na.required_during_scheduling_ignored_during_execution) {
      Append(errs, ValidateNodeSelector(*na.required_during_scheduling_ignored_during_execution,
                                        np.Child("requiredDuringSchedulingIgnoredDuringExecution")));
    }
    for (size_t i = 0; i < na.preferred_during_scheduling_ignored_during_execution.size(); ++i) {
      const auto& t = na.preferred_during_scheduling_ignored_during_execution[i];
      Path tp = np.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i);
      if (t.weight < 1 || t.weight > 100) {
        errs.push_back(Invalid(tp.Child("weight"), t.weight, "must be in the range 1-100"));
      }
      ValidateNodeSelectorTerm(errs, t.preference, tp.Child("preference"), true);
    }
  }
  if (!spec.service_account_name.empty()) {
    AddInvalid(errs, path.Child("serviceAccountName"), spec.service_account_name,
               IsDNS1123Subdomain(spec.service_account_name));
  }
  if (!spec.node_name.empty()) {
    AddInvalid(errs, path.Child("nodeName"), spec.node_name, IsDNS1123Subdomain(spec.node_name));
  }
  if (!spec.hostname.empty()) {
    AddInvalid(errs, path.Child("hostname"), spec.hostname, IsDNS1123Label(spec.hostname));
  }
  if (!spec.subdomain.empty()) {
    AddInvalid(errs, path.Child("subdomain"), spec.subdomain, IsDNS1123Label(spec.subdomain));
  }
  if (spec.host_pid && spec.share_process_namespace.value_or(false)) {
    errs.push_back(Invalid(path.Child("securityContext").Child("shareProcessNamespace"),
                           BadValue::Raw("true"),
                           "ShareProcessNamespace and HostPID cannot both be enabled"));
  }
  ValidateTolerations(errs, spec.tolerations, path.Child("tolerations"));
  if (const auto& sc = spec.security_context) {
    const Path sp = path.Child("securityContext");
    ValidateId(errs, sc->run_as_user, sp.Child("runAsUser"));
    ValidateId(errs, sc->run_as_group, sp.Child("runAsGroup"));
    ValidateId(errs, sc->fs_group, sp.Child("fsGroup"));
    for (size_t i = 0; i < sc->supplemental_groups.size(); ++i) {
      ValidateId(errs, sc->supplemental_groups[i], sp.Child("supplementalGroups").Index(i));
    }
    ValidateSeccompProfile(errs, sc->seccomp_profile, sp.Child("seccompProfile"));
  }
  return errs;
}

FieldErrors Validate(const Pod& pod) {
  FieldErrors errs =
      ValidateObjectMeta(pod.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  Append(errs, ValidatePodSpec(pod.spec, Path("spec")));
  for (size_t i = 0; i < pod.spec.volumes.size(); ++i) {
    const auto& v = pod.spec.volumes[i];
    if (!v.projected || !pod.spec.service_account_name.empty()) continue;
    for (size_t j = 0; j < v.projected->sources.size(); ++j) {
      if (v.projected->sources[j].service_account_token) {
        errs.push_back(Forbidden(Path("spec").Child("volumes").Index(i).Child("projected")
                                     .Child("sources").Index(j).Child("serviceAccountToken"),
                                 "must not be specified when serviceAccountName is not set"));
      }
    }
  }
  return errs;
}

FieldErrors ValidateUpdate(const Pod& pod, const Pod& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(pod.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(pod));
  if (pod.spec.containers.size() != old.spec.containers.size() ||
      pod.spec.init_containers.size() != old.spec.init_containers.size()) {
    errs.push_back(Forbidden(Path("spec").Child("containers"),
                             "pod updates may not add or remove containers"));
    return errs;
  }
  // Only images, tolerations (additions), activeDeadlineSeconds and the grace period may change.
  PodSpec now = pod.spec;
  for (size_t i = 0; i < now.containers.size(); ++i) {
    now.containers[i].image = old.spec.containers[i].image;
  }
  for (size_t i = 0; i < now.init_containers.size(); ++i) {
    now.init_containers[i].image = old.spec.init_containers[i].image;
  }
  now.tolerations = old.spec.tolerations;
  now.termination_grace_period_seconds = old.spec.termination_grace_period_seconds;
  if (old.spec.unknown_fields.contains("activeDeadlineSeconds")) {
    now.unknown_fields["activeDeadlineSeconds"] = old.spec.unknown_fields["activeDeadlineSeconds"];
  } else if (now.unknown_fields.is_object()) {
    now.unknown_fields.erase("activeDeadlineSeconds");
    if (now.unknown_fields.empty() && !old.spec.unknown_fields.is_object()) {
      now.unknown_fields = Json();
    }
  }
  if (now != old.spec) {
    errs.push_back(Forbidden(
        Path("spec"),
        "pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
        "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
        "set to 1 if it was previously negative)"));
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// Node, Namespace, ConfigMap, Secret, Event

FieldErrors Validate(const Node& node) {
  FieldErrors errs =
      ValidateObjectMeta(node.metadata, false, NameRule::kDNS1123Subdomain, Path("metadata"));
  static const std::vector<std::string_view> kEffects = {"NoSchedule", "PreferNoSchedule",
                                                         "NoExecute"};
  std::set<std::pair<std::string, std::string>> taints;
  for (size_t i = 0; i < node.spec.taints.size(); ++i) {
    const auto& t = node.spec.taints[i];
    Path p = Path("spec").Child("taints").Index(i);
    if (!taints.emplace(t.key, t.effect).second) {
      errs.push_back(Duplicate(p, t.key + "=" + t.value + ":" + t.effect));
      errs.back().detail = "taints must be unique by key and effect pair";
    }
    Append(errs, ValidateLabelName(t.key, p.Child("key")));
    AddInvalid(errs, p.Child("value"), t.value, IsValidLabelValue(t.value));
    if (t.effect.empty()) {
      errs.push_back(Required(p.Child("effect")));
    } else if (std::find(kEffects.begin(), kEffects.end(), t.effect) == kEffects.end()) {
      errs.push_back(NotSupported(p.Child("effect"), t.effect, kEffects));
    }
  }
  for (const auto* list : {&node.status.capacity, &node.status.allocatable}) {
    Path p = Path("status").Child(list == &node.status.capacity ? "capacity" : "allocatable");
    for (const auto& [name, q] : *list) ValidateNonNegativeQuantity(errs, q, p.Key(name));
  }
  return errs;
}

FieldErrors ValidateUpdate(const Node& node, const Node& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(node.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(node));
  if (!old.spec.pod_cidr.empty() && node.spec.pod_cidr != old.spec.pod_cidr) {
    errs.push_back(Forbidden(Path("spec").Child("podCIDR"),
                             "node updates may not change podCIDR except from \"\" to valid"));
  }
  if (!old.spec.provider_id.empty() && node.spec.provider_id != old.spec.provider_id) {
    errs.push_back(Forbidden(Path("spec").Child("providerID"),
                             "node updates may not change providerID except from \"\" to valid"));
  }
  return errs;
}

FieldErrors Validate(const Namespace& ns) {
  FieldErrors errs =
      ValidateObjectMeta(ns.metadata, false, NameRule::kDNS1123Label, Path("metadata"));
  for (size_t i = 0; i < ns.spec.finalizers.size(); ++i) {
    const auto& f = ns.spec.finalizers[i];
    AddInvalid(errs, Path("spec").Child("finalizers").Index(i), f, IsQualifiedName(f));
  }
  return errs;
}

FieldErrors ValidateUpdate(const Namespace& ns, const Namespace& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(ns.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(ns));
  return errs;
}

FieldErrors Validate(const ConfigMap& cm) {
  FieldErrors errs =
      ValidateObjectMeta(cm.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  size_t total = 0;
  ValidateDataMap(errs, cm.data, false, Path("data"), &total);
  ValidateDataMap(errs, cm.binary_data, true, Path("binaryData"), &total);
  for (const auto& [k, v] : cm.data) {
    if (cm.binary_data.count(k)) {
      errs.push_back(Invalid(Path("data").Key(k), k, "duplicate of key present in binaryData"));
    }
  }
  // Kubernetes reports the ConfigMap total at the empty path.
  if (total > kMaxDataSize) errs.push_back(TooLong(Path(""), kMaxDataSize));
  return errs;
}

namespace {
template <class T>
void ValidateImmutableData(FieldErrors& errs, const T& obj, const T& old) {
  const char* kMsg = "field is immutable when `immutable` is set";
  if (!old.immutable.value_or(false)) return;
  if (!obj.immutable.value_or(false)) errs.push_back(Forbidden(Path("immutable"), kMsg));
  if (obj.data != old.data) errs.push_back(Forbidden(Path("data"), kMsg));
  if constexpr (std::is_same_v<T, ConfigMap>) {
    if (obj.binary_data != old.binary_data) errs.push_back(Forbidden(Path("binaryData"), kMsg));
  }
}
}  // namespace

FieldErrors ValidateUpdate(const ConfigMap& cm, const ConfigMap& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(cm.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(cm));
  ValidateImmutableData(errs, cm, old);
  return errs;
}

FieldErrors Validate(const Secret& s) {
  FieldErrors errs =
      ValidateObjectMeta(s.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  size_t total = 0;
  ValidateDataMap(errs, s.data, true, Path("data"), &total);
  // stringData is merged into data by the API server; check its keys the same way.
  ValidateDataMap(errs, s.string_data, false, Path("stringData"), &total);
  if (total > kMaxDataSize) errs.push_back(TooLong(Path("data"), kMaxDataSize));
  auto has = [&](const char* key) { return s.data.count(key) || s.string_data.count(key); };
  Path data("data");
  if (s.type == "kubernetes.io/tls") {
    if (!has("tls.crt")) errs.push_back(Required(data.Key("tls.crt")));
    if (!has("tls.key")) errs.push_back(Required(data.Key("tls.key")));
  } else if (s.type == "kubernetes.io/basic-auth") {
    if (!has("username") && !has("password")) {
      errs.push_back(Required(data.Key("username")));
      errs.push_back(Required(data.Key("password")));
    }
  } else if (s.type == "kubernetes.io/ssh-auth") {
    if (!has("ssh-privatekey")) errs.push_back(Required(data.Key("ssh-privatekey")));
  } else if (s.type == "kubernetes.io/dockerconfigjson") {
    if (!has(".dockerconfigjson")) errs.push_back(Required(data.Key(".dockerconfigjson")));
  } else if (s.type == "kubernetes.io/dockercfg") {
    if (!has(".dockercfg")) errs.push_back(Required(data.Key(".dockercfg")));
  } else if (s.type == "kubernetes.io/service-account-token") {
    if (!s.metadata.annotations.count("kubernetes.io/service-account.name")) {
      errs.push_back(Required(Path("metadata").Child("annotations")
                                  .Key("kubernetes.io/service-account.name")));
    }
  }
  return errs;
}

FieldErrors ValidateUpdate(const Secret& s, const Secret& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(s.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(s));
  if (s.type != old.type) errs.push_back(Invalid(Path("type"), s.type, std::string(kFieldImmutable)));
  ValidateImmutableData(errs, s, old);
  return errs;
}

FieldErrors Validate(const Event& ev) {
  FieldErrors errs =
      ValidateObjectMeta(ev.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  const std::string& ns = ev.metadata.namespace_;
  const std::string& ins = ev.involved_object.namespace_;
  if (ins.empty() ? (!ns.empty() && ns != "default") : ns != ins) {
    errs.push_back(Invalid(Path("involvedObject").Child("namespace"), ins,
                           "does not match event.namespace"));
  }
  return errs;
}

FieldErrors ValidateUpdate(const Event& ev, const Event& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(ev.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(ev));
  return errs;
}

}  // namespace kvol::api
