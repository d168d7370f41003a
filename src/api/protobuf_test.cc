#include "api/protobuf.h"

#include <gtest/gtest.h>

namespace kvol::api {
namespace {

// A few protobuf writing helpers: enough to build the bodies kubectl sends.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string Bytes(uint32_t field, std::string_view b) {
  return Varint(field << 3 | 2) + Varint(b.size()) + std::string(b);
}
std::string Number(uint32_t field, uint64_t v) { return Varint(field << 3) + Varint(v); }
std::string Entry(uint32_t field, std::string_view k, std::string_view v) {
  return Bytes(field, Bytes(1, k) + Bytes(2, v));
}
std::string Body(std::string_view api_version, std::string_view kind, std::string_view raw) {
  return std::string("k8s\0", 4) + Bytes(1, Bytes(1, api_version) + Bytes(2, kind)) +
         Bytes(2, raw) + Bytes(3, "") + Bytes(4, "");
}
// metadata as kubectl's generators write it: every plain field present, even when empty.
std::string Meta(std::string_view name) {
  return Bytes(1, Bytes(1, name) + Bytes(2, "") + Bytes(3, "") + Bytes(4, "") + Bytes(5, "") +
                      Bytes(6, "") + Number(7, 0) + Bytes(8, ""));
}

TEST(ProtobufTest, ConfigMapWithTextAndBinaryData) {
  std::string raw = Meta("cfg") + Entry(2, "color", "blue") + Entry(2, "empty", "") +
                    Entry(3, "bin", std::string("\x00\xff", 2));
  auto j = DecodeProtobufObject(Body("v1", "ConfigMap", raw));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(*j, Json::parse(R"({"apiVersion":"v1","kind":"ConfigMap",
    "metadata":{"name":"cfg","creationTimestamp":null},
    "data":{"color":"blue","empty":""},"binaryData":{"bin":"AP8="}})"));
}

TEST(ProtobufTest, PointersKeepZeroValuesPlainFieldsDropThem) {
  // Deployment spec: replicas (a pointer) 0 stays; minReadySeconds (plain) 0 goes; the pod
  // template's container with a negative int32 and an int-or-string target port.
  std::string container = Bytes(1, "c") + Bytes(2, "busybox") + Bytes(3, "sleep") +
                          Bytes(3, "10") + Bytes(8, "") + Bytes(14, "");
  std::string tmpl = Bytes(1, Entry(11, "app", "d")) + Bytes(2, Bytes(2, container));
  std::string spec = Number(1, 0) + Bytes(2, Entry(1, "app", "d")) + Bytes(3, tmpl) +
                     Bytes(4, "") + Number(5, 0) + Number(9, static_cast<uint64_t>(int64_t{-1}));
  auto j = DecodeProtobufObject(Body("apps/v1", "Deployment", Meta("d") + Bytes(2, spec)));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["spec"], Json::parse(R"({"replicas":0,"selector":{"matchLabels":{"app":"d"}},
    "template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c",
    "image":"busybox","command":["sleep","10"],"resources":{}}]}},"strategy":{},
    "progressDeadlineSeconds":-1})"));
}

TEST(ProtobufTest, IntOrStringTimeAndQuantity) {
  std::string port = Bytes(1, "http") + Number(3, 80) + Bytes(4, Number(1, 1) + Bytes(3, "web"));
  std::string port2 = Number(3, 81) + Bytes(4, Number(1, 0) + Number(2, 8081));
  auto j = DecodeProtobufObject(
      Body("v1", "Service", Meta("s") + Bytes(2, Bytes(1, port) + Bytes(1, port2))));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["spec"]["ports"], Json::parse(R"([{"name":"http","port":80,"targetPort":"web"},
    {"port":81,"targetPort":8081}])"));

  std::string meta = Bytes(1, Bytes(1, "n") + Bytes(9, Number(1, 1645192285) + Number(2, 5)));
  std::string limits = Bytes(8, Bytes(1, Bytes(1, "memory") + Bytes(2, Bytes(1, "64Mi"))));
  std::string pod = Bytes(2, Bytes(2, Bytes(1, "c") + limits));
  j = DecodeProtobufObject(Body("batch/v1", "Job", meta + Bytes(2, Bytes(6, pod))));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["metadata"]["deletionTimestamp"], "2022-02-18T13:51:25Z");
  EXPECT_EQ((*j)["spec"]["template"]["spec"]["containers"][0]["resources"],
            Json::parse(R"({"limits":{"memory":"64Mi"}})"));
}

