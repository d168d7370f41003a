// Every YAML example of the seed documents decodes, validates and round-trips unchanged; the
// published originals fail exactly where real kubectl fails (see tests/seeds/README.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "api/defaults.h"
#include "api/scheme.h"
#include "manifest/manifest.h"

namespace kvol {
namespace {

using api::Json;

std::string SeedsDir() { return KVOL_SEEDS_DIR; }

template <class T>
Json RoundTrip(const Json& in) {
  api::FieldErrors errors;
  Json out = api::EncodeStruct(api::DecodeStruct<T>(in, &errors));
  EXPECT_TRUE(errors.empty()) << api::AggregateMessage(errors);
  return out;
}

// The part of a document kvol models, re-encoded: the whole object for kvol's kinds, the pod
// and claim templates for workloads, nothing for other kinds.
Json RoundTripModelled(const Json& doc, const Json& fallback) {
  Json out = fallback;
  const std::string kind = doc.value("kind", "");
  const std::string api_version = doc.value("apiVersion", "");
  bool done = false;
  api::ForEachKind([&](auto t) {
    using T = typename decltype(t)::type;
    if (done || api::KindInfoOf<T>().kind != kind ||
        api::KindInfoOf<T>().ApiVersion() != api_version) {
      return;
    }
    done = true;
    out = RoundTrip<T>(doc);
  });
  if (!done && api_version == "apps/v1" && doc.contains("spec")) {
    out = doc;
    out["spec"]["template"] = RoundTrip<api::PodTemplateSpec>(doc["spec"]["template"]);
    if (doc["spec"].contains("volumeClaimTemplates")) {
      Json claims = Json::array();
      for (const auto& c : doc["spec"]["volumeClaimTemplates"]) {
        claims.push_back(RoundTrip<api::PersistentVolumeClaimTemplate>(c));
      }
      out["spec"]["volumeClaimTemplates"] = claims;
    }
  }
  return out;
}

TEST(SeedsTest, EveryExampleIsValidAndRoundTrips) {
  manifest::ReadResult r = manifest::ReadPath(SeedsDir());
  for (const auto& e : r.errors) ADD_FAILURE() << e.ToString();
  std::set<std::string> kinds;
  for (const auto& doc : r.documents) {
    api::DocumentReport report = api::CheckDocument(doc.object);
    std::string id = doc.source + ": " + report.kind + "/" + report.name;
    EXPECT_TRUE(report.errors.empty()) << id << ": " << api::AggregateMessage(report.errors);
    EXPECT_EQ(RoundTripModelled(doc.object, doc.object), doc.object) << id;
    kinds.insert(report.kind);
  }
  EXPECT_EQ(r.documents.size(), 22u);
  for (const char* k : {"Pod", "ConfigMap", "PersistentVolume", "PersistentVolumeClaim",
                        "StorageClass", "Deployment", "StatefulSet", "Service"}) {
    EXPECT_TRUE(kinds.count(k)) << k;
  }
}

TEST(SeedsTest, OriginalsFailWhereKubectlFails) {
  manifest::ReadResult r = manifest::ReadPath(SeedsDir() + "/original");
  std::vector<std::string> problems;
  for (const auto& e : r.errors) {
    problems.push_back(std::filesystem::path(e.source).filename().string() + ":" +
                       std::to_string(e.line) + ":" + std::to_string(e.column) + ": " +
                       e.message);
  }
  for (const auto& doc : r.documents) {
    api::DocumentReport report = api::CheckDocument(doc.object);
    for (const auto& e : report.errors) {
      problems.push_back(report.kind + "/" + report.name + ": " + e.ToString());
    }
  }
  EXPECT_EQ(problems, (std::vector<std::string>{
                          "delay-bound-nginx.yml:45:1: could not find expected ':'",
                          "PersistentVolume/nfs-pv: metadata.label: Forbidden: unknown field",
                          "Pod/dwapi-pod: metadata.labels[version]: Invalid value: 1.1: must be "
                          "a string, not a number",
                      }));
}

TEST(SeedsTest, DefaultedSeedsMatchWhatKubernetesStores) {
  manifest::ReadResult r = manifest::ReadPath(SeedsDir() + "/delay-bound-storage.yml");
  ASSERT_EQ(r.documents.size(), 3u);
  api::FieldErrors errors;
  auto sc = api::DecodeStruct<api::StorageClass>(r.documents[0].object, &errors);
  api::SetDefaults(sc);
  EXPECT_EQ(sc.reclaim_policy, "Delete");
  EXPECT_EQ(sc.volume_binding_mode, "WaitForFirstConsumer");
  auto pvc = api::DecodeStruct<api::PersistentVolumeClaim>(r.documents[2].object, &errors);
  api::SetDefaults(pvc);
  EXPECT_EQ(pvc.spec.volume_mode, "Filesystem");
  EXPECT_EQ(pvc.status.phase, "Pending");
  EXPECT_TRUE(errors.empty());
}

}  // namespace
}  // namespace kvol
