// Payloads of configMap, secret and downwardAPI volumes, including the seed's downwardAPI files.
#include "volume/util/payload.h"

#include <gtest/gtest.h>

#include "base/strings.h"

namespace kvol::volume::util {
namespace {

api::Pod SeedPod() {
  api::Pod pod;
  pod.metadata.name = "dwapi-pod";
  pod.metadata.namespace_ = "default";
  pod.metadata.uid = "0b9e6b4e-1111-2222-3333-444444444444";
  pod.metadata.labels = {{"app", "dnsutils"}, {"version", "1.1"}};
  pod.metadata.annotations = {{"prometheus.io/scrape", "true"},
                              {"prometheus.io/scheme", "http"},
                              {"prometheus.io/port", "80"}};
  pod.spec.node_name = "k8s-node01";
  api::Container c;
  c.name = "dnsutils";
  c.resources.limits["memory"] = api::Quantity::MustParse("128Mi");
  c.resources.requests["cpu"] = api::Quantity::MustParse("250m");
  pod.spec.containers.push_back(c);
  return pod;
}

TEST(Payload, DownwardApiLabelsAndAnnotationsAsTheSeedShows) {
  api::Pod pod = SeedPod();
  EXPECT_EQ(*PodFieldValue(pod, "metadata.labels"), "app=\"dnsutils\"\nversion=\"1.1\"");
  EXPECT_EQ(
      *PodFieldValue(pod, "metadata.annotations"),
      "prometheus.io/port=\"80\"\nprometheus.io/scheme=\"http\"\nprometheus.io/scrape=\"true\"");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.name"), "dwapi-pod");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.namespace"), "default");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.uid"), pod.metadata.uid);
  EXPECT_EQ(*PodFieldValue(pod, "spec.nodeName"), "k8s-node01");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.labels['app']"), "dnsutils");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.annotations['nope']"), "");
  EXPECT_EQ(PodFieldValue(pod, "spec.containers").status().code(), StatusCode::kInvalidArgument);
}

TEST(Payload, GoQuoteEscapesAsStrconvQuote) {
  EXPECT_EQ(GoQuote("plain"), "\"plain\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(GoQuote("l1\nl2\t"), "\"l1\\nl2\\t\"");
  EXPECT_EQ(GoQuote(std::string("\x01\x7f", 2)), "\"\\x01\\x7f\"");
  EXPECT_EQ(GoQuote("héllo"), "\"héllo\"");
  EXPECT_EQ(GoQuote(std::string("\xff", 1)), "\"\\xff\"");
  // The seed's last-applied-configuration annotation: quotes and a trailing newline escaped.
  EXPECT_EQ(GoQuote("{\"a\":\"b\"}\n"), "\"{\\\"a\\\":\\\"b\\\"}\\n\"");
}

TEST(Payload, ResourceFieldsUseDivisorsAndRoundUp) {
  api::Pod pod = SeedPod();
  api::ResourceList node = {{"cpu", api::Quantity::MustParse("2")},
                            {"memory", api::Quantity::MustParse("24Gi")}};
  api::ResourceFieldSelector ref;
  ref.container_name = "dnsutils";
  ref.resource = "limits.memory";
  ref.divisor = api::Quantity::MustParse("1Mi");
  EXPECT_EQ(*ContainerResourceValue(pod, ref, node), "128");
  ref.resource = "requests.cpu";
  ref.divisor = api::Quantity::MustParse("1m");
  EXPECT_EQ(*ContainerResourceValue(pod, ref, node), "250");
  ref.divisor.reset();
  EXPECT_EQ(*ContainerResourceValue(pod, ref, node), "1");  // 250m rounds up to 1 core
  ref.resource = "limits.cpu";                              // unset: the node's allocatable
  EXPECT_EQ(*ContainerResourceValue(pod, ref, node), "2");
  ref.container_name = "other";
  EXPECT_FALSE(ContainerResourceValue(pod, ref, node).ok());
}

TEST(Payload, ConfigMapItemsKeysModesAndOptional) {
  api::ConfigMap cm;
  cm.metadata.name = "log-config";
  cm.data = {{"log_level", "INFO"}, {"ui.properties", "color.good=purple\n"}};
  cm.binary_data = {{"bin", Base64Encode(std::string("\0\1", 2))}};

  auto all = ConfigMapPayload(&cm, {}, 0644, false);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  EXPECT_EQ(all->at("bin").data, std::string("\0\1", 2));

  std::vector<api::KeyToPath> items = {{"log_level", "log_level", std::nullopt},
                                       {"ui.properties", "conf/ui", 0600}};
  auto some = ConfigMapPayload(&cm, items, 0644, false);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->size(), 2u);
  EXPECT_EQ(some->at("log_level").mode, 0644);
  EXPECT_EQ(some->at("conf/ui").mode, 0600);

  items.push_back({"missing", "m", std::nullopt});
  auto bad = ConfigMapPayload(&cm, items, 0644, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "configmap references non-existent config key: missing");
  EXPECT_EQ(ConfigMapPayload(&cm, items, 0644, true)->size(), 2u);
  EXPECT_TRUE(ConfigMapPayload(nullptr, items, 0644, true)->empty());
}

TEST(Payload, SecretValuesAreDecoded) {
  api::Secret s;
  s.data = {{"password", Base64Encode("s3cr3t")}};
  auto p = SecretPayload(&s, {}, 0400, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->at("password"), (FileProjection{"s3cr3t", 0400}));
  auto bad = SecretPayload(&s, {{"user", "user", std::nullopt}}, 0400, false);
  EXPECT_EQ(bad.status().message(), "references non-existent secret key: user");
}

}  // namespace
}  // namespace kvol::volume::util
