// Applying a container's SecurityPlan to the calling process, the last thing before it execs
// the container's command (or a `kubectl exec` command in it): supplementary groups, group and
// user, the capability sets, no_new_privs and the seccomp filter, in the order that lets each
// step still do what it must (runc's order).
#pragma once

#include <string>

#include "node/runtime/security.h"

namespace kvol::node::runtime {

// Confines the calling process (single-threaded, running as root with every capability) and
// changes to `working_dir` ("" for /), as the plan's user where root could not. Returns 0, or
// an exit code after reporting the failed step on stderr.
int Confine(const SecurityPlan& plan, const std::string& working_dir);

}  // namespace kvol::node::runtime
