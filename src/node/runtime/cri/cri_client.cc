// Client: a container runtime's CRI services, and their errors as kubelet reads them.
#include "node/runtime/cri/cri_client.h"

#include "base/log.h"
#include "csi/client.h"

namespace kvol::node::cri {

StatusOr<std::unique_ptr<Client>> Client::New(std::string_view endpoint) {
  KVOL_ASSIGN_OR_RETURN(std::string target,
                        csi::UnixTarget(endpoint, "container runtime endpoint"));
  std::unique_ptr<Client> c(new Client());
  c->target_ = target;
  // Kubelet's limit for a CRI answer (a long ListContainers).
  c->channel_ = csi::UnixChannel(target, 16 * 1024 * 1024);
  c->runtime_ = pb::RuntimeService::NewStub(c->channel_);
  c->images_ = pb::ImageService::NewStub(c->channel_);
  return c;
}

kvol::Status Client::Failed(const google::protobuf::Message& req, const grpc::Status& s) {
  kvol::Status out = csi::FromGrpc(s);
  std::string method = req.GetDescriptor()->name();
  if (method.ends_with("Request")) method.resize(method.size() - 7);
  log::Warn("cri " + target_ + ": " + method + " failed: " + out.message());
  return out;
}

StatusOr<pb::VersionResponse> Client::Version() {
  pb::VersionRequest req;
  req.set_version(std::string(kApiVersion));
  return Call(&pb::RuntimeService::Stub::Version, req);
}

const pb::RuntimeCondition* FindCondition(const pb::RuntimeStatus& status, std::string_view type) {
  for (const auto& c : status.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

StatusOr<pb::RuntimeStatus> Client::RuntimeStatus() {
  KVOL_ASSIGN_OR_RETURN(auto resp, Call(&pb::RuntimeService::Stub::Status, pb::StatusRequest()));
  const pb::RuntimeCondition* ready = FindCondition(resp.status(), kRuntimeReady);
  if (!ready || !ready->status()) {
    std::string why =
        ready ? ready->reason() + ": " + ready->message() : "no RuntimeReady condition";
    return FailedPreconditionError("container runtime is down: " + why);
  }
  return resp.status();
}

StatusOr<std::optional<pb::Image>> Client::ImageStatus(const std::string& image) {
  pb::ImageStatusRequest req;
  req.mutable_image()->set_image(image);
  KVOL_ASSIGN_OR_RETURN(auto resp, Call(&pb::ImageService::Stub::ImageStatus, req));
  if (!resp.has_image() || resp.image().id().empty()) return std::optional<pb::Image>();
  return std::optional<pb::Image>(resp.image());
}

StatusOr<std::string> Client::PullImage(const std::string& image, const pb::AuthConfig* auth,
                                        const pb::PodSandboxConfig& sandbox,
                                        std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  return PullImage(&context, image, auth, sandbox);
}

StatusOr<std::string> Client::PullImage(grpc::ClientContext* context, const std::string& image,
                                        const pb::AuthConfig* auth,
                                        const pb::PodSandboxConfig& sandbox) {
  pb::PullImageRequest req;
  req.mutable_image()->set_image(image);
  if (auth) *req.mutable_auth() = *auth;
  *req.mutable_sandbox_config() = sandbox;
  pb::PullImageResponse resp;
  if (grpc::Status s = images_->PullImage(context, req, &resp); !s.ok()) return Failed(req, s);
  return resp.image_ref();
}

StatusOr<std::string> Client::RunPodSandbox(const pb::PodSandboxConfig& config) {
  pb::RunPodSandboxRequest req;
  *req.mutable_config() = config;
  KVOL_ASSIGN_OR_RETURN(auto resp, Call(&pb::RuntimeService::Stub::RunPodSandbox, req));
  return resp.pod_sandbox_id();
}

StatusOr<std::string> Client::CreateContainer(const std::string& sandbox_id,
                                              const pb::ContainerConfig& config,
                                              const pb::PodSandboxConfig& sandbox) {
  pb::CreateContainerRequest req;
  req.set_pod_sandbox_id(sandbox_id);
  *req.mutable_config() = config;
  *req.mutable_sandbox_config() = sandbox;
  KVOL_ASSIGN_OR_RETURN(auto resp, Call(&pb::RuntimeService::Stub::CreateContainer, req));
  return resp.container_id();
}

kvol::Status Client::StartContainer(const std::string& id) {
  pb::StartContainerRequest req;
  req.set_container_id(id);
  return Call(&pb::RuntimeService::Stub::StartContainer, req).status();
}

kvol::Status Client::StopContainer(const std::string& id, int64_t grace_seconds) {
  pb::StopContainerRequest req;
  req.set_container_id(id);
  req.set_timeout(grace_seconds);
  // The runtime waits out the grace period before it kills: the call may take that long.
  return Call(&pb::RuntimeService::Stub::StopContainer, req,
              kDefaultTimeout + std::chrono::seconds(grace_seconds))
      .status();
}

kvol::Status Client::RemoveContainer(const std::string& id) {
  pb::RemoveContainerRequest req;
  req.set_container_id(id);
  return Call(&pb::RuntimeService::Stub::RemoveContainer, req).status();
}

StatusOr<pb::ContainerStatus> Client::ContainerStatus(const std::string& id) {
  pb::ContainerStatusRequest req;
  req.set_container_id(id);
  KVOL_ASSIGN_OR_RETURN(auto resp, Call(&pb::RuntimeService::Stub::ContainerStatus, req));
  return resp.status();
}

kvol::Status Client::StopPodSandbox(const std::string& id) {
  pb::StopPodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  return Call(&pb::RuntimeService::Stub::StopPodSandbox, req).status();
}

kvol::Status Client::RemovePodSandbox(const std::string& id) {
  pb::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  return Call(&pb::RuntimeService::Stub::RemovePodSandbox, req).status();
}

StatusOr<pb::PodSandboxStatus> Client::PodSandboxStatus(const std::string& id) {
  pb::PodSandboxStatusRequest req;
  req.set_pod_sandbox_id(id);
  KVOL_ASSIGN_OR_RETURN(auto resp, Call(&pb::RuntimeService::Stub::PodSandboxStatus, req));
  return resp.status();
}

}  // namespace kvol::node::cri
