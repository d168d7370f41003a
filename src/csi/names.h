// Names Kubernetes derives for CSI volumes, which kvol must derive the same way so that objects
// and directories made by either are found by both.
#pragma once

#include <string>
#include <string_view>

namespace kvol::csi {

// The VolumeAttachment of a volume on a node: "csi-" + sha256(handle + driver + node).
std::string AttachmentName(std::string_view volume_handle, std::string_view driver,
                           std::string_view node_name);

// The finalizer an attacher puts on the VolumeAttachments it serves, as external-attacher
// does: "external-attacher/" + the driver's name with '/' as '-'.
std::string AttacherFinalizer(std::string_view driver);

}  // namespace kvol::csi
