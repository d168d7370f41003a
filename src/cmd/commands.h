// Subcommands of the kvol binary, each registered on the CLI11 app by src/cmd/main.cc.
#pragma once

#include <string>
#include <vector>

namespace kvol::cmd {

struct ValidateOptions {
  std::vector<std::string> files;  // files, directories, or "-" for standard input
};

// The in-process provisioners' flags.
struct ProvisionerOptions {
  std::string node_name;        // default: the hostname
  std::string local_path_root;  // default: <data-dir>/storage
  std::string shared_dir;       // default: <data-dir>/shared
  std::string shared_nfs;       // SERVER:PATH when shared_dir is that export
};

struct ServerOptions {
  std::string data_dir = "./data";
  std::string listen = "127.0.0.1:6443";
  std::string store = "sqlite";  // or etcd://host:port[,host:port...]
  ProvisionerOptions provisioners;
  bool controllers = true;  // run the controllers and the scheduler in this process
};

struct ControllerManagerOptions {
  std::string kubeconfig;
  std::string data_dir = "/var/lib/kvol";  // where local-path and shared volumes go by default
  ProvisionerOptions provisioners;
  int workers = 16;
};

// Runs until SIGINT/SIGTERM; returns the process exit code.
int RunServer(const ServerOptions& opts);

// The controllers and the scheduler as their own process, on a remote API server (HTTPS from a
// kubeconfig); runs until SIGINT/SIGTERM and returns the process exit code.
int RunControllerManager(const ControllerManagerOptions& opts);

// Prints one line per object ("Kind/name: valid" or one line per problem) and per unreadable
// document; returns the process exit code: 0 when everything is valid.
int RunValidate(const ValidateOptions& opts);

}  // namespace kvol::cmd
