// The in-memory index against a plain model of every version ever written: random creates,
// updates and deletes over a few keys (keys deleted, compacted away and made again), through
// both ways of applying a write, with compactions in between; lists and point reads alike.
#include "store/mvcc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace kvol::store {
namespace {

struct ModelVersion {
  Revision mod;
  Revision create;
  std::optional<std::string> value;  // nullopt: deleted
};

// The version of `versions` visible at `rev`, as MvccIndex::Get sees it.
const ModelVersion* VisibleAt(const std::vector<ModelVersion>& versions, Revision rev) {
  auto it = std::upper_bound(versions.begin(), versions.end(), rev,
                             [](Revision r, const ModelVersion& v) { return r < v.mod; });
  if (it == versions.begin()) return nullptr;
  const ModelVersion* out = &*std::prev(it);
  return out->value ? out : nullptr;
}

TEST(MvccIndexTest, AgreesWithAModelOfEveryVersionThroughCompactions) {
  std::mt19937 rng(7);
  MvccIndex index;
  std::map<std::string, std::vector<ModelVersion>> model;
  std::set<Revision> dropped_so_far;
  std::map<Revision, std::string> key_of;
  Revision compacted = 0;
  for (int step = 0; step < 20000; ++step) {
    const std::string key = "/k/" + std::to_string(rng() % 12);
    auto& versions = model[key];
    const bool exists = !versions.empty() && versions.back().value;
    std::optional<MvccIndex::Entry> entry;
    const MvccIndex::Version* latest = index.Latest(key, &entry);
    ASSERT_EQ(latest != nullptr, exists) << key;
    if (exists) {
      ASSERT_EQ(latest->mod, versions.back().mod);
    }
    ASSERT_EQ(index.Latest(key), latest);
    // Delete one time in four; otherwise create or update.
    const bool remove = exists && rng() % 4 == 0;
    Value value = remove ? nullptr : MakeValue("v" + std::to_string(step));
    const Revision rev = index.current() + 1;
    const Revision create = exists ? versions.back().create : rev;
    const Event ev = (entry && rng() % 2) ? index.Apply(*entry, value) : index.Apply(key, value);
    ASSERT_EQ(ev.kv.mod_revision, rev);
    ASSERT_EQ(ev.type, remove ? Event::Type::kDeleted
                              : exists ? Event::Type::kModified : Event::Type::kAdded);
    key_of[rev] = key;
    versions.push_back({rev, remove ? 0 : create,
                        remove ? std::nullopt : std::optional<std::string>(*value)});

    if (rng() % 50 != 0) continue;
    const Revision to = compacted + 1 + rng() % (index.current() - compacted);
    std::vector<Value> released;
    const std::vector<Revision> dropped = index.Compact(to, &released);
    compacted = to;
    ASSERT_EQ(index.compacted(), to);
    // The dropped versions' values are handed over, and nothing else: one for each dropped
    // version that was not a deletion.
    std::multiset<std::string> want_released, got_released;
    for (Revision r : dropped) {
      for (const auto& v : model[key_of[r]]) {
        if (v.mod == r && v.value) want_released.insert(*v.value);
      }
    }
    for (const Value& v : released) {
      ASSERT_NE(v, nullptr);
      got_released.insert(*v);
    }
    ASSERT_EQ(got_released, want_released);
    // What is dropped is never visible at `to` or later (only what is visible at `to`, or
    // newer, can be), and nothing is dropped twice.
    for (Revision r : dropped) {
      ASSERT_TRUE(dropped_so_far.insert(r).second) << r;
      ASSERT_LE(r, to);
      const ModelVersion* v = VisibleAt(model[key_of[r]], to);
      ASSERT_FALSE(v && v->mod == r) << key_of[r] << " rev " << r << " is visible at " << to;
    }
    // A list (the ordered keys) and the point reads (the keys' hash index) agree with the
    // model, keys compacted away and made again included.
    auto listed = index.Range({"/k/", "", 0, 0});
    ASSERT_TRUE(listed.ok());
    std::vector<std::string> want_keys, got_keys;
    for (const auto& [k, vs] : model) {
      if (!vs.empty() && vs.back().value) want_keys.push_back(k);
    }
    for (const auto& kv : listed->kvs) got_keys.push_back(kv.key);
    ASSERT_EQ(got_keys, want_keys);
    // Reads at `to` and later give what the model gives.
    const Revision current = index.current();
    for (const auto& [k, vs] : model) {
      for (Revision at : {to, to + (current - to) / 2, current}) {
        auto got = index.Get(k, at);
        const ModelVersion* want = VisibleAt(vs, at);
        ASSERT_EQ(got.ok(), want != nullptr) << k << " at " << at;
        if (!want) continue;
        ASSERT_EQ(got->mod_revision, want->mod) << k << " at " << at;
        ASSERT_EQ(got->create_revision, want->create) << k << " at " << at;
        ASSERT_EQ(*got->value, *want->value) << k << " at " << at;
      }
    }
  }
  // Everything not visible at the last compaction point (and not newer) has been dropped.
  for (const auto& [k, vs] : model) {
    const ModelVersion* kept = VisibleAt(vs, compacted);
    for (const auto& v : vs) {
      if (v.mod > compacted || (kept && kept->mod == v.mod)) continue;
      EXPECT_TRUE(dropped_so_far.count(v.mod)) << k << " rev " << v.mod;
    }
  }
}

}  // namespace
}  // namespace kvol::store
