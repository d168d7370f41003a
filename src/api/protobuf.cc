// A table-driven reader of Kubernetes' generated protobuf messages. Each message is described by
// its field numbers, JSON names and types, as in the published generated.proto files of
// k8s.io/api and k8s.io/apimachinery; only the kinds kubectl's generator commands create are
// described, and anything else is refused rather than guessed at.
#include "api/protobuf.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "api/time.h"
#include "base/strings.h"

namespace kvol::api {
namespace {

enum class Type : uint8_t {
  kString,
  kBytes,        // JSON: base64
  kInt32,
  kInt64,
  kBool,
  kMessage,      // `message` names it
  kTime,         // metav1.Time {seconds, nanos} -> RFC 3339; zero -> null
  kQuantity,     // resource.Quantity {string} -> "5Gi"
  kIntOrString,  // intstr.IntOrString {type, intVal, strVal} -> 80 or "http"
  kFieldsV1,     // metav1.FieldsV1 {Raw} -> the JSON it holds
};

enum Flag : uint8_t {
  kRepeated = 1,
  kMap = 2,       // map<string, type>: repeated entries {key = 1, value = 2}
  kOptional = 4,  // a Go pointer: present with a zero value is still a value
};

struct Field {
  uint32_t number;
  std::string_view json;
  Type type;
  uint8_t flags = 0;
  std::string_view message = {};
};

using Schema = std::unordered_map<std::string_view, std::vector<Field>>;

constexpr Type S = Type::kString, B = Type::kBytes, I32 = Type::kInt32, I64 = Type::kInt64,
               BOOL = Type::kBool, M = Type::kMessage, TIME = Type::kTime, Q = Type::kQuantity,
               IOS = Type::kIntOrString, F1 = Type::kFieldsV1;
constexpr uint8_t R = kRepeated, MAP = kMap, OPT = kOptional;

// Field numbers from k8s.io/apimachinery (meta/v1, runtime) and k8s.io/api (core/v1, apps/v1,
// batch/v1, rbac/v1, authentication/v1) generated.proto.
const Schema& Messages() {
  static const Schema schema = {
      // --- meta/v1 ---
      {"ObjectMeta",
       {{1, "name", S}, {2, "generateName", S}, {3, "namespace", S}, {4, "selfLink", S},
        {5, "uid", S}, {6, "resourceVersion", S}, {7, "generation", I64},
        {8, "creationTimestamp", TIME}, {9, "deletionTimestamp", TIME, OPT},
        {10, "deletionGracePeriodSeconds", I64, OPT}, {11, "labels", S, MAP},
        {12, "annotations", S, MAP}, {13, "ownerReferences", M, R, "OwnerReference"},
        {14, "finalizers", S, R},
        // clusterName: sent, empty, by clients before 1.25; dropped when empty, as plain
        // fields are.
        {15, "clusterName", S}, {17, "managedFields", M, R, "ManagedFieldsEntry"}}},
      {"OwnerReference",
       {{1, "kind", S}, {3, "name", S}, {4, "uid", S}, {5, "apiVersion", S},
        {6, "controller", BOOL, OPT}, {7, "blockOwnerDeletion", BOOL, OPT}}},
      {"ManagedFieldsEntry",
       {{1, "manager", S}, {2, "operation", S}, {3, "apiVersion", S}, {4, "time", TIME, OPT},
        {6, "fieldsType", S}, {7, "fieldsV1", F1, OPT}, {8, "subresource", S}}},
      {"LabelSelector",
       {{1, "matchLabels", S, MAP},
        {2, "matchExpressions", M, R, "LabelSelectorRequirement"}}},
      {"LabelSelectorRequirement", {{1, "key", S}, {2, "operator", S}, {3, "values", S, R}}},

      // --- core/v1 ---
      {"ConfigMap",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "data", S, MAP}, {3, "binaryData", B, MAP},
        {4, "immutable", BOOL, OPT}}},
      {"Secret",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "data", B, MAP}, {3, "type", S},
        {4, "stringData", S, MAP}, {5, "immutable", BOOL, OPT}}},
      {"Namespace",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "NamespaceSpec"},
        {3, "status", M, 0, "NamespaceStatus"}}},
      {"NamespaceSpec", {{1, "finalizers", S, R}}},
      {"NamespaceStatus", {{1, "phase", S}}},
      {"ServiceAccount",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "secrets", M, R, "ObjectReference"},
        {3, "imagePullSecrets", M, R, "LocalObjectReference"},
        {4, "automountServiceAccountToken", BOOL, OPT}}},
      {"ObjectReference",
       {{1, "kind", S}, {2, "namespace", S}, {3, "name", S}, {4, "uid", S},
        {5, "apiVersion", S}, {6, "resourceVersion", S}, {7, "fieldPath", S}}},
      {"LocalObjectReference", {{1, "name", S}}},
      {"Service",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "ServiceSpec"},
        {3, "status", M, 0, "ServiceStatus"}}},
      {"ServiceSpec",
       {{1, "ports", M, R, "ServicePort"}, {2, "selector", S, MAP}, {3, "clusterIP", S},
        {4, "type", S}, {5, "externalIPs", S, R}, {7, "sessionAffinity", S},
        {8, "loadBalancerIP", S}, {9, "loadBalancerSourceRanges", S, R},
        {10, "externalName", S}, {11, "externalTrafficPolicy", S},
        {12, "healthCheckNodePort", I32}, {13, "publishNotReadyAddresses", BOOL},
        {17, "ipFamilyPolicy", S, OPT}, {18, "clusterIPs", S, R}, {19, "ipFamilies", S, R},
        {20, "allocateLoadBalancerNodePorts", BOOL, OPT}, {21, "loadBalancerClass", S, OPT},
        {22, "internalTrafficPolicy", S, OPT}, {23, "trafficDistribution", S, OPT}}},
      {"ServicePort",
       {{1, "name", S}, {2, "protocol", S}, {3, "port", I32}, {4, "targetPort", IOS},
        {5, "nodePort", I32}, {6, "appProtocol", S, OPT}}},
      {"ServiceStatus", {{1, "loadBalancer", M, 0, "LoadBalancerStatus"}}},
      {"LoadBalancerStatus", {}},
      {"PodTemplateSpec", {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "PodSpec"}}},
      {"PodSpec",
       {{2, "containers", M, R, "Container"}, {3, "restartPolicy", S},
        {4, "terminationGracePeriodSeconds", I64, OPT}, {5, "activeDeadlineSeconds", I64, OPT},
        {6, "dnsPolicy", S}, {7, "nodeSelector", S, MAP}, {8, "serviceAccountName", S},
        {9, "serviceAccount", S}, {10, "nodeName", S}, {11, "hostNetwork", BOOL},
        {12, "hostPID", BOOL}, {13, "hostIPC", BOOL},
        {15, "imagePullSecrets", M, R, "LocalObjectReference"}, {16, "hostname", S},
        {17, "subdomain", S}, {19, "schedulerName", S}, {20, "initContainers", M, R, "Container"},
        {21, "automountServiceAccountToken", BOOL, OPT}, {24, "priorityClassName", S},
        {25, "priority", I32, OPT}, {27, "shareProcessNamespace", BOOL, OPT},
        {29, "runtimeClassName", S, OPT}, {30, "enableServiceLinks", BOOL, OPT},
        {31, "preemptionPolicy", S, OPT}, {35, "setHostnameAsFQDN", BOOL, OPT},
        {37, "hostUsers", BOOL, OPT}}},
      {"Container",
       {{1, "name", S}, {2, "image", S}, {3, "command", S, R}, {4, "args", S, R},
        {5, "workingDir", S}, {6, "ports", M, R, "ContainerPort"}, {7, "env", M, R, "EnvVar"},
        {8, "resources", M, 0, "ResourceRequirements"},
        {9, "volumeMounts", M, R, "VolumeMount"}, {13, "terminationMessagePath", S},
        {14, "imagePullPolicy", S}, {16, "stdin", BOOL}, {17, "stdinOnce", BOOL},
        {18, "tty", BOOL}, {20, "terminationMessagePolicy", S}, {24, "restartPolicy", S, OPT}}},
      {"ContainerPort",
       {{1, "name", S}, {2, "hostPort", I32}, {3, "containerPort", I32}, {4, "protocol", S},
        {5, "hostIP", S}}},
      {"EnvVar", {{1, "name", S}, {2, "value", S}}},
      {"ResourceRequirements", {{1, "limits", Q, MAP}, {2, "requests", Q, MAP}}},
      {"VolumeMount",
       {{1, "name", S}, {2, "readOnly", BOOL}, {3, "mountPath", S}, {4, "subPath", S},
        {5, "mountPropagation", S, OPT}, {6, "subPathExpr", S},
        {7, "recursiveReadOnly", S, OPT}}},

      // --- apps/v1 ---
      {"Deployment",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "DeploymentSpec"},
        {3, "status", M, 0, "DeploymentStatus"}}},
      {"DeploymentSpec",
       {{1, "replicas", I32, OPT}, {2, "selector", M, OPT, "LabelSelector"},
        {3, "template", M, 0, "PodTemplateSpec"}, {4, "strategy", M, 0, "DeploymentStrategy"},
        {5, "minReadySeconds", I32}, {6, "revisionHistoryLimit", I32, OPT},
        {7, "paused", BOOL}, {9, "progressDeadlineSeconds", I32, OPT}}},
      {"DeploymentStrategy",
       {{1, "type", S}, {2, "rollingUpdate", M, OPT, "RollingUpdateDeployment"}}},
      {"RollingUpdateDeployment",
       {{1, "maxUnavailable", IOS, OPT}, {2, "maxSurge", IOS, OPT}}},
      {"DeploymentStatus",
       {{1, "observedGeneration", I64}, {2, "replicas", I32}, {3, "updatedReplicas", I32},
        {4, "availableReplicas", I32}, {5, "unavailableReplicas", I32},
        {7, "readyReplicas", I32}, {8, "collisionCount", I32, OPT}}},

      // --- batch/v1 ---
      {"Job",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "JobSpec"},
        {3, "status", M, 0, "JobStatus"}}},
      {"JobSpec",
       {{1, "parallelism", I32, OPT}, {2, "completions", I32, OPT},
        {3, "activeDeadlineSeconds", I64, OPT}, {4, "selector", M, OPT, "LabelSelector"},
        {5, "manualSelector", BOOL, OPT}, {6, "template", M, 0, "PodTemplateSpec"},
        {7, "backoffLimit", I32, OPT}, {8, "ttlSecondsAfterFinished", I32, OPT},
        {9, "completionMode", S, OPT}, {10, "suspend", BOOL, OPT},
        {12, "backoffLimitPerIndex", I32, OPT}, {13, "maxFailedIndexes", I32, OPT},
        {14, "podReplacementPolicy", S, OPT}, {15, "managedBy", S, OPT}}},
      {"JobStatus",
       {{2, "startTime", TIME, OPT}, {3, "completionTime", TIME, OPT}, {4, "active", I32},
        {5, "succeeded", I32}, {6, "failed", I32}, {7, "completedIndexes", S},
        {9, "ready", I32, OPT}, {10, "failedIndexes", S, OPT}, {11, "terminating", I32, OPT}}},

      // --- rbac/v1 ---
      {"Role", {{1, "metadata", M, 0, "ObjectMeta"}, {2, "rules", M, R, "PolicyRule"}}},
      {"PolicyRule",
       {{1, "verbs", S, R}, {2, "apiGroups", S, R}, {3, "resources", S, R},
        {4, "resourceNames", S, R}, {5, "nonResourceURLs", S, R}}},
      {"RoleBinding",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "subjects", M, R, "Subject"},
        {3, "roleRef", M, 0, "RoleRef"}}},
      {"Subject", {{1, "kind", S}, {2, "apiGroup", S}, {3, "name", S}, {4, "namespace", S}}},
      {"RoleRef", {{1, "apiGroup", S}, {2, "kind", S}, {3, "name", S}}},
      {"ClusterRole",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "rules", M, R, "PolicyRule"},
        {3, "aggregationRule", M, OPT, "AggregationRule"}}},
      {"AggregationRule", {{1, "clusterRoleSelectors", M, R, "LabelSelector"}}},
      {"ClusterRoleBinding",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "subjects", M, R, "Subject"},
        {3, "roleRef", M, 0, "RoleRef"}}},
      {"DeleteOptions",
       {{1, "gracePeriodSeconds", I64, OPT}, {2, "preconditions", M, OPT, "Preconditions"},
        {3, "orphanDependents", BOOL, OPT}, {4, "propagationPolicy", S, OPT},
        {5, "dryRun", S, R}}},
      {"Preconditions", {{1, "uid", S, OPT}, {2, "resourceVersion", S, OPT}}},
      // --- core/v1 ResourceQuota (kubectl create quota) ---
      {"ResourceQuota",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "ResourceQuotaSpec"},
        {3, "status", M, 0, "ResourceQuotaStatus"}}},
      {"ResourceQuotaSpec",
       {{1, "hard", Q, MAP}, {2, "scopes", S, R}, {3, "scopeSelector", M, OPT, "ScopeSelector"}}},
      {"ResourceQuotaStatus", {{1, "hard", Q, MAP}, {2, "used", Q, MAP}}},
      {"ScopeSelector", {{1, "matchExpressions", M, R, "ScopedResourceSelectorRequirement"}}},
      {"ScopedResourceSelectorRequirement",
       {{1, "scopeName", S}, {2, "operator", S}, {3, "values", S, R}}},
      // --- authentication/v1 (UserInfo's extra is written by servers only) ---
      {"TokenRequest",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "TokenRequestSpec"},
        {3, "status", M, 0, "TokenRequestStatus"}}},
      {"TokenRequestSpec",
       {{1, "audiences", S, R}, {3, "boundObjectRef", M, OPT, "BoundObjectReference"},
        {4, "expirationSeconds", I64, OPT}}},
      {"BoundObjectReference", {{1, "kind", S}, {2, "apiVersion", S}, {3, "name", S}, {4, "uid", S}}},
      {"TokenRequestStatus", {{1, "token", S}, {2, "expirationTimestamp", TIME}}},
      {"TokenReview",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "spec", M, 0, "TokenReviewSpec"},
        {3, "status", M, 0, "TokenReviewStatus"}}},
      {"TokenReviewSpec", {{1, "token", S}, {2, "audiences", S, R}}},
      {"TokenReviewStatus",
       {{1, "authenticated", BOOL}, {2, "user", M, 0, "UserInfo"}, {3, "error", S},
        {4, "audiences", S, R}}},
      {"UserInfo", {{1, "username", S}, {2, "uid", S}, {3, "groups", S, R}}},
      {"SelfSubjectReview",
       {{1, "metadata", M, 0, "ObjectMeta"}, {2, "status", M, 0, "SelfSubjectReviewStatus"}}},
      {"SelfSubjectReviewStatus", {{1, "userInfo", M, 0, "UserInfo"}}},
  };
  return schema;
}

