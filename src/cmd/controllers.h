// What `kvol server` and `kvol controller-manager` share: the in-process provisioners built
// from their flags, and running the controllers until a signal.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "client/client.h"
#include "cmd/commands.h"
#include "volume/local_path.h"
#include "volume/subdir.h"

namespace kvol::cmd {

struct Provisioners {
  std::unique_ptr<volume::LocalPathProvisioner> local_path;
  std::unique_ptr<volume::SubdirProvisioner> subdir;
  std::string node_name;
  std::string shared_dir;
};

// From the flags; directories default to `default_dir`/storage and `default_dir`/shared, the
// node name to the hostname.
StatusOr<Provisioners> MakeProvisioners(const ProvisionerOptions& opts, const std::string& default_dir);

// The machine's hostname, or "kvol".
std::string Hostname();

// Blocks SIGINT and SIGTERM in this thread and every thread started after it, so that
// WaitForSignal receives them.
void BlockSignals();
// Waits for SIGINT or SIGTERM and logs which.
void WaitForSignal();

}  // namespace kvol::cmd
