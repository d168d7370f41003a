// `kvol validate`: manifests checked offline with the API server's decoding, defaulting and
// validation.
#include <cstdio>

#include "api/scheme.h"
#include "cmd/commands.h"
#include "manifest/manifest.h"

namespace kvol::cmd {

int RunValidate(const ValidateOptions& opts) {
  bool ok = true;
  for (const auto& path : opts.files) {
    manifest::ReadResult read = manifest::ReadPath(path);
    for (const auto& e : read.errors) {
      std::printf("%s\n", e.ToString().c_str());
      ok = false;
    }
    for (const auto& doc : read.documents) {
      api::DocumentReport r = api::CheckDocument(doc.object);
      std::string id = r.kind + "/" + (r.name.empty() ? "<no name>" : r.name);
      if (r.errors.empty()) {
        if (r.modelled) {
          std::printf("%s: valid\n", id.c_str());
        } else {
          std::printf("%s: valid (metadata only: kvol does not model this kind)\n", id.c_str());
        }
        continue;
      }
      ok = false;
      for (const auto& e : r.errors) std::printf("%s: %s\n", id.c_str(), e.ToString().c_str());
    }
  }
  std::fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace kvol::cmd
