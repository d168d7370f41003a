// Server-side printing: column definitions and cells per kind, after Kubernetes' printers.
#include "apiserver/tables.h"

#include <algorithm>

#include "api/time.h"
#include "api/well_known.h"
#include "apiserver/tables_internal.h"

namespace kvol::apiserver {
namespace {

using namespace tables_internal;

// A volume's or a claim's class as Kubernetes prints it: the beta annotation when present,
// else spec.storageClassName.
std::string StorageClassOf(const Json& obj) {
  const Json& ann = At(obj, {"metadata", "annotations", api::kAnnBetaStorageClass});
  if (ann.is_string()) return ann.get<std::string>();
  return Str(obj, {"spec", "storageClassName"});
}

std::string Age(const Json& obj, os::WallTime now) {
  std::string ts = Str(obj, {"metadata", "creationTimestamp"});
  auto t = api::Time::Parse(ts);
  if (!t.ok()) return "<unknown>";
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  return HumanDuration(std::chrono::seconds(secs - t->unix_seconds()));
}

std::string AccessModes(const Json& modes) {
  std::string out;
  if (!modes.is_array()) return out;
  // Printed in a fixed order, as kubectl does.
  const std::pair<const char*, const char*> kOrder[] = {{"ReadWriteOnce", "RWO"},
                                                        {"ReadOnlyMany", "ROX"},
                                                        {"ReadWriteMany", "RWX"},
                                                        {"ReadWriteOncePod", "RWOP"}};
  for (const auto& [mode, abbr] : kOrder) {
    if (std::find(modes.begin(), modes.end(), Json(mode)) == modes.end()) continue;
    if (!out.empty()) out += ',';
    out += abbr;
  }
  return out;
}

std::string Join(const Json& list, const char* sep = ",") {
  std::string out;
  if (!list.is_array()) return out;
  for (const auto& v : list) {
    if (!out.empty()) out += sep;
    out += v.is_string() ? v.get<std::string>() : api::DumpJson(v);
  }
  return out;
}

// A workload's desired replicas (spec.replicas, 1 when unset) and a status count (0 when unset).
int64_t SpecReplicas(const Json& o) {
  const Json& r = At(o, {"spec", "replicas"});
  return r.is_number_integer() ? r.get<int64_t>() : 1;
}
int64_t StatusCount(const Json& o, std::string_view field) {
  const Json& v = At(o, {"status", field});
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

// "a,b" of the template's containers' names (or images).
std::string TemplateContainers(const Json& o, const char* field) {
  std::string out;
  const Json& cs = At(o, {"spec", "template", "spec", "containers"});
  if (!cs.is_array()) return out;
  for (const auto& c : cs) {
    if (!out.empty()) out += ",";
    out += Str(c, {field});
  }
  return out;
}

// The selector's matchLabels as "k=v,..."; "<none>" when there are none.
std::string SelectorText(const Json& o) {
  std::string out;
  const Json& ml = At(o, {"spec", "selector", "matchLabels"});
  if (ml.is_object()) {
    for (auto it = ml.begin(); it != ml.end(); ++it) {
      if (!out.empty()) out += ",";
      out += it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : "");
    }
  }
  return out.empty() ? "<none>" : out;
}

std::string PodStatus(const Json& pod, int* ready, int* total, int* restarts) {
  std::string reason = Str(pod, {"status", "reason"});
  if (reason.empty()) reason = Str(pod, {"status", "phase"});
  const Json& specs = At(pod, {"spec", "containers"});
  *total = specs.is_array() ? static_cast<int>(specs.size()) : 0;
  *ready = 0;
  *restarts = 0;
  const Json& statuses = At(pod, {"status", "containerStatuses"});
  bool has_running = false;
  if (statuses.is_array()) {
    for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
      const Json& cs = *it;
      if (cs.contains("restartCount") && cs["restartCount"].is_number()) {
        *restarts += cs["restartCount"].get<int>();
      }
      const Json& state = At(cs, {"state"});
      std::string waiting = Str(state, {"waiting", "reason"});
      std::string term = Str(state, {"terminated", "reason"});
      if (!waiting.empty()) {
        reason = waiting;
      } else if (!term.empty()) {
        reason = term;
      } else if (state.contains("terminated")) {
        const Json& code = At(state, {"terminated", "exitCode"});
        reason = "ExitCode:" + (code.is_number() ? std::to_string(code.get<int>()) : "0");
      } else if (state.contains("running") && At(cs, {"ready"}) == Json(true)) {
        has_running = true;
        ++*ready;
      } else if (state.contains("running")) {
        has_running = true;
      }
    }
  }
  if (reason == "Completed" && has_running) reason = "Running";
  if (At(pod, {"metadata", "deletionTimestamp"}).is_string()) {
    reason = Str(pod, {"status", "reason"}) == "NodeLost" ? "Unknown" : "Terminating";
  }
  return reason;
}

std::vector<Column> PersistentVolumeColumns() {
  return {
      {"Name", "string", "name", kNameDesc, 0},
      {"Capacity", "string", "",
       "capacity is the description of the persistent volume's resources and capacity.", 0},
      {"Access Modes", "string", "", "accessModes contains all ways the volume can be mounted.", 0},
      {"Reclaim Policy", "string", "",
       "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released "
       "from its claim.",
       0},
      {"Status", "string", "",
       "phase indicates if a volume is available, bound to a claim, or released by a claim.", 0},
      {"Claim", "string", "",
       "claimRef is part of a bi-directional binding between PersistentVolume and "
       "PersistentVolumeClaim.",
       0},
      {"StorageClass", "string", "",
       "storageClassName is the name of StorageClass to which this persistent volume belongs.", 0},
      {"Reason", "string", "", "reason is a brief CamelCase string that describes any failure.", 0},
      {"Age", "string", "", kAgeDesc, 0},
      {"VolumeMode", "string", "",
       "volumeMode defines if a volume is intended to be used with a formatted filesystem or to "
       "remain in raw block state.",
       1}};
}

Json PersistentVolumeCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  const Json& claim = At(o, {"spec", "claimRef"});
  std::string claim_text;
  if (claim.is_object()) claim_text = Str(claim, {"namespace"}) + "/" + Str(claim, {"name"});
  std::string vm = Str(o, {"spec", "volumeMode"});
  std::string phase = Str(o, {"status", "phase"});
  if (At(o, {"metadata", "deletionTimestamp"}).is_string()) phase = "Terminating";
  return {name,
          Str(o, {"spec", "capacity", "storage"}),
          AccessModes(At(o, {"spec", "accessModes"})),
          Str(o, {"spec", "persistentVolumeReclaimPolicy"}),
          phase,
          claim_text,
          StorageClassOf(o),
          Str(o, {"status", "reason"}),
          age,
          vm.empty() ? "<unset>" : vm};
}

