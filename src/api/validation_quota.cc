// ResourceQuota validation, with Kubernetes' messages: spec.hard names quota resources with
// non-negative amounts (whole numbers for what is counted), and scopes are known, not
// conflicting, and applied only to what pods use.
#include <set>

#include "api/validation.h"
#include "api/validation_internal.h"

namespace kvol::api {

namespace {

// Counted objects: whole numbers.
bool IsIntegerQuotaResource(std::string_view name) {
  static const std::set<std::string, std::less<>> kCounted = {"pods",
                                                              "services",
                                                              "replicationcontrollers",
                                                              "resourcequotas",
                                                              "secrets",
                                                              "configmaps",
                                                              "persistentvolumeclaims",
                                                              "services.nodeports",
                                                              "services.loadbalancers"};
  return kCounted.count(name) > 0 || name.rfind("count/", 0) == 0;
}

// What the pod scopes may limit: pods and what they use.
bool IsPodComputeResource(std::string_view name) {
  return name == "pods" || name == "cpu" || name == "memory" || name == "requests.cpu" ||
         name == "requests.memory" || name == "limits.cpu" || name == "limits.memory" ||
         name == "ephemeral-storage" || name == "requests.ephemeral-storage" ||
         name == "limits.ephemeral-storage" || name.rfind("hugepages-", 0) == 0 ||
         name.rfind("requests.hugepages-", 0) == 0;
}

// The names Kubernetes defines without a domain.
bool IsStandardQuotaResource(std::string_view name) {
  return (IsIntegerQuotaResource(name) && name.rfind("count/", 0) != 0) ||
         IsPodComputeResource(name) || name == "requests.storage";
}

bool ScopeValidFor(std::string_view scope, std::string_view resource) {
  if (scope == "BestEffort") return resource == "pods";
  return IsPodComputeResource(resource);
}

const std::vector<std::string_view> kScopes = {"Terminating",   "NotTerminating",
                                               "BestEffort",    "NotBestEffort",
                                               "PriorityClass", "CrossNamespacePodAffinity"};

bool KnownScope(std::string_view s) {
  return std::find(kScopes.begin(), kScopes.end(), s) != kScopes.end();
}

BadValue ListValue(const std::vector<std::string>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? " " : "") + values[i];
  return BadValue::Raw(text + "]");
}

void ValidateResourceList(FieldErrors& errs, const ResourceList& list, const Path& path) {
  for (const auto& [name, q] : list) {
    const Path p = path.Key(name);
    if (name.find('/') == std::string::npos) {
      if (!IsStandardQuotaResource(name)) {
        errs.push_back(Invalid(p, name, "must be a standard resource for quota"));
      }
    } else {
      for (const auto& msg : IsQualifiedName(name)) errs.push_back(Invalid(p, name, msg));
    }
    if (q.Sign() < 0) {
      errs.push_back(
          Invalid(p, BadValue::String(q.ToString()), "must be greater than or equal to 0"));
    }
    if (IsIntegerQuotaResource(name) && q.MilliValue() % 1000 != 0) {
      errs.push_back(Invalid(p, BadValue::String(q.ToString()), "must be an integer"));
    }
  }
}

void ValidateScopes(FieldErrors& errs, const ResourceQuotaSpec& spec, const Path& path) {
  if (spec.scopes.empty()) return;
  const Path p = path.Child("scopes");
  std::set<std::string, std::less<>> seen;
  for (const auto& scope : spec.scopes) {
    if (!KnownScope(scope)) errs.push_back(Invalid(p, ListValue(spec.scopes), "unsupported scope"));
    for (const auto& [name, _] : spec.hard) {
      if (IsStandardQuotaResource(name) && !ScopeValidFor(scope, name)) {
        errs.push_back(Invalid(p, ListValue(spec.scopes), "unsupported scope applied to resource"));
      }
    }
    seen.insert(scope);
  }
  if ((seen.count("BestEffort") && seen.count("NotBestEffort")) ||
      (seen.count("Terminating") && seen.count("NotTerminating"))) {
    errs.push_back(Invalid(p, ListValue(spec.scopes), "conflicting scopes"));
  }
}

void ValidateScopeSelector(FieldErrors& errs, const ResourceQuotaSpec& spec, const Path& path) {
  if (!spec.scope_selector) return;
  const Path p = path.Child("scopeSelector").Child("matchExpressions");
  for (size_t i = 0; i < spec.scope_selector->match_expressions.size(); ++i) {
    const auto& r = spec.scope_selector->match_expressions[i];
    const Path e = p.Index(i);
    if (!KnownScope(r.scope_name)) {
      errs.push_back(Invalid(e.Child("scopeName"), r.scope_name, "unsupported scope"));
    }
    for (const auto& [name, _] : spec.hard) {
      if (IsStandardQuotaResource(name) && !ScopeValidFor(r.scope_name, name)) {
        errs.push_back(
            Invalid(e.Child("scopeName"), r.scope_name, "unsupported scope applied to resource"));
      }
    }
    const bool exists_only = r.scope_name == "Terminating" || r.scope_name == "NotTerminating" ||
                             r.scope_name == "BestEffort" || r.scope_name == "NotBestEffort";
    if (exists_only && r.operator_ != "Exists") {
      errs.push_back(Invalid(e.Child("operator"), r.operator_,
                             "must be 'Exist' only operator when scope is any of "
                             "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
                             "ResourceQuotaScopeBestEffort and ResourceQuotaScopeNotBestEffort"));
    }
    if (r.operator_ == "In" || r.operator_ == "NotIn") {
      if (r.values.empty()) {
        errs.push_back(Required(e.Child("values"),
                                "must be at least one value when `operator` is 'In' or 'NotIn' "
                                "for scope selector"));
      }
    } else if (r.operator_ == "Exists" || r.operator_ == "DoesNotExist") {
      if (!r.values.empty()) {
        errs.push_back(Invalid(e.Child("values"), ListValue(r.values),
                               "must be no value when `operator` is 'Exist' or 'DoesNotExist' "
                               "for scope selector"));
      }
    } else {
      errs.push_back(NotSupported(e.Child("operator"), r.operator_,
                                  {"In", "NotIn", "Exists", "DoesNotExist"}));
    }
  }
}

}  // namespace

FieldErrors Validate(const ResourceQuota& q) {
  FieldErrors errs =
      ValidateObjectMeta(q.metadata, true, NameRule::kDNS1123Subdomain, Path("metadata"));
  ValidateResourceList(errs, q.spec.hard, Path("spec").Child("hard"));
  ValidateScopes(errs, q.spec, Path("spec"));
  ValidateScopeSelector(errs, q.spec, Path("spec"));
  ValidateResourceList(errs, q.status.hard, Path("status").Child("hard"));
  ValidateResourceList(errs, q.status.used, Path("status").Child("used"));
  return errs;
}

FieldErrors ValidateUpdate(const ResourceQuota& q, const ResourceQuota& old) {
  FieldErrors errs = ValidateObjectMetaUpdate(q.metadata, old.metadata, Path("metadata"));
  Append(errs, Validate(q));
  return errs;
}

}  // namespace kvol::api
