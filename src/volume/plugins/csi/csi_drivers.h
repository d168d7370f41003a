// The CSI drivers registered on this node, by name: what the csi volume plugin calls, and what
// the node agent's plugin registration fills (from plugins_registry/ sockets, or --csi-driver).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "csi/client.h"

namespace kvol::volume::plugins {

struct CsiDriver {
  std::string name;
  std::string endpoint;  // unix:///path/csi.sock
  std::string node_id;   // NodeGetInfo's answer
  int64_t max_volumes_per_node = 0;
  std::map<std::string, std::string> topology;  // this node's segments
  std::shared_ptr<kvol::csi::Client> client;
};

class CsiDrivers {
 public:
  // Adds or replaces the driver of that name.
  void Add(std::shared_ptr<const CsiDriver> driver);
  // Removes the driver of that name if it is the one at `endpoint` (a newer registration of
  // the same name at another socket stays). Whether one was removed.
  bool Remove(std::string_view name, std::string_view endpoint);
  // nullptr when no driver of that name is registered.
  std::shared_ptr<const CsiDriver> Find(std::string_view name) const;
  std::vector<std::string> Names() const;
  // Calls `fn` (on the registering thread) after every Add: an attacher serves at once the
  // attachments made before their driver registered.
  void OnAdd(std::function<void(const std::string& name)> fn);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const CsiDriver>, std::less<>> drivers_;
  std::vector<std::function<void(const std::string&)>> on_add_;
};

}  // namespace kvol::volume::plugins
