// The Identity service: the driver's name, what it offers, and whether it is ready.
#include "csi/driver/services.h"

namespace kvol::csi::driver {

grpc::Status IdentityService::GetPluginInfo(grpc::ServerContext*, const pb::GetPluginInfoRequest*,
                                            pb::GetPluginInfoResponse* resp) {
  resp->set_name(kDriverName);
  resp->set_vendor_version(kDriverVersion);
  return grpc::Status::OK;
}

grpc::Status IdentityService::GetPluginCapabilities(grpc::ServerContext*,
                                                    const pb::GetPluginCapabilitiesRequest*,
                                                    pb::GetPluginCapabilitiesResponse* resp) {
  using Service = pb::PluginCapability::Service;
  for (auto type : {Service::CONTROLLER_SERVICE, Service::VOLUME_ACCESSIBILITY_CONSTRAINTS}) {
    resp->add_capabilities()->mutable_service()->set_type(type);
  }
  // ext4 and xfs grow while mounted.
  resp->add_capabilities()->mutable_volume_expansion()->set_type(
      pb::PluginCapability::VolumeExpansion::ONLINE);
  return grpc::Status::OK;
}

grpc::Status IdentityService::Probe(grpc::ServerContext*, const pb::ProbeRequest*,
                                    pb::ProbeResponse* resp) {
  // Ready once it serves: the data directory was opened before the socket was.
  resp->mutable_ready()->set_value(s_.data != nullptr);
  return grpc::Status::OK;
}

}  // namespace kvol::csi::driver
