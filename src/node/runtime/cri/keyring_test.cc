#include "node/runtime/cri/keyring.h"

#include <gtest/gtest.h>

#include "base/strings.h"

namespace kvol::node::cri {
namespace {

api::Secret DockerConfigJson(const std::string& name, const std::string& auths) {
  api::Secret s;
  s.metadata.name = name;
  s.type = "kubernetes.io/dockerconfigjson";
  s.data[".dockerconfigjson"] = Base64Encode("{\"auths\": " + auths + "}");
  return s;
}

TEST(KeyringTest, ImageRepository) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"busybox", "docker.io/library/busybox"},
      {"busybox:1.36", "docker.io/library/busybox"},
      {"team/app:v2", "docker.io/team/app"},
      {"docker.io/library/busybox", "docker.io/library/busybox"},
      {"index.docker.io/team/app", "docker.io/team/app"},
      {"registry.example:5000/app@sha256:0123", "registry.example:5000/app"},
      {"localhost/app:1", "localhost/app"},
      {"quay.io/org/app:latest", "quay.io/org/app"},
  };
  for (const auto& [image, want] : rows) EXPECT_EQ(ImageRepository(image), want) << image;
}

// Who each image's credentials are, in order: the usernames.
std::vector<std::string> Users(const Keyring& k, const std::string& image) {
  std::vector<std::string> out;
  for (const auto& a : k.Lookup(image)) out.push_back(a.username());
  return out;
}

TEST(KeyringTest, Lookup) {
  Keyring k;
  ASSERT_TRUE(k.Add(DockerConfigJson("regcred", R"({
      "https://index.docker.io/v1/": {"auth": ")" + Base64Encode("hub:hubpw") +
                                                    R"("},
      "registry.example:5000": {"username": "port", "password": "p1"},
      "registry.example": {"username": "plain", "password": "p2"},
      "*.corp.example/team": {"username": "team", "password": "p3"},
      "*.corp.example": {"username": "corp", "password": "p4"}
  })"))
                  .ok());
  struct Row {
    std::string image;
    std::vector<std::string> users;
  };
  const std::vector<Row> rows = {
      {"registry.example:5000/app:1", {"port"}},
      {"registry.example/app", {"plain"}},
      {"registry.example:6000/app", {}},
      {"git.corp.example/team/app", {"team", "corp"}},
      {"git.corp.example/other/app", {"corp"}},
      {"a.git.corp.example/team/app", {}},  // one label too many for the glob
      {"busybox", {"hub"}},
      {"team/app:v2", {"hub"}},
      {"quay.io/org/app", {}},
  };
  for (const auto& row : rows) EXPECT_EQ(Users(k, row.image), row.users) << row.image;
  auto hub = k.Lookup("busybox");
  ASSERT_EQ(hub.size(), 1u);
  EXPECT_EQ(hub[0].password(), "hubpw");
  EXPECT_EQ(hub[0].server_address(), "index.docker.io");
}

TEST(KeyringTest, SecretsOfEveryKind) {
  Keyring k;
  api::Secret legacy;
  legacy.metadata.name = "old";
  legacy.type = "kubernetes.io/dockercfg";
  legacy.data[".dockercfg"] =
      Base64Encode(R"({"registry.example": {"username": "old", "password": "x"}})");
  EXPECT_TRUE(k.Add(legacy).ok());
  api::Secret opaque;
  opaque.metadata.name = "opaque";
  opaque.type = "Opaque";
  opaque.data[".dockerconfigjson"] = Base64Encode("not json");
  EXPECT_TRUE(k.Add(opaque).ok()) << "another type adds nothing";
  EXPECT_EQ(Users(k, "registry.example/app"), std::vector<std::string>{"old"});

  struct Row {
    api::Secret secret;
    std::string error;
  };
  api::Secret bad_base64 = DockerConfigJson("b64", "{}");
  bad_base64.data[".dockerconfigjson"] = "%%%";
  const std::vector<Row> rows = {
      {DockerConfigJson("broken", "{"),
       "imagePullSecrets broken: .dockerconfigjson is not a JSON object"},
      {DockerConfigJson("noauth",
                        R"({"r.example": {"auth": ")" + Base64Encode("nocolon") + R"("}})"),
       "imagePullSecrets noauth: unable to parse auth field, must be formatted as "
       "base64(username:password)"},
      {bad_base64, "imagePullSecrets b64 .dockerconfigjson: not base64"},
  };
  for (const auto& row : rows) {
    Status s = k.Add(row.secret);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << row.error;
    EXPECT_EQ(s.message(), row.error);
  }
}

}  // namespace
}  // namespace kvol::node::cri
