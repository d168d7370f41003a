#include "volume/plugins/csi/csi_util.h"

#include "base/strings.h"

namespace kvol::volume::plugins {

::csi::v1::VolumeCapability VolumeCapabilityOf(const api::PersistentVolumeSpec& pv,
                                               bool single_node_multi_writer) {
  using Mode = ::csi::v1::VolumeCapability::AccessMode;
  ::csi::v1::VolumeCapability c;
  if (pv.volume_mode.value_or("Filesystem") == "Block") {
    c.mutable_block();
  } else {
    auto* m = c.mutable_mount();
    if (pv.csi) m->set_fs_type(pv.csi->fs_type);
    for (const auto& o : pv.mount_options) m->add_mount_flags(o);
  }
  const std::string mode = pv.access_modes.empty() ? "" : pv.access_modes.front();
  Mode::Mode m = Mode::UNKNOWN;
  if (mode == "ReadWriteOnce") {
    m = single_node_multi_writer ? Mode::SINGLE_NODE_MULTI_WRITER : Mode::SINGLE_NODE_WRITER;
  } else if (mode == "ReadOnlyMany") {
    m = Mode::MULTI_NODE_READER_ONLY;
  } else if (mode == "ReadWriteMany") {
    m = Mode::MULTI_NODE_MULTI_WRITER;
  } else if (mode == "ReadWriteOncePod") {
    m = single_node_multi_writer ? Mode::SINGLE_NODE_SINGLE_WRITER : Mode::SINGLE_NODE_WRITER;
  }
  c.mutable_access_mode()->set_mode(m);
  return c;
}

StatusOr<std::map<std::string, std::string>> CsiSecrets(const api::Secret& secret) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : secret.data) {
    auto raw = Base64Decode(v);
    if (!raw) {
      return InvalidArgumentError("secret " + secret.metadata.namespace_ + "/" +
                                  secret.metadata.name + ": data[" + k + "] is not base64");
    }
    out[k] = *std::move(raw);
  }
  return out;
}

}  // namespace kvol::volume::plugins
