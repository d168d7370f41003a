// An open-addressing hash map for the controllers' large, hot indexes.
//
// Every entry lives in one array of slots, next to its probe distance and part of its hash.
// Entries are kept in Robin Hood order (no entry sits further from its home slot than one it
// passed), so a lookup usually reads one slot and a missing key stops early; erasing shifts the
// following entries back, leaving no tombstones. Where std::unordered_map reads a bucket, the
// node before the entry and the entry (three cache misses on a large map), this reads one.
//
// Unlike std::unordered_map:
// - entries move: any insertion or erase invalidates iterators, pointers and references;
// - erase(iterator) returns nothing, so erasing while iterating is not supported;
// - the value type is std::pair<K, V> (the key must not be changed through an iterator);
// - the iteration order is unspecified and changes as the map grows.
//
// With a transparent hash and equality (StringHash and std::equal_to<>), lookups take any key
// type those accept, e.g. std::string_view for a std::string key, without building a key.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace kvol {

// Hashes std::string and std::string_view alike, for maps looked up by either.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

template <class K, class V, class Hash = std::hash<K>, class Eq = std::equal_to<K>>
class FlatHashMap {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<K, V>;
  using size_type = size_t;

 private:
  struct Slot {
    uint32_t dist = 0;  // 0: empty; else 1 + the distance from the entry's home slot
    uint32_t tag = 0;   // the high half of the entry's hash
    alignas(value_type) unsigned char raw[sizeof(value_type)];

    value_type& entry() { return *std::launder(reinterpret_cast<value_type*>(raw)); }
    const value_type& entry() const {
      return *std::launder(reinterpret_cast<const value_type*>(raw));
    }
  };

  template <bool kConst>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = FlatHashMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const value_type*, value_type*>;
    using reference = std::conditional_t<kConst, const value_type&, value_type&>;
    using SlotPtr = std::conditional_t<kConst, const Slot*, Slot*>;

    Iter() = default;
    // iterator converts to const_iterator.
    template <bool kOther, class = std::enable_if_t<kConst && !kOther>>
    Iter(const Iter<kOther>& o) : slot_(o.slot_), end_(o.end_) {}  // NOLINT: implicit as std

    reference operator*() const { return slot_->entry(); }
    pointer operator->() const { return &slot_->entry(); }
    Iter& operator++() {
      ++slot_;
      SkipEmpty();
      return *this;
    }
    Iter operator++(int) {
      Iter old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iter& a, const Iter& b) { return a.slot_ == b.slot_; }

