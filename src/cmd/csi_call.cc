// `kvol csi create-volume|delete-volume|expand-volume`: a driver's Controller service from the
// command line, for trying a driver out and for making (and growing) static volumes of it.
#include <google/protobuf/util/json_util.h>

#include <cstdio>

#include "cmd/commands.h"
#include "csi/client.h"

namespace kvol::cmd {

namespace pb = ::csi::v1;

int RunCsiCall(const CsiCallOptions& o) {
  auto client = csi::Client::New(o.endpoint);
  if (!client.ok()) {
    std::fprintf(stderr, "error: %s\n", client.status().message().c_str());
    return 1;
  }
  std::string out;
  Status s;
  if (o.call == CsiCallOptions::Call::kCreate) {
    pb::CreateVolumeRequest req;
    req.set_name(o.name);
    req.mutable_capacity_range()->set_required_bytes(o.size);
    auto* cap = req.add_volume_capabilities();
    if (o.block) {
      cap->mutable_block();
    } else {
      cap->mutable_mount()->set_fs_type(o.fs_type);
    }
    cap->mutable_access_mode()->set_mode(pb::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    auto resp = (*client)->Call(&pb::Controller::Stub::CreateVolume, req);
    s = resp.status();
    if (s.ok()) (void)google::protobuf::util::MessageToJsonString(resp->volume(), &out);
  } else if (o.call == CsiCallOptions::Call::kExpand) {
    pb::ControllerExpandVolumeRequest req;
    req.set_volume_id(o.volume_id);
    req.mutable_capacity_range()->set_required_bytes(o.size);
    auto resp = (*client)->Call(&pb::Controller::Stub::ControllerExpandVolume, req);
    s = resp.status();
    if (s.ok()) (void)google::protobuf::util::MessageToJsonString(*resp, &out);
  } else {
    pb::DeleteVolumeRequest req;
    req.set_volume_id(o.volume_id);
    s = (*client)->Call(&pb::Controller::Stub::DeleteVolume, req).status();
  }
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (!out.empty()) std::printf("%s\n", out.c_str());
  return 0;
}

}  // namespace kvol::cmd
