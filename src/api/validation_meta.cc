// Validation shared by every kind: object metadata, selectors, paths, quantities.
#include <algorithm>
#include <set>

#include "api/validation.h"
#include "api/validation_internal.h"
#include "base/strings.h"

namespace kvol::api {
namespace validation_internal {

void AddInvalid(FieldErrors& errs, const Path& path, std::string_view value,
                const std::vector<std::string>& msgs) {
  for (const auto& m : msgs) errs.push_back(Invalid(path, value, m));
}

void ValidatePositiveQuantity(FieldErrors& errs, const Quantity& q, const Path& path) {
  if (q.Sign() <= 0) errs.push_back(Invalid(path, q.ToString(), "must be greater than zero"));
}

void ValidateNonNegativeQuantity(FieldErrors& errs, const Quantity& q, const Path& path) {
  if (q.Sign() < 0) {
    errs.push_back(Invalid(path, q.ToString(), "must be greater than or equal to 0"));
  }
}

bool HasBackstep(std::string_view p) {
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    std::string_view part = p.substr(start, slash == std::string_view::npos ? p.npos : slash - start);
    if (part == "..") return true;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return false;
}

void ValidateLocalDescendingPath(FieldErrors& errs, std::string_view p, const Path& path) {
  if (!p.empty() && p[0] == '/') errs.push_back(Invalid(path, p, "must be a relative path"));
  if (HasBackstep(p)) errs.push_back(Invalid(path, p, "must not contain '..'"));
}

void ValidateLocalNonReservedPath(FieldErrors& errs, std::string_view p, const Path& path) {
  ValidateLocalDescendingPath(errs, p, path);
  if (p.substr(0, 2) == ".." && p.substr(0, 3) != "../") {
    errs.push_back(Invalid(path, p, "must not start with '..'"));
  }
}

BadValue JsonBadValue(const Json& j) {
  if (j.is_string()) return BadValue::String(j.get_ref<const std::string&>());
  return BadValue::Raw(DumpJson(j));
}

void ValidateAccessModes(FieldErrors& errs, const std::vector<std::string>& modes,
                         const Path& path) {
  static const std::vector<std::string_view> kSupported = {"ReadOnlyMany", "ReadWriteMany",
                                                           "ReadWriteOnce", "ReadWriteOncePod"};
  bool rwop = false;
  bool other = false;
  for (const auto& m : modes) {
    if (std::find(kSupported.begin(), kSupported.end(), m) == kSupported.end()) {
      errs.push_back(NotSupported(path, m, kSupported));
    } else if (m == "ReadWriteOncePod") {
      rwop = true;
    } else {
      other = true;
    }
  }
  if (rwop && other) {
    errs.push_back(Forbidden(path, "may not use ReadWriteOncePod with other access modes"));
  }
}

void ValidateCSIDriverName(FieldErrors& errs, std::string_view driver, const Path& path) {
  if (driver.empty()) errs.push_back(Required(path));
  if (driver.size() > 63) errs.push_back(TooLong(path, 63));
  std::string lower = AsciiLower(driver);
  AddInvalid(errs, path, driver, IsDNS1123Subdomain(lower));
}

}  // namespace validation_internal

using namespace validation_internal;

FieldErrors ValidateObjectMeta(const ObjectMeta& meta, bool namespaced, NameRule rule,
                               const Path& path) {
  FieldErrors errs;
  if (!meta.generate_name.empty()) {
    AddInvalid(errs, path.Child("generateName"), meta.generate_name,
               ValidateName(rule, meta.generate_name, /*prefix=*/true));
  }
  if (meta.name.empty()) {
    // The API server names an object from generateName before it validates it.
    if (meta.generate_name.empty()) {
      errs.push_back(Required(path.Child("name"), "name or generateName is required"));
    }
  } else {
    AddInvalid(errs, path.Child("name"), meta.name, ValidateName(rule, meta.name, false));
  }
  if (namespaced) {
    if (meta.namespace_.empty()) {
      errs.push_back(Required(path.Child("namespace")));
    } else {
      AddInvalid(errs, path.Child("namespace"), meta.namespace_, IsDNS1123Label(meta.namespace_));
    }
  } else if (!meta.namespace_.empty()) {
    errs.push_back(Forbidden(path.Child("namespace"), "not allowed on this type"));
  }
  if (meta.generation < 0) {
    errs.push_back(
        Invalid(path.Child("generation"), meta.generation, "must be greater than or equal to 0"));
  }
  Append(errs, ValidateLabels(meta.labels, path.Child("labels")));
  Append(errs, ValidateAnnotations(meta.annotations, path.Child("annotations")));

  int controllers = 0;
  for (size_t i = 0; i < meta.owner_references.size(); ++i) {
    const auto& ref = meta.owner_references[i];
    Path p = path.Child("ownerReferences").Index(i);
    std::string_view version = ref.api_version;
    if (auto slash = version.find('/'); slash != std::string_view::npos) {
      version = version.substr(slash + 1);
    }
    if (version.empty()) {
      errs.push_back(Invalid(p.Child("apiVersion"), ref.api_version, "version must not be empty"));
    }
    if (ref.kind.empty()) errs.push_back(Invalid(p.Child("kind"), ref.kind, "kind must not be empty"));
    if (ref.name.empty()) errs.push_back(Invalid(p.Child("name"), ref.name, "name must not be empty"));
    if (ref.uid.empty()) errs.push_back(Invalid(p.Child("uid"), ref.uid, "uid must not be empty"));
    if (ref.controller.value_or(false)) ++controllers;
  }
  if (controllers > 1) {
    errs.push_back(Invalid(path.Child("ownerReferences"), BadValue::None(),
                           "Only one reference can have Controller set to true"));
  }

  static const std::set<std::string_view> kStandardFinalizers = {"kubernetes", "orphan",
                                                                 "foregroundDeletion"};
  for (size_t i = 0; i < meta.finalizers.size(); ++i) {
    const auto& f = meta.finalizers[i];
    AddInvalid(errs, path.Child("finalizers"), f, IsQualifiedName(f));
    if (f.find('/') == std::string::npos && !kStandardFinalizers.count(f)) {
      errs.push_back(Invalid(path.Child("finalizers").Index(i), f,
                             "name is neither a standard finalizer name nor is it fully qualified"));
    }
  }
  return errs;
}

FieldErrors ValidateObjectMetaUpdate(const ObjectMeta& meta, const ObjectMeta& old,
                                     const Path& path) {
  FieldErrors errs;
  auto immutable = [&](std::string_view field, const std::string& now, const std::string& was) {
    if (now != was) errs.push_back(Invalid(path.Child(field), now, std::string(kFieldImmutable)));
  };
  immutable("name", meta.name, old.name);
  immutable("namespace", meta.namespace_, old.namespace_);
  immutable("uid", meta.uid, old.uid);
  if (meta.creation_timestamp != old.creation_timestamp) {
    errs.push_back(Invalid(path.Child("creationTimestamp"),
                           meta.creation_timestamp ? meta.creation_timestamp->ToString() : "null",
                           std::string(kFieldImmutable)));
  }
  if (meta.generation < old.generation) {
    errs.push_back(Invalid(path.Child("generation"), meta.generation, "must not be decremented"));
  }
  if (old.deletion_timestamp) {
    std::vector<std::string> added;
    for (const auto& f : meta.finalizers) {
      if (std::find(old.finalizers.begin(), old.finalizers.end(), f) == old.finalizers.end()) {
        added.push_back(f);
      }
    }
    if (!added.empty()) {
      std::string list;
      for (size_t i = 0; i < added.size(); ++i) list += (i ? ", " : "") + GoQuote(added[i]);
      errs.push_back(Forbidden(path.Child("finalizers"),
                               "no new finalizers can be added if the object is being deleted, "
                               "found new finalizers []string{" + list + "}"));
    }
  }
  return errs;
}

FieldErrors ValidateLabelSelector(const LabelSelector& s, const Path& path) {
  FieldErrors errs = ValidateLabels(s.match_labels, path.Child("matchLabels"));
  for (size_t i = 0; i < s.match_expressions.size(); ++i) {
    const auto& e = s.match_expressions[i];
    Path p = path.Child("matchExpressions").Index(i);
    if (e.operator_ == "In" || e.operator_ == "NotIn") {
      if (e.values.empty()) {
        errs.push_back(Required(p.Child("values"),
                                "must be specified when `operator` is 'In' or 'NotIn'"));
      }
    } else if (e.operator_ == "Exists" || e.operator_ == "DoesNotExist") {
      if (!e.values.empty()) {
        errs.push_back(Forbidden(p.Child("values"),
                                 "may not be specified when `operator` is 'Exists' or "
                                 "'DoesNotExist'"));
      }
    } else {
      errs.push_back(Invalid(p.Child("operator"), e.operator_, "not a valid selector operator"));
    }
    Append(errs, ValidateLabelName(e.key, p.Child("key")));
    for (size_t j = 0; j < e.values.size(); ++j) {
      AddInvalid(errs, p.Child("values").Index(j), e.values[j], IsValidLabelValue(e.values[j]));
    }
  }
  return errs;
}

namespace validation_internal {

void ValidateNodeSelectorTerm(FieldErrors& errs, const NodeSelectorTerm& t, const Path& path,
                              bool allow_invalid_values) {
  for (size_t j = 0; j < t.match_expressions.size(); ++j) {
    const auto& r = t.match_expressions[j];
    Path p = path.Child("matchExpressions").Index(j);
    const std::string& op = r.operator_;
    if (op == "In" || op == "NotIn") {
      if (r.values.empty()) {
        errs.push_back(Required(p.Child("values"),
                                "must be specified when `operator` is 'In' or 'NotIn'"));
      }
    } else if (op == "Exists" || op == "DoesNotExist") {
      if (!r.values.empty()) {
        errs.push_back(Forbidden(p.Child("values"),
                                 "may not be specified when `operator` is 'Exists' or "
                                 "'DoesNotExist'"));
      }
    } else if (op == "Gt" || op == "Lt") {
      if (r.values.size() != 1) {
        errs.push_back(Required(p.Child("values"),
                                "must be specified single value when `operator` is 'Lt' or 'Gt'"));
      }
    } else {
      errs.push_back(Invalid(p.Child("operator"), op, "not a valid selector operator"));
    }
    Append(errs, ValidateLabelName(r.key, p.Child("key")));
    if (allow_invalid_values) continue;
    for (size_t k = 0; k < r.values.size(); ++k) {
      AddInvalid(errs, p.Child("values").Index(k), r.values[k], IsValidLabelValue(r.values[k]));
    }
  }
  for (size_t j = 0; j < t.match_fields.size(); ++j) {
    const auto& r = t.match_fields[j];
    Path p = path.Child("matchFields").Index(j);
    if (r.operator_ == "In" || r.operator_ == "NotIn") {
      if (r.values.size() != 1) {
        errs.push_back(Required(p.Child("values"),
                                "must be only one value when `operator` is 'In' or 'NotIn' for "
                                "node field selector"));
      }
    } else {
      errs.push_back(Invalid(p.Child("operator"), r.operator_, "not a valid selector operator"));
    }
    if (r.key != "metadata.name") {
      errs.push_back(Invalid(p.Child("key"), r.key, "not a valid field selector key"));
      continue;
    }
    for (size_t k = 0; k < r.values.size(); ++k) {
      AddInvalid(errs, p.Child("values").Index(k), r.values[k], IsDNS1123Subdomain(r.values[k]));
    }
  }
}

}  // namespace validation_internal

FieldErrors ValidateNodeSelector(const NodeSelector& s, const Path& path) {
  FieldErrors errs;
  Path terms = path.Child("nodeSelectorTerms");
  if (s.node_selector_terms.empty()) {
    errs.push_back(Required(terms, "must have at least one node selector term"));
  }
  for (size_t i = 0; i < s.node_selector_terms.size(); ++i) {
    ValidateNodeSelectorTerm(errs, s.node_selector_terms[i], terms.Index(i));
  }
  return errs;
}

}  // namespace kvol::api
