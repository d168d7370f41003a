// What a new volume is made from, as external-provisioner resolves a claim's dataSource (or,
// without it, dataSourceRef): a VolumeSnapshot of the snapshot.storage.k8s.io group that is
// ready to use, or a bound claim of the same namespace, class and driver (a clone). Kubernetes'
// rules and messages: the claim asks for at least the snapshot's restoreSize or the source
// claim's size, a clone keeps the source's volume mode, and a source being deleted is refused.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "api/core.h"
#include "api/storage.h"
#include "base/status.h"
#include "client/client.h"
#include "csi/proto/csi.pb.h"

namespace kvol::controller::provisioner {

// On a claim while a clone is being made of it.
inline constexpr std::string_view kCloningProtectionFinalizer =
    "provisioner.storage.kubernetes.io/cloning-protection";

// The kind of source a claim names, "" for none (or one kvol leaves to a populator).
enum class SourceKind { kNone, kSnapshot, kClaim, kOther };

struct DataSource {
  SourceKind kind = SourceKind::kNone;
  std::string name;  // of the snapshot or claim, in the claim's namespace
};

// The claim's data source; dataSource first, as external-provisioner reads it.
DataSource DataSourceOf(const api::PersistentVolumeClaim& claim);

// CreateVolume's volume_content_source for the claim's source; Unavailable with
// external-provisioner's message (wrapped as "error getting handle for DataSource Type T by
// Name N: ...") while the source cannot be used yet, so that the claim is tried again.
StatusOr<::csi::v1::VolumeContentSource> ContentSourceFor(client::Client& client,
                                                          const api::PersistentVolumeClaim& claim,
                                                          const api::StorageClass& cls,
                                                          const DataSource& source);

}  // namespace kvol::controller::provisioner
