// Validation of volume sources: a pod's volumes (ValidateVolumeSource) and the sources a
// PersistentVolume shares with them (hostPath, nfs, flexVolume, csi, secret references), and
// the downward API's field and resource selectors, which environment variables use too.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "api/validation.h"
#include "api/validation_internal.h"
#include "api/volume_sources.h"
#include "base/strings.h"

namespace kvol::api::validation_internal {

const std::vector<std::string_view> kHostPathTypes = {
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
    "Socket"};

void ValidateHostPath(FieldErrors& errs, const HostPathVolumeSource& hp, const Path& path) {
  if (hp.path.empty()) {
    errs.push_back(Required(path.Child("path")));
    return;
  }
  if (HasBackstep(hp.path)) errs.push_back(Invalid(path.Child("path"), hp.path, "must not contain '..'"));
  if (hp.type && std::find(kHostPathTypes.begin(), kHostPathTypes.end(), *hp.type) ==
                     kHostPathTypes.end()) {
    errs.push_back(NotSupported(path.Child("type"), *hp.type, kHostPathTypes));
  }
}

void ValidateNFS(FieldErrors& errs, const NFSVolumeSource& nfs, const Path& path) {
  if (nfs.server.empty()) errs.push_back(Required(path.Child("server")));
  if (nfs.path.empty()) errs.push_back(Required(path.Child("path")));
  if (!IsAbsolute(nfs.path)) {
    errs.push_back(Invalid(path.Child("path"), nfs.path, "must be an absolute path"));
  }
}

// Option keys in the kubernetes.io and k8s.io namespaces belong to Kubernetes itself.
void ValidateFlexOptions(FieldErrors& errs, const StringMap& options, const Path& path) {
  for (const auto& [k, v] : options) {
    std::string ns = AsciiLower(std::string_view(k).substr(0, k.find('/')));
    auto ends_with = [&](std::string_view suffix) {
      std::string dotted = "." + ns;
      return dotted.size() >= suffix.size() &&
             dotted.compare(dotted.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".kubernetes.io") || ends_with(".k8s.io")) {
      errs.push_back(Invalid(path.Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"));
    }
  }
}

void ValidateSecretReference(FieldErrors& errs, const SecretReference& ref, const Path& path) {
  if (ref.name.empty()) {
    errs.push_back(Required(path.Child("name")));
  } else {
    AddInvalid(errs, path.Child("name"), ref.name, IsDNS1123Subdomain(ref.name));
  }
  if (ref.namespace_.empty()) {
    errs.push_back(Required(path.Child("namespace")));
  } else {
    AddInvalid(errs, path.Child("namespace"), ref.namespace_, IsDNS1123Label(ref.namespace_));
  }
}

void ValidateCSIPersistentVolume(FieldErrors& errs, const CSIPersistentVolumeSource& csi,
                                 const Path& path) {
  ValidateCSIDriverName(errs, csi.driver, path.Child("driver"));
  if (csi.volume_handle.empty()) errs.push_back(Required(path.Child("volumeHandle")));
  if (csi.controller_publish_secret_ref) {
    ValidateSecretReference(errs, *csi.controller_publish_secret_ref,
                            path.Child("controllerPublishSecretRef"));
  }
  if (csi.controller_expand_secret_ref) {
    ValidateSecretReference(errs, *csi.controller_expand_secret_ref,
                            path.Child("controllerExpandSecretRef"));
  }
  if (csi.node_publish_secret_ref) {
    ValidateSecretReference(errs, *csi.node_publish_secret_ref, path.Child("nodePublishSecretRef"));
  }
  if (csi.node_stage_secret_ref) {
    ValidateSecretReference(errs, *csi.node_stage_secret_ref, path.Child("nodeStageSecretRef"));
  }
  if (csi.node_expand_secret_ref) {
    ValidateSecretReference(errs, *csi.node_expand_secret_ref, path.Child("nodeExpandSecretRef"));
  }
}

void ValidateFileMode(FieldErrors& errs, const std::optional<int32_t>& mode, const Path& path) {
  if (mode && (*mode < 0 || *mode > 0777)) {
    errs.push_back(Invalid(path, *mode, std::string(kFileModeMsg)));
  }
}

void ValidateKeyToPath(FieldErrors& errs, const KeyToPath& kp, const Path& path) {
  if (kp.key.empty()) errs.push_back(Required(path.Child("key")));
  if (kp.path.empty()) errs.push_back(Required(path.Child("path")));
  ValidateLocalNonReservedPath(errs, kp.path, path.Child("path"));
  ValidateFileMode(errs, kp.mode, path.Child("mode"));
}

// What a resourceFieldRef may name, in volumes and environment variables.
const std::vector<std::string_view> kResourceFields = {
    "limits.cpu",   "limits.ephemeral-storage",   "limits.memory",
    "requests.cpu", "requests.ephemeral-storage", "requests.memory"};
// Kubernetes allows metadata.* here; kvol also serves the node name, service account and IPs
// through downwardAPI volumes.
const std::vector<std::string_view> kVolumeFieldPaths = {
    "metadata.annotations", "metadata.labels", "metadata.name",       "metadata.namespace",
    "metadata.uid",         "spec.nodeName",   "spec.serviceAccountName", "status.hostIP",
    "status.podIP"};

void ValidateObjectFieldSelector(FieldErrors& errs, const ObjectFieldSelector& fs,
                                 const std::vector<std::string_view>& allowed, const Path& path) {
  if (fs.api_version.empty()) {
    errs.push_back(Required(path.Child("apiVersion")));
    return;
  }
  if (fs.field_path.empty()) {
    errs.push_back(Required(path.Child("fieldPath")));
    return;
  }
  if (fs.api_version != "v1") {
    errs.push_back(Invalid(path.Child("fieldPath"), fs.field_path,
                           "error converting fieldPath: unsupported pod version: " +
                               fs.api_version));
    return;
  }
  // metadata.labels['key'] and metadata.annotations['key'] select one entry.
  const std::string& fp = fs.field_path;
  auto open = fp.find("['");
  if (open != std::string::npos && fp.size() >= open + 4 && fp.compare(fp.size() - 2, 2, "']") == 0) {
    std::string base = fp.substr(0, open);
    std::string key = fp.substr(open + 2, fp.size() - open - 4);
    if (base == "metadata.annotations") {
      std::string lower = AsciiLower(key);
      AddInvalid(errs, path, lower, IsQualifiedName(lower));
    } else if (base == "metadata.labels") {
      AddInvalid(errs, path, key, IsQualifiedName(key));
    } else {
      errs.push_back(Invalid(path, base, "does not support subscript"));
    }
    return;
  }
  if (std::find(allowed.begin(), allowed.end(), fp) == allowed.end()) {
    errs.push_back(NotSupported(path.Child("fieldPath"), fp, allowed));
  }
}

void ValidateResourceFieldSelector(FieldErrors& errs, const ResourceFieldSelector& fs,
                                   bool volume, const Path& path) {
  if (volume && fs.container_name.empty()) {
    errs.push_back(Required(path.Child("containerName")));
  } else if (fs.resource.empty()) {
    errs.push_back(Required(path.Child("resource")));
  } else if (std::find(kResourceFields.begin(), kResourceFields.end(), fs.resource) ==
                 kResourceFields.end() &&
             fs.resource.rfind("requests.hugepages-", 0) != 0 &&
             fs.resource.rfind("limits.hugepages-", 0) != 0) {
    errs.push_back(NotSupported(path.Child("resource"), fs.resource, kResourceFields));
  }
  // Kubernetes prints the resource, not the divisor, as the bad value.
  if (!fs.divisor || fs.divisor->IsZero()) return;
  const std::string d = fs.divisor->ToString();
  if (fs.resource == "limits.cpu" || fs.resource == "requests.cpu") {
    if (d != "1m" && d != "1") {
      errs.push_back(Invalid(path.Child("divisor"), fs.resource,
                             "only divisor's values 1m and 1 are supported with the cpu "
                             "resource"));
    }
    return;
  }
  const char* what = nullptr;
  if (fs.resource == "limits.memory" || fs.resource == "requests.memory") {
    what = "memory";
  } else if (fs.resource == "limits.ephemeral-storage" ||
             fs.resource == "requests.ephemeral-storage") {
    what = "local ephemeral storage";
  } else if (fs.resource.rfind("requests.hugepages-", 0) == 0 ||
             fs.resource.rfind("limits.hugepages-", 0) == 0) {
    what = "hugepages";
  }
  static const std::set<std::string> kSizes = {"1",  "1k", "1M",  "1G",  "1T",  "1P",  "1E",
                                               "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"};
  if (what != nullptr && !kSizes.count(d)) {
    errs.push_back(Invalid(path.Child("divisor"), fs.resource,
                           std::string("only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, "
                                       "1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the ") +
                               what + " resource"));
  }
}

// Kubernetes reports downwardAPI item errors at the volume's path, not the item's.
void ValidateDownwardAPIFile(FieldErrors& errs, const DownwardAPIVolumeFile& f, const Path& path) {
  if (f.path.empty()) errs.push_back(Required(path.Child("path")));
  ValidateLocalNonReservedPath(errs, f.path, path.Child("path"));
  if (f.field_ref) {
    ValidateObjectFieldSelector(errs, *f.field_ref, kVolumeFieldPaths, path.Child("fieldRef"));
    if (f.resource_field_ref) {
      errs.push_back(Invalid(path, "resource",
                             "fieldRef and resourceFieldRef can not be specified simultaneously"));
    }
  } else if (f.resource_field_ref) {
    ValidateResourceFieldSelector(errs, *f.resource_field_ref, true, path.Child("resourceFieldRef"));
  } else {
    errs.push_back(Required(path, "one of fieldRef and resourceFieldRef is required"));
  }
  ValidateFileMode(errs, f.mode, path.Child("mode"));
}

void ValidateProjected(FieldErrors& errs, const ProjectedVolumeSource& pr, const Path& path) {
  ValidateFileMode(errs, pr.default_mode, path.Child("defaultMode"));
  std::set<std::string> paths;
  auto track = [&](const std::string& p, std::string_view bad) {
    if (p.empty()) return;
    if (!paths.insert(p).second) errs.push_back(Invalid(path, bad, "conflicting duplicate paths"));
  };
  for (size_t j = 0; j < pr.sources.size(); ++j) {
    const auto& src = pr.sources[j];
    Path sp = path.Child("sources").Index(j);
    int n = 0;
    if (src.secret) {
      ++n;
      Path p = sp.Child("secret");
      if (src.secret->name.empty()) errs.push_back(Required(p.Child("name")));
      for (size_t k = 0; k < src.secret->items.size(); ++k) {
        ValidateKeyToPath(errs, src.secret->items[k], p.Child("items").Index(k));
        track(src.secret->items[k].path, src.secret->name);
      }
    }
    if (src.config_map) {
      ++n;
      Path p = sp.Child("configMap");
      if (src.config_map->name.empty()) errs.push_back(Required(p.Child("name")));
      for (size_t k = 0; k < src.config_map->items.size(); ++k) {
        ValidateKeyToPath(errs, src.config_map->items[k], p.Child("items").Index(k));
        track(src.config_map->items[k].path, src.config_map->name);
      }
    }
    if (src.downward_api) {
      ++n;
      for (const auto& f : src.downward_api->items) {
        ValidateDownwardAPIFile(errs, f, sp.Child("downwardAPI"));
        track(f.path, f.path);
      }
    }
    if (src.service_account_token) {
      ++n;
      const auto& t = *src.service_account_token;
      Path p = sp.Child("serviceAccountToken");
      int64_t exp = t.expiration_seconds.value_or(3600);
      if (exp < 600) {
        errs.push_back(Invalid(p.Child("expirationSeconds"), exp,
                               "may not specify a duration less than 10 minutes"));
      }
      if (exp > (int64_t{1} << 32)) {
        errs.push_back(Invalid(p.Child("expirationSeconds"), exp,
                               "may not specify a duration larger than 2^32 seconds"));
      }
      if (t.path.empty()) {
        errs.push_back(Required(path.Child("path")));
      } else {
        ValidateLocalNonReservedPath(errs, t.path, path.Child("path"));
      }
    }
    if (src.unknown_fields.contains("clusterTrustBundle")) ++n;
    if (n > 1) errs.push_back(Forbidden(sp, "may not specify more than 1 volume type per source"));
  }
}

// Validates the one source of a pod volume; returns the errors for this volume.
FieldErrors ValidateVolumeSource(const Volume& v, const Path& path) {
  FieldErrors errs;
  auto sources = PresentSources(v);
  if (sources.empty()) {
    errs.push_back(Required(path, "must specify a volume type"));
    return errs;
  }
  for (size_t i = 1; i < sources.size(); ++i) {
    errs.push_back(Forbidden(path.Child(sources[i]), "may not specify more than 1 volume type"));
  }
  std::string_view src = sources[0];
  if (src == "emptyDir") {
    if (v.empty_dir->size_limit && v.empty_dir->size_limit->Sign() < 0) {
      errs.push_back(Forbidden(path.Child("emptyDir").Child("sizeLimit"),
                               "SizeLimit field must be a valid resource quantity"));
    }
  } else if (src == "hostPath") {
    ValidateHostPath(errs, *v.host_path, path.Child("hostPath"));
  } else if (src == "secret") {
    Path p = path.Child("secret");
    if (v.secret->secret_name.empty()) errs.push_back(Required(p.Child("secretName")));
    ValidateFileMode(errs, v.secret->default_mode, p.Child("defaultMode"));
    for (size_t j = 0; j < v.secret->items.size(); ++j) {
      ValidateKeyToPath(errs, v.secret->items[j], p.Child("items").Index(j));
    }
  } else if (src == "nfs") {
    ValidateNFS(errs, *v.nfs, path.Child("nfs"));
  } else if (src == "persistentVolumeClaim") {
    if (v.persistent_volume_claim->claim_name.empty()) {
      errs.push_back(Required(path.Child("persistentVolumeClaim").Child("claimName")));
    }
  } else if (src == "ephemeral") {
    Path p = path.Child("ephemeral").Child("volumeClaimTemplate");
    if (!v.ephemeral->volume_claim_template) {
      errs.push_back(Required(p));
    } else {
      const auto& t = *v.ephemeral->volume_claim_template;
      Append(errs, ValidateLabels(t.metadata.labels, p.Child("metadata").Child("labels")));
      Append(errs, ValidateAnnotations(t.metadata.annotations,
                                       p.Child("metadata").Child("annotations")));
      Append(errs, ValidatePersistentVolumeClaimSpec(t.spec, p.Child("spec")));
    }
  } else if (src == "downwardAPI") {
    Path p = path.Child("downwardAPI");
    ValidateFileMode(errs, v.downward_api->default_mode, p.Child("defaultMode"));
    for (const auto& f : v.downward_api->items) ValidateDownwardAPIFile(errs, f, p);
  } else if (src == "flexVolume") {
    Path p = path.Child("flexVolume");
    if (v.flex_volume->driver.empty()) errs.push_back(Required(p.Child("driver")));
    ValidateFlexOptions(errs, v.flex_volume->options, p.Child("options"));
  } else if (src == "configMap") {
    Path p = path.Child("configMap");
    if (v.config_map->name.empty()) errs.push_back(Required(p.Child("name")));
    ValidateFileMode(errs, v.config_map->default_mode, p.Child("defaultMode"));
    for (size_t j = 0; j < v.config_map->items.size(); ++j) {
      ValidateKeyToPath(errs, v.config_map->items[j], p.Child("items").Index(j));
    }
  } else if (src == "projected") {
    ValidateProjected(errs, *v.projected, path.Child("projected"));
  } else if (src == "csi") {
    Path p = path.Child("csi");
    ValidateCSIDriverName(errs, v.csi->driver, p.Child("driver"));
    if (v.csi->node_publish_secret_ref) {
      const auto& name = v.csi->node_publish_secret_ref->name;
      Path np = p.Child("nodePublishSecretRef").Child("name");
      if (name.empty()) {
        errs.push_back(Required(np));
      } else {
        AddInvalid(errs, np, name, IsDNS1123Subdomain(name));
      }
    }
  }
  return errs;
}

}  // namespace kvol::api::validation_internal