   private:
    friend class FlatHashMap;
    template <bool>
    friend class Iter;
    Iter(SlotPtr slot, SlotPtr end) : slot_(slot), end_(end) {}
    void SkipEmpty() {
      while (slot_ != end_ && slot_->dist == 0) ++slot_;
    }
    SlotPtr slot_ = nullptr;
    SlotPtr end_ = nullptr;
  };

  static constexpr bool kTransparent = requires {
    typename Hash::is_transparent;
    typename Eq::is_transparent;
  };

 public:
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  FlatHashMap() = default;
  ~FlatHashMap() { DestroyAll(); }
  FlatHashMap(const FlatHashMap& o) : hash_(o.hash_), eq_(o.eq_) {
    reserve(o.size_);
    for (const auto& e : o) try_emplace(e.first, e.second);
  }
  FlatHashMap& operator=(const FlatHashMap& o) {
    if (this != &o) {
      FlatHashMap copy(o);
      swap(copy);
    }
    return *this;
  }
  FlatHashMap(FlatHashMap&& o) noexcept { swap(o); }
  FlatHashMap& operator=(FlatHashMap&& o) noexcept {
    if (this != &o) {
      clear();
      swap(o);
    }
    return *this;
  }
  void swap(FlatHashMap& o) noexcept {
    using std::swap;
    swap(slots_, o.slots_);
    swap(capacity_, o.capacity_);
    swap(size_, o.size_);
    swap(shift_, o.shift_);
    swap(hash_, o.hash_);
    swap(eq_, o.eq_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  iterator begin() {
    iterator it(slots_.get(), slots_.get() + capacity_);
    it.SkipEmpty();
    return it;
  }
  iterator end() { return iterator(slots_.get() + capacity_, slots_.get() + capacity_); }
  const_iterator begin() const {
    const_iterator it(slots_.get(), slots_.get() + capacity_);
    it.SkipEmpty();
    return it;
  }
  const_iterator end() const {
    return const_iterator(slots_.get() + capacity_, slots_.get() + capacity_);
  }

  template <class Q>
  iterator find(const Q& key) {
    const size_t i = Find(key);
    return i == kNone ? end() : At(i);
  }
  template <class Q>
  const_iterator find(const Q& key) const {
    const size_t i = Find(key);
    return i == kNone ? end() : const_iterator(slots_.get() + i, slots_.get() + capacity_);
  }
  template <class Q>
  bool contains(const Q& key) const {
    return Find(key) != kNone;
  }
  template <class Q>
  size_t count(const Q& key) const {
    return contains(key) ? 1 : 0;
  }
  template <class Q>
  V& at(const Q& key) {
    const size_t i = Find(key);
    if (i == kNone) throw std::out_of_range("FlatHashMap::at: no such key");
    return slots_[i].entry().second;
  }
  template <class Q>
  const V& at(const Q& key) const {
    const size_t i = Find(key);
    if (i == kNone) throw std::out_of_range("FlatHashMap::at: no such key");
    return slots_[i].entry().second;
  }

  // Inserts {key, V(args...)} unless the key is present; the entry and whether it is new.
  template <class Q, class... Args>
  std::pair<iterator, bool> try_emplace(Q&& key, Args&&... args) {
    const size_t h = HashOf(key);
    if (size_t i = FindHashed(key, h); i != kNone) return {At(i), false};
    return {At(Insert(h, std::forward<Q>(key), std::forward<Args>(args)...)), true};
  }
  template <class Q, class W>
  std::pair<iterator, bool> emplace(Q&& key, W&& value) {
    return try_emplace(std::forward<Q>(key), std::forward<W>(value));
  }
  std::pair<iterator, bool> insert(value_type entry) {
    return try_emplace(std::move(entry.first), std::move(entry.second));
  }
  template <class Q>
  V& operator[](Q&& key) {
    return try_emplace(std::forward<Q>(key)).first->second;
  }

  template <class Q>
  size_t erase(const Q& key) {
    const size_t i = Find(key);
    if (i == kNone) return 0;
    EraseAt(i);
    return 1;
  }
  void erase(const_iterator it) { EraseAt(static_cast<size_t>(it.slot_ - slots_.get())); }
  void erase(iterator it) { EraseAt(static_cast<size_t>(it.slot_ - slots_.get())); }

  void clear() {
    DestroyAll();
    slots_.reset();
    capacity_ = 0;
    size_ = 0;
    shift_ = 64;
  }

  // Room for `n` entries without growing.
  void reserve(size_t n) {
    size_t cap = kMinCapacity;
    while (n > MaxLoad(cap)) cap *= 2;
    if (cap > capacity_) Rehash(cap);
  }

 private:
  static constexpr size_t kNone = ~size_t{0};
  static constexpr size_t kMinCapacity = 16;
  // At most 7/8 full: Robin Hood order keeps probes short well past where plain linear
  // probing slows down.
  static size_t MaxLoad(size_t capacity) { return capacity - capacity / 8; }

  template <class Q>
  size_t HashOf(const Q& key) const {
    if constexpr (kTransparent || std::is_same_v<std::decay_t<Q>, K>) {
      return hash_(key);
    } else {
      return hash_(K(key));
    }
  }
  // Fibonacci hashing spreads weak hashes (identity for integers) over the table.
  size_t Home(size_t h) const { return (h * 0x9E3779B97F4A7C15ull) >> shift_; }
  static uint32_t TagOf(size_t h) { return static_cast<uint32_t>(uint64_t{h} >> 32); }

  template <class Q>
  size_t Find(const Q& key) const {
    if (size_ == 0) return kNone;
    if constexpr (kTransparent || std::is_same_v<Q, K>) {
      return FindHashed(key, hash_(key));
    } else {
      const K k(key);
      return FindHashed(k, hash_(k));
    }
  }
  template <class Q>
  size_t FindHashed(const Q& key, size_t h) const {
    if (size_ == 0) return kNone;
    const size_t mask = capacity_ - 1;
    const uint32_t tag = TagOf(h);
    size_t i = Home(h);
    for (uint32_t d = 1;; ++d, i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      // An empty slot, or an entry nearer its home than this key would be: not present.
      if (s.dist < d) return kNone;
      if (s.tag == tag && eq_(s.entry().first, key)) return i;
    }
  }

  // Inserts a key known to be absent; its slot.
  template <class Q, class... Args>
  size_t Insert(size_t h, Q&& key, Args&&... args) {
    if (size_ + 1 > MaxLoad(capacity_)) Rehash(capacity_ == 0 ? kMinCapacity : capacity_ * 2);
    value_type entry(std::piecewise_construct, std::forward_as_tuple(std::forward<Q>(key)),
                     std::forward_as_tuple(std::forward<Args>(args)...));
    ++size_;
    return Place(Home(h), TagOf(h), std::move(entry));
  }

  // Puts `entry` in Robin Hood order from `home`; where it went.
  size_t Place(size_t home, uint32_t tag, value_type&& entry) {
    const size_t mask = capacity_ - 1;
    size_t placed = kNone;
    uint32_t d = 1;
    for (size_t i = home;; ++d, i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.dist == 0) {
        ::new (static_cast<void*>(s.raw)) value_type(std::move(entry));
        s.dist = d;
        s.tag = tag;
        return placed == kNone ? i : placed;
      }
      if (s.dist < d) {
        // Take the place of an entry nearer its home, and carry that one on.
        using std::swap;
        swap(s.entry(), entry);
        swap(s.dist, d);
        swap(s.tag, tag);
        if (placed == kNone) placed = i;
      }
    }
  }

  void EraseAt(size_t i) {
    const size_t mask = capacity_ - 1;
    slots_[i].entry().~value_type();
    slots_[i].dist = 0;
    --size_;
    // Shift the entries after it back by one, until an empty slot or one at its home.
    for (size_t next = (i + 1) & mask; slots_[next].dist > 1; next = (next + 1) & mask) {
      Slot& from = slots_[next];
      Slot& to = slots_[i];
      ::new (static_cast<void*>(to.raw)) value_type(std::move(from.entry()));
      to.dist = from.dist - 1;
      to.tag = from.tag;
      from.entry().~value_type();
      from.dist = 0;
      i = next;
    }
  }

  void Rehash(size_t capacity) {
    auto fresh = std::make_unique<Slot[]>(capacity);
    std::unique_ptr<Slot[]> old = std::exchange(slots_, std::move(fresh));
    const size_t old_capacity = capacity_;
    capacity_ = capacity;
    shift_ = 64 - std::countr_zero(capacity);
    for (size_t i = 0; i < old_capacity; ++i) {
      Slot& s = old[i];
      if (s.dist == 0) continue;
      const size_t h = hash_(s.entry().first);
      Place(Home(h), TagOf(h), std::move(s.entry()));
      s.entry().~value_type();
    }
  }

  void DestroyAll() {
    if constexpr (!std::is_trivially_destructible_v<value_type>) {
      for (size_t i = 0; i < capacity_; ++i) {
        if (slots_[i].dist != 0) slots_[i].entry().~value_type();
      }
    }
  }

  iterator At(size_t i) { return iterator(slots_.get() + i, slots_.get() + capacity_); }

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_ = 0;  // a power of two, or 0
  size_t size_ = 0;
  int shift_ = 64;  // 64 - log2(capacity_)
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] Eq eq_;
};

// A FlatHashMap with std::string keys, looked up by std::string or std::string_view.
template <class V>
using FlatStringMap = FlatHashMap<std::string, V, StringHash, std::equal_to<>>;

}  // namespace kvol
