#include "client/testing/kvol_process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace kvol::client::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& s, size_t n = 2000) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

}  // namespace

StatusOr<std::unique_ptr<KvolProcess>> KvolProcess::Start(std::string binary,
                                                          std::vector<std::string> args,
                                                          std::string log_path,
                                                          std::string ready_line,
                                                          std::chrono::milliseconds timeout) {
  std::unique_ptr<KvolProcess> p(new KvolProcess);
  p->log_path_ = log_path;
  std::vector<char*> argv;
  argv.push_back(binary.data());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return InternalError("cannot open " + log_path);
  p->pid_ = fork();
  if (p->pid_ < 0) {
    close(fd);
    return InternalError("fork failed");
  }
  if (p->pid_ == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fd);
  if (ready_line.empty()) return p;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string log = ReadFile(log_path);
    if (log.find(ready_line) != std::string::npos) return p;
    if (!p->Running()) return UnavailableError(binary + " exited before it was ready:\n" + Tail(log));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return DeadlineExceededError(binary + " was not ready in time:\n" + Tail(ReadFile(log_path)));
}

KvolProcess::~KvolProcess() { Kill9(); }

bool KvolProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void KvolProcess::Kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

int KvolProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

StatusOr<std::unique_ptr<HttpClient>> ClientFromKubeconfig(const std::string& kubeconfig) {
  auto cfg = LoadKubeconfig(kubeconfig);
  if (!cfg.ok()) return cfg.status();
  cfg->max_idle_connections = 64;
  return HttpClient::Create(*std::move(cfg));
}

StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) return InternalError("mkdtemp failed");
  return tmpl;
}

}  // namespace kvol::client::testing
