#include "controller/provisioner/create_volume.h"

#include <algorithm>
#include <set>

#include "api/well_known.h"
#include "client/event_recorder.h"
#include "volume/plugins/csi/csi_util.h"

namespace kvol::controller::provisioner {
namespace {

namespace pb = ::csi::v1;

struct SecretParams {
  std::string_view what;  // "provisioner", "controller-publish", ...
  std::optional<api::SecretReference> SecretRefs::*field;
};

constexpr SecretParams kSecretParams[] = {
    {"provisioner", &SecretRefs::provisioner},
    {"controller-publish", &SecretRefs::controller_publish},
    {"node-stage", &SecretRefs::node_stage},
    {"node-publish", &SecretRefs::node_publish},
    {"controller-expand", &SecretRefs::controller_expand},
    {"node-expand", &SecretRefs::node_expand},
};

// Replaces each ${...} in `text` from `vars`; an annotation template reads the claim's
// annotations when `annotations` is set. InvalidArgument naming `param` for any other.
StatusOr<std::string> Resolve(const std::string& param, const std::string& text,
                              const std::map<std::string, std::string>& vars,
                              const std::map<std::string, std::string>* annotations) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find("${", i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, open - i);
    const size_t close = text.find('}', open);
    if (close == std::string::npos) {
      return InvalidArgumentError("StorageClass parameter " + param + ": \"" + text +
                                  "\" has an unterminated ${");
    }
    const std::string key = text.substr(open + 2, close - open - 2);
    constexpr std::string_view kAnn = "pvc.annotations['";
    if (auto v = vars.find(key); v != vars.end()) {
      out += v->second;
    } else if (annotations && key.rfind(kAnn, 0) == 0 && key.size() > kAnn.size() + 2 &&
               key.compare(key.size() - 2, 2, "']") == 0) {
      const std::string ann = key.substr(kAnn.size(), key.size() - kAnn.size() - 2);
      auto a = annotations->find(ann);
      if (a == annotations->end()) {
        return InvalidArgumentError("StorageClass parameter " + param + ": the claim has no " +
                                    "annotation \"" + ann + "\"");
      }
      out += a->second;
    } else {
      return InvalidArgumentError("StorageClass parameter " + param + ": \"${" + key +
                                  "}\" is not a template this parameter takes");
    }
    i = close + 1;
  }
  return out;
}

const api::Quantity* Storage(const api::ResourceList& list) {
  auto it = list.find("storage");
  return it == list.end() ? nullptr : &it->second;
}

// The node's segment of the driver's topology: each key with the node's label for it.
StatusOr<std::map<std::string, std::string>> NodeSegment(const api::Node& node,
                                                         const std::vector<std::string>& keys) {
  std::map<std::string, std::string> out;
  for (const auto& k : keys) {
    auto l = node.metadata.labels.find(k);
    if (l == node.metadata.labels.end()) {
      return InvalidArgumentError("topology key " + k + " not found in node " + node.metadata.name +
                                  "'s labels");
    }
    out[k] = l->second;
  }
  return out;
}

// The segments a class's allowedTopologies admit: each term, one segment per combination of
// its values.
std::vector<std::map<std::string, std::string>> AllowedSegments(
    const std::vector<api::TopologySelectorTerm>& terms) {
  std::vector<std::map<std::string, std::string>> out;
  for (const auto& term : terms) {
    std::vector<std::map<std::string, std::string>> partial = {{}};
    for (const auto& req : term.match_label_expressions) {
      std::vector<std::map<std::string, std::string>> next;
      for (const auto& seg : partial) {
        for (const auto& v : req.values) {
          auto s = seg;
          s[req.key] = v;
          next.push_back(std::move(s));
        }
      }
      partial = std::move(next);
    }
    for (auto& s : partial) {
      if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
  }
  return out;
}

void AddSegment(google::protobuf::RepeatedPtrField<pb::Topology>* list,
                const std::map<std::string, std::string>& seg) {
  auto* t = list->Add();
  for (const auto& [k, v] : seg) (*t->mutable_segments())[k] = v;
}

}  // namespace

StatusOr<SecretRefs> ResolveSecrets(const api::StorageClass& cls,
                                    const api::PersistentVolumeClaim& claim,
                                    const std::string& pv_name) {
  const std::map<std::string, std::string> name_vars = {
      {"pv.name", pv_name},
      {"pvc.name", claim.metadata.name},
      {"pvc.namespace", claim.metadata.namespace_}};
  const std::map<std::string, std::string> ns_vars = {{"pv.name", pv_name},
                                                      {"pvc.namespace", claim.metadata.namespace_}};
  SecretRefs out;
  for (const auto& p : kSecretParams) {
    const std::string name_key = std::string(kParamPrefix) + std::string(p.what) + "-secret-name";
    const std::string ns_key =
        std::string(kParamPrefix) + std::string(p.what) + "-secret-namespace";
    auto name = cls.parameters.find(name_key);
    auto ns = cls.parameters.find(ns_key);
    const bool has_name = name != cls.parameters.end(), has_ns = ns != cls.parameters.end();
    if (!has_name && !has_ns) continue;
    if (has_name != has_ns) {
      return InvalidArgumentError("StorageClass parameters " + name_key + " and " + ns_key +
                                  ": both must be given, or neither");
    }
    KVOL_ASSIGN_OR_RETURN(std::string n,
                          Resolve(name_key, name->second, name_vars, &claim.metadata.annotations));
    KVOL_ASSIGN_OR_RETURN(std::string s, Resolve(ns_key, ns->second, ns_vars, nullptr));
    if (n.empty() || s.empty()) {
      return InvalidArgumentError("StorageClass parameter " + (n.empty() ? name_key : ns_key) +
                                  " resolves to an empty value");
    }
    out.*(p.field) = api::SecretReference{.name = n, .namespace_ = s};
  }
  return out;
}

