#include "volume/subdir.h"

#include <sys/stat.h>

#include <filesystem>

namespace kvol::volume {
namespace {

namespace fs = std::filesystem;

std::string Param(const api::StorageClass* cls, const std::string& key) {
  if (cls == nullptr) return {};
  auto it = cls->parameters.find(key);
  return it == cls->parameters.end() ? std::string() : it->second;
}

// ${.PVC.namespace}, ${.PVC.name}, ${.PVC.labels.K}, ${.PVC.annotations.K}.
StatusOr<std::string> Expand(const std::string& pattern, const api::PersistentVolumeClaim& c) {
  std::string out;
  size_t i = 0;
  while (i < pattern.size()) {
    size_t open = pattern.find("${", i);
    if (open == std::string::npos) {
      out += pattern.substr(i);
      break;
    }
    out += pattern.substr(i, open - i);
    size_t close = pattern.find('}', open);
    if (close == std::string::npos) return InvalidArgumentError("pathPattern: unclosed \"${\"");
    const std::string ref = pattern.substr(open + 2, close - open - 2);
    const std::string prefix = ".PVC.";
    if (ref.rfind(prefix, 0) != 0) {
      return InvalidArgumentError("pathPattern: unknown reference \"" + ref + "\"");
    }
    const std::string field = ref.substr(prefix.size());
    auto lookup = [&](const api::StringMap& m, const std::string& key) {
      auto it = m.find(key);
      return it == m.end() ? std::string() : it->second;
    };
    if (field == "namespace") {
      out += c.metadata.namespace_;
    } else if (field == "name") {
      out += c.metadata.name;
    } else if (field.rfind("labels.", 0) == 0) {
      out += lookup(c.metadata.labels, field.substr(7));
    } else if (field.rfind("annotations.", 0) == 0) {
      out += lookup(c.metadata.annotations, field.substr(12));
    } else {
      return InvalidArgumentError("pathPattern: unknown reference \"" + ref + "\"");
    }
    i = close + 1;
  }
  return out;
}

}  // namespace

StatusOr<std::string> SubdirProvisioner::DirectoryFor(const ProvisionRequest& r) {
  const auto& c = *r.claim;
  std::string dir = c.metadata.namespace_ + "-" + c.metadata.name + "-" + r.pv_name;
  const std::string pattern = Param(r.storage_class, "pathPattern");
  if (!pattern.empty()) {
    auto expanded = Expand(pattern, c);
    if (!expanded.ok()) return expanded.status();
    dir = *expanded;
  }
  // Stay inside the share, whatever the labels say.
  fs::path p = fs::path(dir).lexically_normal();
  if (dir.empty() || p.is_absolute() || p.empty() || p.begin()->string() == "..") {
    return InvalidArgumentError("pathPattern gives \"" + dir + "\", which is not inside the share");
  }
  return p.string();
}

StatusOr<api::PersistentVolumeSpec> SubdirProvisioner::Provision(const ProvisionRequest& r) {
  if (r.claim->spec.volume_mode.value_or("Filesystem") != "Filesystem") {
    return InvalidArgumentError(std::string(name()) + " provides Filesystem volumes only");
  }
  auto dir = DirectoryFor(r);
  if (!dir.ok()) return dir.status();
  const fs::path full = fs::path(options_.share) / *dir;
  std::error_code ec;
  fs::create_directories(full, ec);
  if (ec) return UnavailableError("unable to create directory to provision new pv: " + ec.message());
  chmod(full.c_str(), 0777);
  api::PersistentVolumeSpec spec = FilesystemSpecFor(*r.claim);
  if (!options_.nfs_server.empty()) {
    auto& nfs = spec.nfs.emplace();
    nfs.server = options_.nfs_server;
    nfs.path = (fs::path(options_.nfs_path) / *dir).string();
  } else {
    spec.host_path.emplace().path = full.string();
  }
  return spec;
}

Status SubdirProvisioner::Delete(const api::PersistentVolume& v, const api::StorageClass* cls) {
  fs::path rel;
  if (v.spec.nfs) {
    rel = fs::path(v.spec.nfs->path).lexically_relative(options_.nfs_path);
  } else if (v.spec.host_path) {
    rel = fs::path(v.spec.host_path->path).lexically_relative(options_.share);
  }
  if (rel.empty() || rel.begin()->string() == "..") {
    return InvalidArgumentError("the volume's directory is not on the share " + options_.share);
  }
  const fs::path full = fs::path(options_.share) / rel;
  std::error_code ec;
  if (!fs::exists(full, ec)) return OkStatus();  // gone already
  const std::string on_delete = Param(cls, "onDelete");
  if (on_delete == "retain") return OkStatus();
  if (on_delete == "delete" || (on_delete.empty() && Param(cls, "archiveOnDelete") == "false")) {
    fs::remove_all(full, ec);
    if (ec) return UnavailableError("cannot remove " + full.string() + ": " + ec.message());
    return OkStatus();
  }
  const fs::path archived = full.parent_path() / ("archived-" + full.filename().string());
  fs::rename(full, archived, ec);
  if (ec) return UnavailableError("cannot archive " + full.string() + ": " + ec.message());
  return OkStatus();
}

}  // namespace kvol::volume
