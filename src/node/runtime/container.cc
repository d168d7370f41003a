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

#include "api/codec.h"
#include "os/exec.h"

extern char** environ;

namespace kvol::node::runtime {
namespace fs = std::filesystem;

namespace {

// Reports a failed step on stderr (the container's log) and returns the exit code.
int Fail(const std::string& what) {
  std::fprintf(stderr, "kvol: container init: %s: %s\n", what.c_str(), std::strerror(errno));
  return 127;
}

bool Mount(const std::string& source, const std::string& target, const char* type,
           unsigned long flags, const char* data) {
  return mount(source.empty() ? nullptr : source.c_str(), target.c_str(), type, flags, data) == 0;
}

// /dev with the usual character devices bound from the node's, /dev/shm, and a devpts of the
// container's own (/dev/pts, /dev/ptmx), where `kubectl exec -t` gets its terminal.
int SetUpDev(const std::string& root) {
  const std::string dev = root + "/dev";
  fs::create_directories(dev);
  if (!Mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755")) return Fail("mount /dev");
  for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"}) {
    const std::string target = dev + "/" + name;
    int fd = open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) close(fd);
    if (!Mount(std::string("/dev/") + name, target, nullptr, MS_BIND, nullptr)) {
      return Fail(std::string("bind /dev/") + name);
    }
  }
  fs::create_directories(dev + "/shm");
  if (!Mount("shm", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")) {
    return Fail("mount /dev/shm");
  }
  fs::create_directories(dev + "/pts");
  if (!Mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
             "newinstance,ptmxmode=0666,mode=0620")) {
    return Fail("mount /dev/pts");
  }
  std::error_code ec;
  fs::create_symlink("pts/ptmx", dev + "/ptmx", ec);
  fs::create_symlink("/proc/self/fd", dev + "/fd", ec);
  fs::create_symlink("/proc/self/fd/0", dev + "/stdin", ec);
  fs::create_symlink("/proc/self/fd/1", dev + "/stdout", ec);
  fs::create_symlink("/proc/self/fd/2", dev + "/stderr", ec);
  return 0;
}

// `path` (absolute, below `base`) opened O_PATH from `base` one component at a time, refusing
// any symlink; -1 (errno set) when a component is missing, a symlink, or outside `base`.
int OpenWithin(const std::string& base, const std::string& path) {
  if (path.compare(0, base.size(), base) != 0 ||
      (path.size() > base.size() && path[base.size()] != '/')) {
    errno = EXDEV;
    return -1;
  }
  int fd = open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  const std::string rest = path.substr(base.size());
  for (size_t start = 0; start < rest.size();) {
    size_t end = rest.find('/', start);
    if (end == std::string::npos) end = rest.size();
    const std::string part = rest.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      close(fd);
      errno = EXDEV;
      return -1;
    }
    int next = openat(fd, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    close(fd);
    if (next < 0) return -1;
    struct stat st;
    if (fstat(next, &st) != 0 || S_ISLNK(st.st_mode)) {
      close(next);
      errno = ELOOP;
      return -1;
    }
    fd = next;
  }
  return fd;
}

// Inside the new namespaces, as PID 1: build the root and exec.
int ContainerMain(const ContainerSpec& spec) {
  const std::string root = spec.bundle_dir + "/rootfs";
  const std::string opts =
      "lowerdir=/,upperdir=" + spec.bundle_dir + "/upper,workdir=" + spec.bundle_dir + "/work";
  if (!Mount("overlay", root, "overlay", 0, opts.c_str())) return Fail("mount the root overlay");
  fs::create_directories(root + "/proc");
  if (!Mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr)) {
    return Fail("mount /proc");
  }
  if (int rc = SetUpDev(root); rc != 0) return rc;
  fs::create_directories(root + "/tmp");
  if (!Mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")) {
    return Fail("mount /tmp");
  }
  fs::create_directories(root + "/sys");
  if (Mount("/sys", root + "/sys", nullptr, MS_BIND | MS_REC, nullptr)) {
    Mount("", root + "/sys", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr);
  }
  for (const auto& m : spec.mounts) {
    const std::string target = root + m.target;
    std::string source = m.source;
    int held = -1;  // the subPath opened safely; bound through /proc/self/fd
    if (!m.within.empty()) {
      held = OpenWithin(m.within, m.source);
      if (held < 0) return Fail("open subPath " + m.source + " inside " + m.within);
      source = "/proc/self/fd/" + std::to_string(held);
    }
    std::error_code ec;
    if (fs::is_directory(source, ec)) {
      fs::create_directories(target, ec);
    } else {
      fs::create_directories(fs::path(target).parent_path(), ec);
      int fd = open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd >= 0) close(fd);
    }
    if (!Mount(source, target, nullptr, MS_BIND | MS_REC, nullptr)) {
      return Fail("bind " + m.source + " at " + m.target);
    }
    if (held >= 0) close(held);
    if (m.read_only &&
        !Mount("", target, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, nullptr)) {
      return Fail("make " + m.target + " read-only");
    }
  }
  if (sethostname(spec.hostname.data(), spec.hostname.size()) != 0) return Fail("sethostname");
  if (chroot(root.c_str()) != 0) return Fail("chroot");
  const std::string wd = spec.working_dir.empty() ? "/" : spec.working_dir;
  if (chdir(wd.c_str()) != 0) return Fail("chdir " + wd);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  environ = envp.data();  // execvp looks PATH up in the container's environment
  execvp(argv[0], argv.data());
  return Fail("exec " + spec.argv[0]);
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
  return j.dump();
}

