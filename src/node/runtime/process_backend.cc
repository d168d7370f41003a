// The built-in backend: runs as process trees of the node's own binaries.
#include "node/runtime/process_backend.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "node/runtime/config.h"
#include "node/runtime/security.h"
#include "os/exec.h"
#include "os/files.h"

namespace kvol::node::runtime {
namespace fs = std::filesystem;

namespace {

std::optional<int> ReadInt(const fs::path& p) {
  std::string s;
  if (!os::ReadFile(p.string(), &s).ok() || s.empty()) return std::nullopt;
  try {
    return std::stoi(s);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The container inits running on this node, by the spec file they were started with
// (`kvol container-init <bundle>/spec.json`), for bundles under `containers_dir`. Only
// processes of `init_binary` (or of the binary it replaced) in this PID namespace count: a
// process of a container, or of another user, showing the same command line is not one.
std::map<std::string, pid_t> RunningInits(const std::string& containers_dir,
                                          const std::string& init_binary) {
  std::map<std::string, pid_t> out;
  std::error_code ec;
  const auto own_ns = fs::read_symlink("/proc/self/ns/pid", ec);
  for (fs::directory_iterator p("/proc", ec), end; !ec && p != end; p.increment(ec)) {
    const std::string name = p->path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream in(p->path() / "cmdline");
    std::vector<std::string> args;
    for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
    if (args.size() != 3 || args[1] != "container-init" ||
        args[2].rfind(containers_dir + "/", 0) != 0) {
      continue;
    }
    std::error_code ec2;
    const std::string exe = fs::read_symlink(p->path() / "exe", ec2).string();
    if (exe != init_binary && exe != init_binary + " (deleted)") continue;
    if (fs::read_symlink(p->path() / "ns" / "pid", ec2) != own_ns) continue;
    out[args[2]] = static_cast<pid_t>(std::stol(name));
  }
  return out;
}

// How a run ended, by its exit code (128+N after signal N), as kubelet reports it.
api::ContainerStateTerminated Ended(int code) {
  api::ContainerStateTerminated t;
  t.exit_code = code;
  t.reason = code == 0 ? "Completed" : "Error";
  return t;
}

// The run's number in its id "kvol://<uid>/<container>/<run>".
std::string RunNumber(const std::string& id) { return id.substr(id.rfind('/') + 1); }

}  // namespace

ProcessBackend::~ProcessBackend() {
  for (auto& [id, p] : procs_) {
    if (p.pidfd >= 0) close(p.pidfd);
  }
}

StartResult ProcessBackend::Start(const Launch& l) {
  auto fail = [](std::string reason, const Status& s) {
    return StartResult{.failure = StartFailure{.reason = std::move(reason),
                                               .message = s.message(),
                                               .event_message = "Error: " + s.message()}};
  };
  auto security = PlanSecurity(l.pod, l.spec, KernelLastCapability());
  if (!security.ok()) {
    return fail(security.status().code() == StatusCode::kInvalidArgument
                    ? "CreateContainerConfigError"
                    : "CreateContainerError",
                security.status());
  }
  const bool stand_in = l.spec.command.empty() && l.spec.args.empty();
  ContainerSpec cs;
  cs.bundle_dir = l.bundle;
  cs.hostname = l.pod.metadata.name;
  cs.argv = ContainerArgv(l.spec, l.env, {options_.init_binary, "pause"});
  cs.stand_in = stand_in;
  cs.env = l.env;
  cs.working_dir = l.spec.working_dir;
  cs.mounts = l.mounts;
  cs.log_path = l.bundle + "/" + std::to_string(l.run) + ".log";
  cs.security = *std::move(security);
  cs.hidden_paths = options_.hidden_paths;
  // A new run starts from a fresh writable layer.
  std::error_code ec;
  fs::remove_all(fs::path(l.bundle) / "upper", ec);
  fs::remove_all(fs::path(l.bundle) / "work", ec);
  auto pid = runtime::StartContainer(cs, options_.init_binary);
  if (!pid.ok()) return fail("RunContainerError", pid.status());
  const std::string id =
      "kvol://" + l.pod.metadata.uid + "/" + l.spec.name + "/" + std::to_string(l.run);
  procs_[id] = {.bundle = l.bundle, .init_pid = *pid, .pidfd = os::PidFdOpen(*pid)};
  if (l.run == 0 && l.event) {
    l.event("Normal", "ImageNotPulled",
            "Container image \"" + l.spec.image +
                "\" is not pulled: kvol runs the node's own binaries" +
                (stand_in ? " (no command given: it runs \"kvol pause\", which waits to be stopped)"
                          : ""));
  }
  return {.id = id, .image_id = "kvol.io/node-binaries"};
}

std::optional<api::ContainerStateTerminated> ProcessBackend::Exited(const std::string& id) {
  auto it = procs_.find(id);
  if (it == procs_.end()) return Ended(137);  // not ours to know: lost with its init
  Proc& p = it->second;
  if (p.pidfd >= 0) {
    pollfd fd{p.pidfd, POLLIN, 0};
    if (poll(&fd, 1, 0) <= 0) return std::nullopt;
  }
  int code = 137;  // killed with its init, which had no time to say
  if (p.ours) {
    int status = 0;
    const pid_t reaped = waitpid(p.init_pid, &status, WNOHANG);
    if (reaped == 0) return std::nullopt;  // no pidfd to say so: still running
    if (reaped == p.init_pid) {
      if (WIFEXITED(status)) code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) code = 128 + WTERMSIG(status);
    }
  } else {
    code = ReadInt(fs::path(p.bundle) / kExitFile).value_or(137);
  }
  if (p.pidfd >= 0) close(p.pidfd);
  procs_.erase(it);
  return Ended(code);
}

void ProcessBackend::Terminate(const std::string& id, std::chrono::seconds grace) {
  static_cast<void>(grace);  // the runtime calls Kill when it is over
  auto it = procs_.find(id);
  if (it == procs_.end()) return;
  // SIGTERM to the container's PID 1, as a runtime does; it may ignore it.
  if (auto pid1 = ReadInt(fs::path(it->second.bundle) / kPidFile)) kill(*pid1, SIGTERM);
}

void ProcessBackend::Kill(const std::string& id) {
  // SIGKILL to the init's process group: the init and the container's PID 1, whose end takes
  // every process of its PID namespace with it.
  auto it = procs_.find(id);
  if (it != procs_.end() && it->second.init_pid > 0) kill(-it->second.init_pid, SIGKILL);
}

int ProcessBackend::WaitFd(const std::string& id) const {
  auto it = procs_.find(id);
  return it == procs_.end() ? -1 : it->second.pidfd;
}

void ProcessBackend::BeginAdopt() {
  inits_ = RunningInits(options_.containers_dir, options_.init_binary);
}

FoundRun ProcessBackend::Adopt(const std::string& uid, const std::string& container,
                               const std::string& bundle, int run, const std::string& id) {
  FoundRun found{.id = id.empty() ? "kvol://" + uid + "/" + container + "/" + std::to_string(run)
                                  : id};
  auto init = inits_.find(bundle + "/spec.json");
  if (init != inits_.end()) {
    Proc p{.bundle = bundle, .init_pid = init->second, .ours = false};
    p.pidfd = os::PidFdOpen(p.init_pid);
    inits_.erase(init);
    if (p.pidfd >= 0) {
      procs_[found.id] = p;
      return found;
    }
    // Alive but not watchable (no descriptor left): ended here rather than counted as gone
    // while it runs, which would start it a second time on the same bundle.
    if (errno != ESRCH) kill(-p.init_pid, SIGKILL);
  }
  // The init writes the pid file once it runs and the exit file when it ends; StartContainer
  // removes both before it spawns the init. Neither there: the init was never spawned.
  std::error_code ec;
  if (!fs::exists(fs::path(bundle) / kPidFile, ec) &&
      !fs::exists(fs::path(bundle) / kExitFile, ec)) {
    found.never_started = true;
    return found;
  }
  found.ended = Ended(ReadInt(fs::path(bundle) / kExitFile).value_or(137));
  return found;
}

void ProcessBackend::EndAdopt(const std::set<std::string>& claimed) {
  static_cast<void>(claimed);  // every init a record claims was taken by Adopt
  // A process no record claims is killed, so that none outlives its pod.
  for (const auto& [spec, pid] : inits_) {
    log::Warn("pod runtime: killing container process " + std::to_string(pid) + " (" + spec +
              "), which no container record claims");
    kill(-pid, SIGKILL);
  }
  inits_.clear();
}

std::string ProcessBackend::LogPath(const PodName& pod, const std::string& container,
                                    const std::string& bundle, int run) const {
  static_cast<void>(pod);
  static_cast<void>(container);
  return bundle + "/" + std::to_string(run) + ".log";
}

void ProcessBackend::Discard(const std::string& id) {
  // "kvol://<uid>/<container>/<run>": the run's log goes (the bundle stays for the next run).
  if (id.rfind("kvol://", 0) != 0) return;
  const std::string rest = id.substr(std::string_view("kvol://").size());
  std::error_code ec;
  fs::remove(fs::path(options_.containers_dir) /
                 (rest.substr(0, rest.rfind('/')) + "/" + RunNumber(id) + ".log"),
             ec);
}

StatusOr<std::unique_ptr<ExecStream>> ProcessBackend::Exec(const std::string& id,
                                                           const std::string& bundle,
                                                           const std::vector<std::string>& argv,
                                                           bool stdin, bool tty) {
  static_cast<void>(id);
  // `kvol container-exec` joins the namespaces of the container's PID 1, as the node sees it.
  auto pid = ReadInt(fs::path(bundle) / kPidFile);
  if (!pid) return FailedPreconditionError("container not running");
  KVOL_ASSIGN_OR_RETURN(auto session,
                        ExecSession::Start(options_.init_binary, *pid, argv, stdin, tty));
  return std::unique_ptr<ExecStream>(std::move(session));
}

}  // namespace kvol::node::runtime
