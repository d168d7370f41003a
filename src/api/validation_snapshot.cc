// Validation of the snapshot.storage.k8s.io kinds as external-snapshotter's CRD schemas and their
// validation rules give it: required fields and enums in the schema's words ("Required value",
// "Unsupported value"), and each x-kubernetes-validations rule's message at its field, with the
// value shown as the rule's type ("object", "string"), as the API server reports a failed rule.
#include "api/snapshot.h"
#include "api/validation.h"
#include "api/validation_internal.h"

namespace kvol::api {

using namespace validation_internal;

namespace {

const std::vector<std::string_view> kDeletionPolicies = {kSnapshotDeletionDelete,
                                                         kSnapshotDeletionRetain};

void CheckDeletionPolicy(const std::string& policy, const Path& path, FieldErrors& errs) {
  if (policy.empty()) {
    errs.push_back(Required(path));
  } else if (policy != kSnapshotDeletionDelete && policy != kSnapshotDeletionRetain) {
    errs.push_back(NotSupported(path, policy, kDeletionPolicies));
  }
}

// A failed x-kubernetes-validations rule on a field of `type`.
FieldError RuleFailed(const Path& path, std::string_view type, std::string message) {
  return Invalid(path, type, std::move(message));
}

// Exactly one of two optional fields, as the CEL rule says it.
void CheckExactlyOne(const std::optional<std::string>& a, const std::optional<std::string>& b,
                     const Path& path, std::string message, FieldErrors& errs) {
  if (a.has_value() == b.has_value()) errs.push_back(RuleFailed(path, "object", std::move(message)));
}

// A field that, once set, must stay and keep its value.
void CheckImmutable(const std::optional<std::string>& now, const std::optional<std::string>& old,
                    const Path& parent, std::string_view field, FieldErrors& errs) {
  if (!old) return;
  const std::string name(field);
  if (!now) {
    errs.push_back(RuleFailed(parent, "object", name + " is required once set"));
  } else if (*now != *old) {
    errs.push_back(RuleFailed(parent.Child(field), "string", name + " is immutable"));
  }
}

}  // namespace

FieldErrors Validate(const VolumeSnapshotClass& c) {
  FieldErrors errs =
      ValidateObjectMeta(c.metadata, false, NameRule::kDNS1123Subdomain, Path("metadata"));
  if (c.driver.empty()) errs.push_back(Required(Path("driver")));
  CheckDeletionPolicy(c.deletion_policy, Path("deletionPolicy"), errs);
  return errs;
}

FieldErrors ValidateUpdate(const VolumeSnapshotClass& c, const VolumeSnapshotClass& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(c.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(c));
  return errs;
}

FieldErrors Validate(const VolumeSnapshot& s) {
  FieldErrors errs =
      ValidateObjectMeta(s.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  const Path spec("spec");
  const VolumeSnapshotSource& src = s.spec.source;
  CheckExactlyOne(src.volume_snapshot_content_name, src.persistent_volume_claim_name,
                  spec.Child("source"),
                  "exactly one of volumeSnapshotContentName and persistentVolumeClaimName must "
                  "be set",
                  errs);
  if (s.spec.volume_snapshot_class_name && s.spec.volume_snapshot_class_name->empty()) {
    errs.push_back(RuleFailed(spec.Child("volumeSnapshotClassName"), "string",
                              "volumeSnapshotClassName must not be the empty string when set"));
  }
  return errs;
}

FieldErrors ValidateUpdate(const VolumeSnapshot& s, const VolumeSnapshot& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(s.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(s));
  const Path source = Path("spec").Child("source");
  CheckImmutable(s.spec.source.persistent_volume_claim_name,
                 old.spec.source.persistent_volume_claim_name, source, "persistentVolumeClaimName",
                 errs);
  CheckImmutable(s.spec.source.volume_snapshot_content_name,
                 old.spec.source.volume_snapshot_content_name, source, "volumeSnapshotContentName",
                 errs);
  return errs;
}

FieldErrors Validate(const VolumeSnapshotContent& c) {
  FieldErrors errs =
      ValidateObjectMeta(c.metadata, false, NameRule::kDNS1123Subdomain, Path("metadata"));
  const Path spec("spec");
  const ObjectReference& ref = c.spec.volume_snapshot_ref;
  if (ref.name.empty() && ref.namespace_.empty() && ref.uid.empty()) {
    errs.push_back(Required(spec.Child("volumeSnapshotRef")));
  } else if (ref.name.empty() || ref.namespace_.empty()) {
    errs.push_back(RuleFailed(spec.Child("volumeSnapshotRef"), "object",
                              "both spec.volumeSnapshotRef.name and "
                              "spec.volumeSnapshotRef.namespace must be set"));
  }
  CheckDeletionPolicy(c.spec.deletion_policy, spec.Child("deletionPolicy"), errs);
  if (c.spec.driver.empty()) errs.push_back(Required(spec.Child("driver")));
  CheckExactlyOne(c.spec.source.volume_handle, c.spec.source.snapshot_handle,
                  spec.Child("source"), "exactly one of volumeHandle and snapshotHandle must be set",
                  errs);
  if (c.status && c.status->restore_size && *c.status->restore_size < 0) {
    errs.push_back(Invalid(Path("status").Child("restoreSize"), *c.status->restore_size,
                           "status.restoreSize in body should be greater than or equal to 0"));
  }
  return errs;
}

FieldErrors ValidateUpdate(const VolumeSnapshotContent& c, const VolumeSnapshotContent& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(c.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(c));
  const Path spec("spec");
  CheckImmutable(c.spec.source.volume_handle, old.spec.source.volume_handle,
                 spec.Child("source"), "volumeHandle", errs);
  CheckImmutable(c.spec.source.snapshot_handle, old.spec.source.snapshot_handle,
                 spec.Child("source"), "snapshotHandle", errs);
  CheckImmutable(c.spec.source_volume_mode, old.spec.source_volume_mode, spec, "sourceVolumeMode",
                 errs);
  return errs;
}

}  // namespace kvol::api