std::vector<Column> PersistentVolumeClaimColumns() {
  return {
      {"Name", "string", "name", kNameDesc, 0},
      {"Status", "string", "", "phase represents the current phase of PersistentVolumeClaim.", 0},
      {"Volume", "string", "",
       "volumeName is the binding reference to the PersistentVolume backing this claim.", 0},
      {"Capacity", "string", "",
       "capacity represents the actual resources of the underlying volume.", 0},
      {"Access Modes", "string", "",
       "accessModes contains the actual access modes the volume backing the PVC has.", 0},
      {"StorageClass", "string", "",
       "storageClassName is the name of the StorageClass required by the claim.", 0},
      {"Age", "string", "", kAgeDesc, 0},
      {"VolumeMode", "string", "",
       "volumeMode defines what type of volume is required by the claim.", 1}};
}

Json PersistentVolumeClaimCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  const std::string phase = Str(o, {"status", "phase"});
  const bool bound = !Str(o, {"spec", "volumeName"}).empty();
  std::string vm = Str(o, {"spec", "volumeMode"});
  return {name,
          At(o, {"metadata", "deletionTimestamp"}).is_string() ? "Terminating" : phase,
          Str(o, {"spec", "volumeName"}),
          bound ? Str(o, {"status", "capacity", "storage"}) : "",
          bound ? AccessModes(At(o, {"status", "accessModes"})) : "",
          StorageClassOf(o),
          age,
          vm.empty() ? "<unset>" : vm};
}

