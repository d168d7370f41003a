// PluginWatcher: inotify wakes a pass early; each pass lists the directory's sockets.
#include "node/pluginwatcher/plugin_watcher.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/log.h"
#include "csi/client.h"
#include "csi/proto/pluginregistration.grpc.pb.h"

namespace kvol::node::pluginwatcher {
namespace {

namespace fs = std::filesystem;
namespace reg = ::pluginregistration;

// The sockets in `dir` and below, with what identifies each.
std::map<std::string, std::string> Sockets(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    out[it->path().string()] = std::to_string(st.st_ino) + "/" + std::to_string(st.st_ctim.tv_sec) +
                               "." + std::to_string(st.st_ctim.tv_nsec);
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

PluginWatcher::PluginWatcher(PluginWatcherOptions options, PluginHandler& csi)
    : options_(std::move(options)), csi_(csi) {}

PluginWatcher::~PluginWatcher() { Stop(); }

Status PluginWatcher::Start() {
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec) return InternalError("cannot create " + options_.dir + ": " + ec.message());
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (inotify_fd_ < 0 || wake_fd_ < 0) {
    return InternalError(std::string("cannot watch plugins: ") + std::strerror(errno));
  }
  if (inotify_add_watch(inotify_fd_, options_.dir.c_str(),
                        IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB) < 0) {
    return InternalError("cannot watch " + options_.dir + ": " + std::strerror(errno));
  }
  thread_ = std::thread([this] { Run(); });
  return OkStatus();
}

void PluginWatcher::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : {inotify_fd_, wake_fd_}) {
    if (fd >= 0) close(fd);
  }
  inotify_fd_ = wake_fd_ = -1;
}

void PluginWatcher::Run() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    Sync();
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    poll(fds, 2, static_cast<int>(options_.resync.count()));
    char buf[4096];
    while (read(inotify_fd_, buf, sizeof buf) > 0) {
    }
  }
}

bool PluginWatcher::Due(const std::string& key) const {
  auto it = retries_.find(key);
  return it == retries_.end() || std::chrono::steady_clock::now() >= it->second.at;
}

void PluginWatcher::Failed(const std::string& key, const Status& s) {
  Retry& r = retries_[key];
  r.delay = r.delay.count() == 0 ? std::chrono::milliseconds(500)
                                 : std::min(r.delay * 2, options_.max_backoff);
  r.at = std::chrono::steady_clock::now() + r.delay;
  log::Warn("plugin registration of " + key + " failed (next try in " +
            std::to_string(r.delay.count()) + " ms): " + s.message());
}

void PluginWatcher::Sync() {
  const auto sockets = Sockets(options_.dir);
  // What went, or was replaced by a new socket of the same path.
  for (auto it = registered_.begin(); it != registered_.end();) {
    if (it->second.identity.empty()) {
      ++it;  // direct: stays for the agent's life
      continue;
    }
    auto s = sockets.find(it->first);
    if (s != sockets.end() && s->second == it->second.identity) {
      ++it;
      continue;
    }
    log::Info("plugin " + it->second.name + " deregistered: its socket " + it->first + " went");
    csi_.Deregister(it->second.name, it->second.endpoint);
    it = registered_.erase(it);
  }
  for (const auto& [path, identity] : sockets) {
    if (registered_.contains(path) || !Due(path)) continue;
    Registered r{.identity = identity};
    if (Status s = RegisterSocket(path, &r); !s.ok()) {
      Failed(path, s);
      continue;
    }
    retries_.erase(path);
    registered_[path] = r;
  }
  for (const auto& endpoint : options_.direct) {
    if (registered_.contains(endpoint) || !Due(endpoint)) continue;
    Registered r;
    if (Status s = RegisterDirect(endpoint, &r); !s.ok()) {
      Failed(endpoint, s);
      continue;
    }
    retries_.erase(endpoint);
    registered_[endpoint] = r;
  }
}

Status PluginWatcher::RegisterSocket(const std::string& socket, Registered* out) {
  auto channel = grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials());
  auto stub = reg::Registration::NewStub(channel);
  auto deadline = [&] { return std::chrono::system_clock::now() + options_.call_timeout; };
  reg::PluginInfo info;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline());
    if (grpc::Status s = stub->GetInfo(&ctx, reg::InfoRequest(), &info); !s.ok()) {
      return csi::FromGrpc(s);
    }
  }
  Status result;
  if (info.type() != kCSIPlugin) {
    result = InvalidArgumentError("no handler registered for plugin type: " + info.type());
  } else {
    out->name = info.name();
    // A plugin that names no endpoint serves at its registration socket.
    out->endpoint = info.endpoint().empty() ? socket : info.endpoint();
    std::vector<std::string> versions(info.supported_versions().begin(),
                                      info.supported_versions().end());
    result = csi_.Validate(out->name, out->endpoint, versions);
    if (result.ok()) result = csi_.Register(out->name, out->endpoint);
    if (result.ok()) {
      log::Info("plugin " + out->name + " registered from " + socket + " (versions " +
                Join(versions) + ", endpoint " + out->endpoint + ")");
    }
  }
  reg::RegistrationStatus status;
  status.set_plugin_registered(result.ok());
  if (!result.ok()) status.set_error(result.message());
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline());
  reg::RegistrationStatusResponse ignored;
  if (grpc::Status s = stub->NotifyRegistrationStatus(&ctx, status, &ignored); !s.ok()) {
    log::Warn("plugin " + out->name + " at " + socket +
              " was not told of its registration: " + csi::FromGrpc(s).message());
  }
  return result;
}

Status PluginWatcher::RegisterDirect(const std::string& endpoint, Registered* out) {
  KVOL_ASSIGN_OR_RETURN(out->name, csi_.NameOf(endpoint));
  out->endpoint = endpoint;
  KVOL_RETURN_IF_ERROR(csi_.Register(out->name, endpoint));
  log::Info("CSI driver " + out->name + " registered at " + endpoint + " (--csi-driver)");
  return OkStatus();
}

}  // namespace kvol::node::pluginwatcher
