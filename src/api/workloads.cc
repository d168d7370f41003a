// Validation of the generic kinds: metadata by each kind's name rule, and the pod and claim
// templates inside workloads.
#include "api/defaults.h"
#include "api/generic.h"
#include "api/labels.h"
#include "api/validation.h"

namespace kvol::api {
namespace {

const Json& Child(const Json& obj, std::string_view key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

template <class T>
T DecodeAt(const Json& j, std::initializer_list<std::string_view> path, FieldErrors* errors) {
  T out;
  if (j.is_null()) return out;
  DecodeContext c(errors);
  for (auto p : path) c.PushField(p);
  Decode(j, out, c);
  return out;
}

// RBAC names are path segments: anything but "." and "..", without '/' or '%'.
FieldErrors ValidatePathSegmentName(const ObjectMeta& m, const Path& path) {
  FieldErrors errs;
  auto check = [&](const std::string& n, const Path& p, bool prefix) {
    if (n == "." || n == "..") errs.push_back(Invalid(p, n, "may not be '" + n + "'"));
    if (!prefix || n.empty()) {
      if (n.find('/') != std::string::npos) errs.push_back(Invalid(p, n, "may not contain '/'"));
      if (n.find('%') != std::string::npos) errs.push_back(Invalid(p, n, "may not contain '%'"));
    }
  };
  if (!m.generate_name.empty()) check(m.generate_name, path.Child("generateName"), true);
  if (m.name.empty() && m.generate_name.empty()) {
    errs.push_back(Required(path.Child("name"), "name or generateName is required"));
  } else if (!m.name.empty()) {
    check(m.name, path.Child("name"), false);
  }
  Append(errs, ValidateLabels(m.labels, path.Child("labels")));
  Append(errs, ValidateAnnotations(m.annotations, path.Child("annotations")));
  return errs;
}

template <class Tag>
constexpr bool kNamespaced = !std::is_same_v<Tag, ClusterRoleTag> &&
                             !std::is_same_v<Tag, ClusterRoleBindingTag>;

template <class Tag>
constexpr const char* kWorkloadKind = std::is_same_v<Tag, DeploymentTag>    ? "Deployment"
                                      : std::is_same_v<Tag, StatefulSetTag> ? "StatefulSet"
                                      : std::is_same_v<Tag, DaemonSetTag>   ? "DaemonSet"
                                      : std::is_same_v<Tag, ReplicaSetTag>  ? "ReplicaSet"
                                      : std::is_same_v<Tag, JobTag>         ? "Job"
                                                                            : nullptr;

}  // namespace

FieldErrors ValidateWorkloadSpec(std::string_view kind, const Json& spec) {
  FieldErrors errs;
  PodTemplateSpec tmpl =
      DecodeAt<PodTemplateSpec>(Child(spec, "template"), {"spec", "template"}, &errs);
  std::vector<PersistentVolumeClaimTemplate> claims;
  if (kind == "StatefulSet") {
    claims = DecodeAt<std::vector<PersistentVolumeClaimTemplate>>(
        Child(spec, "volumeClaimTemplates"), {"spec", "volumeClaimTemplates"}, &errs);
  }
  std::optional<LabelSelector> selector;
  if (kind != "Job") {
    selector =
        DecodeAt<std::optional<LabelSelector>>(Child(spec, "selector"), {"spec", "selector"}, &errs);
  }
  if (!errs.empty()) return errs;

  Path sp("spec");
  Path tp = sp.Child("template");
  if (selector) {
    Append(errs, ValidateLabelSelector(*selector, sp.Child("selector")));
    auto sel = labels::FromLabelSelector(&*selector);
    if (!sel.ok()) {
      errs.push_back(Invalid(sp.Child("selector"), BadValue::None(), sel.status().message()));
    } else if (sel->MatchesEverything()) {
      std::string lower(kind);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      errs.push_back(Invalid(sp.Child("selector"), BadValue::Raw("{}"),
                             "empty selector is invalid for " + lower));
    } else if (!sel->Matches(tmpl.metadata.labels)) {
      Json rendered = tmpl.metadata.labels.empty() ? Json() : Json(tmpl.metadata.labels);
      errs.push_back(Invalid(tp.Child("metadata").Child("labels"), BadValue::Raw(DumpJson(rendered)),
                             "`selector` does not match template `labels`"));
    }
  } else if (kind != "Job") {
    errs.push_back(Required(sp.Child("selector")));
  }
  Append(errs, ValidateLabels(tmpl.metadata.labels, tp.Child("metadata").Child("labels")));
  Append(errs, ValidateAnnotations(tmpl.metadata.annotations, tp.Child("metadata").Child("annotations")));
  // Claim templates become volumes of each pod, so mounts may name them.
  PodSpec pod_spec = tmpl.spec;
  for (size_t i = 0; i < claims.size(); ++i) {
    auto& c = claims[i];
    Path cp = sp.Child("volumeClaimTemplates").Index(i);
    if (c.metadata.name.empty()) {
      errs.push_back(Required(cp.Child("metadata").Child("name")));
    } else {
      for (auto& m : IsDNS1123Label(c.metadata.name)) {
        errs.push_back(Invalid(cp.Child("metadata").Child("name"), c.metadata.name, m));
      }
    }
    SetDefaults(c.spec);
    Append(errs, ValidatePersistentVolumeClaimSpec(c.spec, cp.Child("spec")));
    bool present = false;
    for (const auto& v : pod_spec.volumes) present = present || v.name == c.metadata.name;
    if (!present && !c.metadata.name.empty()) {
      Volume v;
      v.name = c.metadata.name;
      v.persistent_volume_claim.emplace().claim_name = c.metadata.name;
      pod_spec.volumes.push_back(std::move(v));
    }
  }
  const bool explicit_restart = !pod_spec.restart_policy.empty();
  SetDefaults(pod_spec);
  if (kind == "Job") {
    // A Job's pods must not restart forever: Always (also the default) is refused.
    if (pod_spec.restart_policy != "OnFailure" && pod_spec.restart_policy != "Never") {
      errs.push_back(NotSupported(tp.Child("spec").Child("restartPolicy"), pod_spec.restart_policy,
                                  {"OnFailure", "Never"}));
    }
  } else if (explicit_restart && pod_spec.restart_policy != "Always") {
    errs.push_back(NotSupported(tp.Child("spec").Child("restartPolicy"), pod_spec.restart_policy,
                                {"Always"}));
  }
  Append(errs, ValidatePodSpec(pod_spec, tp.Child("spec")));
  return errs;
}

template <class Tag>
FieldErrors Validate(const GenericObject<Tag>& obj) {
  FieldErrors errs;
  const bool rbac = std::is_same_v<Tag, ClusterRoleTag> ||
                    std::is_same_v<Tag, ClusterRoleBindingTag> || std::is_same_v<Tag, RoleTag> ||
                    std::is_same_v<Tag, RoleBindingTag>;
  if (rbac) {
    errs = ValidatePathSegmentName(obj.metadata, Path("metadata"));
    if (kNamespaced<Tag> && obj.metadata.namespace_.empty()) {
      errs.push_back(Required(Path("metadata").Child("namespace")));
    }
    return errs;
  }
  // Services are named as DNS labels starting with a letter; the rest as subdomains (a label
  // for StatefulSets, whose pods are named after them).
  NameRule rule = std::is_same_v<Tag, StatefulSetTag> || std::is_same_v<Tag, ServiceTag>
                      ? NameRule::kDNS1123Label
                      : NameRule::kDNS1123Subdomain;
  errs = ValidateObjectMeta(obj.metadata, kNamespaced<Tag>, rule, Path("metadata"));
  if constexpr (std::is_same_v<Tag, ServiceTag>) {
    const std::string& n = obj.metadata.name;
    if (!n.empty() && !(n[0] >= 'a' && n[0] <= 'z')) {
      errs.push_back(Invalid(Path("metadata").Child("name"), n,
                             "a DNS-1035 label must consist of lower case alphanumeric characters "
                             "or '-', start with an alphabetic character, and end with an "
                             "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used "
                             "for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"));
    }
  }
  if constexpr (kWorkloadKind<Tag> != nullptr) {
    Append(errs, ValidateWorkloadSpec(kWorkloadKind<Tag>, obj.spec));
  }
  return errs;
}

template <class Tag>
FieldErrors ValidateUpdate(const GenericObject<Tag>& obj, const GenericObject<Tag>& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(obj.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(obj));
  return errs;
}

#define KVOL_INSTANTIATE(Tag)                                              \
  template FieldErrors Validate(const GenericObject<Tag>&);                \
  template FieldErrors ValidateUpdate(const GenericObject<Tag>&, const GenericObject<Tag>&);
KVOL_INSTANTIATE(DeploymentTag)
KVOL_INSTANTIATE(StatefulSetTag)
KVOL_INSTANTIATE(DaemonSetTag)
KVOL_INSTANTIATE(ReplicaSetTag)
KVOL_INSTANTIATE(JobTag)
KVOL_INSTANTIATE(ServiceTag)
KVOL_INSTANTIATE(ServiceAccountTag)
KVOL_INSTANTIATE(ReplicationControllerTag)
KVOL_INSTANTIATE(ClusterRoleTag)
KVOL_INSTANTIATE(ClusterRoleBindingTag)
KVOL_INSTANTIATE(RoleTag)
KVOL_INSTANTIATE(RoleBindingTag)
#undef KVOL_INSTANTIATE

}  // namespace kvol::api