std::vector<Column> StorageClassColumns() {
  return {
      {"Name", "string", "name", kNameDesc, 0},
      {"Provisioner", "string", "", "provisioner indicates the type of the provisioner.", 0},
      {"ReclaimPolicy", "string", "",
       "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of "
       "this storage class.",
       0},
      {"VolumeBindingMode", "string", "",
       "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.",
       0},
      {"AllowVolumeExpansion", "string", "",
       "allowVolumeExpansion shows whether the storage class allow volume expand.", 0},
      {"Age", "string", "", kAgeDesc, 0}};
}

Json StorageClassCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  std::string display = name;
  if (Str(o, {"metadata", "annotations", "storageclass.kubernetes.io/is-default-class"}) ==
          "true" ||
      Str(o, {"metadata", "annotations", "storageclass.beta.kubernetes.io/is-default-class"}) ==
          "true") {
    display += " (default)";
  }
  std::string reclaim = Str(o, {"reclaimPolicy"});
  std::string binding = Str(o, {"volumeBindingMode"});
  const Json& expand = At(o, {"allowVolumeExpansion"});
  return {display,
          Str(o, {"provisioner"}),
          reclaim.empty() ? "Delete" : reclaim,
          binding.empty() ? "Immediate" : binding,
          expand.is_boolean() ? (expand.get<bool>() ? "true" : "false") : "false",
          age};
}

std::vector<Column> PodColumns() {
  return {
      {"Name", "string", "name", kNameDesc, 0},
      {"Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.",
       0},
      {"Status", "string", "", "The aggregate status of the containers in this pod.", 0},
      {"Restarts", "string", "",
       "The number of times the containers in this pod have been restarted and when the last "
       "container in this pod has restarted.",
       0},
      {"Age", "string", "", kAgeDesc, 0},
      {"IP", "string", "",
       "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
       "allocated.",
       1},
      {"Node", "string", "", "NodeName is a request to schedule this pod onto a specific node.", 1},
      {"Nominated Node", "string", "",
       "nominatedNodeName is set when this pod preempts other pods on the node.", 1},
      {"Readiness Gates", "string", "",
       "If specified, all readiness gates will be evaluated for pod readiness.", 1}};
}

Json PodCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  int ready, total, restarts;
  std::string status = PodStatus(o, &ready, &total, &restarts);
  std::string ip = Str(o, {"status", "podIP"});
  const Json& ips = At(o, {"status", "podIPs"});
  if (ips.is_array() && !ips.empty()) ip = Str(ips[0], {"ip"});
  std::string node = Str(o, {"spec", "nodeName"});
  std::string nominated = Str(o, {"status", "nominatedNodeName"});
  return {name,
          std::to_string(ready) + "/" + std::to_string(total),
          status,
          std::to_string(restarts),
          age,
          ip.empty() ? "<none>" : ip,
          node.empty() ? "<none>" : node,
          nominated.empty() ? "<none>" : nominated,
          "<none>"};
}

std::vector<Column> VolumeAttachmentColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Attacher", "string", "",
           "Attacher indicates the name of the volume driver that MUST handle this request.", 0},
          {"PV", "string", "", "Name of the persistent volume to attach.", 0},
          {"Node", "string", "", "The node that the volume should be attached to.", 0},
          {"Attached", "boolean", "", "Indicates the volume is successfully attached.", 0},
          {"Age", "string", "", kAgeDesc, 0}};
}

Json VolumeAttachmentCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  const Json& attached = At(o, {"status", "attached"});
  return {name,
          Str(o, {"spec", "attacher"}),
          Str(o, {"spec", "source", "persistentVolumeName"}),
          Str(o, {"spec", "nodeName"}),
          attached.is_boolean() && attached.get<bool>(),
          age};
}

