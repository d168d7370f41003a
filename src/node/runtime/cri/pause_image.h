// The pause image kvol's own containerd gives every pod sandbox, made by kvol so that no sandbox
// needs a registry: an OCI image layout with one layer holding /pause, a static program built
// from pause.c and carried inside the kvol binary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvol::node::cri {

// The name it is imported under.
inline constexpr std::string_view kPauseImage = "kvol.local/pause:1";

// The pause program kvol carries (a static executable).
std::string_view PauseBinary();

// An OCI image layout holding `binary` as /pause (the entrypoint), as a tar archive (what
// `ctr images import` reads), tagged `tag`.
std::string PauseImageArchive(std::string_view binary, std::string_view tag);

// A POSIX tar archive (ustar) of `files`: path and content, each a regular file of `mode`.
struct TarFile {
  std::string path;
  std::string_view content;
  int mode = 0644;
};
std::string Tar(const std::vector<TarFile>& files);

// Imports the pause image into the containerd at `socket` (namespace k8s.io), through `ctr`,
// writing the archive under `work_dir` first.
Status ImportPauseImage(const std::string& socket, const std::string& work_dir);

}  // namespace kvol::node::cri
