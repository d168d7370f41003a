// Keys, resourceVersion splicing, uids.
#include "apiserver/objects.h"

#include <pthread.h>
#include <sys/random.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kvol::apiserver {

std::string StorageKey(const api::KindInfo& kind, std::string_view ns, std::string_view name) {
  constexpr std::string_view kRoot = "/registry/";
  std::string k;
  k.reserve(kRoot.size() + kind.resource.size() + ns.size() + name.size() + 2);
  k += kRoot;
  k += kind.resource;
  k += '/';
  if (kind.namespaced) {
    k += ns;
    k += '/';
  }
  k += name;
  return k;
}

std::string StoragePrefix(const api::KindInfo& kind, std::string_view ns) {
  std::string k = "/registry/";
  k += kind.resource;
  k += '/';
  if (kind.namespaced && !ns.empty()) {
    k += ns;
    k += '/';
  }
  return k;
}

namespace {

// Skips one JSON string starting at s[i] == '"'; returns the index after the closing quote.
size_t SkipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Skips one JSON value starting at s[i] (no leading whitespace); returns the index after it.
size_t SkipValue(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    for (; i < s.size(); ++i) {
      if (s[i] == '"') {
        i = SkipString(s, i);
        if (i == std::string_view::npos) return i;
        --i;
      } else if (s[i] == '{' || s[i] == '[') {
        ++depth;
      } else if (s[i] == '}' || s[i] == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return std::string_view::npos;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']') ++i;
  return i;
}

}  // namespace

std::string WithResourceVersion(std::string_view json, store::Revision rv) {
  const std::string field = "\"resourceVersion\":\"" + std::to_string(rv) + "\"";
  // Walk the top-level object's keys (compact JSON, as the server writes it) to "metadata".
  size_t i = json.find('{');
  if (i == std::string_view::npos) return std::string(json);
  ++i;
  while (i < json.size() && json[i] != '}') {
    if (json[i] == ',') ++i;
    if (i >= json.size() || json[i] != '"') break;
    size_t key_end = SkipString(json, i);
    if (key_end == std::string_view::npos) break;
    std::string_view key = json.substr(i + 1, key_end - i - 2);
    size_t value = key_end + 1;  // past ':'
    if (key == "metadata" && value < json.size() && json[value] == '{') {
      std::string out;
      out.reserve(json.size() + field.size() + 1);
      out.append(json.substr(0, value + 1));
      out += field;
      if (json[value + 1] != '}') out += ',';
      out.append(json.substr(value + 1));
      return out;
    }
    i = SkipValue(json, value);
    if (i == std::string_view::npos) break;
  }
  // No metadata object: add one at the end.
  std::string out(json);
  size_t close = out.rfind('}');
  if (close == std::string::npos) return out;
  bool empty = out.find_first_not_of(" \t\r\n", out.find('{') + 1) == close;
  out.insert(close, std::string(empty ? "" : ",") + "\"metadata\":{" + field + "}");
  return out;
}

namespace {

// Counts fork()s in this process's children: a child starts with a copy of its parent's
// thread-local pools, and must not hand out the bytes its parent does.
std::atomic<unsigned> fork_generation{0};

// Random bytes from the kernel, fetched 256 at a time per thread: one getrandom call per
// sixteen uids instead of one each (every create needs a uid).
void RandomBytes(unsigned char* out, size_t n) {
  [[maybe_unused]] static const int registered = pthread_atfork(
      nullptr, nullptr, [] { fork_generation.fetch_add(1, std::memory_order_relaxed); });
  struct Pool {
    unsigned char bytes[256];
    size_t used = sizeof bytes;
    unsigned generation = 0;
  };
  thread_local Pool pool;
  const unsigned generation = fork_generation.load(std::memory_order_relaxed);
  if (pool.generation != generation) {
    pool.used = sizeof pool.bytes;
    pool.generation = generation;
  }
  while (n > 0) {
    if (pool.used == sizeof pool.bytes) {
      if (getrandom(pool.bytes, sizeof pool.bytes, 0) != static_cast<ssize_t>(sizeof pool.bytes)) {
        for (auto& c : pool.bytes) c = static_cast<unsigned char>(rand());
      }
      pool.used = 0;
    }
    const size_t take = std::min(n, sizeof pool.bytes - pool.used);
    std::memcpy(out, pool.bytes + pool.used, take);
    pool.used += take;
    out += take;
    n -= take;
  }
}

}  // namespace

std::string NewUid() {
  unsigned char b[16];
  RandomBytes(b, sizeof b);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  // 8-4-4-4-12 hex digits.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 0x0f];
  }
  return out;
}

std::string RandomSuffix() {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  unsigned char b[5];
  RandomBytes(b, sizeof b);
  std::string s;
  for (unsigned char c : b) s += kAlphabet[c % (sizeof kAlphabet - 1)];
  return s;
}

}  // namespace kvol::apiserver
