// A CSI driver's services over gRPC on a unix socket, as kubelet and the CSI sidecars call them:
// every call with a deadline, a connection that follows the driver through restarts, errors as
// kvol Status values in gRPC's words, and requests logged with their secrets stripped.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/status.h"
#include "csi/proto/csi.grpc.pb.h"

namespace kvol::csi {

namespace pb = ::csi::v1;

// How long a call may take unless the caller says otherwise: kubelet's CSI timeout.
inline constexpr std::chrono::minutes kDefaultTimeout{2};

// A gRPC status as a kvol Status (the codes are the same numbers), its message as Go's gRPC
// prints it, which users know from kubelet's events: "rpc error: code = Internal desc = ...".
Status FromGrpc(const grpc::Status& s);

// Whether a failed call is final, as kubelet decides: Canceled, DeadlineExceeded, Unavailable,
// ResourceExhausted and Aborted are not (the operation may still be going on in the driver, or
// may succeed if tried again), and neither is an error that did not come from the driver. After
// a call that is not final, a stage or publish is uncertain: the mount may be there or not, and
// must be checked or undone before the next step.
bool IsFinal(const Status& s);

// "unix:///a/b.sock", "unix:/a/b.sock" or "/a/b.sock" as gRPC's target ("unix:///a/b.sock").
// InvalidArgument for anything else, naming the endpoint as `what`.
StatusOr<std::string> UnixTarget(std::string_view endpoint, std::string_view what = "CSI endpoint");

// A channel to `target` (as UnixTarget gives it) that finds a restarted server again within a
// second, where gRPC's own reconnect backoff grows to two minutes. `max_receive_bytes` 0 keeps
// gRPC's limit on an answer's size.
std::shared_ptr<grpc::Channel> UnixChannel(const std::string& target, int max_receive_bytes = 0);

// One unary call of `method` on `stub`, which fails with DeadlineExceeded after `timeout`.
template <class Stub, class Req, class Resp>
grpc::Status CallWithDeadline(Stub& stub,
                              grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                              const Req& req, Resp* resp, std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return (stub.*method)(&ctx, req, resp);
}

class Client {
 public:
  // A client of the driver at `endpoint`. Connects when first called, and again whenever the
  // driver comes back (within a second of its socket reappearing).
  static StatusOr<std::unique_ptr<Client>> New(std::string_view endpoint);

  const std::string& target() const { return target_; }

  // One call of any CSI method: `client.Call(&pb::Node::Stub::NodeStageVolume, request)`.
  // Fails with DeadlineExceeded after `timeout`.
  template <class Stub, class Req, class Resp>
  StatusOr<Resp> Call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                      const Req& req, std::chrono::milliseconds timeout = kDefaultTimeout) {
    Resp resp;
    grpc::Status s = CallWithDeadline(stub<Stub>(), method, req, &resp, timeout);
    if (!s.ok()) return Failed(req, s);
    return resp;
  }

  // Answers of the Identity and Node services that a caller asks for often.
  StatusOr<pb::GetPluginInfoResponse> GetPluginInfo();
  StatusOr<pb::NodeGetInfoResponse> NodeGetInfo();
  // The RPCs the driver's node service offers (NodeGetCapabilities), for a caller that asks
  // about several at once.
  StatusOr<std::set<pb::NodeServiceCapability::RPC::Type>> NodeCapabilities();
  // Whether the driver's node service offers `rpc`.
  StatusOr<bool> NodeSupports(pb::NodeServiceCapability::RPC::Type rpc);
  // Whether the driver's controller service offers `rpc` (ControllerGetCapabilities). The
  // answer is kept, as external-provisioner keeps it, until a call finds the driver gone
  // (Unavailable) or a call unimplemented: a driver that comes back is asked again.
  StatusOr<bool> ControllerSupports(pb::ControllerServiceCapability::RPC::Type rpc);

 private:
  Client() = default;
  template <class Stub>
  Stub& stub();
  // The error of a failed call, logged with the request's secrets stripped.
  Status Failed(const google::protobuf::Message& req, const grpc::Status& s);

  std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Identity::Stub> identity_;
  std::unique_ptr<pb::Controller::Stub> controller_;
  std::unique_ptr<pb::Node::Stub> node_;
  std::mutex mu_;
  std::optional<std::set<pb::ControllerServiceCapability::RPC::Type>> controller_caps_;  // mu_
  uint64_t connection_ = 0;  // mu_; counts the times the driver was found gone
};

template <>
inline pb::Identity::Stub& Client::stub<pb::Identity::Stub>() {
  return *identity_;
}
template <>
inline pb::Controller::Stub& Client::stub<pb::Controller::Stub>() {
  return *controller_;
}
template <>
inline pb::Node::Stub& Client::stub<pb::Node::Stub>() {
  return *node_;
}

}  // namespace kvol::csi
