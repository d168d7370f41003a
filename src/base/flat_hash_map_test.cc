// The open-addressing map, against std::unordered_map under random operations.
#include "base/flat_hash_map.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>

namespace kvol {
namespace {

// Counts live values, to catch a leaked or twice-destroyed entry.
struct Counted {
  static inline int live = 0;
  int value = 0;
  Counted() { ++live; }
  explicit Counted(int v) : value(v) { ++live; }
  Counted(const Counted& o) : value(o.value) { ++live; }
  Counted(Counted&& o) noexcept : value(o.value) { ++live; }
  Counted& operator=(const Counted&) = default;
  Counted& operator=(Counted&&) noexcept = default;
  ~Counted() { --live; }
};

// Sends every key to the last slot or the first, whatever the capacity (the map multiplies a
// hash by 0x9E3779B97F4A7C15 and keeps the high bits; 0x0e217c1e66c88cc3 times that is 2^64-1),
// so probe chains are long and wrap around the end.
struct CollidingHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>{}(s) % 2 ? 0x0e217c1e66c88cc3ull : 0;
  }
};

template <class Map>
void CheckSame(const Map& flat, const std::unordered_map<std::string, int>& want) {
  ASSERT_EQ(flat.size(), want.size());
  std::map<std::string, int> seen;
  for (const auto& [k, v] : flat) {
    EXPECT_TRUE(seen.emplace(k, v.value).second) << "twice: " << k;
  }
  EXPECT_EQ(seen, (std::map<std::string, int>(want.begin(), want.end())));
  for (const auto& [k, v] : want) {
    auto it = flat.find(k);
    ASSERT_NE(it, flat.end()) << k;
    EXPECT_EQ(it->second.value, v);
  }
}

template <class Hash>
void RandomOperations(uint32_t seed, int keys, int steps) {
  Counted::live = 0;
  {
    FlatHashMap<std::string, Counted, Hash, std::equal_to<>> flat;
    std::unordered_map<std::string, int> want;
    std::mt19937 rng(seed);
    for (int step = 0; step < steps; ++step) {
      const std::string key = "key-" + std::to_string(rng() % keys);
      const int value = static_cast<int>(rng() % 1000);
      switch (rng() % 5) {
        case 0:
        case 1: {
          auto [it, inserted] = flat.try_emplace(key, value);
          EXPECT_EQ(inserted, want.emplace(key, value).second) << key;
          EXPECT_EQ(it->first, key);
          EXPECT_EQ(it->second.value, want[key]);
          break;
        }
        case 2:
          flat[std::string_view(key)].value = value;
          want[key] = value;
          break;
        case 3:
          EXPECT_EQ(flat.erase(std::string_view(key)), want.erase(key)) << key;
          break;
        case 4: {
          auto it = flat.find(key);
          EXPECT_EQ(it != flat.end(), want.contains(key)) << key;
          if (it != flat.end()) flat.erase(it), want.erase(key);
          break;
        }
      }
      if (step % 997 == 0) CheckSame(flat, want);
    }
    CheckSame(flat, want);
    EXPECT_EQ(Counted::live, static_cast<int>(want.size()));
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(FlatHashMapTest, MatchesUnorderedMapUnderRandomOperations) {
  RandomOperations<StringHash>(1, 50, 20000);
  RandomOperations<StringHash>(2, 5000, 60000);
}

TEST(FlatHashMapTest, MatchesUnorderedMapWhenEveryKeyCollides) {
  RandomOperations<CollidingHash>(3, 40, 10000);
}

TEST(FlatHashMapTest, FindsByStringViewWithoutBuildingAKey) {
  FlatStringMap<int> m;
  m.emplace(std::string("default/claim-1"), 1);
  std::string_view view = "default/claim-1";
  ASSERT_TRUE(m.contains(view));
  EXPECT_EQ(m.at(view), 1);
  EXPECT_EQ(m.count("default/claim-2"), 0u);
  EXPECT_THROW(m.at("default/claim-2"), std::out_of_range);
}

TEST(FlatHashMapTest, GrowsKeepingEveryEntryAndReserveAvoidsGrowth) {
  FlatHashMap<int, int> m;
  for (int i = 0; i < 100000; ++i) m[i] = i * 2;
  ASSERT_EQ(m.size(), 100000u);
  for (int i = 0; i < 100000; ++i) ASSERT_EQ(m.at(i), i * 2) << i;
  EXPECT_FALSE(m.contains(100000));

  FlatHashMap<int, int> r;
  r.reserve(1000);
  r[0] = 1;
  const int* first = &r.at(0);
  for (int i = 1; i < 1000; ++i) r[i] = i;
  EXPECT_EQ(first, &r.at(0)) << "reserve(1000) still grew before 1000 entries";
}

TEST(FlatHashMapTest, HoldsMoveOnlyValuesAndCopiesAndMoves) {
  FlatStringMap<std::unique_ptr<int>> m;
  m.try_emplace("a", std::make_unique<int>(1));
  m["b"] = std::make_unique<int>(2);
  FlatStringMap<std::unique_ptr<int>> moved(std::move(m));
  EXPECT_TRUE(m.empty());  // NOLINT: a moved-from map is empty
  EXPECT_EQ(*moved.at("b"), 2);

  FlatStringMap<int> a;
  a["x"] = 1;
  FlatStringMap<int> b = a;
  b["y"] = 2;
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(b.size(), 2u);
  a = b;
  EXPECT_EQ(a.at("y"), 2);
  a.clear();
  EXPECT_TRUE(a.empty());
  a["z"] = 3;
  EXPECT_EQ(a.at("z"), 3);
}

}  // namespace
}  // namespace kvol
