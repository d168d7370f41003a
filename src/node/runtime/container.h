// One container as a real process tree: its own mount, PID, UTS and IPC namespaces; a root
// that is an overlay of the node's root with a private writable layer under the container's
// bundle directory, entered with pivot_root (rootfs.h says what is mounted on it and what of the
// node is covered); the capabilities, user, no_new_privs and seccomp filter of its
// SecurityPlan (security.h). Images are not pulled: the container runs the node's own binaries.
//
// StartContainer spawns `<init> container-init <bundle>/spec.json` (the kvol binary) with no
// descriptor but stdin, stdout and stderr. The init makes a new PID namespace and forks the
// container's PID 1, which makes its own mount, UTS and IPC namespaces, builds the root,
// confines itself and execs the command. The init stays in the node's namespaces and waits:
// its process exits with the container's status (128+N after signal N). It writes the
// container's PID 1 (as the node sees it) to <bundle>/pid once it runs and its exit status to
// <bundle>/exit when it ends, so whoever finds the container later (an agent that restarted)
// can signal it and learn how it ended. The container dies with its init.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"
#include "node/runtime/security.h"

namespace kvol::node::runtime {

struct BindMount {
  std::string source;  // a directory or file on the node
  std::string target;  // absolute path inside the container
  bool read_only = false;
  // When set (a subPath), `source` lies inside this directory and is opened from it one
  // component at a time with no symlink followed, so a symlink planted after the subPath was
  // resolved cannot take the mount elsewhere.
  std::string within;
  // volumeMounts' mountPropagation: "" or None, HostToContainer, Bidirectional. The built-in
  // runtime mounts every volume private; a CRI runtime is asked for this.
  std::string propagation;
  bool device = false;  // a block volume's device (volumeDevices), not a volume's directory
};

struct ContainerSpec {
  std::string bundle_dir;         // <pod dir>/containers/<name>: upper/, work/, rootfs/, spec.json
  std::string hostname;           // the pod's name
  std::vector<std::string> argv;  // command and args; argv[0] looked up in PATH
  // No command: PID 1 runs Pause() itself (what `kvol pause` runs), so the kvol binary need not
  // be visible in the container's root. `argv` still says what it stands for.
  bool stand_in = false;
  std::vector<std::string> env;   // "NAME=value"
  std::string working_dir;        // "" for /
  std::vector<BindMount> mounts;
  std::string log_path;  // stdout and stderr, appended
  SecurityPlan security;
  // Node paths covered in the container's root (kvol's data and the node's secrets).
  std::vector<std::string> hidden_paths;
};

std::string SpecToJson(const ContainerSpec& spec);
StatusOr<ContainerSpec> SpecFromJson(std::string_view json);

inline constexpr std::string_view kPidFile = "pid";
inline constexpr std::string_view kExitFile = "exit";

// Writes a bundle's small file whole or not at all (a temporary file renamed over it), so a
// reader never sees half of it.
void WriteBundleFile(const std::string& path, const std::string& text);

// Writes the spec into the bundle (removing the pid and exit files of an earlier run) and
// starts the container's init with `init_binary`. Returns the init's pid (the caller reaps it).
// InvalidArgument for an empty argv or a relative mount target.
StatusOr<pid_t> StartContainer(const ContainerSpec& spec, const std::string& init_binary);

// The init's work, in the spawned process: namespaces, mounts, exec. Returns only on failure
// (with the exit code to use; the reason is on stderr, which is the container's log).
int RunContainerInit(const ContainerSpec& spec);

// `kvol pause`: what a container with no command runs in place of its image's entrypoint.
// Waits until SIGTERM or SIGINT (as its container's PID 1 it needs a handler to get them).
int Pause();

// `kvol container-exec`'s work: runs `argv` in the running container whose PID 1 is `pid` (as
// the node sees it): in its mount, UTS, IPC and PID namespaces, under its root, with its
// environment, confined as its PID 1 is (the plan read from the spec its init was started
// with). With `tty`, stdin is a terminal that becomes the process's controlling one.
// Returns the process's exit status (128+N after signal N); 127 when it cannot be started.
int RunInContainer(pid_t pid, const std::vector<std::string>& argv, bool tty);

}  // namespace kvol::node::runtime