StatusOr<pb::CreateVolumeRequest> MakeCreateVolumeRequest(const CreateVolumeInput& in) {
  const api::PersistentVolumeClaim& claim = *in.claim;
  const api::StorageClass& cls = *in.storage_class;
  pb::CreateVolumeRequest req;
  req.set_name(in.pv_name);
  const api::Quantity* requested = Storage(claim.spec.resources.requests);
  if (!requested) {
    return InvalidArgumentError("spec.resources.requests.storage: the claim asks for no storage");
  }
  req.mutable_capacity_range()->set_required_bytes(requested->Value());
  if (const api::Quantity* limit = Storage(claim.spec.resources.limits)) {
    req.mutable_capacity_range()->set_limit_bytes(limit->Value());
  }
  std::string fs_type;
  if (auto f = cls.parameters.find(std::string(kParamFsType)); f != cls.parameters.end()) {
    fs_type = f->second;
  }
  for (const auto& mode : claim.spec.access_modes) {
    api::PersistentVolumeSpec one;
    one.access_modes = {mode};
    one.volume_mode = claim.spec.volume_mode;
    one.mount_options = cls.mount_options;
    one.csi.emplace().fs_type = fs_type;
    *req.add_volume_capabilities() =
        volume::plugins::VolumeCapabilityOf(one, in.single_node_multi_writer);
  }
  for (const auto& [k, v] : cls.parameters) {
    if (k.rfind(kParamPrefix, 0) != 0) (*req.mutable_parameters())[k] = v;
  }
  for (const auto& [k, v] : in.secrets) (*req.mutable_secrets())[k] = v;
  if (in.content_source) *req.mutable_volume_content_source() = *in.content_source;
  if (!in.topology_keys.empty()) {
    auto* reqs = req.mutable_accessibility_requirements();
    if (in.selected_node) {
      KVOL_ASSIGN_OR_RETURN(auto seg, NodeSegment(*in.selected_node, in.topology_keys));
      AddSegment(reqs->mutable_requisite(), seg);
      AddSegment(reqs->mutable_preferred(), seg);
    } else {
      for (const auto& seg : AllowedSegments(cls.allowed_topologies)) {
        AddSegment(reqs->mutable_requisite(), seg);
        AddSegment(reqs->mutable_preferred(), seg);
      }
      if (reqs->requisite_size() == 0) req.clear_accessibility_requirements();
    }
  }
  return req;
}

api::PersistentVolume MakePersistentVolume(const CreateVolumeInput& in, const SecretRefs& secrets,
                                           const pb::Volume& volume) {
  const api::PersistentVolumeClaim& claim = *in.claim;
  const api::StorageClass& cls = *in.storage_class;
  api::PersistentVolume pv;
  pv.metadata.name = in.pv_name;
  pv.metadata.annotations[std::string(api::kAnnDynamicallyProvisioned)] = cls.provisioner;
  if (secrets.provisioner) {
    pv.metadata.annotations[std::string(kAnnDeletionSecretName)] = secrets.provisioner->name;
    pv.metadata.annotations[std::string(kAnnDeletionSecretNamespace)] =
        secrets.provisioner->namespace_;
  }
  auto& spec = pv.spec;
  if (volume.capacity_bytes() > 0) {
    spec.capacity["storage"] =
        api::Quantity::FromUnits(volume.capacity_bytes(), api::Quantity::Format::kBinarySI);
  } else if (const api::Quantity* requested = Storage(claim.spec.resources.requests)) {
    spec.capacity["storage"] = *requested;
  }
  spec.access_modes = claim.spec.access_modes;
  spec.volume_mode = claim.spec.volume_mode.value_or("Filesystem");
  spec.storage_class_name = cls.metadata.name;
  spec.persistent_volume_reclaim_policy = cls.reclaim_policy.value_or("Delete");
  spec.mount_options = cls.mount_options;
  spec.claim_ref = client::ReferenceTo(claim);
  auto& csi = spec.csi.emplace();
  csi.driver = cls.provisioner;
  csi.volume_handle = volume.volume_id();
  if (spec.volume_mode != "Block") {
    if (auto f = cls.parameters.find(std::string(kParamFsType)); f != cls.parameters.end()) {
      csi.fs_type = f->second;
    }
  }
  for (const auto& [k, v] : volume.volume_context()) csi.volume_attributes[k] = v;
  csi.controller_publish_secret_ref = secrets.controller_publish;
  csi.node_stage_secret_ref = secrets.node_stage;
  csi.node_publish_secret_ref = secrets.node_publish;
  csi.controller_expand_secret_ref = secrets.controller_expand;
  csi.node_expand_secret_ref = secrets.node_expand;
  if (volume.accessible_topology_size() > 0) {
    api::NodeSelector selector;
    for (const auto& t : volume.accessible_topology()) {
      api::NodeSelectorTerm term;
      std::map<std::string, std::string> sorted(t.segments().begin(), t.segments().end());
      for (const auto& [k, v] : sorted) {
        term.match_expressions.push_back({.key = k, .operator_ = "In", .values = {v}});
      }
      selector.node_selector_terms.push_back(std::move(term));
    }
    spec.node_affinity.emplace().required = std::move(selector);
  }
  return pv;
}

}  // namespace kvol::controller::provisioner
