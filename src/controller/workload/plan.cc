// Deployment and StatefulSet decisions.
#include "controller/workload/plan.h"

#include <algorithm>
#include <map>

#include "api/codec.h"

namespace kvol::controller::workload {
namespace {

// Kubernetes' rand.SafeEncodeString alphabet: no vowels, no confusable characters.
constexpr std::string_view kSafeAlphabet = "bcdfghjklmnpqrstvwxz2456789";

std::string SafeEncode(const std::string& s) {
  std::string out;
  for (char c : s) out += kSafeAlphabet[static_cast<unsigned char>(c) % kSafeAlphabet.size()];
  return out;
}

StatusOr<int64_t> Replicas(const api::Json& spec) {
  if (!spec.is_object() || !spec.contains("replicas") || spec["replicas"].is_null()) return 1;
  const auto& r = spec["replicas"];
  if (!r.is_number_integer() || r.get<int64_t>() < 0) {
    return InvalidArgumentError("spec.replicas must be a non-negative integer");
  }
  return r.get<int64_t>();
}

StatusOr<api::PodTemplateSpec> Template(const api::Json& spec) {
  if (!spec.is_object() || !spec.contains("template") || !spec["template"].is_object()) {
    return InvalidArgumentError("spec.template is required");
  }
  api::FieldErrors errors;
  auto t = api::DecodeStruct<api::PodTemplateSpec>(spec["template"], &errors);
  if (!errors.empty()) return InvalidArgumentError("spec.template: " + errors.front().ToString());
  return t;
}

api::OwnerReference OwnerRef(std::string_view kind, const api::ObjectMeta& owner) {
  api::OwnerReference r;
  r.api_version = "apps/v1";
  r.kind = std::string(kind);
  r.name = owner.name;
  r.uid = owner.uid;
  r.controller = true;
  r.block_owner_deletion = true;
  return r;
}

api::Pod PodFrom(const api::PodTemplateSpec& t, std::string_view kind,
                 const api::ObjectMeta& owner) {
  api::Pod p;
  p.metadata.namespace_ = owner.namespace_;
  p.metadata.labels = t.metadata.labels;
  p.metadata.annotations = t.metadata.annotations;
  p.metadata.owner_references.push_back(OwnerRef(kind, owner));
  p.spec = t.spec;
  return p;
}

// Deletion order when shrinking: unscheduled first, then not ready, then newest (by creation
// time; names only break ties).
void SortForDeletion(std::vector<PodPtr>& pods) {
  std::stable_sort(pods.begin(), pods.end(), [](const PodPtr& a, const PodPtr& b) {
    const bool as = !a->spec.node_name.empty(), bs = !b->spec.node_name.empty();
    if (as != bs) return !as;
    const bool ar = PodReady(*a), br = PodReady(*b);
    if (ar != br) return !ar;
    const api::Time zero;
    const api::Time at = a->metadata.creation_timestamp.value_or(zero);
    const api::Time bt = b->metadata.creation_timestamp.value_or(zero);
    if (at.unix_seconds() != bt.unix_seconds()) return at.unix_seconds() > bt.unix_seconds();
    return a->metadata.name > b->metadata.name;
  });
}

int Ordinal(const std::string& set, const std::string& pod) {
  if (pod.size() <= set.size() + 1 || pod.compare(0, set.size(), set) != 0 ||
      pod[set.size()] != '-') {
    return -1;
  }
  int n = 0;
  for (size_t i = set.size() + 1; i < pod.size(); ++i) {
    if (pod[i] < '0' || pod[i] > '9' || n > 100000000) return -1;
    n = n * 10 + (pod[i] - '0');
  }
  return n;
}

}  // namespace

std::string TemplateHash(const api::Json& pod_template) {
  // FNV-1a, 32 bits, over the template's canonical JSON.
  uint32_t h = 2166136261u;
  for (unsigned char c : pod_template.dump()) {
    h ^= c;
    h *= 16777619u;
  }
  return SafeEncode(std::to_string(h));
}

bool PodReady(const api::Pod& pod) {
  for (const auto& c : pod.status.conditions) {
    if (c.type == "Ready") return c.status == "True";
  }
  return false;
}

bool PodGone(const api::Pod& pod) {
  return pod.metadata.deletion_timestamp.has_value() || pod.status.phase == "Succeeded" ||
         pod.status.phase == "Failed";
}

const api::OwnerReference* ControllerOf(const api::Pod& pod) {
  for (const auto& r : pod.metadata.owner_references) {
    if (r.controller.value_or(false)) return &r;
  }
  return nullptr;
}

StatusOr<Plan> PlanDeployment(const api::Deployment& d, const std::vector<PodPtr>& owned,
                              int64_t pending_creates) {
  KVOL_ASSIGN_OR_RETURN(const int64_t replicas, Replicas(d.spec));
  KVOL_ASSIGN_OR_RETURN(const api::PodTemplateSpec tmpl, Template(d.spec));
  const std::string hash = TemplateHash(d.spec["template"]);
  const std::string rs_name = d.metadata.name + "-" + hash;
  Plan plan;
  std::vector<PodPtr> current;
  int64_t ready = 0;
  for (const auto& p : owned) {
    if (p->metadata.deletion_timestamp) continue;
    auto h = p->metadata.labels.find(std::string(kPodTemplateHash));
    if (h == p->metadata.labels.end() || h->second != hash || PodGone(*p)) {
      // An old template's pod (recreate), or one that finished: it goes.
      plan.delete_pods.push_back(p->metadata.name);
      plan.events.emplace_back("SuccessfulDelete", "Deleted pod: " + p->metadata.name);
      continue;
    }
    current.push_back(p);
  }
  if (static_cast<int64_t>(current.size()) > replicas) {
    SortForDeletion(current);
    while (static_cast<int64_t>(current.size()) > replicas) {
      plan.delete_pods.push_back(current.front()->metadata.name);
      plan.events.emplace_back("SuccessfulDelete",
                               "Deleted pod: " + current.front()->metadata.name);
      current.erase(current.begin());
    }
  }
  for (const auto& p : current) ready += PodReady(*p);
  for (int64_t i = static_cast<int64_t>(current.size()) + pending_creates; i < replicas; ++i) {
    api::Pod p = PodFrom(tmpl, "Deployment", d.metadata);
    p.metadata.generate_name = rs_name + "-";
    p.metadata.labels[std::string(kPodTemplateHash)] = hash;
    plan.create_pods.push_back(std::move(p));
  }

  const int64_t existing = static_cast<int64_t>(current.size());
  api::Json st = api::Json::object();
  st["observedGeneration"] = d.metadata.generation;
  if (existing > 0) {
    st["replicas"] = existing;
    st["updatedReplicas"] = existing;
  }
  if (ready > 0) {
    st["readyReplicas"] = ready;
    st["availableReplicas"] = ready;
  }
  if (replicas - ready > 0) st["unavailableReplicas"] = replicas - ready;
  const bool available = ready >= replicas;
  st["conditions"] = api::Json::array(
      {{{"type", "Available"},
        {"status", available ? "True" : "False"},
        {"reason", available ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable"},
        {"message", available ? "Deployment has minimum availability."
                              : "Deployment does not have minimum availability."}},
       {{"type", "Progressing"},
        {"status", "True"},
        {"reason", existing == replicas ? "NewReplicaSetAvailable" : "ReplicaSetUpdated"},
        {"message", existing == replicas
                        ? "ReplicaSet \"" + rs_name + "\" has successfully progressed."
                        : "ReplicaSet \"" + rs_name + "\" is progressing."}}});
  plan.status = std::move(st);
  return plan;
}

StatusOr<Plan> PlanStatefulSet(const api::StatefulSet& s, const std::vector<PodPtr>& owned,
                               const std::function<bool(const std::string&)>& claim_exists) {
  KVOL_ASSIGN_OR_RETURN(const int64_t replicas, Replicas(s.spec));
  KVOL_ASSIGN_OR_RETURN(const api::PodTemplateSpec tmpl, Template(s.spec));
  const std::string& set = s.metadata.name;
  const std::string revision = set + "-" + TemplateHash(s.spec["template"]);
  const bool parallel =
      s.spec.contains("podManagementPolicy") && s.spec["podManagementPolicy"] == "Parallel";
  const std::string service = s.spec.contains("serviceName") && s.spec["serviceName"].is_string()
                                  ? s.spec["serviceName"].get<std::string>()
                                  : "";
  std::vector<api::PersistentVolumeClaimTemplate> claim_templates;
  if (s.spec.contains("volumeClaimTemplates") && s.spec["volumeClaimTemplates"].is_array()) {
    for (const auto& j : s.spec["volumeClaimTemplates"]) {
      api::FieldErrors errors;
      claim_templates.push_back(api::DecodeStruct<api::PersistentVolumeClaimTemplate>(j, &errors));
    }
  }
  api::StringMap selector_labels;
  if (s.spec.contains("selector") && s.spec["selector"].is_object() &&
      s.spec["selector"].contains("matchLabels") && s.spec["selector"]["matchLabels"].is_object()) {
    for (auto it = s.spec["selector"]["matchLabels"].begin();
         it != s.spec["selector"]["matchLabels"].end(); ++it) {
      if (it.value().is_string()) selector_labels[it.key()] = it.value().get<std::string>();
    }
  }

  std::map<int, PodPtr> by_ordinal;
  Plan plan;
  for (const auto& p : owned) {
    const int ord = Ordinal(set, p->metadata.name);
    if (ord < 0) continue;
    by_ordinal[ord] = p;
  }

  int64_t ready = 0, current = 0, existing = 0;
  for (const auto& [ord, p] : by_ordinal) {
    if (p->metadata.deletion_timestamp) continue;
    ++existing;
    ready += PodReady(*p);
    auto rev = p->metadata.labels.find(std::string(kControllerRevisionHash));
    current += rev != p->metadata.labels.end() && rev->second == revision;
  }

  // Scale up (and replace finished pods) in ordinal order.
  for (int64_t i = 0; i < replicas; ++i) {
    const std::string name = set + "-" + std::to_string(i);
    auto it = by_ordinal.find(static_cast<int>(i));
    if (it != by_ordinal.end()) {
      const api::Pod& p = *it->second;
      if (p.metadata.deletion_timestamp) {
        if (!parallel) break;  // wait for it to go before going on
        continue;
      }
      if (PodGone(p)) {
        plan.delete_pods.push_back(name);
        plan.events.emplace_back("SuccessfulDelete",
                                 "delete Pod " + name + " in StatefulSet " + set + " successful");
        if (!parallel) break;
        continue;
      }
      const bool ok = p.status.phase == "Running" && PodReady(p);
      if (!parallel && !ok) break;  // OrderedReady: the next one waits for this one
      continue;
    }
    // The pod's claims first, then the pod.
    api::Pod pod = PodFrom(tmpl, "StatefulSet", s.metadata);
    pod.metadata.name = name;
    pod.metadata.labels[std::string(kStatefulSetPodName)] = name;
    pod.metadata.labels[std::string(kControllerRevisionHash)] = revision;
    pod.metadata.labels["apps.kubernetes.io/pod-index"] = std::to_string(i);
    // hostname and subdomain are kept as fields the object model does not type.
    if (!pod.spec.unknown_fields.is_object()) pod.spec.unknown_fields = api::Json::object();
    pod.spec.unknown_fields["hostname"] = name;
    if (!service.empty()) pod.spec.unknown_fields["subdomain"] = service;
    for (const auto& ct : claim_templates) {
      const std::string claim_name = ct.metadata.name + "-" + name;
      if (!claim_exists(claim_name)) {
        api::PersistentVolumeClaim c;
        c.metadata.namespace_ = s.metadata.namespace_;
        c.metadata.name = claim_name;
        c.metadata.labels = ct.metadata.labels;
        for (const auto& [k, v] : selector_labels) c.metadata.labels[k] = v;
        c.metadata.annotations = ct.metadata.annotations;
        c.spec = ct.spec;
        plan.create_claims.push_back(std::move(c));
        plan.events.emplace_back("SuccessfulCreate", "create Claim " + claim_name + " Pod " + name +
                                                         " in StatefulSet " + set + " success");
      }
      api::Volume v;
      v.name = ct.metadata.name;
      v.persistent_volume_claim.emplace().claim_name = claim_name;
      auto& vols = pod.spec.volumes;
      vols.erase(std::remove_if(vols.begin(), vols.end(),
                                [&](const api::Volume& x) { return x.name == v.name; }),
                 vols.end());
      vols.push_back(std::move(v));
    }
    plan.create_pods.push_back(std::move(pod));
    plan.events.emplace_back("SuccessfulCreate",
                             "create Pod " + name + " in StatefulSet " + set + " successful");
    if (!parallel) break;  // one at a time
  }

  // Scale down from the highest ordinal; OrderedReady only when the rest are ready.
  // OrderedReady also waits for a pod on its way out, and does not shrink while it grows.
  bool all_ready = plan.create_pods.empty();
  for (int64_t i = 0; i < replicas; ++i) {
    auto p = by_ordinal.find(static_cast<int>(i));
    if (p == by_ordinal.end() || !PodReady(*p->second) || p->second->metadata.deletion_timestamp) {
      all_ready = false;
    }
  }
  for (auto it = by_ordinal.rbegin(); it != by_ordinal.rend(); ++it) {
    if (it->first < replicas) continue;
    if (it->second->metadata.deletion_timestamp) {
      if (!parallel) break;  // the next one waits until this one is gone
      continue;
    }
    if (!parallel && !all_ready) break;
    plan.delete_pods.push_back(it->second->metadata.name);
    plan.events.emplace_back("SuccessfulDelete", "delete Pod " + it->second->metadata.name +
                                                     " in StatefulSet " + set + " successful");
    if (!parallel) break;
  }

  // A changed template: the highest outdated pod goes (and comes back), one at a time.
  // Whatever the pod management policy, each replaced pod must be Running and Ready first.
  if (plan.create_pods.empty() && plan.delete_pods.empty() && all_ready) {
    for (auto it = by_ordinal.rbegin(); it != by_ordinal.rend(); ++it) {
      if (it->first >= replicas) continue;
      auto rev = it->second->metadata.labels.find(std::string(kControllerRevisionHash));
      if (rev != it->second->metadata.labels.end() && rev->second == revision) continue;
      plan.delete_pods.push_back(it->second->metadata.name);
      plan.events.emplace_back("SuccessfulDelete", "delete Pod " + it->second->metadata.name +
                                                       " in StatefulSet " + set + " successful");
      break;
    }
  }

  api::Json st = api::Json::object();
  st["observedGeneration"] = s.metadata.generation;
  st["replicas"] = existing;
  if (ready > 0) {
    st["readyReplicas"] = ready;
    st["availableReplicas"] = ready;
  }
  if (current > 0) {
    st["currentReplicas"] = current;
    st["updatedReplicas"] = current;
  }
  st["currentRevision"] = revision;
  st["updateRevision"] = revision;
  st["collisionCount"] = 0;
  plan.status = std::move(st);
  return plan;
}

}  // namespace kvol::controller::workload
