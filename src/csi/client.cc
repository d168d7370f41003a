// Client: channels to CSI drivers, and their errors as kubelet reads them.
#include "csi/client.h"

#include "base/log.h"
#include "csi/redact.h"

namespace kvol::csi {
namespace {

// Go's names of the gRPC codes (codes.Code.String()), as they appear in kubelet's events.
const char* CodeName(grpc::StatusCode c) {
  static constexpr const char* kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  const int i = static_cast<int>(c);
  return i >= 0 && i < 17 ? kNames[i] : "Unknown";
}

}  // namespace

Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return OkStatus();
  return Status(static_cast<StatusCode>(s.error_code()), std::string("rpc error: code = ") +
                                                             CodeName(s.error_code()) +
                                                             " desc = " + s.error_message());
}

bool IsFinal(const Status& s) {
  // Only errors that came from the driver are known to be final: FromGrpc words them so.
  if (s.message().rfind("rpc error: ", 0) != 0) return false;
  switch (s.code()) {
    case StatusCode::kCancelled:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kAborted:
      return false;
    default:
      return true;
  }
}

StatusOr<std::string> UnixTarget(std::string_view endpoint, std::string_view what) {
  std::string_view path = endpoint;
  if (path.rfind("unix://", 0) == 0) {
    path.remove_prefix(7);
  } else if (path.rfind("unix:", 0) == 0) {
    path.remove_prefix(5);
  } else if (path.find("://") != std::string_view::npos) {
    return InvalidArgumentError(std::string(what) + " \"" + std::string(endpoint) +
                                "\": only unix sockets are supported");
  }
  if (path.empty() || path.front() != '/') {
    return InvalidArgumentError(std::string(what) + " \"" + std::string(endpoint) +
                                "\": the socket path must be absolute");
  }
  return "unix://" + std::string(path);
}

std::shared_ptr<grpc::Channel> UnixChannel(const std::string& target, int max_receive_bytes) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (max_receive_bytes > 0) args.SetMaxReceiveMessageSize(max_receive_bytes);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

StatusOr<std::unique_ptr<Client>> Client::New(std::string_view endpoint) {
  KVOL_ASSIGN_OR_RETURN(std::string target, UnixTarget(endpoint));
  std::unique_ptr<Client> c(new Client());
  c->target_ = target;
  c->channel_ = UnixChannel(target);
  c->identity_ = pb::Identity::NewStub(c->channel_);
  c->controller_ = pb::Controller::NewStub(c->channel_);
  c->node_ = pb::Node::NewStub(c->channel_);
  return c;
}

Status Client::Failed(const google::protobuf::Message& req, const grpc::Status& s) {
  Status out = FromGrpc(s);
  // The driver went (the one that comes back may differ), or no longer offers a call it said it
  // did (it was replaced while idle): its capabilities are asked again.
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
      s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    std::lock_guard lock(mu_);
    controller_caps_.reset();
    ++connection_;
  }
  std::string method = req.GetDescriptor()->name();
  if (method.ends_with("Request")) method.resize(method.size() - 7);
  log::Warn("csi " + target_ + ": " + method + " {" + StripSecrets(req) +
            "} failed: " + out.message());
  return out;
}

StatusOr<pb::GetPluginInfoResponse> Client::GetPluginInfo() {
  return Call(&pb::Identity::Stub::GetPluginInfo, pb::GetPluginInfoRequest());
}

StatusOr<pb::NodeGetInfoResponse> Client::NodeGetInfo() {
  return Call(&pb::Node::Stub::NodeGetInfo, pb::NodeGetInfoRequest());
}

StatusOr<std::set<pb::NodeServiceCapability::RPC::Type>> Client::NodeCapabilities() {
  KVOL_ASSIGN_OR_RETURN(
      auto caps, Call(&pb::Node::Stub::NodeGetCapabilities, pb::NodeGetCapabilitiesRequest()));
  std::set<pb::NodeServiceCapability::RPC::Type> out;
  for (const auto& c : caps.capabilities()) {
    if (c.has_rpc()) out.insert(c.rpc().type());
  }
  return out;
}

StatusOr<bool> Client::NodeSupports(pb::NodeServiceCapability::RPC::Type rpc) {
  KVOL_ASSIGN_OR_RETURN(auto caps, NodeCapabilities());
  return caps.contains(rpc);
}

StatusOr<bool> Client::ControllerSupports(pb::ControllerServiceCapability::RPC::Type rpc) {
  uint64_t asked_at;
  {
    std::lock_guard lock(mu_);
    if (controller_caps_) return controller_caps_->contains(rpc);
    asked_at = connection_;
  }
  KVOL_ASSIGN_OR_RETURN(auto caps, Call(&pb::Controller::Stub::ControllerGetCapabilities,
                                        pb::ControllerGetCapabilitiesRequest()));
  std::set<pb::ControllerServiceCapability::RPC::Type> offered;
  for (const auto& c : caps.capabilities()) {
    if (c.has_rpc()) offered.insert(c.rpc().type());
  }
  std::lock_guard lock(mu_);
  // An answer from before the driver was found gone is not kept.
  if (connection_ == asked_at) controller_caps_ = offered;
  return offered.contains(rpc);
}

}  // namespace kvol::csi
