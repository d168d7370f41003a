// PodConfig: a pod and its containers as kubelet describes them to a CRI runtime.
#include "node/runtime/cri/pod_config.h"

#include <sstream>

#include "node/runtime/config.h"

namespace kvol::node::cri {
namespace {

// kubelet's CPU conversions (cm.MilliCPUToShares, MilliCPUToQuota).
constexpr int64_t kMinShares = 2;
constexpr int64_t kSharesPerCpu = 1024;
constexpr int64_t kQuotaPeriod = 100'000;  // microseconds
constexpr int64_t kMinQuota = 1'000;

const api::Quantity* Find(const api::ResourceList& list, const char* name) {
  auto it = list.find(name);
  return it == list.end() ? nullptr : &it->second;
}

pb::NamespaceOption Namespaces(const PodNamespaces& ns, bool node_network) {
  pb::NamespaceOption o;
  o.set_network(node_network ? pb::NODE : pb::POD);
  o.set_pid(ns.host_pid ? pb::NODE : ns.share_process_namespace ? pb::POD : pb::CONTAINER);
  o.set_ipc(ns.host_ipc ? pb::NODE : pb::POD);
  return o;
}

void SetSeccomp(const api::SeccompProfile& p, pb::SecurityProfile* out) {
  if (p.type == "Unconfined") {
    out->set_profile_type(pb::SecurityProfile::Unconfined);
  } else if (p.type == "Localhost") {
    out->set_profile_type(pb::SecurityProfile::Localhost);
    out->set_localhost_ref(p.localhost_profile.value_or(""));
  } else {
    out->set_profile_type(pb::SecurityProfile::RuntimeDefault);
  }
}

// The pod's supplementalGroups, and its fsGroup, which every process of the pod joins.
std::vector<int64_t> SupplementalGroups(const api::Pod& pod) {
  std::vector<int64_t> out;
  if (const auto& sc = pod.spec.security_context) {
    out = sc->supplemental_groups;
    if (sc->fs_group) out.push_back(*sc->fs_group);
  }
  return out;
}

StatusOr<pb::MountPropagation> Propagation(const runtime::BindMount& m) {
  if (m.propagation.empty() || m.propagation == "None") return pb::PROPAGATION_PRIVATE;
  if (m.propagation == "HostToContainer") return pb::PROPAGATION_HOST_TO_CONTAINER;
  if (m.propagation == "Bidirectional") return pb::PROPAGATION_BIDIRECTIONAL;
  return InvalidArgumentError("volumeMounts[" + m.target +
                              "].mountPropagation: Unsupported value: \"" + m.propagation +
                              "\": supported values: \"Bidirectional\", "
                              "\"HostToContainer\", \"None\"");
}

void SetResources(const api::ResourceRequirements& r, pb::LinuxContainerResources* out) {
  const api::Quantity* cpu_request = Find(r.requests, "cpu");
  const int64_t milli = cpu_request ? cpu_request->MilliValue() : 0;
  out->set_cpu_shares(std::max(kMinShares, milli * kSharesPerCpu / 1000));
  if (const api::Quantity* cpu_limit = Find(r.limits, "cpu")) {
    out->set_cpu_period(kQuotaPeriod);
    out->set_cpu_quota(std::max(kMinQuota, cpu_limit->MilliValue() * kQuotaPeriod / 1000));
  }
  if (const api::Quantity* memory = Find(r.limits, "memory")) {
    out->set_memory_limit_in_bytes(memory->Value());
  }
}

void SetSecurity(const api::Pod& pod, const api::Container& c, const SandboxInputs& sandbox,
                 pb::LinuxContainerSecurityContext* out) {
  const auto& pod_sc = pod.spec.security_context;
  const auto& sc = c.security_context;
  *out->mutable_namespace_options() = Namespaces(sandbox.namespaces, UsesNodeNetwork(sandbox));
  std::optional<int64_t> user = sc && sc->run_as_user ? sc->run_as_user
                                : pod_sc              ? pod_sc->run_as_user
                                                      : std::nullopt;
  std::optional<int64_t> group = sc && sc->run_as_group ? sc->run_as_group
                                 : pod_sc               ? pod_sc->run_as_group
                                                        : std::nullopt;
  if (user) out->mutable_run_as_user()->set_value(*user);
  if (group) out->mutable_run_as_group()->set_value(*group);
  for (int64_t g : SupplementalGroups(pod)) out->add_supplemental_groups(g);
  const std::optional<api::SeccompProfile>& seccomp = sc && sc->seccomp_profile
                                                          ? sc->seccomp_profile
                                                      : pod_sc ? pod_sc->seccomp_profile
                                                               : std::nullopt;
  if (seccomp) SetSeccomp(*seccomp, out->mutable_seccomp());
  if (!sc) return;
  out->set_privileged(sc->privileged.value_or(false));
  out->set_readonly_rootfs(sc->read_only_root_filesystem.value_or(false));
  // As kubelet: no_new_privs only when privilege escalation is explicitly refused.
  out->set_no_new_privs(sc->allow_privilege_escalation.has_value() &&
                        !*sc->allow_privilege_escalation);
  if (sc->capabilities) {
    for (const auto& cap : sc->capabilities->add)
      out->mutable_capabilities()->add_add_capabilities(cap);
    for (const auto& cap : sc->capabilities->drop) {
      out->mutable_capabilities()->add_drop_capabilities(cap);
    }
  }
}

}  // namespace

Resolv ParseResolvConf(std::string_view text) {
  Resolv out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (const size_t hash = line.find_first_of("#;"); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string key;
    if (!(words >> key)) continue;
    std::vector<std::string> values;
    for (std::string w; words >> w;) values.push_back(w);
    if (key == "nameserver" && !values.empty()) {
      out.servers.push_back(values.front());
    } else if (key == "search" || key == "domain") {
      out.searches = values;
    } else if (key == "options") {
      out.options.insert(out.options.end(), values.begin(), values.end());
    }
  }
  return out;
}

std::string PodLogDirectory(std::string_view logs_root, const api::Pod& pod) {
  return std::string(logs_root) + "/" + pod.metadata.namespace_ + "_" + pod.metadata.name + "_" +
         pod.metadata.uid;
}

bool UsesNodeNetwork(const SandboxInputs& in) {
  return in.namespaces.host_network || !in.network_ready;
}

pb::PodSandboxConfig SandboxConfig(const api::Pod& pod, const SandboxInputs& in) {
  pb::PodSandboxConfig s;
  auto* meta = s.mutable_metadata();
  meta->set_name(pod.metadata.name);
  meta->set_namespace_(pod.metadata.namespace_);
  meta->set_uid(pod.metadata.uid);
  meta->set_attempt(in.attempt);
  const bool node_network = UsesNodeNetwork(in);
  if (!node_network) s.set_hostname(in.hostname);
  s.set_log_directory(PodLogDirectory(in.logs_root, pod));
  auto* dns = s.mutable_dns_config();
  for (const auto& v : in.dns.servers) dns->add_servers(v);
  for (const auto& v : in.dns.searches) dns->add_searches(v);
  for (const auto& v : in.dns.options) dns->add_options(v);
  auto& labels = *s.mutable_labels();
  for (const auto& [k, v] : pod.metadata.labels) labels[k] = v;
  labels[std::string(kPodNameLabel)] = pod.metadata.name;
  labels[std::string(kPodNamespaceLabel)] = pod.metadata.namespace_;
  labels[std::string(kPodUidLabel)] = pod.metadata.uid;
  for (const auto& [k, v] : pod.metadata.annotations) (*s.mutable_annotations())[k] = v;
  auto* sc = s.mutable_linux()->mutable_security_context();
  *sc->mutable_namespace_options() = Namespaces(in.namespaces, node_network);
  if (const auto& pod_sc = pod.spec.security_context) {
    if (pod_sc->run_as_user) sc->mutable_run_as_user()->set_value(*pod_sc->run_as_user);
    if (pod_sc->run_as_group) sc->mutable_run_as_group()->set_value(*pod_sc->run_as_group);
    if (pod_sc->seccomp_profile) SetSeccomp(*pod_sc->seccomp_profile, sc->mutable_seccomp());
  }
  for (int64_t g : SupplementalGroups(pod)) sc->add_supplemental_groups(g);
  return s;
}

StatusOr<pb::ContainerConfig> ContainerConfig(const api::Pod& pod, const api::Container& c,
                                              const SandboxInputs& sandbox,
                                              const ContainerInputs& in) {
  pb::ContainerConfig out;
  out.mutable_metadata()->set_name(c.name);
  out.mutable_metadata()->set_attempt(in.restart_count);
  out.mutable_image()->set_image(in.image);
  out.mutable_image()->set_user_specified_image(c.image);
  std::map<std::string, std::string> vars;
  for (const auto& e : in.env) {
    const size_t eq = e.find('=');
    const std::string name = e.substr(0, eq),
                      value = eq == std::string::npos ? "" : e.substr(eq + 1);
    vars[name] = value;
    auto* kv = out.add_envs();
    kv->set_key(name);
    kv->set_value(value);
  }
  for (const auto& a : c.command) out.add_command(runtime::ExpandVars(a, vars));
  for (const auto& a : c.args) out.add_args(runtime::ExpandVars(a, vars));
  out.set_working_dir(c.working_dir);
  for (const auto& m : in.mounts) {
    if (m.device) {
      auto* d = out.add_devices();
      d->set_container_path(m.target);
      d->set_host_path(m.source);
      d->set_permissions("mrw");
      continue;
    }
    KVOL_ASSIGN_OR_RETURN(pb::MountPropagation propagation, Propagation(m));
    auto* mount = out.add_mounts();
    mount->set_container_path(m.target);
    mount->set_host_path(m.source);
    mount->set_readonly(m.read_only);
    mount->set_propagation(propagation);
  }
  auto& labels = *out.mutable_labels();
  labels[std::string(kPodNameLabel)] = pod.metadata.name;
  labels[std::string(kPodNamespaceLabel)] = pod.metadata.namespace_;
  labels[std::string(kPodUidLabel)] = pod.metadata.uid;
  labels[std::string(kContainerNameLabel)] = c.name;
  auto& annotations = *out.mutable_annotations();
  annotations[std::string(kRestartCountAnnotation)] = std::to_string(in.restart_count);
  annotations[std::string(kTerminationMessagePathAnnotation)] = c.termination_message_path;
  annotations[std::string(kTerminationMessagePolicyAnnotation)] = c.termination_message_policy;
  if (pod.spec.termination_grace_period_seconds) {
    annotations[std::string(kTerminationGracePeriodAnnotation)] =
        std::to_string(*pod.spec.termination_grace_period_seconds);
  }
  out.set_log_path(c.name + "/" + std::to_string(in.restart_count) + ".log");
  SetResources(c.resources, out.mutable_linux()->mutable_resources());
  SetSecurity(pod, c, sandbox, out.mutable_linux()->mutable_security_context());
  return out;
}

}  // namespace kvol::node::cri
