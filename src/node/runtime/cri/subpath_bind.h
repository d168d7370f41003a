// A volumeMount's subPath as a CRI runtime is given it, bound the way kubelet binds it: the
// path PrepareSubPath resolved is opened again from its volume one component at a time,
// refusing a symbolic link on the way, and what was opened is bind-mounted (through
// /proc/self/fd) on a path of kvol's own, which the runtime mounts into the container. A
// symlink planted in the volume after the path was resolved cannot take the mount out of the
// volume: the runtime never follows the volume's path itself.
//
// The binds of a run live under one directory of the container's (<bundle>/subpaths/<run>/),
// and go when the run has ended, before the volume manager may tear the volumes down.
#pragma once

#include <string>

#include "base/status.h"

namespace kvol::node::cri {

// Binds `source`, which lies inside `within`, on `target` (created as a directory or an empty
// file, as `source` is). PermissionDenied, naming the component, for a symbolic link on the
// way; NotFound for a component that is gone.
Status BindSubPath(const std::string& within, const std::string& source, const std::string& target);

// Unmounts every mount point below `dir`, deepest first, then removes what was bound and
// `dir` itself; whatever is still mounted is left in place (never removed with what is below
// it). Nothing to do when `dir` does not exist.
Status UnbindSubPaths(const std::string& dir);

}  // namespace kvol::node::cri
