// The kvol binary: one executable whose subcommands run each part of the system.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cmd/commands.h"

namespace {
constexpr const char* kVersion = "0.1.0";
}

int main(int argc, char** argv) {
  CLI::App app{
      "kvol: the Kubernetes storage subsystem (PersistentVolumes, claims, storage classes, CSI)\n"
      "as one standalone program that unmodified kubectl can drive."};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", kVersion);

  kvol::cmd::ValidateOptions validate;
  CLI::App* v = app.add_subcommand(
      "validate",
      "Check manifests offline, as the API server would on create: decoding, defaults and "
      "validation with Kubernetes' field paths and messages. Prints `Kind/name: valid` or one "
      "line per problem; exits 0 only if every object is valid.");
  v->add_option("-f,--filename", validate.files,
                "A YAML or JSON file (several documents allowed), a directory of .yaml/.yml/.json "
                "files, or - for standard input. May be repeated.")
      ->required();

  CLI11_PARSE(app, argc, argv);

  if (v->parsed()) return kvol::cmd::RunValidate(validate);
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
