// Containerd: kvol's own containerd, configured, started, waited for and stopped.
#include "node/runtime/cri/containerd.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

#include "node/runtime/cri/cri_client.h"
#include "os/spawn.h"

namespace kvol::node::cri {
namespace fs = std::filesystem;
namespace {

// A TOML basic string.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += all[i] + "\n";
  }
  return out;
}

// Whether `pid` (our child) has exited, reaping it; waits up to `wait`.
bool Exited(pid_t pid, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A containerd an earlier process started on the same directory and left behind when it was
// killed (it holds the socket and the store's lock): asked to stop, then killed. Its
// containers' shims stay, and the new containerd finds them.
void StopLeftover(const std::string& pid_file, const std::string& config) {
  std::ifstream in(pid_file);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 1) return;
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  if (args.find(std::string("--config") + '\0' + config + '\0') == std::string::npos) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 500 && kill(pid, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (kill(pid, 0) == 0) kill(pid, SIGKILL);
  for (int i = 0; i < 250 && kill(pid, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::string Containerd::Config(const ContainerdOptions& o) {
  std::ostringstream c;
  c << "version = 2\n"
    << "root = " << Quote(o.dir + "/root") << "\n"
    << "state = " << Quote(o.dir + "/state") << "\n"
    << "[grpc]\n"
    << "  address = " << Quote(o.dir + "/containerd.sock") << "\n"
    << "[plugins.\"io.containerd.grpc.v1.cri\"]\n";
  if (!o.sandbox_image.empty()) c << "  sandbox_image = " << Quote(o.sandbox_image) << "\n";
  // Containers' OOM scores are never set below containerd's own: where kvol itself runs in a
  // container, the kernel refuses the lower scores kubelet asks for (-998 for sandboxes), and
  // every sandbox would fail to start.
  c << "  restrict_oom_score_adj = true\n";
  // Pods have their own network only when a CNI configuration is put in <dir>/cni; until then
  // the runtime reports NetworkReady false and pods use the node's network.
  c << "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
    << "  bin_dir = " << Quote(o.cni_bin_dir) << "\n"
    << "  conf_dir = " << Quote(o.dir + "/cni") << "\n";
  return c.str();
}

StatusOr<std::unique_ptr<Containerd>> Containerd::Start(const ContainerdOptions& o,
                                                        std::chrono::milliseconds timeout) {
  if (o.dir.empty() || o.dir.front() != '/') {
    return InvalidArgumentError("containerd directory \"" + o.dir + "\" must be absolute");
  }
  std::error_code ec;
  fs::create_directories(o.dir + "/cni", ec);
  if (ec) return InternalError("mkdir " + o.dir + "/cni: " + ec.message());
  const std::string config = o.dir + "/config.toml";
  {
    std::ofstream out(config, std::ios::trunc);
    out << Config(o);
    if (!out) return InternalError("write " + config);
  }
  std::unique_ptr<Containerd> c(new Containerd());
  c->socket_ = o.dir + "/containerd.sock";
  c->log_file_ = o.log_file.empty() ? o.dir + "/containerd.log" : o.log_file;

  const std::string pid_file = o.dir + "/containerd.pid";
  StopLeftover(pid_file, config);
  const int rc = os::SpawnLogged({o.binary, "--config", config}, c->log_file_, &c->pid_);
  if (rc != 0) {
    c->pid_ = -1;
    return NotFoundError("cannot start " + o.binary + ": " + std::strerror(rc));
  }
  {
    std::ofstream out(pid_file, std::ios::trunc);
    out << c->pid_ << "\n";
  }

  KVOL_ASSIGN_OR_RETURN(auto client, Client::New(c->endpoint()));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (Exited(c->pid_, std::chrono::milliseconds(0))) {
      c->pid_ = -1;
      return UnavailableError("containerd exited at start:\n" + Tail(c->log_file_, 10));
    }
    if (access(c->socket_.c_str(), F_OK) == 0 &&
        client
            ->Call(&pb::RuntimeService::Stub::Version, pb::VersionRequest(),
                   std::chrono::seconds(1))
            .ok()) {
      return c;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("containerd did not answer on " + c->socket_ + " within " +
                                   std::to_string(timeout.count()) + " ms:\n" +
                                   Tail(c->log_file_, 10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status Containerd::Stop(std::chrono::milliseconds grace) {
  if (pid_ < 0) return OkStatus();
  kill(pid_, SIGTERM);
  if (!Exited(pid_, grace)) {
    kill(pid_, SIGKILL);
    Exited(pid_, std::chrono::seconds(10));
  }
  pid_ = -1;
  return OkStatus();
}

Containerd::~Containerd() { static_cast<void>(Stop(std::chrono::seconds(10))); }

}  // namespace kvol::node::cri
