// Starting a container: the spec on disk, the init process, and the init's own work.
#include "node/runtime/container.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/codec.h"
#include "node/runtime/confine.h"
#include "node/runtime/init_error.h"
#include "node/runtime/rootfs.h"
#include "os/exec.h"
#include "os/spawn.h"

extern char** environ;

namespace kvol::node::runtime {
namespace fs = std::filesystem;

namespace {

// Inside the container's PID namespace, as its PID 1: namespaces of its own, the root, the
// plan's confinement, exec.
int ContainerMain(const ContainerSpec& spec) {
  // Until it execs (which makes it dumpable again), no container process may ptrace it.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return InitFailure("set undumpable");
  if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC) != 0) return InitFailure("unshare");
  // Mounts made from here on stay in the container's mount namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return InitFailure("make mounts private");
  }
  if (int rc = MakeRoot(spec, PlanMounts(spec)); rc != 0) return rc;
  if (sethostname(spec.hostname.data(), spec.hostname.size()) != 0) {
    return InitFailure("sethostname");
  }
  if (int rc = EnterRoot(spec.bundle_dir + "/rootfs"); rc != 0) return rc;
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  if (int rc = Confine(spec.security, spec.working_dir); rc != 0) return rc;
  // Never exec'd, PID 1 stays undumpable (set before the root was entered): no process of the
  // container may ptrace it or read its memory, which holds the node's view.
  if (spec.stand_in) return Pause();
  environ = envp.data();  // execvp looks PATH up in the container's environment
  execvp(argv[0], argv.data());
  return InitFailure("exec " + spec.argv[0]);
}

// The spec a running container's init was started with: its PID 1's parent is the init,
// `kvol container-init <bundle>/spec.json`.
StatusOr<ContainerSpec> SpecOfRunning(pid_t pid1) {
  std::ifstream status("/proc/" + std::to_string(pid1) + "/status");
  std::string line;
  pid_t init = 0;
  while (std::getline(status, line)) {
    if (line.rfind("PPid:", 0) == 0) init = static_cast<pid_t>(std::atoi(line.c_str() + 5));
  }
  std::ifstream cmdline("/proc/" + std::to_string(init) + "/cmdline");
  std::vector<std::string> args;
  for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
  if (init <= 0 || args.size() != 3 || args[1] != "container-init") {
    return NotFoundError("no container with PID 1 " + std::to_string(pid1));
  }
  std::ifstream in(args[2]);
  std::stringstream text;
  text << in.rdbuf();
  return SpecFromJson(text.str());
}

}  // namespace

void WriteBundleFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::trunc) << text;
  std::rename(tmp.c_str(), path.c_str());
}

std::string SpecToJson(const ContainerSpec& s) {
  api::Json j;
  j["bundleDir"] = s.bundle_dir;
  j["hostname"] = s.hostname;
  j["argv"] = s.argv;
  j["standIn"] = s.stand_in;
  j["env"] = s.env;
  j["workingDir"] = s.working_dir;
  j["logPath"] = s.log_path;
  j["mounts"] = api::Json::array();
  for (const auto& m : s.mounts) {
    j["mounts"].push_back({{"source", m.source},
                           {"target", m.target},
                           {"readOnly", m.read_only},
                           {"within", m.within}});
  }
  const SecurityPlan& p = s.security;
  j["security"] = {{"privileged", p.privileged},
                   {"capabilities", p.capabilities},
                   {"noNewPrivs", p.no_new_privs},
                   {"seccomp", p.seccomp == SeccompMode::kRuntimeDefault ? "RuntimeDefault"
                                                                         : "Unconfined"},
                   {"uid", p.uid},
                   {"gid", p.gid},
                   {"supplementalGroups", p.supplemental_groups},
                   {"readOnlyRoot", p.read_only_root},
                   {"maskedPaths", p.masked_paths},
                   {"readOnlyPaths", p.read_only_paths}};
  j["hiddenPaths"] = s.hidden_paths;
  return j.dump();
}

StatusOr<ContainerSpec> SpecFromJson(std::string_view text) {
  KVOL_ASSIGN_OR_RETURN(api::Json j, api::ParseJson(text));
  try {
    ContainerSpec s;
    s.bundle_dir = j.at("bundleDir").get<std::string>();
    s.hostname = j.at("hostname").get<std::string>();
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.stand_in = j.value("standIn", false);
    s.env = j.at("env").get<std::vector<std::string>>();
    s.working_dir = j.at("workingDir").get<std::string>();
    s.log_path = j.at("logPath").get<std::string>();
    for (const auto& m : j.at("mounts")) {
      s.mounts.push_back({m.at("source").get<std::string>(), m.at("target").get<std::string>(),
                          m.at("readOnly").get<bool>(), m.value("within", "")});
    }
    // A container started by a kvol before security plans has none: kubectl exec into it runs
    // with the default plan (no capabilities, no_new_privs, the runtime default filter).
    if (!j.contains("security")) return s;
    const api::Json& sec = j.at("security");
    SecurityPlan& p = s.security;
    p.privileged = sec.at("privileged").get<bool>();
    p.capabilities = sec.at("capabilities").get<std::vector<int>>();
    p.no_new_privs = sec.at("noNewPrivs").get<bool>();
    p.seccomp = sec.at("seccomp").get<std::string>() == "Unconfined" ? SeccompMode::kUnconfined
                                                                     : SeccompMode::kRuntimeDefault;
    p.uid = sec.at("uid").get<uint32_t>();
    p.gid = sec.at("gid").get<uint32_t>();
    p.supplemental_groups = sec.at("supplementalGroups").get<std::vector<uint32_t>>();
    p.read_only_root = sec.at("readOnlyRoot").get<bool>();
    p.masked_paths = sec.at("maskedPaths").get<std::vector<std::string>>();
    p.read_only_paths = sec.at("readOnlyPaths").get<std::vector<std::string>>();
    s.hidden_paths = j.value("hiddenPaths", std::vector<std::string>{});
    return s;
  } catch (const api::Json::exception& e) {
    return InvalidArgumentError(std::string("container spec: ") + e.what());
  }
}