std::vector<Column> CSIDriverColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"AttachRequired", "boolean", "",
           "attachRequired indicates this CSI volume driver requires an attach operation.", 0},
          {"PodInfoOnMount", "boolean", "",
           "podInfoOnMount indicates this CSI volume driver requires additional pod information "
           "during mount operations.",
           0},
          {"StorageCapacity", "boolean", "",
           "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider "
           "the storage capacity.",
           0},
          {"TokenRequests", "string", "",
           "tokenRequests indicates the CSI driver needs pods' service account tokens.", 0},
          {"RequiresRepublish", "boolean", "",
           "requiresRepublish indicates the CSI driver wants NodePublishVolume being periodically "
           "called.",
           0},
          {"Modes", "string", "",
           "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports.", 0},
          {"Age", "string", "", kAgeDesc, 0}};
}

Json CSIDriverCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  const Json& spec = At(o, {"spec"});
  const Json& tokens = At(spec, {"tokenRequests"});
  std::string token_text = "<unset>";
  if (tokens.is_array() && !tokens.empty()) {
    token_text.clear();
    for (const auto& t : tokens) {
      if (!token_text.empty()) token_text += ",";
      token_text += Str(t, {"audience"});
    }
  }
  const Json& modes = At(spec, {"volumeLifecycleModes"});
  return {
      name,
      At(spec, {"attachRequired"}).is_boolean() ? At(spec, {"attachRequired"}) : Json(true),
      At(spec, {"podInfoOnMount"}).is_boolean() ? At(spec, {"podInfoOnMount"}) : Json(false),
      At(spec, {"storageCapacity"}).is_boolean() ? At(spec, {"storageCapacity"}) : Json(false),
      token_text,
      At(spec, {"requiresRepublish"}).is_boolean() ? At(spec, {"requiresRepublish"}) : Json(false),
      modes.is_array() && !modes.empty() ? Join(modes) : "<none>",
      age};
}

std::vector<Column> CSINodeColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Drivers", "integer", "",
           "Drivers indicates the number of CSI drivers registered on the node", 0},
          {"Age", "string", "", kAgeDesc, 0}};
}

Json CSINodeCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  const Json& drivers = At(o, {"spec", "drivers"});
  return {name, drivers.is_array() ? static_cast<int>(drivers.size()) : 0, age};
}

std::vector<Column> CSIStorageCapacityColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"StorageClassName", "string", "",
           "storageClassName represents the name of the StorageClass that the reported capacity "
           "applies to.",
           0},
          {"Capacity", "string", "",
           "capacity is the value reported by the CSI driver in its GetCapacityResponse for a "
           "GetCapacityRequest with topology and parameters that match the previous fields.",
           0}};
}

Json CSIStorageCapacityCells(const Row& row) {
  const Json& capacity = At(row.o, {"capacity"});
  return {row.name, At(row.o, {"storageClassName"}),
          capacity.is_string() ? capacity : Json("<unset>")};
}

std::vector<Column> ResourceQuotaColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Age", "string", "", kAgeDesc, 0},
          {"Request", "string", "",
           "Request represents a minimum amount of cpu/memory that a container may consume.", 0},
          {"Limit", "string", "",
           "Limits control the maximum amount of cpu/memory that a container may use independent "
           "of contention on the node.",
           0}};
}

// "requests.storage: 1Gi/10Gi, persistentvolumeclaims: 1/10": status.used over status.hard,
// by name, the limits.* ones apart.
Json ResourceQuotaCells(const Row& row) {
  const Json& hard = At(row.o, {"status", "hard"});
  const Json& used = At(row.o, {"status", "used"});
  std::string request, limit;
  if (hard.is_object()) {
    for (auto it = hard.begin(); it != hard.end(); ++it) {  // nlohmann keeps keys sorted
      const Json& u = used.is_object() && used.contains(it.key()) ? used[it.key()] : Json("0");
      const std::string cell = it.key() + ": " + (u.is_string() ? u.get<std::string>() : "0") +
                               "/" + (it->is_string() ? it->get<std::string>() : "");
      std::string& into = it.key().rfind("limits.", 0) == 0 ? limit : request;
      into += (into.empty() ? "" : ", ") + cell;
    }
  }
  return {row.name, row.age, request, limit};
}

