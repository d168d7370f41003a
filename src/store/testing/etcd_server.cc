// Starting and stopping a test etcd.
#include "store/testing/etcd_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "store/etcd_store.h"

namespace kvol::store::testing {
namespace {

class EtcdProcess {
 public:
  ~EtcdProcess() { Stop(); }

  Status Start() {
    const char* candidates[] = {"/usr/bin/etcd", "/usr/local/bin/etcd"};
    std::string binary;
    for (const char* c : candidates) {
      if (access(c, X_OK) == 0) binary = c;
    }
    if (binary.empty()) return FailedPreconditionError("etcd is not installed (package etcd-server)");

    std::string tmpl = (std::filesystem::temp_directory_path() / "kvol-etcd-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return InternalError("mkdtemp failed");
    dir_ = tmpl;
    const int client = FreeLoopbackPort();
    const int peer = FreeLoopbackPort();
    endpoint_ = "127.0.0.1:" + std::to_string(client);
    const std::string client_url = "http://" + endpoint_;
    const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
    std::vector<std::string> args = {
        binary, "--name", "kvol-test", "--data-dir", dir_ + "/data",
        "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
        "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", "kvol-test=" + peer_url, "--log-level", "warn"};
    const std::string log = dir_ + "/etcd.log";

    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) return InternalError("fork failed");
    if (pid_ == 0) {
      // Die with the test process, whatever way it ends.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }

    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      // A fresh client each time: gRPC backs off reconnecting a channel that was refused.
      auto store = OpenEtcdStore({{endpoint_}, 500});
      if (!store.ok()) return store.status();
      if ((*store)->CurrentRevision().ok()) return OkStatus();
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return UnavailableError("etcd exited during start-up: " + ReadLog());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return UnavailableError("etcd did not answer within 30 s: " + ReadLog());
  }

  const std::string& endpoint() const { return endpoint_; }

 private:
  std::string ReadLog() const {
    std::ifstream in(dir_ + "/etcd.log");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
  }

  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 50; ++i) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
      }
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  pid_t pid_ = -1;
  std::string dir_;
  std::string endpoint_;
};

}  // namespace

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

StatusOr<std::string> SharedEtcdServer() {
  static std::mutex mu;
  static EtcdProcess* server = nullptr;  // stopped by its destructor at exit
  static Status started = UnavailableError("not started");
  static EtcdProcess instance;
  std::lock_guard lock(mu);
  if (server == nullptr) {
    server = &instance;
    started = instance.Start();
  }
  if (!started.ok()) return started;
  return instance.endpoint();
}

}  // namespace kvol::store::testing