// The kinds a body may carry, by apiVersion and kind; the message has the kind's name.
bool Supported(std::string_view api_version, std::string_view kind) {
  static const std::vector<std::pair<std::string_view, std::string_view>> kinds = {
      {"v1", "ConfigMap"},
      {"v1", "Secret"},
      {"v1", "Namespace"},
      {"v1", "ServiceAccount"},
      {"v1", "Service"},
      {"v1", "ResourceQuota"},
      {"apps/v1", "Deployment"},
      {"batch/v1", "Job"},
      {"rbac.authorization.k8s.io/v1", "Role"},
      {"rbac.authorization.k8s.io/v1", "RoleBinding"},
      {"rbac.authorization.k8s.io/v1", "ClusterRole"},
      {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding"},
      {"authentication.k8s.io/v1", "TokenRequest"},
      {"authentication.k8s.io/v1", "TokenReview"},
      {"authentication.k8s.io/v1", "SelfSubjectReview"},
  };
  for (const auto& [v, k] : kinds) {
    if (v == api_version && k == kind) return true;
  }
  // A delete's body, which clients send in the version of the group they delete from.
  if (kind == "DeleteOptions") return true;
  return false;
}

// The protobuf wire format: varints, and length-delimited bytes for strings, messages and maps.
class Reader {
 public:
  explicit Reader(std::string_view b) : p_(b.data()), end_(b.data() + b.size()) {}
  bool done() const { return p_ == end_; }

  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const auto byte = static_cast<uint8_t>(*p_++);
      *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  bool Bytes(std::string_view* out) {
    uint64_t n;
    if (!Varint(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *out = std::string_view(p_, static_cast<size_t>(n));
    p_ += n;
    return true;
  }

  bool Fixed(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

enum Wire : uint8_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

class Decoder {
 public:
  // The message `name` in `bytes`, as a JSON object; false with error() set when it is not one.
  bool ReadMessage(std::string_view name, std::string_view bytes, Json* out, const std::string& path) {
    auto it = Messages().find(name);
    if (it == Messages().end()) return Fail(path, "no schema for message " + std::string(name));
    const auto& fields = it->second;
    *out = Json::object();
    Reader r(bytes);
    while (!r.done()) {
      uint64_t tag;
      if (!r.Varint(&tag)) return Fail(path, "truncated field tag");
      const auto number = static_cast<uint32_t>(tag >> 3);
      const auto wire = static_cast<uint8_t>(tag & 7);
      const Field* f = nullptr;
      for (const auto& candidate : fields) {
        if (candidate.number == number) f = &candidate;
      }
      if (f == nullptr) {
        return Fail(path, "field number " + std::to_string(number) + " of " + std::string(name) +
                              " is not supported");
      }
      const std::string fpath = path.empty() ? std::string(f->json) : path + "." + std::string(f->json);
      if (!ReadField(*f, wire, r, out, fpath)) return false;
    }
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& path, std::string why) {
    error_ = path.empty() ? std::move(why) : path + ": " + why;
    return false;
  }

  static bool IsLength(Type t) {
    return t != Type::kInt32 && t != Type::kInt64 && t != Type::kBool;
  }

  bool ReadField(const Field& f, uint8_t wire, Reader& r, Json* out, const std::string& path) {
    const std::string key(f.json);
    if (f.flags & kMap) {
      std::string_view entry;
      if (wire != kLength || !r.Bytes(&entry)) return Fail(path, "malformed map entry");
      std::string k;
      Json v;
      bool has_value = false;
      Reader er(entry);
      while (!er.done()) {
        uint64_t tag;
        if (!er.Varint(&tag)) return Fail(path, "truncated map entry");
        if ((tag >> 3) == 1 && (tag & 7) == kLength) {
          std::string_view s;
          if (!er.Bytes(&s)) return Fail(path, "truncated map key");
          k = s;
        } else if ((tag >> 3) == 2) {
          if (!ReadValue(f, static_cast<uint8_t>(tag & 7), er, &v, path)) return false;
          has_value = true;
        } else {
          return Fail(path, "unexpected field in a map entry");
        }
      }
      if (!ValidUtf8(k)) return Fail(path, "a key is not valid UTF-8");
      if (!has_value) v = ZeroOf(f.type);
      Json& m = (*out)[key];
      if (!m.is_object()) m = Json::object();
      m[k] = std::move(v);
      return true;
    }
    if (f.flags & kRepeated) {
      Json& a = (*out)[key];
      if (!a.is_array()) a = Json::array();
      if (wire == kLength && !IsLength(f.type)) {  // packed scalars
        std::string_view packed;
        if (!r.Bytes(&packed)) return Fail(path, "truncated packed list");
        Reader pr(packed);
        while (!pr.done()) {
          Json v;
          if (!ReadValue(f, kVarint, pr, &v, path)) return false;
          a.push_back(std::move(v));
        }
        return true;
      }
      Json v;
      if (!ReadValue(f, wire, r, &v, path)) return false;
      a.push_back(std::move(v));
      return true;
    }
    Json v;
    if (!ReadValue(f, wire, r, &v, path)) return false;
    // Kubernetes' JSON leaves out zero values of plain fields; a pointer set to zero stays. A
    // zero Time is null, as metav1.Time writes it.
    if (!(f.flags & kOptional) && IsZero(v) && f.type != Type::kMessage) {
      out->erase(key);
      return true;
    }
    (*out)[key] = std::move(v);
    return true;
  }

  static Json ZeroOf(Type t) {
    switch (t) {
      case Type::kInt32:
      case Type::kInt64: return 0;
      case Type::kBool: return false;
      case Type::kMessage: return Json::object();
      default: return "";
    }
  }

  static bool IsZero(const Json& v) {
    return (v.is_string() && v.get_ref<const std::string&>().empty()) ||
           (v.is_number_integer() && v.get<int64_t>() == 0) || (v.is_boolean() && !v.get<bool>());
  }

  static bool ValidUtf8(std::string_view s) { return FirstInvalidUtf8(s) == std::string_view::npos; }


  // One value of `f`'s type (a map's value, a list's element, or a plain field).
  bool ReadValue(const Field& f, uint8_t wire, Reader& r, Json* v, const std::string& path) {
    if (!IsLength(f.type)) {
      uint64_t x;
      if (wire != kVarint || !r.Varint(&x)) return Fail(path, "expected a number");
      if (f.type == Type::kBool) {
        *v = x != 0;
      } else if (f.type == Type::kInt32) {
        *v = static_cast<int32_t>(static_cast<uint32_t>(x));
      } else {
        *v = static_cast<int64_t>(x);
      }
      return true;
    }
    std::string_view bytes;
    if (wire != kLength || !r.Bytes(&bytes)) return Fail(path, "expected length-delimited bytes");
    switch (f.type) {
      case Type::kString:
        if (!ValidUtf8(bytes)) return Fail(path, "not valid UTF-8");
        *v = std::string(bytes);
        return true;
      case Type::kBytes: *v = Base64Encode(bytes); return true;
      case Type::kMessage: return ReadMessage(f.message, bytes, v, path);
      case Type::kTime: return ReadTime(bytes, v, path);
      case Type::kQuantity: {
        Json q;
        static const Field kStr{1, "string", Type::kString};
        if (!Single(bytes, kStr, &q, path)) return false;
        *v = q.is_string() ? q : Json("0");
        return true;
      }
      case Type::kIntOrString: return ReadIntOrString(bytes, v, path);
      case Type::kFieldsV1: {
        Json raw;
        static const Field kRaw{1, "Raw", Type::kString};
        if (!Single(bytes, kRaw, &raw, path)) return false;
        if (!raw.is_string()) {
          *v = Json::object();
          return true;
        }
        auto parsed = ParseJson(raw.get_ref<const std::string&>());
        if (!parsed.ok()) return Fail(path, "fieldsV1 is not JSON");
        *v = *std::move(parsed);
        return true;
      }
      default: return Fail(path, "unexpected type");
    }
  }

  // A message with a single field `f`: its value, or null when absent.
  bool Single(std::string_view bytes, const Field& f, Json* v, const std::string& path) {
    *v = nullptr;
    Reader r(bytes);
    while (!r.done()) {
      uint64_t tag;
      if (!r.Varint(&tag)) return Fail(path, "truncated field tag");
      if ((tag >> 3) != f.number) return Fail(path, "unexpected field " + std::to_string(tag >> 3));
      if (!ReadValue(f, static_cast<uint8_t>(tag & 7), r, v, path)) return false;
    }
    return true;
  }

  bool ReadTime(std::string_view bytes, Json* v, const std::string& path) {
    int64_t seconds = 0;
    int32_t nanos = 0;
    Reader r(bytes);
    while (!r.done()) {
      uint64_t tag, x;
      if (!r.Varint(&tag) || (tag & 7) != kVarint || !r.Varint(&x)) {
        return Fail(path, "malformed time");
      }
      if ((tag >> 3) == 1) {
        seconds = static_cast<int64_t>(x);
      } else if ((tag >> 3) == 2) {
        nanos = static_cast<int32_t>(static_cast<uint32_t>(x));
      } else {
        return Fail(path, "unexpected field in a time");
      }
    }
    if (nanos < 0 || nanos > 999'999'999) return Fail(path, "nanoseconds out of range");
    *v = seconds == 0 && nanos == 0 ? Json() : Json(Time::FromUnixSeconds(seconds, nanos).ToString());
    return true;
  }

  bool ReadIntOrString(std::string_view bytes, Json* v, const std::string& path) {
    int64_t type = 0;
    int32_t i = 0;
    std::string s;
    Reader r(bytes);
    while (!r.done()) {
      uint64_t tag;
      if (!r.Varint(&tag)) return Fail(path, "truncated int-or-string");
      const uint64_t n = tag >> 3;
      if ((n == 1 || n == 2) && (tag & 7) == kVarint) {
        uint64_t x;
        if (!r.Varint(&x)) return Fail(path, "truncated int-or-string");
        if (n == 1) type = static_cast<int64_t>(x);
        if (n == 2) i = static_cast<int32_t>(static_cast<uint32_t>(x));
      } else if (n == 3 && (tag & 7) == kLength) {
        std::string_view sv;
        if (!r.Bytes(&sv) || !ValidUtf8(sv)) return Fail(path, "malformed int-or-string");
        s = sv;
      } else {
        return Fail(path, "unexpected field in an int-or-string");
      }
    }
    if (type == 1) {
      *v = s;
    } else {
      *v = i;
    }
    return true;
  }

  std::string error_;
};

}  // namespace

StatusOr<Json> DecodeProtobufObject(std::string_view body) {
  constexpr std::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic) {
    return InvalidArgumentError(
        "error decoding the request body: a protobuf body starts with \"k8s\\x00\"");
  }
  // runtime.Unknown: typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
  // contentType = 4.
  std::string api_version, kind, encoding, content_type;
  std::string_view raw;
  Reader r(body.substr(4));
  auto malformed = [] {
    return InvalidArgumentError("error decoding the request body: malformed protobuf");
  };
  while (!r.done()) {
    uint64_t tag;
    std::string_view bytes;
    if (!r.Varint(&tag)) return malformed();
    if ((tag & 7) != kLength || !r.Bytes(&bytes)) return malformed();
    switch (tag >> 3) {
      case 1: {
        Reader tm(bytes);
        while (!tm.done()) {
          uint64_t t;
          std::string_view s;
          if (!tm.Varint(&t) || (t & 7) != kLength || !tm.Bytes(&s)) return malformed();
          if ((t >> 3) == 1) api_version = s;
          if ((t >> 3) == 2) kind = s;
        }
        break;
      }
      case 2: raw = bytes; break;
      case 3: encoding = bytes; break;
      case 4: content_type = bytes; break;
      default: return malformed();
    }
  }
  if (!encoding.empty() || (!content_type.empty() && content_type != kProtobufContentType)) {
    return InvalidArgumentError("error decoding the request body: unsupported content encoding \"" +
                                encoding + "\" or type \"" + content_type + "\"");
  }
  if (!Supported(api_version, kind)) {
    return UnimplementedError("the body of " + (kind.empty() ? std::string("an object") : kind) +
                                (api_version.empty() ? "" : " in " + api_version) +
                                " cannot be read from protobuf; send it as application/json");
  }
  Decoder d;
  Json obj;
  if (!d.ReadMessage(kind, raw, &obj, "")) {
    return InvalidArgumentError("error decoding the " + kind + " protobuf body: " + d.error());
  }
  Json out = Json::object();
  out["apiVersion"] = api_version;
  out["kind"] = kind;
  for (auto& [k, v] : obj.items()) out[k] = std::move(v);
  return out;
}

}  // namespace kvol::api
