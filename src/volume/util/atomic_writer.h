// Writes a volume's files (configMap, secret, downwardAPI, projected) so that a container sees
// either the old set or the new one, never a mix: the files live in a timestamped directory,
// `..data` is a symlink to it replaced by one rename, and each visible name is a symlink into
// `..data` ("log_level -> ..data/log_level").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"
#include "os/clock.h"

namespace kvol::volume::util {

struct FileProjection {
  std::string data;
  int32_t mode = 0644;
  bool operator==(const FileProjection&) const = default;
};

// Relative path ("ui.properties", "sub/dir/file") -> contents and mode.
using Payload = std::map<std::string, FileProjection>;

// InvalidArgument, naming the path, when it is absolute, contains a ".." element, starts with
// "..", or is too long (as Kubernetes' atomic writer checks).
Status ValidatePayloadPath(std::string_view path);

// Makes `dir` (which must exist) hold exactly `payload`. Returns true when something changed,
// false when the files were already as asked (nothing is rewritten then). `now` names the new
// timestamped directory. Not thread-safe for the same `dir`: one writer per volume.
StatusOr<bool> WriteAtomically(const std::string& dir, const Payload& payload, os::WallTime now);

}  // namespace kvol::volume::util
