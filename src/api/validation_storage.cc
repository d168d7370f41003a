// Validation of the storage.k8s.io and coordination.k8s.io kinds: StorageClass,
// VolumeAttachment, CSIDriver, CSINode, Lease.
#include <algorithm>
#include <set>

#include "api/validation.h"
#include "api/validation_internal.h"
#include "base/strings.h"

namespace kvol::api {

using namespace validation_internal;

namespace {

constexpr size_t kMaxParameters = 512;
constexpr size_t kMaxParametersSize = 256 * 1024;

void ValidateTopologyTerm(FieldErrors& errs, const TopologySelectorTerm& t, const Path& path) {
  std::set<std::string> keys;
  for (size_t j = 0; j < t.match_label_expressions.size(); ++j) {
    const auto& r = t.match_label_expressions[j];
    Path p = path.Child("matchLabelExpressions").Index(j);
    if (r.values.empty()) errs.push_back(Required(p.Child("values")));
    std::set<std::string> values;
    for (size_t k = 0; k < r.values.size(); ++k) {
      if (!values.insert(r.values[k]).second) {
        errs.push_back(Duplicate(p.Child("values").Index(k), r.values[k]));
      }
    }
    Append(errs, ValidateLabelName(r.key, p.Child("key")));
    if (!keys.insert(r.key).second) errs.push_back(Duplicate(p.Child("key"), r.key));
  }
}

}  // namespace

FieldErrors Validate(const StorageClass& sc) {
  FieldErrors errs =
      ValidateObjectMeta(sc.metadata, false, NameRule::kDNS1123Subdomain, Path("metadata"));
  if (sc.provisioner.empty()) {
    errs.push_back(Required(Path("provisioner")));
  } else {
    std::string lower = AsciiLower(sc.provisioner);
    AddInvalid(errs, Path("provisioner"), lower, IsQualifiedName(lower));
  }
  if (sc.parameters.size() > kMaxParameters) {
    errs.push_back(TooLong(Path("parameters"), kMaxParameters));
  } else {
    size_t total = 0;
    for (const auto& [k, v] : sc.parameters) {
      if (k.empty()) errs.push_back(Invalid(Path("parameters"), k, "field can not be empty."));
      total += k.size() + v.size();
    }
    if (total > kMaxParametersSize) errs.push_back(TooLong(Path("parameters"), kMaxParametersSize));
  }
  if (sc.reclaim_policy && !sc.reclaim_policy->empty() && *sc.reclaim_policy != "Delete" &&
      *sc.reclaim_policy != "Retain") {
    errs.push_back(NotSupported(Path("reclaimPolicy"), *sc.reclaim_policy, {"Delete", "Retain"}));
  }
  if (!sc.volume_binding_mode) {
    errs.push_back(Required(Path("volumeBindingMode")));
  } else if (*sc.volume_binding_mode != "Immediate" &&
             *sc.volume_binding_mode != "WaitForFirstConsumer") {
    errs.push_back(NotSupported(Path("volumeBindingMode"), *sc.volume_binding_mode,
                                {"Immediate", "WaitForFirstConsumer"}));
  }
  std::set<std::string> terms;
  for (size_t i = 0; i < sc.allowed_topologies.size(); ++i) {
    Path p = Path("allowedTopologies").Index(i);
    ValidateTopologyTerm(errs, sc.allowed_topologies[i], p);
    std::string key = DumpJson(EncodeStruct(sc.allowed_topologies[i]));
    if (!terms.insert(key).second) {
      errs.push_back(Duplicate(p.Child("matchLabelExpressions"), ""));
    }
  }
  return errs;
}

FieldErrors ValidateUpdate(const StorageClass& sc, const StorageClass& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(sc.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(sc));
  if (sc.parameters != old.parameters) {
    errs.push_back(Forbidden(Path("parameters"), "updates to parameters are forbidden."));
  }
  if (sc.provisioner != old.provisioner) {
    errs.push_back(Forbidden(Path("provisioner"), "updates to provisioner are forbidden."));
  }
  if (sc.reclaim_policy != old.reclaim_policy) {
    errs.push_back(Forbidden(Path("reclaimPolicy"), "updates to reclaimPolicy are forbidden."));
  }
  if (sc.volume_binding_mode != old.volume_binding_mode) {
    errs.push_back(Invalid(Path("volumeBindingMode"),
                           sc.volume_binding_mode ? BadValue::String(*sc.volume_binding_mode)
                                                  : BadValue::Raw("null"),
                           std::string(kFieldImmutable)));
  }
  return errs;
}

FieldErrors Validate(const VolumeAttachment& va) {
  FieldErrors errs =
      ValidateObjectMeta(va.metadata, false, NameRule::kDNS1123Subdomain, Path("metadata"));
  Path spec("spec");
  if (va.spec.attacher.empty()) {
    errs.push_back(Required(spec.Child("attacher")));
  } else {
    ValidateCSIDriverName(errs, va.spec.attacher, spec.Child("attacher"));
  }
  const auto& src = va.spec.source;
  Path sp = spec.Child("source");
  const bool by_name = src.persistent_volume_name.has_value();
  const bool inline_spec = src.inline_volume_spec.has_value();
  if (!by_name && !inline_spec) {
    errs.push_back(Required(sp, "must specify exactly one of inlineVolumeSpec and "
                                "persistentVolumeName"));
  } else if (by_name && inline_spec) {
    errs.push_back(Forbidden(sp, "must specify exactly one of inlineVolumeSpec and "
                                 "persistentVolumeName"));
  } else if (by_name) {
    const std::string& name = *src.persistent_volume_name;
    if (name.empty()) {
      errs.push_back(Required(sp.Child("persistentVolumeName"),
                              "must specify non empty persistentVolumeName"));
    } else {
      AddInvalid(errs, sp.Child("persistentVolumeName"), name, IsDNS1123Subdomain(name));
    }
  } else {
    const auto& pv = *src.inline_volume_spec;
    Path ip = sp.Child("inlineVolumeSpec");
    const char* kInline = "may not be specified in the context of inline volumes";
    if (pv.claim_ref) errs.push_back(Forbidden(ip.Child("claimRef"), kInline));
    if (!pv.capacity.empty()) errs.push_back(Forbidden(ip.Child("capacity"), kInline));
    if (pv.node_affinity) errs.push_back(Forbidden(ip.Child("nodeAffinity"), kInline));
    if (!pv.storage_class_name.empty()) {
      errs.push_back(Forbidden(ip.Child("storageClassName"), kInline));
    }
    if (!pv.csi) {
      errs.push_back(Required(ip.Child("csi"), "has to be specified in the context of inline volumes"));
    }
    if (!pv.persistent_volume_reclaim_policy.empty() &&
        pv.persistent_volume_reclaim_policy != "Retain") {
      errs.push_back(Forbidden(ip.Child("persistentVolumeReclaimPolicy"),
                               "may only be Retain in the context of inline volumes"));
    }
    if (pv.volume_mode && *pv.volume_mode != "Filesystem") {
      errs.push_back(Forbidden(ip.Child("volumeMode"),
                               "may not specify volumeMode other than Filesystem in the context of "
                               "inline volumes"));
    }
  }
  AddInvalid(errs, spec.Child("nodeName"), va.spec.node_name,
             IsDNS1123Subdomain(va.spec.node_name));
  if (va.status) {
    size_t total = 0;
    for (const auto& [k, v] : va.status->attachment_metadata) total += k.size() + v.size();
    if (total > kMaxParametersSize) {
      errs.push_back(TooLong(Path("status").Child("attachmentMetadata"), kMaxParametersSize));
    }
    for (const auto* e : {&va.status->attach_error, &va.status->detach_error}) {
      if (!*e) continue;
      Path ep = Path("status").Child(e == &va.status->attach_error ? "attachError" : "detachError");
      if ((*e)->message.size() > 1024) errs.push_back(TooLong(ep.Child("message"), 1024));
      if ((*e)->error_code && *(*e)->error_code < 0) {
        errs.push_back(Invalid(ep.Child("errorCode"), *(*e)->error_code,
                               "must be greater than or equal to 0"));
      }
    }
  }
  return errs;
}

FieldErrors ValidateUpdate(const VolumeAttachment& va, const VolumeAttachment& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(va.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(va));
  if (va.spec != old.spec) {
    errs.push_back(Invalid(Path("spec"), JsonBadValue(EncodeStruct(va.spec)),
                           std::string(kFieldImmutable)));
  }
  return errs;
}

FieldErrors Validate(const CSIDriver& d) {
  FieldErrors errs = ValidateObjectMeta(d.metadata, false, NameRule::kDNS1123Subdomain,
                                        Path("metadata"));
  Path spec("spec");
  // Kubernetes spells this path "attachedRequired".
  if (!d.spec.attach_required) errs.push_back(Required(spec.Child("attachedRequired")));
  if (!d.spec.pod_info_on_mount) errs.push_back(Required(spec.Child("podInfoOnMount")));
  if (!d.spec.storage_capacity) errs.push_back(Required(spec.Child("storageCapacity")));
  if (d.spec.fs_group_policy) {
    static const std::vector<std::string_view> kPolicies = {"File", "None",
                                                            "ReadWriteOnceWithFSType"};
    if (std::find(kPolicies.begin(), kPolicies.end(), *d.spec.fs_group_policy) ==
        kPolicies.end()) {
      errs.push_back(NotSupported(spec.Child("fsGroupPolicy"), *d.spec.fs_group_policy, kPolicies));
    }
  }
  std::set<std::string> audiences;
  for (size_t i = 0; i < d.spec.token_requests.size(); ++i) {
    const auto& t = d.spec.token_requests[i];
    Path p = spec.Child("tokenRequests").Index(i);
    if (!audiences.insert(t.audience).second) {
      errs.push_back(Duplicate(p.Child("audience"), t.audience));
    }
    if (t.expiration_seconds) {
      if (*t.expiration_seconds < 600) {
        errs.push_back(Invalid(p.Child("expirationSeconds"), *t.expiration_seconds,
                               "may not specify a duration less than 10 minutes"));
      }
      if (*t.expiration_seconds > (int64_t{1} << 32)) {
        errs.push_back(Invalid(p.Child("expirationSeconds"), *t.expiration_seconds,
                               "may not specify a duration larger than 2^32 seconds"));
      }
    }
  }
  for (const auto& m : d.spec.volume_lifecycle_modes) {
    if (m != "Persistent" && m != "Ephemeral") {
      errs.push_back(NotSupported(spec.Child("volumeLifecycleModes"), m,
                                  {"Persistent", "Ephemeral"}));
    }
  }
  return errs;
}

FieldErrors ValidateUpdate(const CSIDriver& d, const CSIDriver& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(d.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(d));
  if (d.spec.attach_required != old.spec.attach_required) {
    errs.push_back(Invalid(Path("spec").Child("attachRequired"),
                           BadValue::Raw(d.spec.attach_required.value_or(false) ? "true" : "false"),
                           std::string(kFieldImmutable)));
  }
  if (d.spec.volume_lifecycle_modes != old.spec.volume_lifecycle_modes) {
    errs.push_back(Invalid(Path("spec").Child("volumeLifecycleModes"),
                           JsonBadValue(Json(d.spec.volume_lifecycle_modes)),
                           std::string(kFieldImmutable)));
  }
  return errs;
}

FieldErrors Validate(const CSINode& n) {
  FieldErrors errs =
      ValidateObjectMeta(n.metadata, false, NameRule::kDNS1123Subdomain, Path("metadata"));
  std::set<std::string> names;
  for (size_t i = 0; i < n.spec.drivers.size(); ++i) {
    const auto& d = n.spec.drivers[i];
    Path p = Path("spec").Child("drivers").Index(i);
    ValidateCSIDriverName(errs, d.name, p.Child("name"));
    if (d.node_id.empty()) {
      errs.push_back(Required(p.Child("nodeID")));
    } else if (d.node_id.size() > 192) {
      errs.push_back(Invalid(p.Child("nodeID"), d.node_id, "must be 192 characters or less"));
    }
    if (d.allocatable && d.allocatable->count && *d.allocatable->count < 0) {
      errs.push_back(Invalid(p.Child("allocatable").Child("count"), *d.allocatable->count,
                             "must be greater than or equal to 0"));
    }
    if (!names.insert(d.name).second) errs.push_back(Duplicate(p.Child("name"), d.name));
    std::set<std::string> keys;
    for (const auto& k : d.topology_keys) {
      if (k.empty()) errs.push_back(Required(p));
      if (!keys.insert(k).second) errs.push_back(Duplicate(p, k));
      AddInvalid(errs, p, k, IsQualifiedName(k));
    }
  }
  return errs;
}

FieldErrors ValidateUpdate(const CSINode& n, const CSINode& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(n.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(n));
  for (const auto& was : old.spec.drivers) {
    for (const auto& now : n.spec.drivers) {
      if (now.name != was.name) continue;
      CSINodeDriver a = now, b = was;
      a.allocatable = b.allocatable;  // the volume count may change
      if (a != b) {
        errs.push_back(Invalid(Path("spec").Child("drivers"), JsonBadValue(EncodeStruct(now)),
                               std::string(kFieldImmutable)));
      }
    }
  }
  return errs;
}

FieldErrors Validate(const CSIStorageCapacity& c) {
  FieldErrors errs =
      ValidateObjectMeta(c.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  if (c.node_topology) {
    Append(errs, ValidateLabelSelector(*c.node_topology, Path("nodeTopology")));
  }
  if (c.storage_class_name.empty()) {
    errs.push_back(Required(Path("storageClassName")));
  } else {
    AddInvalid(errs, Path("storageClassName"), c.storage_class_name,
               IsDNS1123Subdomain(c.storage_class_name));
  }
  if (c.capacity) ValidateNonNegativeQuantity(errs, *c.capacity, Path("capacity"));
  if (c.maximum_volume_size) {
    ValidateNonNegativeQuantity(errs, *c.maximum_volume_size, Path("maximumVolumeSize"));
  }
  return errs;
}

FieldErrors ValidateUpdate(const CSIStorageCapacity& c, const CSIStorageCapacity& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(c.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(c));
  if (c.node_topology != old.node_topology) {
    errs.push_back(Invalid(Path("nodeTopology"),
                           JsonBadValue(c.node_topology ? EncodeStruct(*c.node_topology) : Json()),
                           std::string(kFieldImmutable)));
  }
  if (c.storage_class_name != old.storage_class_name) {
    errs.push_back(
        Invalid(Path("storageClassName"), c.storage_class_name, std::string(kFieldImmutable)));
  }
  return errs;
}

FieldErrors Validate(const Lease& l) {
  FieldErrors errs =
      ValidateObjectMeta(l.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  Path spec("spec");
  if (l.spec.lease_duration_seconds && *l.spec.lease_duration_seconds <= 0) {
    errs.push_back(Invalid(spec.Child("leaseDurationSeconds"), *l.spec.lease_duration_seconds,
                           "must be greater than 0"));
  }
  if (l.spec.lease_transitions && *l.spec.lease_transitions < 0) {
    errs.push_back(Invalid(spec.Child("leaseTransitions"), *l.spec.lease_transitions,
                           "must be greater than or equal to 0"));
  }
  return errs;
}

FieldErrors ValidateUpdate(const Lease& l, const Lease& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(l.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(l));
  return errs;
}

}  // namespace kvol::api
