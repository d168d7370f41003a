// One container as a real process tree: its own mount, PID, UTS and IPC namespaces; a root
// that is an overlay of the node's root with a private writable layer under the container's
// bundle directory (so what it writes outside its volumes stays its own); /proc, a minimal
// /dev and a /tmp of its own; each volume bind-mounted at its mountPath (read-only when asked).
// Images are not pulled: the container runs the node's own binaries.
//
// StartContainer spawns `<init> container-init <bundle>/spec.json` (the kvol binary), which
// sets the namespaces and mounts up and execs the command as PID 1 of the new PID namespace;
// the returned process waits for it and exits with its status (128+N after signal N).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace kvol::node::runtime {

struct BindMount {
  std::string source;  // a directory or file on the node
  std::string target;  // absolute path inside the container
  bool read_only = false;
};

struct ContainerSpec {
  std::string bundle_dir;         // <pod dir>/containers/<name>: upper/, work/, rootfs/, spec.json
  std::string hostname;           // the pod's name
  std::vector<std::string> argv;  // command and args; argv[0] looked up in PATH
  std::vector<std::string> env;   // "NAME=value"
  std::string working_dir;        // "" for /
  std::vector<BindMount> mounts;
  std::string log_path;  // stdout and stderr, appended
};

std::string SpecToJson(const ContainerSpec& spec);
StatusOr<ContainerSpec> SpecFromJson(std::string_view json);

// Writes the spec into the bundle and starts the container's init with `init_binary`. Returns
// the init's pid (the caller reaps it). InvalidArgument for an empty argv or a relative mount
// target.
StatusOr<pid_t> StartContainer(const ContainerSpec& spec, const std::string& init_binary);

// The init's work, in the spawned process: namespaces, mounts, exec. Returns only on failure
// (with the exit code to use; the reason is on stderr, which is the container's log).
int RunContainerInit(const ContainerSpec& spec);

}  // namespace kvol::node::runtime
