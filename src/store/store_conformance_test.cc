// One conformance suite for every Store backend: CAS conflicts, ranges at old revisions, watches
// from old revisions that resume without gaps or duplicates, compaction answering "too old", and
// concurrent writers that never lose an update. Backends register in store_test_backends.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "store/store.h"
#include "store/testing/backends.h"

namespace kvol::store {
namespace {

using namespace std::chrono_literals;

class StoreConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto s = testing::OpenBackend(GetParam());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    // Every test works under its own prefix, so backends that share a server stay independent.
    prefix_ = testing::UniquePrefix();
  }

  std::string K(std::string_view name) { return prefix_ + std::string(name); }
  // A key that sorts right after the prefix but is not under it.
  std::string Outside(std::string_view name) {
    return prefix_.substr(0, prefix_.size() - 1) + "~" + std::string(name);
  }
  static Value V(std::string s) { return MakeValue(std::move(s)); }

  // Collects events until `n` arrived or a second passed.
  std::vector<Event> Collect(Watch& w, size_t n) {
    std::vector<Event> all;
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
      auto evs = w.Next(100ms);
      EXPECT_TRUE(evs.ok()) << evs.status().ToString();
      if (!evs.ok()) break;
      all.insert(all.end(), evs->begin(), evs->end());
    }
    return all;
  }

  std::unique_ptr<Store> store_;
  std::string prefix_;
};