StatusOr<pid_t> StartContainer(const ContainerSpec& spec, const std::string& init_binary) {
  if (spec.argv.empty()) return InvalidArgumentError("container has no command");
  for (const auto& m : spec.mounts) {
    if (m.target.empty() || m.target.front() != '/') {
      return InvalidArgumentError("mount target \"" + m.target + "\" must be absolute");
    }
    if (("/" + m.target + "/").find("/../") != std::string::npos) {
      return InvalidArgumentError("mount target \"" + m.target + "\" must not contain '..'");
    }
  }
  std::error_code ec;
  for (const char* d : {"upper", "work", "rootfs"}) {
    fs::create_directories(fs::path(spec.bundle_dir) / d, ec);
    if (ec) return InternalError("mkdir " + spec.bundle_dir + "/" + d + ": " + ec.message());
  }
  for (std::string_view f : {kPidFile, kExitFile}) fs::remove(fs::path(spec.bundle_dir) / f, ec);
  const std::string spec_path = spec.bundle_dir + "/spec.json";
  {
    std::ofstream out(spec_path, std::ios::trunc);
    out << SpecToJson(spec);
    if (!out) return InternalError("write " + spec_path);
  }
  pid_t pid = 0;
  const int rc = os::SpawnLogged({init_binary, "container-init", spec_path}, spec.log_path, &pid);
  if (rc != 0) return InternalError("start " + init_binary + ": " + std::strerror(rc));
  return pid;
}

int RunContainerInit(const ContainerSpec& spec) {
  // The init itself stays in the node's namespaces (it writes the bundle's files); its child
  // is PID 1 of a new PID namespace and makes the others.
  if (unshare(CLONE_NEWPID) != 0) return InitFailure("unshare");
  pid_t child = fork();
  if (child < 0) return InitFailure("fork");
  if (child == 0) {
    // The container does not outlive its init (killing the init kills the container).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    _exit(ContainerMain(spec));
  }
  WriteBundleFile(spec.bundle_dir + "/" + std::string(kPidFile), std::to_string(child));
  // A signal to the init goes to the container (its PID 1 dies on SIGKILL; on SIGTERM only if
  // it handles it, as in any container runtime).
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, SIG_IGN);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return InitFailure("wait");
  }
  int code = 1;
  if (WIFEXITED(status)) code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) code = 128 + WTERMSIG(status);
  WriteBundleFile(spec.bundle_dir + "/" + std::string(kExitFile), std::to_string(code));
  return code;
}

int Pause() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { _exit(0); };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  while (true) pause();
}

int RunInContainer(pid_t pid, const std::vector<std::string>& argv, bool tty) {
  if (argv.empty()) {
    std::fprintf(stderr, "kvol: exec: no command\n");
    return 127;
  }
  const std::string proc = "/proc/" + std::to_string(pid);
  auto spec = SpecOfRunning(pid);
  if (!spec.ok()) {
    std::fprintf(stderr, "kvol: exec: %s\n", spec.status().message().c_str());
    return 127;
  }
  std::vector<std::string> env;
  {
    std::ifstream in(proc + "/environ");
    std::string entry;
    while (std::getline(in, entry, '\0')) env.push_back(entry);
  }
  // Undumpable until the command is exec'd: a container process cannot ptrace this one (or
  // the child below) while it still holds the node's capabilities or before its filter loads.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return InitFailure("set undumpable");
  int root = open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return InitFailure("open the container's root");
  // The mount namespace last: the others are named through this one's /proc.
  for (const char* ns : {"ipc", "uts", "pid", "mnt"}) {
    int fd = open((proc + "/ns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, 0) != 0) {
      return InitFailure(std::string("join the container's ") + ns + " namespace");
    }
    close(fd);
  }
  if (fchdir(root) != 0 || chroot(".") != 0 || chdir("/") != 0) {
    return InitFailure("enter the container's root");
  }
  close(root);
  pid_t child = fork();  // in the container's PID namespace
  if (child < 0) return InitFailure("fork");
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (tty) {
      setsid();
      ioctl(0, TIOCSCTTY, 0);
    }
    if (int rc = Confine(spec->security, spec->working_dir); rc != 0) _exit(rc);
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    environ = envp.data();
    execvp(args[0], args.data());
    std::fprintf(stderr, "exec: \"%s\": %s\n", argv[0].c_str(),
                 errno == ENOENT ? "executable file not found in $PATH" : std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  for (int sig : {SIGINT, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return InitFailure("wait");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace kvol::node::runtime
