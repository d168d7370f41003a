// The driver's three CSI services and what they share. Internal to the driver.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "base/keyed_locks.h"
#include "base/status.h"
#include "csi/driver/data_dir.h"
#include "csi/driver/driver.h"
#include "csi/driver/loop.h"
#include "csi/proto/csi.grpc.pb.h"
#include "os/exec.h"
#include "os/mounter.h"

namespace kvol::csi::driver {

namespace pb = ::csi::v1;

// kvol's Status as gRPC's: the codes are the same numbers.
inline grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

// What the services share.
struct DriverState {
  DriverOptions options;
  os::Exec& exec;
  std::unique_ptr<os::Mounter> mounter;
  std::unique_ptr<DataDir> data;
  LoopDevices loops;
  KeyedLocks locks;
};

// InvalidArgument unless `c` is a capability this driver can serve; `field` names it in the
// error.
Status CheckCapability(const pb::VolumeCapability& c, const std::string& field);
// The filesystem a blank volume gets when the caller names none: xfs, which grows while
// mounted with the privilege mounting needs anyway (ext4 asks for CAP_SYS_RESOURCE too, which
// containers often lack); ext4 for volumes smaller than the smallest xfs.
inline constexpr int64_t kSmallestXfs = int64_t{300} << 20;
// Inline ephemeral volumes: their size when volumeAttributes.size does not say, and the
// parameter that marks their record.
inline constexpr int64_t kDefaultEphemeralBytes = int64_t{100} << 20;
inline constexpr char kEphemeralKey[] = "kvol.io/ephemeral";
std::string DefaultFilesystem(int64_t device_bytes);
// This node's topology.
pb::Topology NodeTopology(const DriverOptions& o);

class IdentityService final : public pb::Identity::Service {
 public:
  explicit IdentityService(DriverState& s) : s_(s) {}
  grpc::Status GetPluginInfo(grpc::ServerContext*, const pb::GetPluginInfoRequest*,
                             pb::GetPluginInfoResponse*) override;
  grpc::Status GetPluginCapabilities(grpc::ServerContext*, const pb::GetPluginCapabilitiesRequest*,
                                     pb::GetPluginCapabilitiesResponse*) override;
  grpc::Status Probe(grpc::ServerContext*, const pb::ProbeRequest*, pb::ProbeResponse*) override;

 private:
  DriverState& s_;
};

class ControllerService final : public pb::Controller::Service {
 public:
  explicit ControllerService(DriverState& s) : s_(s) {}
  grpc::Status CreateVolume(grpc::ServerContext*, const pb::CreateVolumeRequest*,
                            pb::CreateVolumeResponse*) override;
  grpc::Status DeleteVolume(grpc::ServerContext*, const pb::DeleteVolumeRequest*,
                            pb::DeleteVolumeResponse*) override;
  grpc::Status ControllerPublishVolume(grpc::ServerContext*,
                                       const pb::ControllerPublishVolumeRequest*,
                                       pb::ControllerPublishVolumeResponse*) override;
  grpc::Status ControllerUnpublishVolume(grpc::ServerContext*,
                                         const pb::ControllerUnpublishVolumeRequest*,
                                         pb::ControllerUnpublishVolumeResponse*) override;
  grpc::Status ValidateVolumeCapabilities(grpc::ServerContext*,
                                          const pb::ValidateVolumeCapabilitiesRequest*,
                                          pb::ValidateVolumeCapabilitiesResponse*) override;
  grpc::Status ListVolumes(grpc::ServerContext*, const pb::ListVolumesRequest*,
                           pb::ListVolumesResponse*) override;
  grpc::Status ControllerGetVolume(grpc::ServerContext*, const pb::ControllerGetVolumeRequest*,
                                   pb::ControllerGetVolumeResponse*) override;
  grpc::Status GetCapacity(grpc::ServerContext*, const pb::GetCapacityRequest*,
                           pb::GetCapacityResponse*) override;
  grpc::Status ControllerGetCapabilities(grpc::ServerContext*,
                                         const pb::ControllerGetCapabilitiesRequest*,
                                         pb::ControllerGetCapabilitiesResponse*) override;
  grpc::Status CreateSnapshot(grpc::ServerContext*, const pb::CreateSnapshotRequest*,
                              pb::CreateSnapshotResponse*) override;
  grpc::Status DeleteSnapshot(grpc::ServerContext*, const pb::DeleteSnapshotRequest*,
                              pb::DeleteSnapshotResponse*) override;
  grpc::Status ListSnapshots(grpc::ServerContext*, const pb::ListSnapshotsRequest*,
                             pb::ListSnapshotsResponse*) override;
  grpc::Status ControllerExpandVolume(grpc::ServerContext*,
                                      const pb::ControllerExpandVolumeRequest*,
                                      pb::ControllerExpandVolumeResponse*) override;

