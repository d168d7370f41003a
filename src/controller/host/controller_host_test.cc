// ControllerHost: objects read from the API server as plugins expect them, and directories under
// the controller's own root.
#include "controller/host/controller_host.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"
#include "os/testing/fake_exec.h"
#include "os/testing/fake_mounter.h"

namespace kvol::controller {
namespace {

using client::testing::FakeClient;

TEST(ControllerHost, ReadsSecretsAndConfigMapsFromTheServer) {
  FakeClient api;
  os::testing::FakeMounter mounter;
  os::testing::FakeExec exec;
  ControllerHost host(api, "/var/lib/kvol/controller", mounter, exec);
  api::Secret secret;
  secret.metadata.namespace_ = "default";
  secret.metadata.name = "flex-creds";
  secret.data["user"] = "admin";
  api.fake<api::Secret>().Seed(secret);
  api::ConfigMap cm;
  cm.metadata.namespace_ = "kube-system";
  cm.metadata.name = "settings";
  cm.data["a"] = "b";
  api.fake<api::ConfigMap>().Seed(cm);

  struct Case {
    std::string name;
    std::function<Status()> get;
    StatusCode want_code;
    std::string want_message;
  };
  const std::vector<Case> cases = {
      {.name = "a secret",
       .get = [&] { return host.GetSecret("default", "flex-creds").status(); },
       .want_code = StatusCode::kOk,
       .want_message = ""},
      {.name = "a secret that is not there",
       .get = [&] { return host.GetSecret("default", "missing").status(); },
       .want_code = StatusCode::kNotFound,
       .want_message = "secret \"missing\" not found"},
      {.name = "a secret of another namespace",
       .get = [&] { return host.GetSecret("kube-system", "flex-creds").status(); },
       .want_code = StatusCode::kNotFound,
       .want_message = "secret \"flex-creds\" not found"},
      {.name = "a configmap",
       .get = [&] { return host.GetConfigMap("kube-system", "settings").status(); },
       .want_code = StatusCode::kOk,
       .want_message = ""},
      {.name = "the server failing",
       .get =
           [&] {
             api.state().InjectError("get", "secrets", api::ApiError{.code = 503, .reason = "ServiceUnavailable", .message = "etcd down"});
             return host.GetSecret("default", "flex-creds").status();
           },
       .want_code = StatusCode::kUnavailable,
       .want_message = "etcd down"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Status s = c.get();
    EXPECT_EQ(s.code(), c.want_code) << s.ToString();
    EXPECT_EQ(s.message(), c.want_message);
  }
  auto got = host.GetSecret("default", "flex-creds");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data.at("user"), "admin");
}

TEST(ControllerHost, NoNodeAndItsOwnRoot) {
  FakeClient api;
  os::testing::FakeMounter mounter;
  os::testing::FakeExec exec;
  ControllerHost host(api, "/var/lib/kvol/controller", mounter, exec);
  EXPECT_EQ(host.NodeName(), "");
  EXPECT_TRUE(host.NodeAllocatable().empty());
  EXPECT_EQ(host.PluginDir("flexvolume-kvol.io/loop"),
            "/var/lib/kvol/controller/plugins/flexvolume-kvol.io/loop");
  EXPECT_EQ(&host.exec(), &exec);
  EXPECT_EQ(&host.mounter(), &mounter);
}

}  // namespace
}  // namespace kvol::controller
