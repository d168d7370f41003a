// Strategic merge patch: Kubernetes' merge keys and the directives kubectl apply and edit send.
#include "apiserver/patch.h"

#include <gtest/gtest.h>

namespace kvol::apiserver {
namespace {

using api::Json;

Json Merge(const char* target, const char* patch) {
  auto r = StrategicMerge(Json::parse(target), Json::parse(patch), "Pod");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Json();
}

TEST(StrategicMergeTest, ContainersMergeByName) {
  Json out = Merge(
      R"({"spec":{"containers":[{"name":"a","image":"x","env":[{"name":"E","value":"1"}]},{"name":"b","image":"y"}]}})",
      R"({"spec":{"containers":[{"name":"b","image":"z"},{"name":"c","image":"w"},{"name":"a","env":[{"name":"F","value":"2"}]}]}})");
  EXPECT_EQ(out, Json::parse(R"({"spec":{"containers":[
      {"name":"a","image":"x","env":[{"name":"E","value":"1"},{"name":"F","value":"2"}]},
      {"name":"b","image":"z"},{"name":"c","image":"w"}]}})"));
}

TEST(StrategicMergeTest, VolumesMountsAndDeletes) {
  Json out = Merge(
      R"({"spec":{"volumes":[{"name":"v1","emptyDir":{}},{"name":"v2","hostPath":{"path":"/a"}}],
                  "containers":[{"name":"c","volumeMounts":[{"name":"v1","mountPath":"/x"},{"name":"v2","mountPath":"/y"}]}]}})",
      R"({"spec":{"volumes":[{"name":"v2","$patch":"delete"}],
                  "containers":[{"name":"c","volumeMounts":[{"mountPath":"/y","$patch":"delete"},{"mountPath":"/x","readOnly":true}]}]}})");
  EXPECT_EQ(out, Json::parse(R"({"spec":{"volumes":[{"name":"v1","emptyDir":{}}],
      "containers":[{"name":"c","volumeMounts":[{"name":"v1","mountPath":"/x","readOnly":true}]}]}})"));
}

TEST(StrategicMergeTest, FinalizersAreASet) {
  Json out = Merge(R"({"metadata":{"finalizers":["a","b"]}})",
                   R"({"metadata":{"finalizers":["b","c"]}})");
  EXPECT_EQ(out["metadata"]["finalizers"], Json::parse(R"(["a","b","c"])"));
  out = Merge(R"({"metadata":{"finalizers":["a","b","c"]}})",
              R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["b"]}})");
  EXPECT_EQ(out["metadata"]["finalizers"], Json::parse(R"(["a","c"])"));
}

TEST(StrategicMergeTest, ListsWithoutMergeKeyAreReplaced) {
  Json out = Merge(R"({"spec":{"accessModes":["ReadWriteOnce","ReadOnlyMany"]}})",
                   R"({"spec":{"accessModes":["ReadWriteMany"]}})");
  EXPECT_EQ(out["spec"]["accessModes"], Json::parse(R"(["ReadWriteMany"])"));
}

TEST(StrategicMergeTest, NullsDeleteAndMapsMerge) {
  Json out = Merge(R"({"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"x":1}})",
                   R"({"metadata":{"labels":{"a":null,"c":"3"}}})");
  EXPECT_EQ(out, Json::parse(R"({"metadata":{"labels":{"b":"2","c":"3"}},"spec":{"x":1}})"));
}

TEST(StrategicMergeTest, SetElementOrderAndReplace) {
  Json out = Merge(R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
                   R"({"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],
                               "containers":[{"name":"a","image":"i"}]}})");
  EXPECT_EQ(out, Json::parse(R"({"spec":{"containers":[{"name":"b"},{"name":"a","image":"i"}]}})"));
  out = Merge(R"({"spec":{"nodeSelector":{"a":"1","b":"2"}}})",
              R"({"spec":{"nodeSelector":{"$patch":"replace","c":"3"}}})");
  EXPECT_EQ(out["spec"]["nodeSelector"], Json::parse(R"({"c":"3"})"));
  out = Merge(R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})",
              R"({"spec":{"containers":[{"$patch":"replace"},{"name":"z"}]}})");
  EXPECT_EQ(out["spec"]["containers"], Json::parse(R"([{"name":"z"}])"));
}

TEST(StrategicMergeTest, ConditionsMergeByType) {
  Json out = Merge(R"({"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"X","status":"True"}]}})",
                   R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})");
  EXPECT_EQ(out["status"]["conditions"],
            Json::parse(R"([{"type":"Ready","status":"True"},{"type":"X","status":"True"}])"));
}

TEST(StrategicMergeTest, Errors) {
  auto r = StrategicMerge(Json::parse(R"({"spec":{"containers":[]}})"),
                          Json::parse(R"({"spec":{"containers":[{"image":"x"}]}})"), "Pod");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, 400);
  EXPECT_NE(r.error().message.find("does not contain declared merge key: name"), std::string::npos);
  EXPECT_FALSE(StrategicMerge(Json::object(), Json::array(), "Pod").ok());
  EXPECT_EQ(ApplyPatch(Json::object(), "application/json-patch+json", "{not json", "Pod").error().code,
            400);
}

// JSON patches are bounded as Kubernetes bounds them: operations, bytes copied, result size.
TEST(JsonPatchTest, Bounds) {
  const Json cm = Json::parse(R"({"kind": "ConfigMap", "data": {}})");
  struct Case {
    std::string name;
    std::string patch;
    int code;             // 0: applied
    std::string message;  // a part of it
  };
  // One add of 800 bytes, then copies of the growing map onto itself: each doubles it.
  std::string amplify = R"([{"op": "add", "path": "/data/a", "value": ")" + std::string(800, 'x') +
                        R"("})";
  for (int i = 0; i < 20; ++i) {
    amplify += R"(, {"op": "copy", "from": "/data", "path": "/data/c)" + std::to_string(i) + R"("})";
  }
  amplify += "]";
  std::string many = "[";
  for (size_t i = 0; i <= kMaxJsonPatchOperations; ++i) {
    many += std::string(i ? "," : "") + R"({"op": "test", "path": "/kind", "value": "ConfigMap"})";
  }
  many += "]";
  const std::string big = R"([{"op": "add", "path": "/data/a", "value": ")" +
                          std::string(kMaxPatchedObjectBytes, 'x') + R"("}])";
  const std::vector<Case> cases = {
      {.name = "a few copies apply",
       .patch = R"([{"op": "add", "path": "/data/a", "value": "b"},
                    {"op": "copy", "from": "/data/a", "path": "/data/c"}])",
       .code = 0},
      {.name = "copies that double the object",
       .patch = amplify,
       .code = 422,
       .message = "Unable to complete the copy, the accumulated size increase of copy is "},
      {.name = "more operations than allowed",
       .patch = many,
       .code = 413,
       .message = "The allowed maximum operations in a JSON patch is 10000, got 10001"},
      {.name = "a result larger than a request may be",
       .patch = big,
       .code = 413,
       .message = "Request entity too large: limit is 3145728"},
      {.name = "a failed test",
       .patch = R"([{"op": "test", "path": "/kind", "value": "Pod"}])",
       .code = 422,
       .message = "the server rejected our request due to an error in our request"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    auto r = ApplyPatch(cm, "application/json-patch+json", tc.patch, "ConfigMap");
    if (tc.code == 0) {
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ((*r)["data"]["c"], "b");
      continue;
    }
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, tc.code);
    EXPECT_NE(r.error().message.find(tc.message), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace kvol::apiserver
