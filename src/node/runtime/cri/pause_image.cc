// The pause image: a tar writer, the OCI layout around the pause program, and its import.
#include "node/runtime/cri/pause_image.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "os/exec.h"

// The pause program's bytes, put in the binary by pause_blob.S.
extern "C" const char kvol_pause_start[];
extern "C" const char kvol_pause_end[];

namespace kvol::node::cri {
namespace {

using Json = nlohmann::ordered_json;

// `value` in octal, zero-padded to `width` digits, then a NUL: a ustar number field.
void Octal(char* field, size_t width, uint64_t value) {
  for (size_t i = width; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  field[width] = '\0';
}

std::string Header(const TarFile& f) {
  char h[512];
  std::memset(h, 0, sizeof h);
  std::memcpy(h, f.path.data(), std::min<size_t>(f.path.size(), 99));
  Octal(h + 100, 7, static_cast<uint64_t>(f.mode));
  Octal(h + 108, 7, 0);  // uid
  Octal(h + 116, 7, 0);  // gid
  Octal(h + 124, 11, f.content.size());
  Octal(h + 136, 11, 0);  // mtime: the epoch, so that the same input gives the same archive
  std::memset(h + 148, ' ', 8);
  h[156] = '0';  // a regular file
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  Octal(h + 148, 6, sum);
  h[155] = ' ';
  return std::string(h, sizeof h);
}

const char* Architecture() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#else
  return "unknown";
#endif
}

Json Descriptor(std::string_view media_type, const std::string& blob) {
  return {
      {"mediaType", media_type}, {"digest", "sha256:" + Sha256Hex(blob)}, {"size", blob.size()}};
}

}  // namespace

std::string_view PauseBinary() {
  return std::string_view(kvol_pause_start, static_cast<size_t>(kvol_pause_end - kvol_pause_start));
}

std::string Tar(const std::vector<TarFile>& files) {
  std::string out;
  for (const auto& f : files) {
    out += Header(f);
    out.append(f.content);
    out.append((512 - f.content.size() % 512) % 512, '\0');
  }
  out.append(1024, '\0');  // two empty blocks end the archive
  return out;
}

std::string PauseImageArchive(std::string_view binary, std::string_view tag) {
  const std::string layer = Tar({{.path = "pause", .content = binary, .mode = 0755}});
  const std::string layer_digest = "sha256:" + Sha256Hex(layer);
  const std::string config = Json{{"architecture", Architecture()},
                                  {"os", "linux"},
                                  {"config", {{"Entrypoint", {"/pause"}}}},
                                  {"rootfs", {{"type", "layers"}, {"diff_ids", {layer_digest}}}}}
                                 .dump();
  const std::string manifest =
      Json{{"schemaVersion", 2},
           {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
           {"config", Descriptor("application/vnd.oci.image.config.v1+json", config)},
           {"layers", {Descriptor("application/vnd.oci.image.layer.v1.tar", layer)}}}
          .dump();
  Json entry = Descriptor("application/vnd.oci.image.manifest.v1+json", manifest);
  entry["annotations"] = {{"org.opencontainers.image.ref.name", tag}};
  const std::string index = Json{{"schemaVersion", 2}, {"manifests", Json::array({entry})}}.dump();
  const std::string layout = R"({"imageLayoutVersion":"1.0.0"})";
  auto blob = [](const std::string& b) { return "blobs/sha256/" + Sha256Hex(b); };
  return Tar({{.path = "oci-layout", .content = layout},
              {.path = "index.json", .content = index},
              {.path = blob(manifest), .content = manifest},
              {.path = blob(config), .content = config},
              {.path = blob(layer), .content = layer}});
}

Status ImportPauseImage(const std::string& socket, const std::string& work_dir) {
  const std::string name(kPauseImage);
  const size_t colon = name.rfind(':');
  const std::string path = work_dir + "/pause-image.tar";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << PauseImageArchive(PauseBinary(), name.substr(colon + 1));
    if (!out) return InternalError("write " + path);
  }
  auto r = os::RealExec().Run({"ctr", "--address", socket, "--namespace", "k8s.io", "images",
                               "import", "--base-name", name.substr(0, colon), path},
                              std::chrono::minutes(1));
  if (!r.ok()) return r.status().Annotate("importing the pause image");
  if (r->exit_code != 0) {
    return InternalError("importing the pause image: ctr exited with " +
                         std::to_string(r->exit_code) + ": " + r->output);
  }
  return OkStatus();
}

}  // namespace kvol::node::cri
