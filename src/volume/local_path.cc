#include "volume/local_path.h"

#include <sys/stat.h>

#include <filesystem>

#include "api/well_known.h"

namespace kvol::volume {
namespace {

namespace fs = std::filesystem;

std::string NodeOfVolume(const api::PersistentVolume& v) {
  if (!v.spec.node_affinity || !v.spec.node_affinity->required) return {};
  for (const auto& t : v.spec.node_affinity->required->node_selector_terms) {
    for (const auto& e : t.match_expressions) {
      if (e.key == "kubernetes.io/hostname" && e.operator_ == "In" && e.values.size() == 1) {
        return e.values[0];
      }
    }
  }
  return {};
}

}  // namespace

StatusOr<api::PersistentVolumeSpec> LocalPathProvisioner::Provision(const ProvisionRequest& r) {
  const auto& claim = *r.claim;
  if (claim.spec.volume_mode.value_or("Filesystem") != "Filesystem") {
    return InvalidArgumentError("kvol.io/local-path provides Filesystem volumes only");
  }
  if (claim.spec.selector) {
    return InvalidArgumentError("claim.spec.selector is not supported by kvol.io/local-path");
  }
  std::string node = r.selected_node ? r.selected_node->metadata.name : options_.this_node;
  auto hostname = node;
  if (r.selected_node) {
    auto it = r.selected_node->metadata.labels.find("kubernetes.io/hostname");
    if (it != r.selected_node->metadata.labels.end()) hostname = it->second;
  }
  const std::string path = (fs::path(options_.root) /
                            (r.pv_name + "_" + claim.metadata.namespace_ + "_" + claim.metadata.name))
                               .string();
  if (node == options_.this_node) {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) return UnavailableError("cannot create " + path + ": " + ec.message());
    // Writable by whatever user the pod runs as, as local-path provisioners make them.
    chmod(path.c_str(), 0777);
  }
  api::PersistentVolumeSpec spec = FilesystemSpecFor(claim);
  auto& hp = spec.host_path.emplace();
  hp.path = path;
  hp.type = "DirectoryOrCreate";
  api::NodeSelectorRequirement req;
  req.key = "kubernetes.io/hostname";
  req.operator_ = "In";
  req.values = {hostname};
  api::NodeSelectorTerm term;
  term.match_expressions = {req};
  spec.node_affinity.emplace().required.emplace().node_selector_terms = {term};
  return spec;
}

bool LocalPathProvisioner::ServesNode(const api::Node* node) const {
  return !node || node->metadata.name == options_.this_node ||
         !node->metadata.annotations.count(std::string(api::kAnnLocalPathRoot));
}

std::string LocalPathProvisioner::VolumeNode(const api::PersistentVolume& volume) const {
  return NodeOfVolume(volume);
}

Status LocalPathProvisioner::Delete(const api::PersistentVolume& v, const api::StorageClass*) {
  if (!v.spec.host_path) return InvalidArgumentError("not a kvol.io/local-path volume");
  const std::string& path = v.spec.host_path->path;
  // Only directories under the root, and only this node's.
  const fs::path rel = fs::path(path).lexically_relative(options_.root);
  if (rel.empty() || rel.begin()->string() == ".." || rel.has_parent_path()) {
    return InvalidArgumentError(path + " is not under " + options_.root);
  }
  const std::string node = NodeOfVolume(v);
  if (!node.empty() && node != options_.this_node) {
    return FailedPreconditionError("the volume's directory is on node " + node +
                                   ", whose agent removes it");
  }
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return UnavailableError("cannot remove " + path + ": " + ec.message());
  return OkStatus();
}

}  // namespace kvol::volume
