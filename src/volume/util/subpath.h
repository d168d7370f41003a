// Resolving a volumeMount's subPath inside its volume without ever leaving it: a subPath with a
// ".." element, an absolute one, or one that reaches through a symlink to a place outside the
// volume is refused (a container could otherwise plant a symlink in a shared volume and have
// the node mount, say, / into another container).
#pragma once

#include <string>

#include "base/status.h"

namespace kvol::volume::util {

// The path `sub_path` names inside `volume_path`, every symlink on the way resolved and found
// inside the volume. Missing directories on the way are created (0750), as kubelet does.
// InvalidArgument for "..", absolute paths and escapes ("subpath \"X\" not within volume path
// \"Y\""); NotFound when the volume itself is missing.
StatusOr<std::string> PrepareSubPath(const std::string& volume_path, const std::string& sub_path);

}  // namespace kvol::volume::util
