// The node agent's plugin watcher, as kubelet's pluginmanager: plugins register themselves by
// putting a socket serving pluginregistration.Registration in <root-dir>/plugins_registry/
// (node-driver-registrar does so for a CSI driver). For each socket that appears the watcher
// asks the plugin what it is (GetInfo), hands it to the handler of its type, and tells the
// plugin whether it was registered (NotifyRegistrationStatus). When the socket goes, the
// plugin is deregistered. Drivers given on the command line are registered the same way without
// a socket. Level-triggered: each pass compares the sockets there with those registered, and a
// registration that failed is tried again after a backoff.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace kvol::node::pluginwatcher {

// The plugin type a registration socket announces for a CSI driver.
inline constexpr char kCSIPlugin[] = "CSIPlugin";

// What a kind of plugin does on registration: kubelet's PluginHandler.
class PluginHandler {
 public:
  virtual ~PluginHandler() = default;
  // Whether the plugin may register; the error is what the plugin is told.
  virtual Status Validate(const std::string& name, const std::string& endpoint,
                          const std::vector<std::string>& versions) = 0;
  // Registers it: its service is at `endpoint`.
  virtual Status Register(const std::string& name, const std::string& endpoint) = 0;
  virtual void Deregister(const std::string& name, const std::string& endpoint) = 0;
  // The name a plugin registered without a socket says it has (a CSI driver's GetPluginInfo).
  virtual StatusOr<std::string> NameOf(const std::string& endpoint) = 0;
};

struct PluginWatcherOptions {
  std::string dir;                         // <root-dir>/plugins_registry
  std::vector<std::string> direct;         // CSI endpoints registered without a socket
  std::chrono::milliseconds resync{1000};  // a pass at least this often
  std::chrono::milliseconds call_timeout{10'000};
  std::chrono::milliseconds max_backoff{30'000};
};

class PluginWatcher {
 public:
  PluginWatcher(PluginWatcherOptions options, PluginHandler& csi);
  ~PluginWatcher();

  // Creates the directory and starts watching it.
  Status Start();
  void Stop();
  // One pass, on the caller's thread.
  void SyncOnceForTest() { Sync(); }

 private:
  struct Registered {
    std::string name;
    std::string endpoint;
    std::string identity;  // the socket's inode and change time: a new socket is a new plugin
  };
  struct Retry {
    std::chrono::steady_clock::time_point at;
    std::chrono::milliseconds delay{0};
  };
  void Run();
  void Sync();
  // Registers the plugin at a registration socket; the error also goes to the plugin.
  Status RegisterSocket(const std::string& socket, Registered* out);
  Status RegisterDirect(const std::string& endpoint, Registered* out);
  // Whether `key` may be tried now; after a failure, when it may be tried next.
  bool Due(const std::string& key) const;
  void Failed(const std::string& key, const Status& s);

  const PluginWatcherOptions options_;
  PluginHandler& csi_;
  std::map<std::string, Registered> registered_;  // by socket path, or endpoint when direct
  std::map<std::string, Retry> retries_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int inotify_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
};

}  // namespace kvol::node::pluginwatcher
