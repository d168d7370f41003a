// core/v1 kinds that storage touches: Namespace, Node, Pod, PersistentVolume,
// PersistentVolumeClaim, ConfigMap, Secret, Event, and the volume sources they carry.
// Field names follow Kubernetes' JSON; anything not modelled here survives in unknown_fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/meta.h"

namespace kvol::api {

// ---------------------------------------------------------------------------------------------
// Scheduling: node selectors, affinity, tolerations.

struct NodeSelectorRequirement {
  std::string key;
  std::string operator_;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  KVOL_FIELDS(NodeSelectorRequirement) {
    v("key", s.key);
    v("operator", s.operator_);
    v("values", s.values);
  }
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
  KVOL_FIELDS(NodeSelectorTerm) {
    v("matchExpressions", s.match_expressions);
    v("matchFields", s.match_fields);
  }
};

struct NodeSelector {
  std::vector<NodeSelectorTerm> node_selector_terms;
  KVOL_FIELDS(NodeSelector) { v("nodeSelectorTerms", s.node_selector_terms); }
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;
  KVOL_FIELDS(PreferredSchedulingTerm) {
    v("weight", s.weight, Emit::kAlways);
    v("preference", s.preference);
  }
};

struct NodeAffinity {
  std::optional<NodeSelector> required_during_scheduling_ignored_during_execution;
  std::vector<PreferredSchedulingTerm> preferred_during_scheduling_ignored_during_execution;
  KVOL_FIELDS(NodeAffinity) {
    v("requiredDuringSchedulingIgnoredDuringExecution",
      s.required_during_scheduling_ignored_during_execution);
    v("preferredDuringSchedulingIgnoredDuringExecution",
      s.preferred_during_scheduling_ignored_during_execution);
  }
};

// podAffinity and podAntiAffinity are kept as unknown fields.
struct Affinity {
  std::optional<NodeAffinity> node_affinity;
  KVOL_FIELDS(Affinity) { v("nodeAffinity", s.node_affinity); }
};

struct Toleration {
  std::string key;
  std::string operator_;  // Exists, Equal
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  std::optional<int64_t> toleration_seconds;
  KVOL_FIELDS(Toleration) {
    v("key", s.key);
    v("operator", s.operator_);
    v("value", s.value);
    v("effect", s.effect);
    v("tolerationSeconds", s.toleration_seconds);
  }
};

// ---------------------------------------------------------------------------------------------
// Volume sources.

struct HostPathVolumeSource {
  std::string path;
  std::optional<std::string> type;  // "", DirectoryOrCreate, Directory, FileOrCreate, File, ...
  KVOL_FIELDS(HostPathVolumeSource) {
    v("path", s.path, Emit::kAlways);
    v("type", s.type);
  }
};

struct EmptyDirVolumeSource {
  std::string medium;  // "" or Memory
  std::optional<Quantity> size_limit;
  KVOL_FIELDS(EmptyDirVolumeSource) {
    v("medium", s.medium);
    v("sizeLimit", s.size_limit);
  }
};

struct PersistentVolumeClaimVolumeSource {
  std::string claim_name;
  bool read_only = false;
  KVOL_FIELDS(PersistentVolumeClaimVolumeSource) {
    v("claimName", s.claim_name, Emit::kAlways);
    v("readOnly", s.read_only);
  }
};

struct KeyToPath {
  std::string key;
  std::string path;
  std::optional<int32_t> mode;
  KVOL_FIELDS(KeyToPath) {
    v("key", s.key, Emit::kAlways);
    v("path", s.path, Emit::kAlways);
    v("mode", s.mode);
  }
};

struct ConfigMapVolumeSource {
  std::string name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  KVOL_FIELDS(ConfigMapVolumeSource) {
    v("name", s.name);
    v("items", s.items);
    v("defaultMode", s.default_mode);
    v("optional", s.optional);
  }
};

struct SecretVolumeSource {
  std::string secret_name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  KVOL_FIELDS(SecretVolumeSource) {
    v("secretName", s.secret_name);
    v("items", s.items);
    v("defaultMode", s.default_mode);
    v("optional", s.optional);
  }
};

struct ObjectFieldSelector {
  std::string api_version;
  std::string field_path;
  KVOL_FIELDS(ObjectFieldSelector) {
    v("apiVersion", s.api_version);
    v("fieldPath", s.field_path, Emit::kAlways);
  }
};

struct ResourceFieldSelector {
  std::string container_name;
  std::string resource;
  std::optional<Quantity> divisor;
  KVOL_FIELDS(ResourceFieldSelector) {
    v("containerName", s.container_name);
    v("resource", s.resource, Emit::kAlways);
    v("divisor", s.divisor);
  }
};

struct DownwardAPIVolumeFile {
  std::string path;
  std::optional<ObjectFieldSelector> field_ref;
  std::optional<ResourceFieldSelector> resource_field_ref;
  std::optional<int32_t> mode;
  KVOL_FIELDS(DownwardAPIVolumeFile) {
    v("path", s.path, Emit::kAlways);
    v("fieldRef", s.field_ref);
    v("resourceFieldRef", s.resource_field_ref);
    v("mode", s.mode);
  }
};

struct DownwardAPIVolumeSource {
  std::vector<DownwardAPIVolumeFile> items;
  std::optional<int32_t> default_mode;
  KVOL_FIELDS(DownwardAPIVolumeSource) {
    v("items", s.items);
    v("defaultMode", s.default_mode);
  }
};

struct ConfigMapProjection {
  std::string name;
  std::vector<KeyToPath> items;
  std::optional<bool> optional;
  KVOL_FIELDS(ConfigMapProjection) {
    v("name", s.name);
    v("items", s.items);
    v("optional", s.optional);
  }
};

struct SecretProjection {
  std::string name;
  std::vector<KeyToPath> items;
  std::optional<bool> optional;
  KVOL_FIELDS(SecretProjection) {
    v("name", s.name);
    v("items", s.items);
    v("optional", s.optional);
  }
};

struct DownwardAPIProjection {
  std::vector<DownwardAPIVolumeFile> items;
  KVOL_FIELDS(DownwardAPIProjection) { v("items", s.items); }
};

struct ServiceAccountTokenProjection {
  std::string audience;
  std::optional<int64_t> expiration_seconds;
  std::string path;
  KVOL_FIELDS(ServiceAccountTokenProjection) {
    v("audience", s.audience);
    v("expirationSeconds", s.expiration_seconds);
    v("path", s.path, Emit::kAlways);
  }
};

// clusterTrustBundle projections are kept as unknown fields.
struct VolumeProjection {
  std::optional<SecretProjection> secret;
  std::optional<DownwardAPIProjection> downward_api;
  std::optional<ConfigMapProjection> config_map;
  std::optional<ServiceAccountTokenProjection> service_account_token;
  KVOL_FIELDS(VolumeProjection) {
    v("secret", s.secret);
    v("downwardAPI", s.downward_api);
    v("configMap", s.config_map);
    v("serviceAccountToken", s.service_account_token);
  }
};

struct ProjectedVolumeSource {
  std::vector<VolumeProjection> sources;
  std::optional<int32_t> default_mode;
  KVOL_FIELDS(ProjectedVolumeSource) {
    v("sources", s.sources);
    v("defaultMode", s.default_mode);
  }
};

struct NFSVolumeSource {
  std::string server;
  std::string path;
  bool read_only = false;
  KVOL_FIELDS(NFSVolumeSource) {
    v("server", s.server, Emit::kAlways);
    v("path", s.path, Emit::kAlways);
    v("readOnly", s.read_only);
  }
};

// Inline (ephemeral) CSI volume in a pod.
struct CSIVolumeSource {
  std::string driver;
  std::optional<bool> read_only;
  std::optional<std::string> fs_type;
  StringMap volume_attributes;
  std::optional<LocalObjectReference> node_publish_secret_ref;
  KVOL_FIELDS(CSIVolumeSource) {
    v("driver", s.driver, Emit::kAlways);
    v("readOnly", s.read_only);
    v("fsType", s.fs_type);
    v("volumeAttributes", s.volume_attributes);
    v("nodePublishSecretRef", s.node_publish_secret_ref);
  }
};

struct FlexVolumeSource {
  std::string driver;
  std::string fs_type;
  std::optional<LocalObjectReference> secret_ref;
  bool read_only = false;
  StringMap options;
  KVOL_FIELDS(FlexVolumeSource) {
    v("driver", s.driver, Emit::kAlways);
    v("fsType", s.fs_type);
    v("secretRef", s.secret_ref);
    v("readOnly", s.read_only);
    v("options", s.options);
  }
};

struct FlexPersistentVolumeSource {
  std::string driver;
  std::string fs_type;
  std::optional<SecretReference> secret_ref;
  bool read_only = false;
  StringMap options;
  KVOL_FIELDS(FlexPersistentVolumeSource) {
    v("driver", s.driver, Emit::kAlways);
    v("fsType", s.fs_type);
    v("secretRef", s.secret_ref);
    v("readOnly", s.read_only);
    v("options", s.options);
  }
};

struct LocalVolumeSource {
  std::string path;
  std::optional<std::string> fs_type;
  KVOL_FIELDS(LocalVolumeSource) {
    v("path", s.path, Emit::kAlways);
    v("fsType", s.fs_type);
  }
};

struct CSIPersistentVolumeSource {
  std::string driver;
  std::string volume_handle;
  bool read_only = false;
  std::string fs_type;
  StringMap volume_attributes;
  std::optional<SecretReference> controller_publish_secret_ref;
  std::optional<SecretReference> node_stage_secret_ref;
  std::optional<SecretReference> node_publish_secret_ref;
  std::optional<SecretReference> controller_expand_secret_ref;
  std::optional<SecretReference> node_expand_secret_ref;
  KVOL_FIELDS(CSIPersistentVolumeSource) {
    v("driver", s.driver, Emit::kAlways);
    v("volumeHandle", s.volume_handle, Emit::kAlways);
    v("readOnly", s.read_only);
    v("fsType", s.fs_type);
    v("volumeAttributes", s.volume_attributes);
    v("controllerPublishSecretRef", s.controller_publish_secret_ref);
    v("nodeStageSecretRef", s.node_stage_secret_ref);
    v("nodePublishSecretRef", s.node_publish_secret_ref);
    v("controllerExpandSecretRef", s.controller_expand_secret_ref);
    v("nodeExpandSecretRef", s.node_expand_secret_ref);
  }
};

// A pod volume: a name and exactly one source. Sources kvol does not model (gitRepo, iscsi,
// rbd, cephfs, ephemeral, image, ...) stay in unknown_fields and still count as a source.
struct EphemeralVolumeSource;  // below, with the claim template it holds

struct Volume {
  std::string name;
  std::optional<HostPathVolumeSource> host_path;
  std::optional<EmptyDirVolumeSource> empty_dir;
  std::optional<SecretVolumeSource> secret;
  std::optional<NFSVolumeSource> nfs;
  std::optional<PersistentVolumeClaimVolumeSource> persistent_volume_claim;
  Boxed<FlexVolumeSource> flex_volume;
  std::optional<DownwardAPIVolumeSource> downward_api;
  std::optional<ConfigMapVolumeSource> config_map;
  std::optional<ProjectedVolumeSource> projected;
  Boxed<CSIVolumeSource> csi;
  // A generic ephemeral volume: a claim made for the pod from a template (`<pod>-<volume>`),
  // owned by it and deleted with it.
  Boxed<EphemeralVolumeSource> ephemeral;
  KVOL_FIELDS(Volume) {
    v("name", s.name, Emit::kAlways);
    v("hostPath", s.host_path);
    v("emptyDir", s.empty_dir);
    v("secret", s.secret);
    v("nfs", s.nfs);
    v("persistentVolumeClaim", s.persistent_volume_claim);
    v("flexVolume", s.flex_volume);
    v("downwardAPI", s.downward_api);
    v("configMap", s.config_map);
    v("projected", s.projected);
    v("csi", s.csi);
    v("ephemeral", s.ephemeral);
  }
};

// ---------------------------------------------------------------------------------------------
// Containers.

struct ConfigMapKeySelector {
  std::string name;
  std::string key;
  std::optional<bool> optional;
  KVOL_FIELDS(ConfigMapKeySelector) {
    v("name", s.name);
    v("key", s.key, Emit::kAlways);
    v("optional", s.optional);
  }
};

struct SecretKeySelector {
  std::string name;
  std::string key;
  std::optional<bool> optional;
  KVOL_FIELDS(SecretKeySelector) {
    v("name", s.name);
    v("key", s.key, Emit::kAlways);
    v("optional", s.optional);
  }
};

struct EnvVarSource {
  std::optional<ObjectFieldSelector> field_ref;
  std::optional<ResourceFieldSelector> resource_field_ref;
  std::optional<ConfigMapKeySelector> config_map_key_ref;
  std::optional<SecretKeySelector> secret_key_ref;
  KVOL_FIELDS(EnvVarSource) {
    v("fieldRef", s.field_ref);
    v("resourceFieldRef", s.resource_field_ref);
    v("configMapKeyRef", s.config_map_key_ref);
    v("secretKeyRef", s.secret_key_ref);
  }
};

struct EnvVar {
  std::string name;
  std::string value;
  std::optional<EnvVarSource> value_from;
  KVOL_FIELDS(EnvVar) {
    v("name", s.name, Emit::kAlways);
    v("value", s.value);
    v("valueFrom", s.value_from);
  }
};

struct VolumeMount {
  std::string name;
  bool read_only = false;
  std::string mount_path;
  std::string sub_path;
  std::optional<std::string> mount_propagation;
  std::string sub_path_expr;
  KVOL_FIELDS(VolumeMount) {
    v("name", s.name, Emit::kAlways);
    v("readOnly", s.read_only);
    v("mountPath", s.mount_path, Emit::kAlways);
    v("subPath", s.sub_path);
    v("mountPropagation", s.mount_propagation);
    v("subPathExpr", s.sub_path_expr);
  }
};

struct VolumeDevice {
  std::string name;
  std::string device_path;
  KVOL_FIELDS(VolumeDevice) {
    v("name", s.name, Emit::kAlways);
    v("devicePath", s.device_path, Emit::kAlways);
  }
};

struct ResourceRequirements {
  ResourceList limits;
  ResourceList requests;
  KVOL_FIELDS(ResourceRequirements) {
    v("limits", s.limits);
    v("requests", s.requests);
  }
};

// What a container may do on the node: capabilities, privilege, user and group, seccomp, root
// filesystem. seLinuxOptions, procMount, windowsOptions and appArmorProfile are kept as
// unknown fields.
struct Capabilities {
  std::vector<std::string> add;
  std::vector<std::string> drop;
  KVOL_FIELDS(Capabilities) {
    v("add", s.add);
    v("drop", s.drop);
  }
};

struct SeccompProfile {
  std::string type;  // RuntimeDefault, Unconfined, Localhost
  std::optional<std::string> localhost_profile;
  KVOL_FIELDS(SeccompProfile) {
    v("type", s.type, Emit::kAlways);
    v("localhostProfile", s.localhost_profile);
  }
};

struct SecurityContext {
  std::optional<Capabilities> capabilities;
  std::optional<bool> privileged;
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::optional<bool> read_only_root_filesystem;
  std::optional<bool> allow_privilege_escalation;
  std::optional<SeccompProfile> seccomp_profile;
  KVOL_FIELDS(SecurityContext) {
    v("capabilities", s.capabilities);
    v("privileged", s.privileged);
    v("runAsUser", s.run_as_user);
    v("runAsGroup", s.run_as_group);
    v("runAsNonRoot", s.run_as_non_root);
    v("readOnlyRootFilesystem", s.read_only_root_filesystem);
    v("allowPrivilegeEscalation", s.allow_privilege_escalation);
    v("seccompProfile", s.seccomp_profile);
  }
};

// The pod-wide defaults a container's SecurityContext overrides, and the groups every container
// of the pod runs with. seLinuxOptions, sysctls, fsGroupChangePolicy and the rest are kept as
// unknown fields.
struct PodSecurityContext {
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::vector<int64_t> supplemental_groups;
  std::optional<int64_t> fs_group;
  std::optional<SeccompProfile> seccomp_profile;
  KVOL_FIELDS(PodSecurityContext) {
    v("runAsUser", s.run_as_user);
    v("runAsGroup", s.run_as_group);
    v("runAsNonRoot", s.run_as_non_root);
    v("supplementalGroups", s.supplemental_groups);
    v("fsGroup", s.fs_group);
    v("seccompProfile", s.seccomp_profile);
  }
};

// ports, probes, lifecycle and the rest are kept as unknown fields.
// A container probe (livenessProbe, readinessProbe, startupProbe): one handler, and when and
// how often it runs. Ports are int-or-string, kept as given.
struct ExecAction {
  std::vector<std::string> command;
  KVOL_FIELDS(ExecAction) { v("command", s.command); }
};
struct HTTPHeader {
  std::string name;
  std::string value;
  KVOL_FIELDS(HTTPHeader) {
    v("name", s.name, Emit::kAlways);
    v("value", s.value, Emit::kAlways);
  }
};
struct HTTPGetAction {
  std::string path;
  Json port;  // a number or a named port
  std::string host;
  std::string scheme;  // HTTP (default), HTTPS
  std::vector<HTTPHeader> http_headers;
  KVOL_FIELDS(HTTPGetAction) {
    v("path", s.path);
    v("port", s.port);
    v("host", s.host);
    v("scheme", s.scheme);
    v("httpHeaders", s.http_headers);
  }
};
struct TCPSocketAction {
  Json port;
  std::string host;
  KVOL_FIELDS(TCPSocketAction) {
    v("port", s.port);
    v("host", s.host);
  }
};
struct GRPCAction {
  int32_t port = 0;
  std::optional<std::string> service;
  KVOL_FIELDS(GRPCAction) {
    v("port", s.port, Emit::kAlways);
    v("service", s.service);
  }
};
struct Probe {
  std::optional<ExecAction> exec;
  std::optional<HTTPGetAction> http_get;
  std::optional<TCPSocketAction> tcp_socket;
  std::optional<GRPCAction> grpc;
  int32_t initial_delay_seconds = 0;
  int32_t timeout_seconds = 0;    // defaulted to 1
  int32_t period_seconds = 0;     // defaulted to 10
  int32_t success_threshold = 0;  // defaulted to 1
  int32_t failure_threshold = 0;  // defaulted to 3
  std::optional<int64_t> termination_grace_period_seconds;
  KVOL_FIELDS(Probe) {
    v("exec", s.exec);
    v("httpGet", s.http_get);
    v("tcpSocket", s.tcp_socket);
    v("grpc", s.grpc);
    v("initialDelaySeconds", s.initial_delay_seconds);
    v("timeoutSeconds", s.timeout_seconds);
    v("periodSeconds", s.period_seconds);
    v("successThreshold", s.success_threshold);
    v("failureThreshold", s.failure_threshold);
    v("terminationGracePeriodSeconds", s.termination_grace_period_seconds);
  }
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::string working_dir;
  std::vector<EnvVar> env;
  ResourceRequirements resources;
  std::vector<VolumeMount> volume_mounts;
  std::vector<VolumeDevice> volume_devices;
  std::string termination_message_path;
  std::string termination_message_policy;
  std::string image_pull_policy;
  std::optional<SecurityContext> security_context;
  std::optional<Probe> liveness_probe;
  std::optional<Probe> readiness_probe;
  std::optional<Probe> startup_probe;
  KVOL_FIELDS(Container) {
    v("name", s.name, Emit::kAlways);
    v("image", s.image);
    v("command", s.command);
    v("args", s.args);
    v("workingDir", s.working_dir);
    v("env", s.env);
    v("resources", s.resources);
    v("volumeMounts", s.volume_mounts);
    v("volumeDevices", s.volume_devices);
    v("terminationMessagePath", s.termination_message_path);
    v("terminationMessagePolicy", s.termination_message_policy);
    v("imagePullPolicy", s.image_pull_policy);
    v("securityContext", s.security_context);
    v("livenessProbe", s.liveness_probe);
    v("readinessProbe", s.readiness_probe);
    v("startupProbe", s.startup_probe);
  }
};

// ---------------------------------------------------------------------------------------------
// Pod.

struct PodSpec {
  std::vector<Volume> volumes;
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  std::string restart_policy;
  std::optional<int64_t> termination_grace_period_seconds;
  std::string dns_policy;
  StringMap node_selector;
  std::string service_account_name;
  // Whether the ServiceAccount admission mounts the account's token (unset: as the account says).
  std::optional<bool> automount_service_account_token;
  std::string node_name;
  std::optional<Affinity> affinity;
  std::string scheduler_name;
  std::vector<Toleration> tolerations;
  std::optional<PodSecurityContext> security_context;
  // The node's namespaces (the Go type keeps them in its security context; the JSON here).
  bool host_network = false;
  bool host_pid = false;
  bool host_ipc = false;
  std::optional<bool> share_process_namespace;
  std::string hostname;
  std::string subdomain;
  std::vector<LocalObjectReference> image_pull_secrets;
  KVOL_FIELDS(PodSpec) {
    v("volumes", s.volumes);
    v("initContainers", s.init_containers);
    v("containers", s.containers);
    v("restartPolicy", s.restart_policy);
    v("terminationGracePeriodSeconds", s.termination_grace_period_seconds);
    v("dnsPolicy", s.dns_policy);
    v("nodeSelector", s.node_selector);
    v("serviceAccountName", s.service_account_name);
    v("automountServiceAccountToken", s.automount_service_account_token);
    v("nodeName", s.node_name);
    v("affinity", s.affinity);
    v("schedulerName", s.scheduler_name);
    v("tolerations", s.tolerations);
    v("securityContext", s.security_context);
    v("hostNetwork", s.host_network);
    v("hostPID", s.host_pid);
    v("hostIPC", s.host_ipc);
    v("shareProcessNamespace", s.share_process_namespace);
    v("hostname", s.hostname);
    v("subdomain", s.subdomain);
    v("imagePullSecrets", s.image_pull_secrets);
  }
};

struct PodCondition {
  std::string type;
  std::string status;
  std::optional<Time> last_probe_time;
  std::optional<Time> last_transition_time;
  std::string reason;
  std::string message;
  KVOL_FIELDS(PodCondition) {
    v("type", s.type, Emit::kAlways);
    v("status", s.status, Emit::kAlways);
    v("lastProbeTime", s.last_probe_time);
    v("lastTransitionTime", s.last_transition_time);
    v("reason", s.reason);
    v("message", s.message);
  }
};

struct ContainerStateWaiting {
  std::string reason;
  std::string message;
  KVOL_FIELDS(ContainerStateWaiting) {
    v("reason", s.reason);
    v("message", s.message);
  }
};

struct ContainerStateRunning {
  std::optional<Time> started_at;
  KVOL_FIELDS(ContainerStateRunning) { v("startedAt", s.started_at); }
};

struct ContainerStateTerminated {
  int32_t exit_code = 0;
  int32_t signal = 0;
  std::string reason;
  std::string message;
  std::optional<Time> started_at;
  std::optional<Time> finished_at;
  std::string container_id;
  KVOL_FIELDS(ContainerStateTerminated) {
    v("exitCode", s.exit_code, Emit::kAlways);
    v("signal", s.signal);
    v("reason", s.reason);
    v("message", s.message);
    v("startedAt", s.started_at);
    v("finishedAt", s.finished_at);
    v("containerID", s.container_id);
  }
};

struct ContainerState {
  std::optional<ContainerStateWaiting> waiting;
  std::optional<ContainerStateRunning> running;
  std::optional<ContainerStateTerminated> terminated;
  KVOL_FIELDS(ContainerState) {
    v("waiting", s.waiting);
    v("running", s.running);
    v("terminated", s.terminated);
  }
};

struct ContainerStatus {
  std::string name;
  ContainerState state;
  ContainerState last_state;
  bool ready = false;
  int32_t restart_count = 0;
  std::string image;
  std::string image_id;
  std::string container_id;
  std::optional<bool> started;
  KVOL_FIELDS(ContainerStatus) {
    v("name", s.name, Emit::kAlways);
    v("state", s.state);
    v("lastState", s.last_state);
    v("ready", s.ready, Emit::kAlways);
    v("restartCount", s.restart_count, Emit::kAlways);
    v("image", s.image, Emit::kAlways);
    v("imageID", s.image_id, Emit::kAlways);
    v("containerID", s.container_id);
    v("started", s.started);
  }
};

struct PodStatus {
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  std::vector<PodCondition> conditions;
  std::string message;
  std::string reason;
  std::string host_ip;
  std::string pod_ip;
  std::optional<Time> start_time;
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  KVOL_FIELDS(PodStatus) {
    v("phase", s.phase);
    v("conditions", s.conditions);
    v("message", s.message);
    v("reason", s.reason);
    v("hostIP", s.host_ip);
    v("podIP", s.pod_ip);
    v("startTime", s.start_time);
    v("initContainerStatuses", s.init_container_statuses);
    v("containerStatuses", s.container_statuses);
  }
};

struct Pod {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;
  KVOL_FIELDS(Pod) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

// The pod template of workload kinds (Deployment, StatefulSet, ...).
struct PodTemplateSpec {
  ObjectMeta metadata;
  PodSpec spec;
  KVOL_FIELDS(PodTemplateSpec) {
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

// ---------------------------------------------------------------------------------------------
// PersistentVolume.

struct VolumeNodeAffinity {
  std::optional<NodeSelector> required;
  KVOL_FIELDS(VolumeNodeAffinity) { v("required", s.required); }
};

// Sources kvol does not model (iscsi, rbd, cephfs, fc, glusterfs, ...) stay in unknown_fields.
struct PersistentVolumeSpec {
  ResourceList capacity;
  std::optional<HostPathVolumeSource> host_path;
  std::optional<NFSVolumeSource> nfs;
  Boxed<FlexPersistentVolumeSource> flex_volume;
  std::optional<LocalVolumeSource> local;
  Boxed<CSIPersistentVolumeSource> csi;
  std::vector<std::string> access_modes;
  std::optional<ObjectReference> claim_ref;
  std::string persistent_volume_reclaim_policy;  // Retain, Delete, Recycle
  std::string storage_class_name;
  std::vector<std::string> mount_options;
  std::optional<std::string> volume_mode;  // Filesystem, Block
  std::optional<VolumeNodeAffinity> node_affinity;
  KVOL_FIELDS(PersistentVolumeSpec) {
    v("capacity", s.capacity);
    v("hostPath", s.host_path);
    v("nfs", s.nfs);
    v("flexVolume", s.flex_volume);
    v("local", s.local);
    v("csi", s.csi);
    v("accessModes", s.access_modes);
    v("claimRef", s.claim_ref);
    v("persistentVolumeReclaimPolicy", s.persistent_volume_reclaim_policy);
    v("storageClassName", s.storage_class_name);
    v("mountOptions", s.mount_options);
    v("volumeMode", s.volume_mode);
    v("nodeAffinity", s.node_affinity);
  }
};

struct PersistentVolumeStatus {
  std::string phase;  // Pending, Available, Bound, Released, Failed
  std::string message;
  std::string reason;
  std::optional<Time> last_phase_transition_time;
  KVOL_FIELDS(PersistentVolumeStatus) {
    v("phase", s.phase);
    v("message", s.message);
    v("reason", s.reason);
    v("lastPhaseTransitionTime", s.last_phase_transition_time);
  }
};

struct PersistentVolume {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PersistentVolumeSpec spec;
  PersistentVolumeStatus status;
  KVOL_FIELDS(PersistentVolume) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

// ---------------------------------------------------------------------------------------------
// PersistentVolumeClaim.

struct VolumeResourceRequirements {
  ResourceList limits;
  ResourceList requests;
  KVOL_FIELDS(VolumeResourceRequirements) {
    v("limits", s.limits);
    v("requests", s.requests);
  }
};

struct PersistentVolumeClaimSpec {
  std::vector<std::string> access_modes;
  Boxed<LabelSelector> selector;  // rarely set: on the heap (api::Boxed)
  VolumeResourceRequirements resources;
  std::string volume_name;
  // Absent and "" mean different things: absent takes the default class, "" asks for none.
  std::optional<std::string> storage_class_name;
  std::optional<std::string> volume_mode;
  Boxed<TypedLocalObjectReference> data_source;  // the same
  Boxed<TypedObjectReference> data_source_ref;  // the same
  KVOL_FIELDS(PersistentVolumeClaimSpec) {
    v("accessModes", s.access_modes);
    v("selector", s.selector);
    v("resources", s.resources);
    v("volumeName", s.volume_name);
    v("storageClassName", s.storage_class_name);
    v("volumeMode", s.volume_mode);
    v("dataSource", s.data_source);
    v("dataSourceRef", s.data_source_ref);
  }
};

struct PersistentVolumeClaimCondition {
  std::string type;
  std::string status;
  std::optional<Time> last_probe_time;
  std::optional<Time> last_transition_time;
  std::string reason;
  std::string message;
  KVOL_FIELDS(PersistentVolumeClaimCondition) {
    v("type", s.type, Emit::kAlways);
    v("status", s.status, Emit::kAlways);
    v("lastProbeTime", s.last_probe_time);
    v("lastTransitionTime", s.last_transition_time);
    v("reason", s.reason);
    v("message", s.message);
  }
};

struct PersistentVolumeClaimStatus {
  std::string phase;  // Pending, Bound, Lost
  std::vector<std::string> access_modes;
  ResourceList capacity;
  std::vector<PersistentVolumeClaimCondition> conditions;
  ResourceList allocated_resources;
  StringMap allocated_resource_statuses;
  KVOL_FIELDS(PersistentVolumeClaimStatus) {
    v("phase", s.phase);
    v("accessModes", s.access_modes);
    v("capacity", s.capacity);
    v("conditions", s.conditions);
    v("allocatedResources", s.allocated_resources);
    v("allocatedResourceStatuses", s.allocated_resource_statuses);
  }
};

struct PersistentVolumeClaim {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  PersistentVolumeClaimSpec spec;
  PersistentVolumeClaimStatus status;
  KVOL_FIELDS(PersistentVolumeClaim) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

// The claim template of StatefulSet volumeClaimTemplates and ephemeral volumes.
struct PersistentVolumeClaimTemplate {
  ObjectMeta metadata;
  PersistentVolumeClaimSpec spec;
  KVOL_FIELDS(PersistentVolumeClaimTemplate) {
    v("metadata", s.metadata);
    v("spec", s.spec);
  }
};

struct EphemeralVolumeSource {
  std::optional<PersistentVolumeClaimTemplate> volume_claim_template;
  KVOL_FIELDS(EphemeralVolumeSource) { v("volumeClaimTemplate", s.volume_claim_template); }
};

// What a scheduler POSTs to pods/NAME/binding to put a pod on a node (core/v1 Binding). It is
// not stored: the server sets the pod's spec.nodeName from it.
struct Binding {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ObjectReference target;  // kind Node (or empty), name: the node
  KVOL_FIELDS(Binding) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("target", s.target);
  }
};

// ---------------------------------------------------------------------------------------------
// Node.

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
  std::optional<Time> time_added;
  KVOL_FIELDS(Taint) {
    v("key", s.key, Emit::kAlways);
    v("value", s.value);
    v("effect", s.effect, Emit::kAlways);
    v("timeAdded", s.time_added);
  }
};

struct NodeSpec {
  std::string pod_cidr;
  std::string provider_id;
  bool unschedulable = false;
  std::vector<Taint> taints;
  KVOL_FIELDS(NodeSpec) {
    v("podCIDR", s.pod_cidr);
    v("providerID", s.provider_id);
    v("unschedulable", s.unschedulable);
    v("taints", s.taints);
  }
};

struct NodeCondition {
  std::string type;
  std::string status;
  std::optional<Time> last_heartbeat_time;
  std::optional<Time> last_transition_time;
  std::string reason;
  std::string message;
  KVOL_FIELDS(NodeCondition) {
    v("type", s.type, Emit::kAlways);
    v("status", s.status, Emit::kAlways);
    v("lastHeartbeatTime", s.last_heartbeat_time);
    v("lastTransitionTime", s.last_transition_time);
    v("reason", s.reason);
    v("message", s.message);
  }
};

struct NodeAddress {
  std::string type;
  std::string address;
  KVOL_FIELDS(NodeAddress) {
    v("type", s.type, Emit::kAlways);
    v("address", s.address, Emit::kAlways);
  }
};

struct AttachedVolume {
  std::string name;
  std::string device_path;
  KVOL_FIELDS(AttachedVolume) {
    v("name", s.name, Emit::kAlways);
    v("devicePath", s.device_path, Emit::kAlways);
  }
};

// nodeInfo, daemonEndpoints and images are kept as unknown fields.
struct NodeStatus {
  ResourceList capacity;
  ResourceList allocatable;
  std::string phase;
  std::vector<NodeCondition> conditions;
  std::vector<NodeAddress> addresses;
  std::vector<std::string> volumes_in_use;
  std::vector<AttachedVolume> volumes_attached;
  KVOL_FIELDS(NodeStatus) {
    v("capacity", s.capacity);
    v("allocatable", s.allocatable);
    v("phase", s.phase);
    v("conditions", s.conditions);
    v("addresses", s.addresses);
    v("volumesInUse", s.volumes_in_use);
    v("volumesAttached", s.volumes_attached);
  }
};

struct Node {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  NodeSpec spec;
  NodeStatus status;
  KVOL_FIELDS(Node) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

// ---------------------------------------------------------------------------------------------
// Namespace, ConfigMap, Secret, Event.

struct NamespaceSpec {
  std::vector<std::string> finalizers;
  KVOL_FIELDS(NamespaceSpec) { v("finalizers", s.finalizers); }
};

// Why a namespace being deleted is still there (NamespaceContentRemaining, ...), as the
// namespace controller reports it.
struct NamespaceCondition {
  std::string type;
  std::string status;  // True, False, Unknown
  std::optional<Time> last_transition_time;
  std::string reason;
  std::string message;
  KVOL_FIELDS(NamespaceCondition) {
    v("type", s.type, Emit::kAlways);
    v("status", s.status, Emit::kAlways);
    v("lastTransitionTime", s.last_transition_time);
    v("reason", s.reason);
    v("message", s.message);
  }
};

struct NamespaceStatus {
  std::string phase;  // Active, Terminating
  std::vector<NamespaceCondition> conditions;
  KVOL_FIELDS(NamespaceStatus) {
    v("phase", s.phase);
    v("conditions", s.conditions);
  }
};

struct Namespace {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  NamespaceSpec spec;
  NamespaceStatus status;
  KVOL_FIELDS(Namespace) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

struct ConfigMap {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  StringMap data;
  StringMap binary_data;  // base64, as on the wire
  std::optional<bool> immutable;
  KVOL_FIELDS(ConfigMap) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("data", s.data);
    v("binaryData", s.binary_data);
    v("immutable", s.immutable);
  }
};

struct Secret {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  StringMap data;         // base64, as on the wire
  StringMap string_data;  // write-only convenience, merged into data on write
  std::string type;
  std::optional<bool> immutable;
  KVOL_FIELDS(Secret) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("data", s.data);
    v("stringData", s.string_data);
    v("type", s.type);
    v("immutable", s.immutable);
  }
};

struct EventSource {
  std::string component;
  std::string host;
  KVOL_FIELDS(EventSource) {
    v("component", s.component);
    v("host", s.host);
  }
};

struct Event {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ObjectReference involved_object;
  std::string reason;
  std::string message;
  EventSource source;
  std::optional<Time> first_timestamp;
  std::optional<Time> last_timestamp;
  int32_t count = 0;
  std::string type;  // Normal, Warning
  std::optional<MicroTime> event_time;
  std::string action;
  std::optional<ObjectReference> related;
  std::string reporting_component;
  std::string reporting_instance;
  KVOL_FIELDS(Event) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("involvedObject", s.involved_object);
    v("reason", s.reason);
    v("message", s.message);
    v("source", s.source);
    v("firstTimestamp", s.first_timestamp);
    v("lastTimestamp", s.last_timestamp);
    v("count", s.count);
    v("type", s.type);
    v("eventTime", s.event_time);
    v("action", s.action);
    v("related", s.related);
    v("reportingComponent", s.reporting_component, Emit::kAlways);
    v("reportingInstance", s.reporting_instance, Emit::kAlways);
  }
};

// ---------------------------------------------------------------------------------------------
// ResourceQuota: limits on what a namespace may hold (object counts, requested storage in all
// and per class, compute requests and limits); status.used is kept by the quota controller
// and by admission, which refuses what would exceed spec.hard.

struct ScopedResourceSelectorRequirement {
  std::string scope_name;
  std::string operator_;  // In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;
  KVOL_FIELDS(ScopedResourceSelectorRequirement) {
    v("scopeName", s.scope_name);
    v("operator", s.operator_);
    v("values", s.values);
  }
};

struct ScopeSelector {
  std::vector<ScopedResourceSelectorRequirement> match_expressions;
  KVOL_FIELDS(ScopeSelector) { v("matchExpressions", s.match_expressions); }
};

struct ResourceQuotaSpec {
  ResourceList hard;
  std::vector<std::string> scopes;
  std::optional<ScopeSelector> scope_selector;
  KVOL_FIELDS(ResourceQuotaSpec) {
    v("hard", s.hard);
    v("scopes", s.scopes);
    v("scopeSelector", s.scope_selector);
  }
};

struct ResourceQuotaStatus {
  ResourceList hard;
  ResourceList used;
  KVOL_FIELDS(ResourceQuotaStatus) {
    v("hard", s.hard);
    v("used", s.used);
  }
};

struct ResourceQuota {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  ResourceQuotaSpec spec;
  ResourceQuotaStatus status;
  KVOL_FIELDS(ResourceQuota) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("metadata", s.metadata);
    v("spec", s.spec);
    v("status", s.status);
  }
};

}  // namespace kvol::api
