// Subcommands of the kvol binary, each registered on the CLI11 app by src/cmd/main.cc.
#pragma once

#include <string>
#include <vector>

namespace kvol::cmd {

struct ValidateOptions {
  std::vector<std::string> files;  // files, directories, or "-" for standard input
};

struct ServerOptions {
  std::string data_dir = "./data";
  std::string listen = "127.0.0.1:6443";
  std::string store = "sqlite";  // or etcd://host:port[,host:port...]
  std::string node_name;        // default: the hostname
  std::string local_path_root;  // default: <data-dir>/storage
  std::string shared_dir;       // default: <data-dir>/shared
  std::string shared_nfs;       // SERVER:PATH when shared_dir is that export
};

// Runs until SIGINT/SIGTERM; returns the process exit code.
int RunServer(const ServerOptions& opts);

// Prints one line per object ("Kind/name: valid" or one line per problem) and per unreadable
// document; returns the process exit code: 0 when everything is valid.
int RunValidate(const ValidateOptions& opts);

}  // namespace kvol::cmd