std::vector<Column> NodeColumns() {
  return {
      {"Name", "string", "name", kNameDesc, 0},
      {"Status", "string", "", "The status of the node", 0},
      {"Roles", "string", "", "The roles of the node", 0},
      {"Age", "string", "", kAgeDesc, 0},
      {"Version", "string", "", "Kubelet Version reported by the node.", 0},
      {"Internal-IP", "string", "", "List of addresses reachable to the node.", 1},
      {"External-IP", "string", "", "List of addresses reachable to the node.", 1},
      {"OS-Image", "string", "", "OS Image reported by the node from /etc/os-release.", 1},
      {"Kernel-Version", "string", "", "Kernel Version reported by the node from 'uname -r'.", 1},
      {"Container-Runtime", "string", "", "Container runtime version reported by the node.", 1}};
}

Json NodeCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  std::string status = "Unknown";
  const Json& conds = At(o, {"status", "conditions"});
  if (conds.is_array()) {
    for (const auto& c : conds) {
      if (Str(c, {"type"}) == "Ready") status = Str(c, {"status"}) == "True" ? "Ready" : "NotReady";
    }
  }
  if (At(o, {"spec", "unschedulable"}) == Json(true)) status += ",SchedulingDisabled";
  std::string roles;
  const Json& labels = At(o, {"metadata", "labels"});
  if (labels.is_object()) {
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      const std::string& k = it.key();
      const std::string prefix = "node-role.kubernetes.io/";
      if (k.rfind(prefix, 0) == 0 && k.size() > prefix.size()) {
        if (!roles.empty()) roles += ",";
        roles += k.substr(prefix.size());
      }
    }
  }
  std::string internal = "<none>", external = "<none>";
  const Json& addrs = At(o, {"status", "addresses"});
  if (addrs.is_array()) {
    for (const auto& a : addrs) {
      if (Str(a, {"type"}) == "InternalIP" && internal == "<none>") internal = Str(a, {"address"});
      if (Str(a, {"type"}) == "ExternalIP" && external == "<none>") external = Str(a, {"address"});
    }
  }
  auto info = [&](std::string_view f) {
    std::string v = Str(o, {"status", "nodeInfo", f});
    return v.empty() ? std::string("<unknown>") : v;
  };
  std::string version = Str(o, {"status", "nodeInfo", "kubeletVersion"});
  return {name,
          status,
          roles.empty() ? "<none>" : roles,
          age,
          version,
          internal,
          external,
          info("osImage"),
          info("kernelVersion"),
          info("containerRuntimeVersion")};
}

std::vector<Column> EventColumns() {
  return {
      {"Last Seen", "string", "", "Time when last Event occurred", 0},
      {"Type", "string", "",
       "Type of this event (Normal, Warning), new types could be added in the future.", 0},
      {"Reason", "string", "",
       "This should be a short, machine understandable string that gives the reason for the "
       "transition into the object's current status.",
       0},
      {"Object", "string", "", "The object that this event is about.", 0},
      {"Subobject", "string", "",
       "An optional field that can be used to identify which part of the object this event is "
       "about.",
       1},
      {"Source", "string", "", "The component reporting this event.", 1},
      {"Message", "string", "", "A human-readable description of the status of this operation.", 0},
      {"First Seen", "string", "", "The time at which the event was first recorded.", 1},
      {"Count", "string", "", "The number of times this event has occurred.", 1},
      {"Name", "string", "name", kNameDesc, 1}};
}