 private:
  Status Create(const pb::CreateVolumeRequest& req, pb::Volume* out);
  Status Publish(const pb::ControllerPublishVolumeRequest& req,
                 pb::ControllerPublishVolumeResponse* out);
  Status Unpublish(const pb::ControllerUnpublishVolumeRequest& req);
  // ResourceExhausted when the node has as many volumes published as it may.
  Status CheckVolumeLimit();
  Status Expand(const pb::ControllerExpandVolumeRequest& req,
                pb::ControllerExpandVolumeResponse* out);
  // The volume as CSI describes it, and its status (published nodes, condition).
  void Describe(const VolumeRecord& v, pb::Volume* out) const;
  void DescribeStatus(const VolumeRecord& v, pb::ControllerGetVolumeResponse::VolumeStatus* out,
                      pb::ListVolumesResponse::VolumeStatus* list_out) const;
  DriverState& s_;
};

class NodeService final : public pb::Node::Service {
 public:
  explicit NodeService(DriverState& s) : s_(s) {}
  grpc::Status NodeStageVolume(grpc::ServerContext*, const pb::NodeStageVolumeRequest*,
                               pb::NodeStageVolumeResponse*) override;
  grpc::Status NodeUnstageVolume(grpc::ServerContext*, const pb::NodeUnstageVolumeRequest*,
                                 pb::NodeUnstageVolumeResponse*) override;
  grpc::Status NodePublishVolume(grpc::ServerContext*, const pb::NodePublishVolumeRequest*,
                                 pb::NodePublishVolumeResponse*) override;
  grpc::Status NodeUnpublishVolume(grpc::ServerContext*, const pb::NodeUnpublishVolumeRequest*,
                                   pb::NodeUnpublishVolumeResponse*) override;
  grpc::Status NodeGetVolumeStats(grpc::ServerContext*, const pb::NodeGetVolumeStatsRequest*,
                                  pb::NodeGetVolumeStatsResponse*) override;
  grpc::Status NodeExpandVolume(grpc::ServerContext*, const pb::NodeExpandVolumeRequest*,
                                pb::NodeExpandVolumeResponse*) override;
  grpc::Status NodeGetCapabilities(grpc::ServerContext*, const pb::NodeGetCapabilitiesRequest*,
                                   pb::NodeGetCapabilitiesResponse*) override;
  grpc::Status NodeGetInfo(grpc::ServerContext*, const pb::NodeGetInfoRequest*,
                           pb::NodeGetInfoResponse*) override;

 private:
  Status Stage(const pb::NodeStageVolumeRequest& req);
  Status Unstage(const pb::NodeUnstageVolumeRequest& req);
  Status Publish(const pb::NodePublishVolumeRequest& req);
  Status Unpublish(const pb::NodeUnpublishVolumeRequest& req);
  // An inline ephemeral volume: made, attached, formatted and mounted at the target at once.
  Status PublishEphemeral(const pb::NodePublishVolumeRequest& req);
  Status Stats(const pb::NodeGetVolumeStatsRequest& req, pb::NodeGetVolumeStatsResponse* out);
  Status Expand(const pb::NodeExpandVolumeRequest& req, pb::NodeExpandVolumeResponse* out);
  // The loop device serving volume `id` on this node; FailedPrecondition when it is not
  // published here.
  StatusOr<std::string> DeviceOf(const std::string& id);
  DriverState& s_;
};

}  // namespace kvol::csi::driver
