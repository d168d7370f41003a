// Taking a pod volume's directory away safely: never delete through a mount.
#pragma once

#include <string>

#include "base/status.h"
#include "os/mounter.h"

namespace kvol::volume::util {

// Unmounts `dir` while it is a mount point, then removes it: with everything inside when
// `remove_contents` (emptyDir and the files of configMap-like volumes), or only when empty
// otherwise (a mount point whose unmount left files behind is kept, never emptied).
// FailedPrecondition when something below `dir` is still mounted. A missing `dir` is success.
Status CleanupDir(os::Mounter& mounter, const std::string& dir, bool remove_contents);

// Removes `dir` and everything below it without ever crossing into another filesystem: a
// directory below it on another device (a mount that appeared meanwhile) stops the removal
// with FailedPrecondition and is left alone. A missing `dir` is success.
Status RemoveAllOnOneDevice(const std::string& dir);

// Whether anything is mounted at or below `dir`, according to `mounter`'s table.
StatusOr<bool> HasMountsBelow(os::Mounter& mounter, const std::string& dir);

}  // namespace kvol::volume::util
