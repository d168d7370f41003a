// The garbage collector's index of owner references: which objects name which owners, by the
// owner's uid. Only objects with owner references are in it; owners are found in the informers'
// caches. Thread-safe.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/meta.h"

namespace kvol::controller::garbagecollector {

// An object as the collector's queue names it: "<apiVersion>|<kind>|<namespace>|<name>".
std::string ObjectKey(std::string_view api_version, std::string_view kind, std::string_view ns,
                      std::string_view name);
struct ObjectId {
  std::string api_version, kind, ns, name;
};
ObjectId ParseObjectKey(const std::string& key);

class Dependents {
 public:
  // Records the owner references of the object `key`. Returns the references it no longer has
  // (owners whose foreground deletion may have been waiting for it); `changed` tells whether
  // its references differ from the ones recorded before.
  std::vector<api::OwnerReference> Observe(const std::string& key,
                                           const std::vector<api::OwnerReference>& owners,
                                           bool* changed);
  // Forgets the object `key` (deleted). Returns the references it had.
  std::vector<api::OwnerReference> Forget(const std::string& key);
  // The keys of the objects that name the owner `uid`.
  std::vector<std::string> Of(const std::string& uid) const;
  // The reference the object `key` has to owner `uid`, if any.
  std::optional<api::OwnerReference> Reference(const std::string& key,
                                               const std::string& uid) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<api::OwnerReference>> owners_;  // by object key
  std::unordered_map<std::string, std::set<std::string>> dependents_;         // by owner uid
};

}  // namespace kvol::controller::garbagecollector