Json EventCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const os::WallTime now = row.now;
  std::string last = Str(o, {"lastTimestamp"});
  if (last.empty()) last = Str(o, {"eventTime"});
  if (last.empty()) last = Str(o, {"metadata", "creationTimestamp"});
  std::string first = Str(o, {"firstTimestamp"});
  if (first.empty()) first = last;
  auto since = [&](const std::string& ts) {
    auto t = api::Time::Parse(ts);
    if (!t.ok()) return std::string("<unknown>");
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    return HumanDuration(std::chrono::seconds(secs - t->unix_seconds()));
  };
  std::string object = Str(o, {"involvedObject", "kind"});
  for (char& c : object) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  object += "/" + Str(o, {"involvedObject", "name"});
  std::string source = Str(o, {"source", "component"});
  if (source.empty()) source = Str(o, {"reportingComponent"});
  const Json& count = At(o, {"count"});
  return {since(last),
          Str(o, {"type"}),
          Str(o, {"reason"}),
          object,
          Str(o, {"involvedObject", "fieldPath"}),
          source,
          Str(o, {"message"}),
          since(first),
          count.is_number() ? std::to_string(count.get<int>()) : "1",
          name};
}

std::vector<Column> NamespaceColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Status", "string", "", "The status of the namespace", 0},
          {"Age", "string", "", kAgeDesc, 0}};
}

Json NamespaceCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  std::string phase = Str(o, {"status", "phase"});
  return {name, phase.empty() ? "Active" : phase, age};
}

std::vector<Column> ConfigMapColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Data", "string", "", "Data contains the configuration data.", 0},
          {"Age", "string", "", kAgeDesc, 0}};
}

Json ConfigMapCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  size_t n = 0;
  if (At(o, {"data"}).is_object()) n += At(o, {"data"}).size();
  if (At(o, {"binaryData"}).is_object()) n += At(o, {"binaryData"}).size();
  return {name, static_cast<int>(n), age};
}

std::vector<Column> SecretColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Type", "string", "", "The type of the secret", 0},
          {"Data", "string", "", "The total number of data entries", 0},
          {"Age", "string", "", kAgeDesc, 0}};
}

Json SecretCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  size_t n = At(o, {"data"}).is_object() ? At(o, {"data"}).size() : 0;
  return {name, Str(o, {"type"}), static_cast<int>(n), age};
}

std::vector<Column> LeaseColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Holder", "string", "",
           "holderIdentity contains the identity of the holder of a current lease.", 0},
          {"Age", "string", "", kAgeDesc, 0}};
}

Json LeaseCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  std::string holder = Str(o, {"spec", "holderIdentity"});
  return {name, holder.empty() ? "<none>" : holder, age};
}

std::vector<Column> DeploymentColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Ready", "string", "", "Number of the pod with ready state", 0},
          {"Up-to-date", "integer", "",
           "Total number of non-terminated pods targeted by this deployment that have the desired "
           "template spec.",
           0},
          {"Available", "integer", "",
           "Total number of available pods (ready for at least minReadySeconds) targeted by this "
           "deployment.",
           0},
          {"Age", "string", "", kAgeDesc, 0},
          {"Containers", "string", "", "Names of each container in the template.", 1},
          {"Images", "string", "", "Images referenced by each container in the template.", 1},
          {"Selector", "string", "",
           "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be "
           "the ones affected by this deployment.",
           1}};
}

Json DeploymentCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  return {name,
          std::to_string(StatusCount(o, "readyReplicas")) + "/" + std::to_string(SpecReplicas(o)),
          StatusCount(o, "updatedReplicas"),
          StatusCount(o, "availableReplicas"),
          age,
          TemplateContainers(o, "name"),
          TemplateContainers(o, "image"),
          SelectorText(o)};
}

std::vector<Column> StatefulSetColumns() {
  return {{"Name", "string", "name", kNameDesc, 0},
          {"Ready", "string", "", "Number of the pod with ready state", 0},
          {"Age", "string", "", kAgeDesc, 0},
          {"Containers", "string", "", "Names of each container in the template.", 1},
          {"Images", "string", "", "Images referenced by each container in the template.", 1}};
}

