// A container runtime's CRI services (runtime.v1 RuntimeService and ImageService) over gRPC on a
// unix socket, as kubelet calls them: every call with a deadline, errors as kvol Status values
// in gRPC's words ("rpc error: code = NotFound desc = ..."), and a connection that follows the
// runtime through restarts. Credentials in a pull request are never logged.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "csi/client.h"
#include "node/runtime/cri/api.grpc.pb.h"

namespace kvol::node::cri {

namespace pb = ::runtime::v1;

// The CRI version kvol speaks, sent in VersionRequest as kubelet sends it.
inline constexpr std::string_view kApiVersion = "v1";

// How long a call may take unless the caller says otherwise: kubelet's
// --runtime-request-timeout default.
inline constexpr std::chrono::minutes kDefaultTimeout{2};

// The runtime's conditions kubelet requires (RuntimeStatus).
inline constexpr std::string_view kRuntimeReady = "RuntimeReady";
inline constexpr std::string_view kNetworkReady = "NetworkReady";

class Client {
 public:
  // A client of the runtime at `endpoint` ("unix:///run/containerd/containerd.sock", as
  // kubelet's --container-runtime-endpoint). Connects when first called.
  static StatusOr<std::unique_ptr<Client>> New(std::string_view endpoint);

  const std::string& target() const { return target_; }

  // One call of any CRI method: `client.Call(&pb::RuntimeService::Stub::StartContainer, req)`.
  // Fails with DeadlineExceeded after `timeout`.
  template <class Stub, class Req, class Resp>
  StatusOr<Resp> Call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                      const Req& req, std::chrono::milliseconds timeout = kDefaultTimeout) {
    Resp resp;
    grpc::Status s = csi::CallWithDeadline(stub<Stub>(), method, req, &resp, timeout);
    if (!s.ok()) return Failed(req, s);
    return resp;
  }

  // The calls the agent makes most, with their answers unwrapped.
  StatusOr<pb::VersionResponse> Version();
  // The runtime's conditions; FailedPrecondition when the runtime does not report RuntimeReady
  // true, with the runtime's reason and message, as kubelet's "container runtime is down".
  StatusOr<pb::RuntimeStatus> RuntimeStatus();
  // The image as the runtime holds it, or nullopt when it does not.
  StatusOr<std::optional<pb::Image>> ImageStatus(const std::string& image);
  // Pulls `image` (with `auth` when given) and returns the runtime's reference to it. Pulls
  // have no deadline of their own but `timeout`; kubelet gives them none.
  StatusOr<std::string> PullImage(const std::string& image, const pb::AuthConfig* auth,
                                  const pb::PodSandboxConfig& sandbox,
                                  std::chrono::milliseconds timeout = std::chrono::hours(1));
  // The same under `context`, which the caller may cancel (and give a deadline).
  StatusOr<std::string> PullImage(grpc::ClientContext* context, const std::string& image,
                                  const pb::AuthConfig* auth, const pb::PodSandboxConfig& sandbox);
  StatusOr<std::string> RunPodSandbox(const pb::PodSandboxConfig& config);
  StatusOr<std::string> CreateContainer(const std::string& sandbox_id,
                                        const pb::ContainerConfig& config,
                                        const pb::PodSandboxConfig& sandbox);
  kvol::Status StartContainer(const std::string& id);
  kvol::Status StopContainer(const std::string& id, int64_t grace_seconds);
  kvol::Status RemoveContainer(const std::string& id);
  StatusOr<pb::ContainerStatus> ContainerStatus(const std::string& id);
  kvol::Status StopPodSandbox(const std::string& id);
  kvol::Status RemovePodSandbox(const std::string& id);
  StatusOr<pb::PodSandboxStatus> PodSandboxStatus(const std::string& id);

 private:
  Client() = default;
  template <class Stub>
  Stub& stub();
  // The error of a failed call, logged with its method (never the request: a pull carries
  // registry credentials).
  kvol::Status Failed(const google::protobuf::Message& req, const grpc::Status& s);

  std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::RuntimeService::Stub> runtime_;
  std::unique_ptr<pb::ImageService::Stub> images_;
};

template <>
inline pb::RuntimeService::Stub& Client::stub<pb::RuntimeService::Stub>() {
  return *runtime_;
}
template <>
inline pb::ImageService::Stub& Client::stub<pb::ImageService::Stub>() {
  return *images_;
}

// The condition of `type` in `status`, or nullptr.
const pb::RuntimeCondition* FindCondition(const pb::RuntimeStatus& status, std::string_view type);

}  // namespace kvol::node::cri
