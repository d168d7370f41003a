#include "csi/names.h"

#include <algorithm>

#include "base/sha256.h"

namespace kvol::csi {

std::string AttachmentName(std::string_view volume_handle, std::string_view driver,
                           std::string_view node_name) {
  std::string all;
  all.append(volume_handle).append(driver).append(node_name);
  return "csi-" + Sha256Hex(all);
}

std::string AttacherFinalizer(std::string_view driver) {
  std::string d(driver);
  std::replace(d.begin(), d.end(), '/', '-');
  return "external-attacher/" + d;
}

}  // namespace kvol::csi