StatusOr<ContainerSpec> SpecFromJson(std::string_view text) {
  KVOL_ASSIGN_OR_RETURN(api::Json j, api::ParseJson(text));
  try {
    ContainerSpec s;
    s.bundle_dir = j.at("bundleDir").get<std::string>();
    s.hostname = j.at("hostname").get<std::string>();
    s.argv = j.at("argv").get<std::vector<std::string>>();
    s.env = j.at("env").get<std::vector<std::string>>();
    s.working_dir = j.at("workingDir").get<std::string>();
    s.log_path = j.at("logPath").get<std::string>();
    for (const auto& m : j.at("mounts")) {
      s.mounts.push_back({m.at("source").get<std::string>(), m.at("target").get<std::string>(),
                          m.at("readOnly").get<bool>(), m.value("within", "")});
    }
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
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, spec.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0640);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  os::SetChildSpawnAttributes(&attr);
  std::vector<std::string> args = {init_binary, "container-init", spec_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, init_binary.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return InternalError("start " + init_binary + ": " + std::strerror(rc));
  return pid;
}

int RunContainerInit(const ContainerSpec& spec) {
  if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID) != 0) {
    return Fail("unshare");
  }
  // Mounts made from here on stay in the container's mount namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Fail("make mounts private");
  }
  pid_t child = fork();  // PID 1 of the new PID namespace
  if (child < 0) return Fail("fork");
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
    if (errno != EINTR) return Fail("wait");
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
  std::vector<std::string> env;
  {
    std::ifstream in(proc + "/environ");
    std::string entry;
    while (std::getline(in, entry, '\0')) env.push_back(entry);
  }
  int root = open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return Fail("open the container's root");
  // The mount namespace last: the others are named through this one's /proc.
  for (const char* ns : {"ipc", "uts", "pid", "mnt"}) {
    int fd = open((proc + "/ns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, 0) != 0) return Fail(std::string("join the container's ") + ns + " namespace");
    close(fd);
  }
  if (fchdir(root) != 0 || chroot(".") != 0 || chdir("/") != 0) return Fail("enter the container's root");
  close(root);
  pid_t child = fork();  // in the container's PID namespace
  if (child < 0) return Fail("fork");
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (tty) {
      setsid();
      ioctl(0, TIOCSCTTY, 0);
    }
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
    if (errno != EINTR) return Fail("wait");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace kvol::node::runtime