Json StatefulSetCells(const Row& row) {
  const Json& o = row.o;
  const std::string& name = row.name;
  const std::string& age = row.age;
  return {name,
          std::to_string(StatusCount(o, "readyReplicas")) + "/" + std::to_string(SpecReplicas(o)),
          age, TemplateContainers(o, "name"), TemplateContainers(o, "image")};
}

// The kinds printed with their own columns, after Kubernetes' printers.
constexpr Printer kPrinters[] = {
    {"PersistentVolume", PersistentVolumeColumns, PersistentVolumeCells},
    {"PersistentVolumeClaim", PersistentVolumeClaimColumns, PersistentVolumeClaimCells},
    {"StorageClass", StorageClassColumns, StorageClassCells},
    {"Pod", PodColumns, PodCells},
    {"VolumeAttachment", VolumeAttachmentColumns, VolumeAttachmentCells},
    {"CSIDriver", CSIDriverColumns, CSIDriverCells},
    {"CSINode", CSINodeColumns, CSINodeCells},
    {"CSIStorageCapacity", CSIStorageCapacityColumns, CSIStorageCapacityCells},
    {"ResourceQuota", ResourceQuotaColumns, ResourceQuotaCells},
    {"Node", NodeColumns, NodeCells},
    {"Event", EventColumns, EventCells},
    {"Namespace", NamespaceColumns, NamespaceCells},
    {"ConfigMap", ConfigMapColumns, ConfigMapCells},
    {"Secret", SecretColumns, SecretCells},
    {"Lease", LeaseColumns, LeaseCells},
    {"Deployment", DeploymentColumns, DeploymentCells},
    {"StatefulSet", StatefulSetColumns, StatefulSetCells},
};

const Printer* PrinterOf(std::string_view kind) {
  for (const Printer& p : kPrinters) {
    if (p.kind == kind) return &p;
  }
  return SnapshotPrinter(kind);
}

std::vector<Column> Columns(std::string_view kind) {
  if (const Printer* p = PrinterOf(kind)) return p->columns();
  return {{"Name", "string", "name", kNameDesc, 0}, {"Age", "string", "", kAgeDesc, 0}};
}

Json Cells(std::string_view kind, const Json& o, os::WallTime now) {
  const Row row{o, Str(o, {"metadata", "name"}), Age(o, now), now};
  if (const Printer* p = PrinterOf(kind)) return p->cells(row);
  return {row.name, row.age};
}

}  // namespace

std::string HumanDuration(std::chrono::seconds d) {
  const int64_t seconds = d.count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m"
                  : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  const int64_t hours = seconds / 3600;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h"
                  : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d"
                  : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

api::Json MakeTable(std::string_view kind, const std::vector<api::Json>& objects,
                    const std::string& resource_version, const std::string& continue_token,
                    std::string_view include_object, os::WallTime now, bool column_definitions) {
  Json table = {{"kind", "Table"}, {"apiVersion", "meta.k8s.io/v1"}};
  Json meta = {{"resourceVersion", resource_version}};
  if (!continue_token.empty()) meta["continue"] = continue_token;
  table["metadata"] = std::move(meta);
  Json cols = Json::array();
  if (column_definitions) {
    for (const auto& c : Columns(kind)) {
      cols.push_back({{"name", c.name},
                      {"type", c.type},
                      {"format", c.format},
                      {"description", c.description},
                      {"priority", c.priority}});
    }
  }
  table["columnDefinitions"] = std::move(cols);
  Json rows = Json::array();
  for (const auto& o : objects) {
    Json row = {{"cells", Cells(kind, o, now)}};
    if (include_object == "Object") {
      row["object"] = o;
    } else if (include_object != "None") {
      Json partial = {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}};
      partial["metadata"] = o.contains("metadata") ? o["metadata"] : Json::object();
      row["object"] = std::move(partial);
    }
    rows.push_back(std::move(row));
  }
  table["rows"] = std::move(rows);
  return table;
}

}  // namespace kvol::apiserver
