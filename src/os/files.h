// Whole files: read one, or replace one so that a crash leaves the old contents or the new.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace kvol::os {

// NotFound when `path` cannot be read.
Status ReadFile(const std::string& path, std::string* out);

// Writes `data` to `path` through a temporary file beside it (path + ".tmp") with `mode`,
// synced, then renamed over `path`. Unavailable when a step fails.
Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode);

}  // namespace kvol::os
