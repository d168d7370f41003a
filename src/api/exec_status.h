// The outcome of `kubectl exec` as Kubernetes' streaming protocols carry it (channel 3 of the
// WebSocket protocols, the error stream of SPDY's, from v4 on): a Status, Success for exit code
// 0 and otherwise a Failure whose cause ExitCode holds the code, in kubelet's words.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvol::api {

// The Status sent when `command` exited with `exit_code`.
std::string ExecOutcome(const std::vector<std::string>& command, int exit_code);
// The exit code read back from such a Status; nullopt if it is not one (a Failure with no
// exit code is the runtime's error: its message says what it was).
std::optional<int> ExitCodeOf(std::string_view outcome);

}  // namespace kvol::api
