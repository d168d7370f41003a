// What the printers of tables.cc and tables_snapshot.cc share: columns, rows, the JSON helpers
// cells are computed with. Not for use outside src/apiserver/tables*.cc.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "os/clock.h"

namespace kvol::apiserver::tables_internal {

using api::Json;

struct Column {
  const char* name;
  const char* type;
  const char* format;
  const char* description;
  int priority;  // 0: always; 1: -o wide
};

// What every row's cells start from: the object's name and age.
struct Row {
  const Json& o;
  std::string name;
  std::string age;
  os::WallTime now;
};

// A kind printed with its own columns; any other kind gets Name and Age.
struct Printer {
  std::string_view kind;
  std::vector<Column> (*columns)();
  Json (*cells)(const Row& row);
};

inline constexpr const char* kNameDesc =
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
inline constexpr const char* kAgeDesc =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created.";

// The value at `path`, or null.
inline const Json& At(const Json& j, std::initializer_list<std::string_view> path) {
  static const Json kNull;
  const Json* cur = &j;
  for (auto p : path) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(p);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

// The string at `path`, or "".
inline std::string Str(const Json& j, std::initializer_list<std::string_view> path) {
  const Json& v = At(j, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// The printers of the snapshot.storage.k8s.io kinds, or nullptr for another kind.
const Printer* SnapshotPrinter(std::string_view kind);

}  // namespace kvol::apiserver::tables_internal