TEST(ProtobufTest, TokenRequestAndSelfSubjectReviewAsKubectlSendsThem) {
  // kubectl create token robot --duration 10m --bound-object-kind Pod --bound-object-name p
  std::string bound = Bytes(1, "Pod") + Bytes(2, "v1") + Bytes(3, "p") + Bytes(4, "");
  std::string spec = Bytes(1, "vault") + Bytes(3, bound) + Number(4, 600);
  auto j = DecodeProtobufObject(Body("authentication.k8s.io/v1", "TokenRequest",
                                     Meta("") + Bytes(2, spec) + Bytes(3, Bytes(2, ""))));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["spec"], Json::parse(R"({"audiences":["vault"],"expirationSeconds":600,
    "boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}})"));
  // kubectl auth whoami; metadata as a client before 1.25 writes it, with an empty clusterName.
  j = DecodeProtobufObject(Body("authentication.k8s.io/v1", "SelfSubjectReview",
                                Bytes(1, Bytes(1, "") + Bytes(15, "")) + Bytes(2, Bytes(1, ""))));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["kind"], "SelfSubjectReview");
  EXPECT_EQ((*j)["metadata"], Json::object());
}

TEST(ProtobufTest, ResourceQuotaAsKubectlCreateQuotaSendsIt) {
  // kubectl create quota q --hard=requests.storage=10Gi,pods=2 --scopes=NotTerminating
  auto quantity = [](std::string_view name, std::string_view q) {
    return Bytes(1, Bytes(1, name) + Bytes(2, Bytes(1, q)));
  };
  std::string spec = quantity("requests.storage", "10Gi") + quantity("pods", "2") +
                     Bytes(2, "NotTerminating");
  auto j = DecodeProtobufObject(Body("v1", "ResourceQuota", Meta("q") + Bytes(2, spec) +
                                                                Bytes(3, "")));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["spec"], Json::parse(R"({"hard":{"requests.storage":"10Gi","pods":"2"},
    "scopes":["NotTerminating"]})"));
}

TEST(ProtobufTest, DeleteOptionsInAnyGroupsVersion) {
  // client-go before 1.21: a delete's body, in the version of the group deleted from.
  std::string raw = Number(1, 0) + Bytes(2, Bytes(1, "u1")) + Bytes(4, "Foreground");
  auto j = DecodeProtobufObject(Body("storage.k8s.io/v1", "DeleteOptions", raw));
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(*j, Json::parse(R"({"apiVersion":"storage.k8s.io/v1","kind":"DeleteOptions",
    "gracePeriodSeconds":0,"preconditions":{"uid":"u1"},"propagationPolicy":"Foreground"})"));
}

TEST(ProtobufTest, RefusesWhatItCannotRead) {
  auto j = DecodeProtobufObject("{\"kind\":\"ConfigMap\"}");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);

  j = DecodeProtobufObject(Body("v1", "PersistentVolume", Meta("pv")));
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(j.status().message(),
            "the body of PersistentVolume in v1 cannot be read from protobuf; send it as "
            "application/json");

  j = DecodeProtobufObject(Body("v1", "ConfigMap", Meta("cfg") + Bytes(99, "x")));
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(j.status().message(),
            "error decoding the ConfigMap protobuf body: field number 99 of ConfigMap is not "
            "supported");

  j = DecodeProtobufObject(Body("v1", "ConfigMap", Meta("cfg") + Number(2, 7)));
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(),
            "error decoding the ConfigMap protobuf body: data: malformed map entry");

  j = DecodeProtobufObject(Body("v1", "ConfigMap", Bytes(1, Bytes(1, "\xc0\x8c"))));  // overlong
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(),
            "error decoding the ConfigMap protobuf body: metadata.name: not valid UTF-8");

  // Every truncation inside the object is an error, never a crash or a half-read object.
  std::string good = Body("v1", "ConfigMap", Meta("cfg") + Entry(2, "a", "b"));
  const size_t object_end = good.size() - 4;  // the empty contentEncoding and contentType follow
  const size_t type_end = 4 + Bytes(1, Bytes(1, "v1") + Bytes(2, "ConfigMap")).size();
  for (size_t n = 0; n < object_end; ++n) {
    if (n == type_end) continue;  // an empty ConfigMap: well-formed, and validation's business
    EXPECT_FALSE(DecodeProtobufObject(good.substr(0, n)).ok()) << "prefix of " << n << " bytes";
  }
  EXPECT_TRUE(DecodeProtobufObject(good.substr(0, object_end)).ok());
}

}  // namespace
}  // namespace kvol::api
