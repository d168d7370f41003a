#include "node/runtime/cri/pod_config.h"

#include <gtest/gtest.h>

#include <functional>

namespace kvol::node::cri {
namespace {

api::Pod NewPod() {
  api::Pod p;
  p.metadata.namespace_ = "ns";
  p.metadata.name = "web";
  p.metadata.uid = "u-1";
  p.metadata.labels = {{"app", "web"}};
  p.metadata.annotations = {{"note", "x"}};
  p.spec.termination_grace_period_seconds = 30;
  return p;
}

api::Container NewContainer() {
  api::Container c;
  c.name = "main";
  c.image = "busybox";
  c.termination_message_path = "/dev/termination-log";
  c.termination_message_policy = "File";
  return c;
}

std::vector<std::string> List(const google::protobuf::RepeatedPtrField<std::string>& r) {
  return {r.begin(), r.end()};
}

TEST(PodConfigTest, Sandbox) {
  struct Row {
    std::string name;
    std::function<void(api::Pod&, SandboxInputs&)> given;
    std::function<void(const pb::PodSandboxConfig&)> check;
  };
  const std::vector<Row> rows = {
      {.name = "the runtime has no network: the node's, and no hostname",
       .given = [](api::Pod&, SandboxInputs&) {},
       .check =
           [](const pb::PodSandboxConfig& s) {
             EXPECT_EQ(s.metadata().name(), "web");
             EXPECT_EQ(s.metadata().namespace_(), "ns");
             EXPECT_EQ(s.metadata().uid(), "u-1");
             EXPECT_EQ(s.hostname(), "");
             EXPECT_EQ(s.log_directory(), "/var/log/pods/ns_web_u-1");
             EXPECT_EQ(s.labels().at("app"), "web");
             EXPECT_EQ(s.labels().at("io.kubernetes.pod.name"), "web");
             EXPECT_EQ(s.labels().at("io.kubernetes.pod.namespace"), "ns");
             EXPECT_EQ(s.labels().at("io.kubernetes.pod.uid"), "u-1");
             EXPECT_EQ(s.annotations().at("note"), "x");
             const auto& ns = s.linux().security_context().namespace_options();
             EXPECT_EQ(ns.network(), pb::NODE);
             EXPECT_EQ(ns.pid(), pb::CONTAINER);
             EXPECT_EQ(ns.ipc(), pb::POD);
           }},
      {.name = "a network of its own, and its hostname",
       .given = [](api::Pod&, SandboxInputs& in) { in.network_ready = true; },
       .check =
           [](const pb::PodSandboxConfig& s) {
             EXPECT_EQ(s.hostname(), "web");
             EXPECT_EQ(s.linux().security_context().namespace_options().network(), pb::POD);
           }},
      {.name = "hostNetwork, hostPID and hostIPC",
       .given =
           [](api::Pod&, SandboxInputs& in) {
             in.network_ready = true;
             in.namespaces = {.host_network = true, .host_pid = true, .host_ipc = true};
           },
       .check =
           [](const pb::PodSandboxConfig& s) {
             EXPECT_EQ(s.hostname(), "");
             const auto& ns = s.linux().security_context().namespace_options();
             EXPECT_EQ(ns.network(), pb::NODE);
             EXPECT_EQ(ns.pid(), pb::NODE);
             EXPECT_EQ(ns.ipc(), pb::NODE);
           }},
      {.name = "shareProcessNamespace",
       .given = [](api::Pod&, SandboxInputs& in) { in.namespaces.share_process_namespace = true; },
       .check =
           [](const pb::PodSandboxConfig& s) {
             EXPECT_EQ(s.linux().security_context().namespace_options().pid(), pb::POD);
           }},
      {.name = "the pod's security context, fsGroup among the groups",
       .given =
           [](api::Pod& p, SandboxInputs&) {
             p.spec.security_context = api::PodSecurityContext{
                 .run_as_user = 1000,
                 .run_as_group = 2000,
                 .supplemental_groups = {5},
                 .fs_group = 3000,
                 .seccomp_profile = api::SeccompProfile{.type = "RuntimeDefault"}};
           },
       .check =
           [](const pb::PodSandboxConfig& s) {
             const auto& sc = s.linux().security_context();
             EXPECT_EQ(sc.run_as_user().value(), 1000);
             EXPECT_EQ(sc.run_as_group().value(), 2000);
             EXPECT_EQ(std::vector<int64_t>(sc.supplemental_groups().begin(),
                                            sc.supplemental_groups().end()),
                       (std::vector<int64_t>{5, 3000}));
             EXPECT_EQ(sc.seccomp().profile_type(), pb::SecurityProfile::RuntimeDefault);
           }},
      {.name = "the node's DNS, a retry's attempt and another logs root",
       .given =
           [](api::Pod&, SandboxInputs& in) {
             in.dns = {
                 .servers = {"10.0.0.2"}, .searches = {"example.org"}, .options = {"ndots:2"}};
             in.attempt = 3;
             in.logs_root = "/srv/logs";
           },
       .check =
           [](const pb::PodSandboxConfig& s) {
             EXPECT_EQ(List(s.dns_config().servers()), std::vector<std::string>{"10.0.0.2"});
             EXPECT_EQ(List(s.dns_config().searches()), std::vector<std::string>{"example.org"});
             EXPECT_EQ(List(s.dns_config().options()), std::vector<std::string>{"ndots:2"});
             EXPECT_EQ(s.metadata().attempt(), 3u);
             EXPECT_EQ(s.log_directory(), "/srv/logs/ns_web_u-1");
           }},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    api::Pod pod = NewPod();
    SandboxInputs in{.hostname = "web"};
    row.given(pod, in);
    row.check(SandboxConfig(pod, in));
  }
}

TEST(PodConfigTest, Container) {
  struct Row {
    std::string name;
    std::function<void(api::Pod&, api::Container&, ContainerInputs&)> given;
    std::function<void(const pb::ContainerConfig&)> check;
    std::string error;
  };
  using runtime::BindMount;
  const std::vector<Row> rows = {
      {.name = "command and args expanded from the environment, kept apart",
       .given =
           [](api::Pod&, api::Container& c, ContainerInputs& in) {
             c.command = {"/bin/sh", "-c"};
             c.args = {"echo $(GREETING) $$(GREETING) $(UNSET)"};
             c.working_dir = "/work";
             in.env = {"GREETING=hi", "EMPTY="};
           },
       .check =
           [](const pb::ContainerConfig& c) {
             EXPECT_EQ(List(c.command()), (std::vector<std::string>{"/bin/sh", "-c"}));
             EXPECT_EQ(List(c.args()), std::vector<std::string>{"echo hi $(GREETING) $(UNSET)"});
             EXPECT_EQ(c.working_dir(), "/work");
             ASSERT_EQ(c.envs_size(), 2);
             EXPECT_EQ(c.envs(0).key(), "GREETING");
             EXPECT_EQ(c.envs(0).value(), "hi");
             EXPECT_EQ(c.envs(1).key(), "EMPTY");
             EXPECT_EQ(c.envs(1).value(), "");
           }},
      {.name = "no command: the image's entrypoint and cmd stay",
       .given = [](api::Pod&, api::Container&, ContainerInputs&) {},
       .check =
           [](const pb::ContainerConfig& c) {
             EXPECT_EQ(c.command_size(), 0);
             EXPECT_EQ(c.args_size(), 0);
             EXPECT_EQ(c.image().image(), "sha256:abc");
             EXPECT_EQ(c.image().user_specified_image(), "busybox");
           }},
      {.name = "a restart: its attempt, log file and annotations",
       .given = [](api::Pod&, api::Container&, ContainerInputs& in) { in.restart_count = 2; },
       .check =
           [](const pb::ContainerConfig& c) {
             EXPECT_EQ(c.metadata().name(), "main");
             EXPECT_EQ(c.metadata().attempt(), 2u);
             EXPECT_EQ(c.log_path(), "main/2.log");
             EXPECT_EQ(c.labels().at("io.kubernetes.container.name"), "main");
             EXPECT_EQ(c.labels().at("io.kubernetes.pod.uid"), "u-1");
             EXPECT_EQ(c.labels().count("app"), 0u) << "the pod's labels are the sandbox's";
             EXPECT_EQ(c.annotations().at("io.kubernetes.container.restartCount"), "2");
             EXPECT_EQ(c.annotations().at("io.kubernetes.container.terminationMessagePath"),
                       "/dev/termination-log");
             EXPECT_EQ(c.annotations().at("io.kubernetes.pod.terminationGracePeriod"), "30");
           }},
      {.name = "volumes: read-only, propagation, and a block device",
       .given =
           [](api::Pod&, api::Container&, ContainerInputs& in) {
             in.mounts = {
                 BindMount{.source = "/v/config", .target = "/etc/app", .read_only = true},
                 BindMount{
                     .source = "/v/data", .target = "/data", .propagation = "HostToContainer"},
                 BindMount{
                     .source = "/v/shared", .target = "/shared", .propagation = "Bidirectional"},
                 BindMount{.source = "/dev/loop7", .target = "/dev/xvda", .device = true}};
           },
       .check =
           [](const pb::ContainerConfig& c) {
             ASSERT_EQ(c.mounts_size(), 3);
             EXPECT_EQ(c.mounts(0).container_path(), "/etc/app");
             EXPECT_EQ(c.mounts(0).host_path(), "/v/config");
             EXPECT_TRUE(c.mounts(0).readonly());
             EXPECT_EQ(c.mounts(0).propagation(), pb::PROPAGATION_PRIVATE);
             EXPECT_FALSE(c.mounts(1).readonly());
             EXPECT_EQ(c.mounts(1).propagation(), pb::PROPAGATION_HOST_TO_CONTAINER);
             EXPECT_EQ(c.mounts(2).propagation(), pb::PROPAGATION_BIDIRECTIONAL);
             ASSERT_EQ(c.devices_size(), 1);
             EXPECT_EQ(c.devices(0).container_path(), "/dev/xvda");
             EXPECT_EQ(c.devices(0).host_path(), "/dev/loop7");
             EXPECT_EQ(c.devices(0).permissions(), "mrw");
           }},
      {.name = "an unknown propagation",
       .given =
           [](api::Pod&, api::Container&, ContainerInputs& in) {
             in.mounts = {BindMount{.source = "/v", .target = "/data", .propagation = "Shared"}};
           },
       .error = "volumeMounts[/data].mountPropagation: Unsupported value: \"Shared\": supported "
                "values: \"Bidirectional\", \"HostToContainer\", \"None\""},
      {.name = "resources as kubelet converts them",
       .given =
           [](api::Pod&, api::Container& c, ContainerInputs&) {
             c.resources.requests["cpu"] = api::Quantity::MustParse("250m");
             c.resources.limits["cpu"] = api::Quantity::MustParse("500m");
             c.resources.limits["memory"] = api::Quantity::MustParse("64Mi");
           },
       .check =
           [](const pb::ContainerConfig& c) {
             const auto& r = c.linux().resources();
             EXPECT_EQ(r.cpu_shares(), 256);
             EXPECT_EQ(r.cpu_period(), 100000);
             EXPECT_EQ(r.cpu_quota(), 50000);
             EXPECT_EQ(r.memory_limit_in_bytes(), 64 * 1024 * 1024);
           }},
      {.name = "no requests: the fewest shares; a tiny limit: the smallest quota",
       .given =
           [](api::Pod&, api::Container& c, ContainerInputs&) {
             c.resources.limits["cpu"] = api::Quantity::MustParse("1m");
           },
       .check =
           [](const pb::ContainerConfig& c) {
             EXPECT_EQ(c.linux().resources().cpu_shares(), 2);
             EXPECT_EQ(c.linux().resources().cpu_quota(), 1000);
             EXPECT_EQ(c.linux().resources().memory_limit_in_bytes(), 0);
           }},
      {.name = "the container's security context over the pod's",
       .given =
           [](api::Pod& p, api::Container& c, ContainerInputs&) {
             p.spec.security_context = api::PodSecurityContext{
                 .run_as_user = 1000,
                 .run_as_group = 2000,
                 .fs_group = 3000,
                 .seccomp_profile = api::SeccompProfile{.type = "RuntimeDefault"}};
             c.security_context = api::SecurityContext{
                 .capabilities = api::Capabilities{.add = {"NET_ADMIN"}, .drop = {"ALL"}},
                 .privileged = false,
                 .run_as_user = 0,
                 .read_only_root_filesystem = true,
                 .allow_privilege_escalation = false,
                 .seccomp_profile =
                     api::SeccompProfile{.type = "Localhost", .localhost_profile = "p.json"}};
           },
       .check =
           [](const pb::ContainerConfig& c) {
             const auto& sc = c.linux().security_context();
             EXPECT_EQ(sc.run_as_user().value(), 0);
             EXPECT_EQ(sc.run_as_group().value(), 2000);
             EXPECT_EQ(sc.supplemental_groups_size(), 1);
             EXPECT_TRUE(sc.readonly_rootfs());
             EXPECT_TRUE(sc.no_new_privs());
             EXPECT_FALSE(sc.privileged());
             EXPECT_EQ(List(sc.capabilities().add_capabilities()),
                       std::vector<std::string>{"NET_ADMIN"});
             EXPECT_EQ(List(sc.capabilities().drop_capabilities()),
                       std::vector<std::string>{"ALL"});
             EXPECT_EQ(sc.seccomp().profile_type(), pb::SecurityProfile::Localhost);
             EXPECT_EQ(sc.seccomp().localhost_ref(), "p.json");
             EXPECT_EQ(sc.namespace_options().network(), pb::NODE) << "as its sandbox";
           }},
      {.name = "privilege escalation not refused: no no_new_privs",
       .given =
           [](api::Pod&, api::Container& c, ContainerInputs&) {
             c.security_context = api::SecurityContext{.privileged = true};
           },
       .check =
           [](const pb::ContainerConfig& c) {
             EXPECT_TRUE(c.linux().security_context().privileged());
             EXPECT_FALSE(c.linux().security_context().no_new_privs());
             EXPECT_FALSE(c.linux().security_context().has_run_as_user());
           }},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    api::Pod pod = NewPod();
    api::Container c = NewContainer();
    ContainerInputs in{.image = "sha256:abc"};
    row.given(pod, c, in);
    auto got = ContainerConfig(pod, c, SandboxInputs{.hostname = "web"}, in);
    if (!row.error.empty()) {
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(got.status().message(), row.error);
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().message();
    row.check(*got);
  }
}

TEST(PodConfigTest, ResolvConf) {
  const Resolv r = ParseResolvConf(
      "# generated\n"
      "nameserver 10.0.0.2\n"
      "nameserver 10.0.0.3 ; second\n"
      "search a.example b.example\n"
      "search c.example\n"
      "options ndots:2 edns0\n"
      "options timeout:1\n"
      "\n"
      "sortlist 130.155.160.0\n");
  EXPECT_EQ(r.servers, (std::vector<std::string>{"10.0.0.2", "10.0.0.3"}));
  EXPECT_EQ(r.searches, std::vector<std::string>{"c.example"}) << "the last search line wins";
  EXPECT_EQ(r.options, (std::vector<std::string>{"ndots:2", "edns0", "timeout:1"}));
  EXPECT_TRUE(ParseResolvConf("").servers.empty());
}

}  // namespace
}  // namespace kvol::node::cri