TEST_P(StoreConformance, CreateGetUpdateDelete) {
  auto r1 = store_->Create(K("a"), V("one"));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  auto got = store_->Get(K("a"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got->value, "one");
  EXPECT_EQ(got->create_revision, *r1);
  EXPECT_EQ(got->mod_revision, *r1);

  auto r2 = store_->Update(K("a"), V("two"), *r1);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_GT(*r2, *r1);
  got = store_->Get(K("a"));
  EXPECT_EQ(*got->value, "two");
  EXPECT_EQ(got->create_revision, *r1);
  EXPECT_EQ(got->mod_revision, *r2);
  EXPECT_EQ(*store_->CurrentRevision(), *r2);

  auto r3 = store_->Delete(K("a"), *r2);
  ASSERT_TRUE(r3.ok());
  EXPECT_GT(*r3, *r2);
  EXPECT_EQ(store_->Get(K("a")).status().code(), StatusCode::kNotFound);
  // Re-created keys start a new life.
  auto r4 = store_->Create(K("a"), V("three"));
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(store_->Get(K("a"))->create_revision, *r4);
}

TEST_P(StoreConformance, CompareAndSwapConflicts) {
  Revision r1 = *store_->Create(K("k"), V("v1"));
  EXPECT_EQ(store_->Create(K("k"), V("again")).status().code(), StatusCode::kAlreadyExists);
  Revision r2 = *store_->Update(K("k"), V("v2"), r1);
  // A writer that read r1 loses.
  EXPECT_EQ(store_->Update(K("k"), V("stale"), r1).status().code(), StatusCode::kAborted);
  EXPECT_EQ(store_->Delete(K("k"), r1).status().code(), StatusCode::kAborted);
  EXPECT_EQ(*store_->Get(K("k"))->value, "v2");
  EXPECT_EQ(store_->Update(K("missing"), V("x"), r2).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete(K("missing"), 0).status().code(), StatusCode::kNotFound);
  // An unconditional delete wins whatever the revision.
  EXPECT_TRUE(store_->Delete(K("k"), 0).ok());
}

TEST_P(StoreConformance, WriteManyAnswersEachWriteAsAloneInOrder) {
  const Revision a = *store_->Create(K("a"), V("a1"));
  const Revision b = *store_->Create(K("b"), V("b1"));
  std::vector<Write> writes = {
      {Write::Kind::kUpdate, K("a"), V("a2"), a},
      {Write::Kind::kUpdate, K("a"), V("a3"), a},  // a stale revision: the write above won
      {Write::Kind::kCreate, K("c"), V("c1"), 0},
      {Write::Kind::kCreate, K("b"), V("b2"), 0},  // exists
      {Write::Kind::kUpdate, K("missing"), V("x"), b},
      {Write::Kind::kDelete, K("b"), nullptr, b},
      {Write::Kind::kCreate, K("b"), V("b3"), 0},  // after its delete, earlier in the batch
  };
  auto got = store_->WriteMany(std::move(writes));
  ASSERT_EQ(got.size(), 7u);
  ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
  EXPECT_GT(*got[0], b);
  EXPECT_EQ(got[1].status().code(), StatusCode::kAborted);
  ASSERT_TRUE(got[2].ok());
  EXPECT_EQ(got[3].status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(got[4].status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(got[5].ok());
  ASSERT_TRUE(got[6].ok());
  // Revisions follow the order of the writes.
  EXPECT_LT(*got[0], *got[2]);
  EXPECT_LT(*got[2], *got[5]);
  EXPECT_LT(*got[5], *got[6]);
  EXPECT_EQ(*store_->CurrentRevision(), *got[6]);
  EXPECT_EQ(*store_->Get(K("a"))->value, "a2");
  EXPECT_EQ(store_->Get(K("a"))->mod_revision, *got[0]);
  EXPECT_EQ(*store_->Get(K("c"))->value, "c1");
  EXPECT_EQ(*store_->Get(K("b"))->value, "b3");
  EXPECT_EQ(store_->Get(K("b"))->create_revision, *got[6]);
  EXPECT_TRUE(store_->WriteMany({}).empty());
}

TEST_P(StoreConformance, WriteManyMakesAWriteOnlyIfTheOneItFollowsIsMade) {
  const Revision a = *store_->Create(K("a"), V("a1"));
  const Revision b = *store_->Create(K("b"), V("b1"));
  std::vector<Write> writes = {
      {Write::Kind::kUpdate, K("a"), V("a2"), a},
      {Write::Kind::kUpdate, K("b"), V("b2"), b, /*after=*/0},  // a2 is made: so is b2
      {Write::Kind::kUpdate, K("a"), V("a3"), a},               // stale: fails
      {Write::Kind::kCreate, K("c"), V("c1"), 0, /*after=*/2},  // not made
      {Write::Kind::kCreate, K("d"), V("d1"), 0, /*after=*/3},  // nor what follows that
      {Write::Kind::kCreate, K("e"), V("e1"), 0, /*after=*/5},  // names no earlier write
      {Write::Kind::kCreate, K("f"), V("f1"), 0},
  };
  auto got = store_->WriteMany(std::move(writes));
  ASSERT_EQ(got.size(), 7u);
  ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
  ASSERT_TRUE(got[1].ok()) << got[1].status().ToString();
  EXPECT_LT(*got[0], *got[1]);
  EXPECT_EQ(got[2].status().code(), StatusCode::kAborted);
  EXPECT_EQ(got[3].status().code(), StatusCode::kAborted);
  EXPECT_NE(got[3].status().message().find("not made"), std::string::npos)
      << got[3].status().ToString();
  EXPECT_EQ(got[4].status().code(), StatusCode::kAborted);
  EXPECT_EQ(got[5].status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(got[6].ok());
  EXPECT_EQ(*got[6], *got[1] + 1) << "nothing was written between them";
  EXPECT_EQ(*store_->Get(K("b"))->value, "b2");
  for (const char* k : {"c", "d", "e"}) {
    EXPECT_EQ(store_->Get(K(k)).status().code(), StatusCode::kNotFound) << k;
  }
}

TEST_P(StoreConformance, ConcurrentWriteManyCallersEachGetTheirOwnAnswers) {
  // Writers of batches and of single writes at once: every write lands once, every caller is
  // answered with its own writes' revisions.
  constexpr int kThreads = 4, kBatches = 20, kPerBatch = 10;
  auto name = [](int t, int i, int j) {
    return std::to_string(t) + "-" + std::to_string(i) + "-" + std::to_string(j);
  };
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kBatches; ++i) {
        std::vector<Write> writes;
        for (int j = 0; j < kPerBatch; ++j) {
          writes.push_back({Write::Kind::kCreate, K(name(t, i, j)), V(name(t, i, j)), 0});
        }
        auto got = store_->WriteMany(std::move(writes));
        for (int j = 0; j < kPerBatch; ++j) {
          auto kv = store_->Get(K(name(t, i, j)));
          if (got.size() != kPerBatch || !got[j].ok() || !kv.ok() || kv->mod_revision != *got[j] ||
              *kv->value != name(t, i, j)) {
            ++failures;
          }
        }
        if (!store_->Create(K("single-" + name(t, i, 0)), V("s")).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto all = store_->Range({K(""), "", 0, 0});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->kvs.size(), static_cast<size_t>(kThreads * kBatches * (kPerBatch + 1)));
}

TEST_P(StoreConformance, RangeWithLimitContinueAndRevision) {
  for (std::string k : {"b", "a", "d", "c", "e"}) ASSERT_TRUE(store_->Create(K(k), V(k)).ok());
  ASSERT_TRUE(store_->Create(Outside("x"), V("not under the prefix")).ok());
  const Revision before = *store_->CurrentRevision();
  ASSERT_TRUE(store_->Update(K("a"), V("A"), store_->Get(K("a"))->mod_revision).ok());
  ASSERT_TRUE(store_->Delete(K("c"), 0).ok());

  RangeOptions all{K(""), "", 0, 0};
  auto now = store_->Range(all);
  ASSERT_TRUE(now.ok());
  std::vector<std::string> values;
  for (const auto& kv : now->kvs) values.push_back(*kv.value);
  EXPECT_EQ(values, (std::vector<std::string>{"A", "b", "d", "e"}));
  EXPECT_FALSE(now->more);

  // Pages of two at the old revision see the old values and the deleted key.
  std::vector<std::string> paged;
  std::string after;
  for (int page = 0; page < 10; ++page) {
    auto r = store_->Range({K(""), after, 2, before});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->revision, before);
    for (const auto& kv : r->kvs) paged.push_back(*kv.value);
    if (!r->more) break;
    after = r->kvs.back().key;
  }
  EXPECT_EQ(paged, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  auto old = store_->Get(K("a"), before);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(*old->value, "a");
  EXPECT_EQ(store_->Get(K("c"), before).ok(), true);
  EXPECT_EQ(store_->Range({K(""), "", 0, *store_->CurrentRevision() + 100}).status().code(),
            StatusCode::kOutOfRange);
}

TEST_P(StoreConformance, WatchSeesEveryChangeWithPrevious) {
  auto w = store_->Watch(K(""), 0);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  Revision r1 = *store_->Create(K("x"), V("1"));
  Revision r2 = *store_->Update(K("x"), V("2"), r1);
  ASSERT_TRUE(store_->Create(Outside("elsewhere"), V("ignored")).ok());
  Revision r3 = *store_->Delete(K("x"), 0);
  auto evs = Collect(**w, 3);
  ASSERT_EQ(evs.size(), 3u);
  EXPECT_EQ(evs[0].type, Event::Type::kAdded);
  EXPECT_EQ(evs[0].revision(), r1);
  EXPECT_FALSE(evs[0].prev.has_value());
  EXPECT_EQ(evs[1].type, Event::Type::kModified);
  EXPECT_EQ(*evs[1].kv.value, "2");
  ASSERT_TRUE(evs[1].prev.has_value());
  EXPECT_EQ(*evs[1].prev->value, "1");
  EXPECT_EQ(evs[1].revision(), r2);
  EXPECT_EQ(evs[2].type, Event::Type::kDeleted);
  EXPECT_EQ(evs[2].revision(), r3);
  ASSERT_TRUE(evs[2].kv.value);
  EXPECT_EQ(*evs[2].kv.value, "2");  // a deletion carries the last value
  (*w)->Close();
  EXPECT_EQ((*w)->Next(10ms).status().code(), StatusCode::kCancelled);
}

TEST_P(StoreConformance, WatchFromAnOldRevisionResumesWithoutGapsOrDuplicates) {
  Revision start = *store_->CurrentRevision();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(store_->Create(K("k" + std::to_string(i)), V("v")).ok());
  // A watcher that starts late replays history from `start`.
  auto w = store_->Watch(K(""), start);
  ASSERT_TRUE(w.ok());
  auto first = Collect(**w, 20);
  ASSERT_EQ(first.size(), 20u);
  // It stops half way through; a new watch from the last revision it saw continues exactly.
  Revision seen = first[9].revision();
  (*w)->Close();
  for (int i = 20; i < 30; ++i) ASSERT_TRUE(store_->Create(K("k" + std::to_string(i)), V("v")).ok());
  auto resumed = store_->Watch(K(""), seen);
  ASSERT_TRUE(resumed.ok());
  auto rest = Collect(**resumed, 20);
  ASSERT_EQ(rest.size(), 20u);
  Revision prev = seen;
  for (const auto& e : rest) {
    EXPECT_GT(e.revision(), prev);
    prev = e.revision();
  }
  EXPECT_EQ(rest.front().kv.key, K("k10"));
  EXPECT_EQ(rest.back().kv.key, K("k29"));
  EXPECT_TRUE((*resumed)->Next(50ms)->empty());
}

TEST_P(StoreConformance, WatchFromAnOldRevisionReplaysUpdatesAndDeletesWithPrevious) {
  Revision start = *store_->CurrentRevision();
  Revision r1 = *store_->Create(K("x"), V("1"));
  Revision r2 = *store_->Update(K("x"), V("2"), r1);
  Revision r3 = *store_->Delete(K("x"), r2);
  Revision r4 = *store_->Create(K("x"), V("3"));
  for (Revision from : {start, r1}) {
    auto w = store_->Watch(K(""), from);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    auto evs = Collect(**w, from == start ? 4 : 3);
    ASSERT_EQ(evs.size(), from == start ? 4u : 3u);
    if (from == start) {
      EXPECT_EQ(evs[0].type, Event::Type::kAdded);
      EXPECT_EQ(evs[0].revision(), r1);
      EXPECT_FALSE(evs[0].prev.has_value());
      evs.erase(evs.begin());
    }
    EXPECT_EQ(evs[0].type, Event::Type::kModified);
    EXPECT_EQ(evs[0].revision(), r2);
    EXPECT_EQ(evs[0].kv.create_revision, r1);
    EXPECT_EQ(*evs[0].kv.value, "2");
    ASSERT_TRUE(evs[0].prev.has_value());
    EXPECT_EQ(*evs[0].prev->value, "1");
    EXPECT_EQ(evs[0].prev->mod_revision, r1);
    EXPECT_EQ(evs[1].type, Event::Type::kDeleted);
    EXPECT_EQ(evs[1].revision(), r3);
    ASSERT_TRUE(evs[1].kv.value);
    EXPECT_EQ(*evs[1].kv.value, "2");  // a deletion carries the last value
    EXPECT_EQ(evs[2].type, Event::Type::kAdded);
    EXPECT_EQ(evs[2].revision(), r4);
    EXPECT_EQ(evs[2].kv.create_revision, r4);
    EXPECT_EQ(*evs[2].kv.value, "3");
    EXPECT_FALSE(evs[2].prev.has_value());
  }
}

TEST_P(StoreConformance, OverlappingWatchersEachGetWholeEvents) {
  auto all = store_->Watch(K(""), 0);
  auto some = store_->Watch(K("a/"), 0);
  auto again = store_->Watch(K(""), 0);
  ASSERT_TRUE(all.ok() && some.ok() && again.ok());
  Revision a = *store_->Create(K("a/1"), V("one"));
  ASSERT_TRUE(store_->Update(K("a/1"), V("two"), a).ok());
  ASSERT_TRUE(store_->Create(K("b/1"), V("three")).ok());
  for (auto* w : {&all, &again}) {
    auto evs = Collect(***w, 3);
    ASSERT_EQ(evs.size(), 3u);
    EXPECT_EQ(evs[0].kv.key, K("a/1"));
    EXPECT_EQ(*evs[0].kv.value, "one");
    EXPECT_EQ(*evs[1].kv.value, "two");
    ASSERT_TRUE(evs[1].prev.has_value());
    EXPECT_EQ(evs[1].prev->key, K("a/1"));
    EXPECT_EQ(*evs[1].prev->value, "one");
    EXPECT_EQ(evs[2].kv.key, K("b/1"));
    EXPECT_EQ(*evs[2].kv.value, "three");
  }
  auto evs = Collect(**some, 2);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(*evs[0].kv.value, "one");
  EXPECT_EQ(*evs[1].kv.value, "two");
  EXPECT_EQ(evs[1].prev->key, K("a/1"));
  EXPECT_TRUE((*some)->Next(50ms)->empty());
}

TEST_P(StoreConformance, CompactionMakesOldRevisionsTooOld) {
  Revision r1 = *store_->Create(K("a"), V("1"));
  Revision r2 = *store_->Update(K("a"), V("2"), r1);
  Revision r3 = *store_->Create(K("b"), V("b"));
  ASSERT_TRUE(store_->Compact(r2).ok());
  EXPECT_GE(*store_->CompactedRevision(), r2);
  auto old = store_->Get(K("a"), r1);
  EXPECT_EQ(old.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(store_->Range({K(""), "", 0, r1}).status().code(), StatusCode::kOutOfRange);
  auto w = store_->Watch(K(""), r1 - 1);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(w.status().message().find(kCompactedMessage), std::string::npos);
  // Current and compacted revisions still read, and a watch from there works.
  EXPECT_EQ(*store_->Get(K("a"))->value, "2");
  EXPECT_EQ(*store_->Get(K("a"), r2)->value, "2");
  auto from = store_->Watch(K(""), r2);
  ASSERT_TRUE(from.ok()) << from.status().ToString();
  auto evs = Collect(**from, 1);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].revision(), r3);
  EXPECT_TRUE(store_->Compact(r2).ok());  // again: a no-op
}

TEST_P(StoreConformance, ConcurrentWritersNeverLoseAnUpdate) {
  ASSERT_TRUE(store_->Create(K("counter"), V("0")).ok());
  constexpr int kThreads = 8;
  constexpr int kIncrements = 60;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIncrements; ++i) {
        // Read-modify-write with compare-and-swap, retried on conflict.
        while (true) {
          auto kv = store_->Get(K("counter"));
          ASSERT_TRUE(kv.ok());
          int n = std::stoi(*kv->value);
          auto r = store_->Update(K("counter"), V(std::to_string(n + 1)), kv->mod_revision);
          if (r.ok()) break;
          ASSERT_EQ(r.status().code(), StatusCode::kAborted) << r.status().ToString();
          ++conflicts;
        }
        ASSERT_TRUE(store_->Create(K("t" + std::to_string(t) + "-" + std::to_string(i)), V("x")).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(*store_->Get(K("counter"))->value, std::to_string(kThreads * kIncrements));
  auto all = store_->Range({K("t"), "", 0, 0});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->kvs.size(), static_cast<size_t>(kThreads * kIncrements));
  std::set<Revision> revs;
  for (const auto& kv : all->kvs) revs.insert(kv.mod_revision);
  EXPECT_EQ(revs.size(), all->kvs.size()) << "two writes shared a revision";
}

TEST_P(StoreConformance, WatchersSeeConcurrentWritesInOrder) {
  auto w = store_->Watch(K(""), 0);
  ASSERT_TRUE(w.ok());
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        ASSERT_TRUE(store_->Create(K(std::to_string(t) + "/" + std::to_string(i)), V("v")).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  auto evs = Collect(**w, kThreads * kEach);
  ASSERT_EQ(evs.size(), static_cast<size_t>(kThreads * kEach));
  for (size_t i = 1; i < evs.size(); ++i) EXPECT_GT(evs[i].revision(), evs[i - 1].revision());
}

TEST_P(StoreConformance, ProgressMovesWithWritesElsewhere) {
  auto w = store_->Watch(K(""), 0);
  ASSERT_TRUE(w.ok());
  Revision other = *store_->Create(Outside("busy"), V("x"));
  // Without events for its prefix the watch learns about the write only by asking.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while ((*w)->Progress() < other && std::chrono::steady_clock::now() < deadline) {
    (*w)->RequestProgress();
    auto evs = (*w)->Next(500ms);
    ASSERT_TRUE(evs.ok()) << evs.status().ToString();
    EXPECT_TRUE(evs->empty());
  }
  EXPECT_GE((*w)->Progress(), other);
  // Progress never runs ahead of events not yet returned.
  Revision mine = *store_->Create(K("mine"), V("y"));
  (*w)->RequestProgress();
  auto evs = Collect(**w, 1);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].revision(), mine);
  EXPECT_GE((*w)->Progress(), mine);
}

TEST_P(StoreConformance, OneRangeReturnsMoreThanFourMebibytes) {
  // gRPC's default message limit is 4 MiB; a server filling its watch cache reads far more.
  const std::string big(64 * 1024, 'x');
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(store_->Create(K("big" + std::to_string(i)), V(big)).ok());
  auto r = store_->Range({prefix_, "", 0, 0});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kvs.size(), 80u);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance,
                         ::testing::ValuesIn(testing::BackendNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kvol::store
