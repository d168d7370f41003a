// The Controller service: volumes and snapshots as files, publication as loop devices.
#include <google/protobuf/util/time_util.h>

#include "base/strings.h"
#include "csi/driver/services.h"

namespace kvol::csi::driver {
namespace {

constexpr int64_t kDefaultCapacity = int64_t{1} << 30;
constexpr int64_t kBlock = 4096;

// Pages of a list: the token is the index of the first entry of the next page.
template <class T>
StatusOr<std::pair<size_t, size_t>> Page(const std::vector<T>& all, const std::string& token,
                                         int32_t max_entries) {
  if (max_entries < 0) return InvalidArgumentError("max_entries must not be negative");
  int64_t start = 0;
  if (!token.empty() &&
      (!ParseInt64(token, &start) || start < 0 || start > static_cast<int64_t>(all.size()))) {
    return AbortedError("starting_token \"" + token + "\" is not one this driver gave");
  }
  size_t end = all.size();
  if (max_entries > 0) end = std::min(end, static_cast<size_t>(start) + max_entries);
  return std::make_pair(static_cast<size_t>(start), end);
}

std::string NextToken(size_t end, size_t total) {
  return end < total ? std::to_string(end) : std::string();
}

// Whether an existing volume answers a request for `name` again.
bool Compatible(const VolumeRecord& v, const pb::CreateVolumeRequest& req) {
  const auto& r = req.capacity_range();
  if (r.required_bytes() > 0 && v.capacity < r.required_bytes()) return false;
  if (r.limit_bytes() > 0 && v.capacity > r.limit_bytes()) return false;
  const auto& src = req.volume_content_source();
  return v.source_snapshot == (src.has_snapshot() ? src.snapshot().snapshot_id() : "") &&
         v.source_volume == (src.has_volume() ? src.volume().volume_id() : "");
}

// The capacity to give for a range: the required bytes (a default when none), rounded up to
// whole blocks, within the limit.
StatusOr<int64_t> CapacityFor(const pb::CapacityRange& r) {
  if (r.required_bytes() < 0 || r.limit_bytes() < 0) {
    return InvalidArgumentError("capacity_range must not be negative");
  }
  if (r.limit_bytes() > 0 && r.limit_bytes() < r.required_bytes()) {
    return InvalidArgumentError("capacity_range.limit_bytes is below required_bytes");
  }
  int64_t want = r.required_bytes();
  if (want == 0)
    want = r.limit_bytes() > 0 ? std::min(kDefaultCapacity, r.limit_bytes()) : kDefaultCapacity;
  int64_t size = (want + kBlock - 1) / kBlock * kBlock;
  if (r.limit_bytes() > 0 && size > r.limit_bytes())
    size = want;  // a limit that is not whole blocks
  return size;
}

// Whether a topology requirement lets the volume live on this node.
bool Accessible(const pb::TopologyRequirement& req, const pb::Topology& node) {
  if (req.requisite_size() == 0) return true;
  for (const auto& t : req.requisite()) {
    bool all = true;
    for (const auto& [k, v] : t.segments()) {
      auto it = node.segments().find(k);
      if (it == node.segments().end() || it->second != v) all = false;
    }
    if (all) return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Volumes

grpc::Status ControllerService::CreateVolume(grpc::ServerContext*,
                                             const pb::CreateVolumeRequest* req,
                                             pb::CreateVolumeResponse* resp) {
  return ToGrpc(Create(*req, resp->mutable_volume()));
}

Status ControllerService::Create(const pb::CreateVolumeRequest& req, pb::Volume* out) {
  if (req.name().empty()) return InvalidArgumentError("name is required");
  if (req.volume_capabilities().empty()) {
    return InvalidArgumentError("volume_capabilities is required");
  }
  for (int i = 0; i < req.volume_capabilities_size(); ++i) {
    KVOL_RETURN_IF_ERROR(CheckCapability(req.volume_capabilities(i),
                                         "volume_capabilities[" + std::to_string(i) + "]"));
  }
  KVOL_ASSIGN_OR_RETURN(int64_t capacity, CapacityFor(req.capacity_range()));
  if (req.has_accessibility_requirements() &&
      !Accessible(req.accessibility_requirements(), NodeTopology(s_.options))) {
    return ResourceExhaustedError("accessibility_requirements: the volume can only live on node " +
                                  s_.options.node_id);
  }
  ContentSource source;
  if (req.has_volume_content_source()) {
    const auto& src = req.volume_content_source();
    if (src.has_snapshot()) {
      source.snapshot = src.snapshot().snapshot_id();
    } else if (src.has_volume()) {
      source.volume = src.volume().volume_id();
    } else {
      return InvalidArgumentError("volume_content_source names neither a snapshot nor a volume");
    }
  }
  KeyedLocks::Hold hold(s_.locks, "name/" + req.name());
  std::optional<VolumeRecord> v = s_.data->VolumeByName(req.name());
  if (v && !Compatible(*v, req)) {
    return AlreadyExistsError("volume \"" + req.name() + "\" exists with " +
                              std::to_string(v->capacity) +
                              " bytes or another source, not as requested");
  }
  if (!v) {
    KVOL_ASSIGN_OR_RETURN(int64_t available, s_.data->AvailableBytes());
    if (source.snapshot.empty() && source.volume.empty() && capacity > available) {
      return ResourceExhaustedError("not enough space: " + std::to_string(capacity) +
                                    " bytes asked, " + std::to_string(available) + " free");
    }
    std::map<std::string, std::string> params(req.parameters().begin(), req.parameters().end());
    auto created = s_.data->CreateVolume(req.name(), capacity, source, std::move(params));
    if (!created.ok()) return created.status();
    v = *std::move(created);
  }
  Describe(*v, out);
  return OkStatus();
}

void ControllerService::Describe(const VolumeRecord& v, pb::Volume* out) const {
  out->set_volume_id(v.id);
  out->set_capacity_bytes(v.capacity);
  *out->add_accessible_topology() = NodeTopology(s_.options);
  if (!v.source_snapshot.empty()) {
    out->mutable_content_source()->mutable_snapshot()->set_snapshot_id(v.source_snapshot);
  } else if (!v.source_volume.empty()) {
    out->mutable_content_source()->mutable_volume()->set_volume_id(v.source_volume);
  }
}

grpc::Status ControllerService::DeleteVolume(grpc::ServerContext*,
                                             const pb::DeleteVolumeRequest* req,
                                             pb::DeleteVolumeResponse*) {
  if (req->volume_id().empty()) return ToGrpc(InvalidArgumentError("volume_id is required"));
  KeyedLocks::Hold hold(s_.locks, req->volume_id());
  if (!s_.data->VolumeById(req->volume_id())) return grpc::Status::OK;
  auto device = s_.loops.Find(s_.data->VolumeFile(req->volume_id()));
  if (!device.ok()) return ToGrpc(device.status());
  if (!device->empty()) {
    return ToGrpc(FailedPreconditionError("volume " + req->volume_id() +
                                          " is still published to node " + s_.options.node_id +
                                          " as " + *device));
  }
  return ToGrpc(s_.data->DeleteVolume(req->volume_id()));
}

grpc::Status ControllerService::ValidateVolumeCapabilities(
    grpc::ServerContext*, const pb::ValidateVolumeCapabilitiesRequest* req,
    pb::ValidateVolumeCapabilitiesResponse* resp) {
  if (req->volume_id().empty()) return ToGrpc(InvalidArgumentError("volume_id is required"));
  if (req->volume_capabilities().empty()) {
    return ToGrpc(InvalidArgumentError("volume_capabilities is required"));
  }
  if (!s_.data->VolumeById(req->volume_id())) {
    return ToGrpc(NotFoundError("volume " + req->volume_id() + " not found"));
  }
  for (int i = 0; i < req->volume_capabilities_size(); ++i) {
    Status s = CheckCapability(req->volume_capabilities(i),
                               "volume_capabilities[" + std::to_string(i) + "]");
    if (!s.ok()) {
      resp->set_message(s.message());
      return grpc::Status::OK;
    }
  }
  auto* confirmed = resp->mutable_confirmed();
  *confirmed->mutable_volume_context() = req->volume_context();
  *confirmed->mutable_volume_capabilities() = req->volume_capabilities();
  *confirmed->mutable_parameters() = req->parameters();
  return grpc::Status::OK;
}

void ControllerService::DescribeStatus(const VolumeRecord& v,
                                       pb::ControllerGetVolumeResponse::VolumeStatus* get_out,
                                       pb::ListVolumesResponse::VolumeStatus* list_out) const {
  auto device = s_.loops.Find(s_.data->VolumeFile(v.id));
  const bool published = device.ok() && !device->empty();
  const bool present = s_.data->Present(v);
  auto fill = [&](auto* out) {
    if (published) out->add_published_node_ids(s_.options.node_id);
    out->mutable_volume_condition()->set_abnormal(!present);
    out->mutable_volume_condition()->set_message(present ? "the volume's file is in place"
                                                         : "the volume's file is missing");
  };
  if (get_out) fill(get_out);
  if (list_out) fill(list_out);
}

grpc::Status ControllerService::ListVolumes(grpc::ServerContext*, const pb::ListVolumesRequest* req,
                                            pb::ListVolumesResponse* resp) {
  const std::vector<VolumeRecord> all = s_.data->Volumes();
  auto page = Page(all, req->starting_token(), req->max_entries());
  if (!page.ok()) return ToGrpc(page.status());
  for (size_t i = page->first; i < page->second; ++i) {
    auto* e = resp->add_entries();
    Describe(all[i], e->mutable_volume());
    DescribeStatus(all[i], nullptr, e->mutable_status());
  }
  resp->set_next_token(NextToken(page->second, all.size()));
  return grpc::Status::OK;
}

grpc::Status ControllerService::ControllerGetVolume(grpc::ServerContext*,
                                                    const pb::ControllerGetVolumeRequest* req,
                                                    pb::ControllerGetVolumeResponse* resp) {
  if (req->volume_id().empty()) return ToGrpc(InvalidArgumentError("volume_id is required"));
  auto v = s_.data->VolumeById(req->volume_id());
  if (!v) return ToGrpc(NotFoundError("volume " + req->volume_id() + " not found"));
  Describe(*v, resp->mutable_volume());
  DescribeStatus(*v, resp->mutable_status(), nullptr);
  return grpc::Status::OK;
}

grpc::Status ControllerService::GetCapacity(grpc::ServerContext*, const pb::GetCapacityRequest* req,
                                            pb::GetCapacityResponse* resp) {
  for (int i = 0; i < req->volume_capabilities_size(); ++i) {
    Status s = CheckCapability(req->volume_capabilities(i),
                               "volume_capabilities[" + std::to_string(i) + "]");
    if (!s.ok()) return ToGrpc(s);
  }
  if (req->has_accessible_topology()) {
    for (const auto& [k, v] : req->accessible_topology().segments()) {
      if (k != kTopologyKey || v != s_.options.node_id) return grpc::Status::OK;  // none there
    }
  }
  auto available = s_.data->AvailableBytes();
  if (!available.ok()) return ToGrpc(available.status());
  resp->set_available_capacity(*available);
  resp->mutable_maximum_volume_size()->set_value(*available);
  return grpc::Status::OK;
}

grpc::Status ControllerService::ControllerGetCapabilities(
    grpc::ServerContext*, const pb::ControllerGetCapabilitiesRequest*,
    pb::ControllerGetCapabilitiesResponse* resp) {
  using Rpc = pb::ControllerServiceCapability::RPC;
  for (auto type :
       {Rpc::CREATE_DELETE_VOLUME, Rpc::PUBLISH_UNPUBLISH_VOLUME, Rpc::LIST_VOLUMES,
        Rpc::GET_CAPACITY, Rpc::CREATE_DELETE_SNAPSHOT, Rpc::LIST_SNAPSHOTS, Rpc::CLONE_VOLUME,
        Rpc::PUBLISH_READONLY, Rpc::EXPAND_VOLUME, Rpc::LIST_VOLUMES_PUBLISHED_NODES,
        Rpc::VOLUME_CONDITION, Rpc::GET_VOLUME, Rpc::SINGLE_NODE_MULTI_WRITER}) {
    resp->add_capabilities()->mutable_rpc()->set_type(type);
  }
  return grpc::Status::OK;
}

// ---------------------------------------------------------------------------------------------
// Publication: the volume's file on a loop device of the node

grpc::Status ControllerService::ControllerPublishVolume(
    grpc::ServerContext*, const pb::ControllerPublishVolumeRequest* req,
    pb::ControllerPublishVolumeResponse* resp) {
  return ToGrpc(Publish(*req, resp));
}

Status ControllerService::Publish(const pb::ControllerPublishVolumeRequest& req,
                                  pb::ControllerPublishVolumeResponse* out) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (req.node_id().empty()) return InvalidArgumentError("node_id is required");
  if (!req.has_volume_capability()) return InvalidArgumentError("volume_capability is required");
  KVOL_RETURN_IF_ERROR(CheckCapability(req.volume_capability(), "volume_capability"));
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  if (!s_.data->VolumeById(req.volume_id())) {
    return NotFoundError("volume " + req.volume_id() + " not found");
  }
  if (req.node_id() != s_.options.node_id) {
    return NotFoundError("node " + req.node_id() + " not found: this driver serves node " +
                         s_.options.node_id);
  }
  const std::string file = s_.data->VolumeFile(req.volume_id());
  KVOL_ASSIGN_OR_RETURN(std::string device, s_.loops.Find(file));
  if (!device.empty()) {
    KVOL_ASSIGN_OR_RETURN(bool read_only, s_.loops.ReadOnly(device));
    if (read_only != req.readonly()) {
      return AlreadyExistsError("volume " + req.volume_id() + " is already published to node " +
                                req.node_id() + (read_only ? " read-only" : " read-write"));
    }
  } else {
    KVOL_RETURN_IF_ERROR(CheckVolumeLimit());
    KVOL_RETURN_IF_ERROR(s_.data->MakeFile(req.volume_id()));
    KVOL_ASSIGN_OR_RETURN(device, s_.loops.Attach(file, req.readonly()));
  }
  (*out->mutable_publish_context())["devicePath"] = device;
  return OkStatus();
}

Status ControllerService::CheckVolumeLimit() {
  KVOL_ASSIGN_OR_RETURN(auto devices, s_.loops.List());
  int64_t published = 0;
  for (const auto& [device, backing] : devices) {
    if (s_.data->Owns(backing)) ++published;
  }
  if (published >= s_.options.max_volumes_per_node) {
    return ResourceExhaustedError("node " + s_.options.node_id + " already has " +
                                  std::to_string(published) + " volumes published, its limit");
  }
  return OkStatus();
}

grpc::Status ControllerService::ControllerUnpublishVolume(
    grpc::ServerContext*, const pb::ControllerUnpublishVolumeRequest* req,
    pb::ControllerUnpublishVolumeResponse*) {
  return ToGrpc(Unpublish(*req));
}

Status ControllerService::Unpublish(const pb::ControllerUnpublishVolumeRequest& req) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  // A volume or node this driver does not know is not published there: done.
  if (!req.node_id().empty() && req.node_id() != s_.options.node_id) return OkStatus();
  if (!s_.data->VolumeById(req.volume_id())) return OkStatus();
  KVOL_ASSIGN_OR_RETURN(std::string device, s_.loops.Find(s_.data->VolumeFile(req.volume_id())));
  if (device.empty()) return OkStatus();
  KVOL_ASSIGN_OR_RETURN(auto mounts, s_.mounter->List());
  for (const auto& m : mounts) {
    if (m.source == device) {
      return FailedPreconditionError("volume " + req.volume_id() + " is still mounted at " +
                                     m.path + " on node " + s_.options.node_id);
    }
  }
  return s_.loops.Detach(device);
}

grpc::Status ControllerService::ControllerExpandVolume(grpc::ServerContext*,
                                                       const pb::ControllerExpandVolumeRequest* req,
                                                       pb::ControllerExpandVolumeResponse* resp) {
  return ToGrpc(Expand(*req, resp));
}

Status ControllerService::Expand(const pb::ControllerExpandVolumeRequest& req,
                                 pb::ControllerExpandVolumeResponse* out) {
  if (req.volume_id().empty()) return InvalidArgumentError("volume_id is required");
  if (!req.has_capacity_range()) return InvalidArgumentError("capacity_range is required");
  KVOL_ASSIGN_OR_RETURN(int64_t capacity, CapacityFor(req.capacity_range()));
  KeyedLocks::Hold hold(s_.locks, req.volume_id());
  if (!s_.data->VolumeById(req.volume_id())) {
    return NotFoundError("volume " + req.volume_id() + " not found");
  }
  KVOL_ASSIGN_OR_RETURN(VolumeRecord v, s_.data->GrowVolume(req.volume_id(), capacity));
  KVOL_ASSIGN_OR_RETURN(std::string device, s_.loops.Find(s_.data->VolumeFile(v.id)));
  if (!device.empty()) KVOL_RETURN_IF_ERROR(s_.loops.Refresh(device));
  out->set_capacity_bytes(v.capacity);
  // A filesystem must grow on the node too; a raw block volume has none.
  out->set_node_expansion_required(
      !(req.has_volume_capability() && req.volume_capability().has_block()));
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Snapshots

namespace {

void DescribeSnapshot(const SnapshotRecord& s, pb::Snapshot* out) {
  out->set_snapshot_id(s.id);
  out->set_source_volume_id(s.source_volume);
  out->set_size_bytes(s.size);
  *out->mutable_creation_time() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(s.created_unix_nanos);
  out->set_ready_to_use(true);
}

}  // namespace

grpc::Status ControllerService::CreateSnapshot(grpc::ServerContext*,
                                               const pb::CreateSnapshotRequest* req,
                                               pb::CreateSnapshotResponse* resp) {
  if (req->name().empty()) return ToGrpc(InvalidArgumentError("name is required"));
  if (req->source_volume_id().empty()) {
    return ToGrpc(InvalidArgumentError("source_volume_id is required"));
  }
  KeyedLocks::Hold hold(s_.locks, "snapshot/" + req->name());
  if (auto existing = s_.data->SnapshotByName(req->name())) {
    if (existing->source_volume != req->source_volume_id()) {
      return ToGrpc(AlreadyExistsError("snapshot \"" + req->name() + "\" exists of volume " +
                                       existing->source_volume));
    }
    DescribeSnapshot(*existing, resp->mutable_snapshot());
    return grpc::Status::OK;
  }
  KeyedLocks::Hold volume(s_.locks, req->source_volume_id());
  auto snap = s_.data->CreateSnapshot(req->name(), req->source_volume_id());
  if (!snap.ok()) return ToGrpc(snap.status());
  DescribeSnapshot(*snap, resp->mutable_snapshot());
  return grpc::Status::OK;
}

grpc::Status ControllerService::DeleteSnapshot(grpc::ServerContext*,
                                               const pb::DeleteSnapshotRequest* req,
                                               pb::DeleteSnapshotResponse*) {
  if (req->snapshot_id().empty()) return ToGrpc(InvalidArgumentError("snapshot_id is required"));
  return ToGrpc(s_.data->DeleteSnapshot(req->snapshot_id()));
}

grpc::Status ControllerService::ListSnapshots(grpc::ServerContext*,
                                              const pb::ListSnapshotsRequest* req,
                                              pb::ListSnapshotsResponse* resp) {
  std::vector<SnapshotRecord> all;
  for (auto& s : s_.data->Snapshots()) {
    if (!req->snapshot_id().empty() && s.id != req->snapshot_id()) continue;
    if (!req->source_volume_id().empty() && s.source_volume != req->source_volume_id()) continue;
    all.push_back(std::move(s));
  }
  auto page = Page(all, req->starting_token(), req->max_entries());
  if (!page.ok()) return ToGrpc(page.status());
  for (size_t i = page->first; i < page->second; ++i) {
    DescribeSnapshot(all[i], resp->add_entries()->mutable_snapshot());
  }
  resp->set_next_token(NextToken(page->second, all.size()));
  return grpc::Status::OK;
}

}  // namespace kvol::csi::driver
