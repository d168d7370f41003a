// The instrumented store records each request it passes on, and changes none of them.
#include "store/instrumented_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "metrics/metrics.h"
#include "metrics/testing/text_format.h"
#include "store/sqlite_store.h"

namespace kvol::store {
namespace {

namespace fs = std::filesystem;

TEST(RequestType, IsTheKeysResource) {
  struct Case {
    const char* key;
    const char* type;
  } cases[] = {
      {.key = "/registry/persistentvolumeclaims/default/data", .type = "persistentvolumeclaims"},
      {.key = "/registry/persistentvolumes/pv-1", .type = "persistentvolumes"},
      {.key = "/registry/pods/", .type = "pods"},
      {.key = "/registry/", .type = ""},
      {.key = "other/key", .type = "other"},
  };
  for (const auto& c : cases) EXPECT_EQ(RequestType(c.key), c.type) << c.key;
}

TEST(InstrumentedStore, RecordsEachRequestByOperationAndType) {
  std::string tmpl = (fs::temp_directory_path() / "kvol-instrumented-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  SqliteOptions opts;
  opts.path = tmpl + "/kvol.db";
  {
    auto opened = OpenSqliteStore(opts);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    std::unique_ptr<Store> s = Instrumented(std::move(*opened));
    const std::string key = "/registry/instrumentedtests/default/a";
    auto created = s->Create(key, MakeValue("1"));
    ASSERT_TRUE(created.ok());
    EXPECT_TRUE(s->Get(key).ok());
    EXPECT_FALSE(s->Create(key, MakeValue("2")).ok());  // failures are timed too
    auto listed = s->Range({.prefix = "/registry/instrumentedtests/"});
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(listed->kvs.size(), 1u);
    auto many = s->WriteMany(
        {{.kind = Write::Kind::kUpdate, .key = key, .value = MakeValue("3"), .expected = *created},
         {.kind = Write::Kind::kCreate, .key = key + "b", .value = MakeValue("4")}});
    ASSERT_EQ(many.size(), 2u);
    EXPECT_TRUE(many[0].ok() && many[1].ok());
    EXPECT_TRUE(s->Delete(key, 0).ok());

    auto text = metrics::testing::ParseText(metrics::Expose());
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto count = [&](const char* op) {
      auto v = text->Value("etcd_request_duration_seconds_count",
                           {{"operation", op}, {"type", "instrumentedtests"}});
      return v.ok() ? *v : -1;
    };
    EXPECT_EQ(count("create"), 3);
    EXPECT_EQ(count("get"), 1);
    EXPECT_EQ(count("list"), 1);
    EXPECT_EQ(count("update"), 1);
    EXPECT_EQ(count("delete"), 1);
  }
  fs::remove_all(tmpl);
}

}  // namespace
}  // namespace kvol::store
