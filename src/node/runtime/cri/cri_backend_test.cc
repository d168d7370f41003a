// The CRI backend's rules that need no runtime: kubelet's default pull policy and the durations
// its image events print.
#include "node/runtime/cri/cri_backend.h"

#include <gtest/gtest.h>

namespace kvol::node::cri {
namespace {

using std::chrono::milliseconds;

TEST(PullPolicy, AsKubeletDefaultsIt) {
  struct Case {
    std::string image, policy, want;
  };
  const Case cases[] = {
      {.image = "busybox", .want = "Always"},
      {.image = "busybox:latest", .want = "Always"},
      {.image = "busybox:1.36", .want = "IfNotPresent"},
      {.image = "registry.local:5000/busybox", .want = "Always"},
      {.image = "registry.local:5000/busybox:1", .want = "IfNotPresent"},
      {.image = "busybox@sha256:0123", .want = "IfNotPresent"},
      {.image = "busybox", .policy = "Never", .want = "Never"},
      {.image = "busybox:1", .policy = "Always", .want = "Always"},
  };
  for (const auto& c : cases) {
    api::Container container;
    container.image = c.image;
    container.image_pull_policy = c.policy;
    EXPECT_EQ(PullPolicy(container), c.want) << c.image << " " << c.policy;
  }
}

TEST(GoDuration, TruncatedToMilliseconds) {
  struct Case {
    milliseconds d;
    std::string want;
  };
  const Case cases[] = {
      {milliseconds(0), "0s"},
      {milliseconds(7), "7ms"},
      {milliseconds(999), "999ms"},
      {milliseconds(1000), "1s"},
      {milliseconds(1500), "1.5s"},
      {milliseconds(1004), "1.004s"},
      {milliseconds(123'040), "2m3.04s"},
      {milliseconds(3'600'000), "1h0m0s"},
  };
  for (const auto& c : cases) EXPECT_EQ(GoDuration(c.d), c.want) << c.d.count();
}

}  // namespace
}  // namespace kvol::node::cri
