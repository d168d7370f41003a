// The CRI backend: sandboxes, images, containers and their ends, through a CRI runtime.
#include "node/runtime/cri/cri_backend.h"

#include <filesystem>

#include "base/log.h"
#include "node/runtime/cri/cri_exec.h"
#include "node/runtime/cri/keyring.h"
#include "node/runtime/cri/subpath_bind.h"
#include "os/files.h"

namespace kvol::node::cri {
namespace fs = std::filesystem;
using runtime::FoundRun;
using runtime::Launch;
using runtime::StartFailure;
using runtime::StartResult;

namespace {

// Where run `run` of the container whose directory is `bundle` has its subPath binds.
std::string SubPathsDir(const std::string& bundle, int run) {
  return bundle + "/subpaths/" + std::to_string(run);
}

// How soon a container whose image is being pulled is looked at again.
constexpr std::chrono::milliseconds kPullingLook{500};

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

api::Time FromNanos(int64_t ns) { return api::Time::FromUnixSeconds(ns / 1'000'000'000); }

// The node's resolv.conf, as sandboxes get it; none when it cannot be read.
Resolv NodeDns(const std::string& path) {
  std::string text;
  if (!os::ReadFile(path, &text).ok()) return {};
  return ParseResolvConf(text);
}

// A label of a container or sandbox, "" when it has none.
template <class Labels>
std::string Label(const Labels& labels, std::string_view key) {
  auto it = labels.find(std::string(key));
  return it == labels.end() ? "" : it->second;
}

// How a run the runtime no longer knows ended: kubelet's words for it.
api::ContainerStateTerminated Unknown() {
  api::ContainerStateTerminated t;
  t.exit_code = 137;
  t.reason = "ContainerStatusUnknown";
  t.message = "The container could not be located when the pod was terminated";
  return t;
}

}  // namespace

std::string GoDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out = ms < 0 ? "-" : "";
  if (ms < 0) ms = -ms;
  if (ms < 1000) return out + std::to_string(ms) + "ms";
  const int64_t h = ms / 3'600'000, m = ms / 60'000 % 60, s = ms / 1000 % 60, frac = ms % 1000;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += std::to_string(m) + "m";
  out += std::to_string(s);
  if (frac > 0) {
    std::string f = std::to_string(frac + 1000).substr(1);  // three digits
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "s";
}

std::string PullPolicy(const api::Container& c) {
  if (!c.image_pull_policy.empty()) return c.image_pull_policy;
  // The tag is what follows the last ':' after the last '/' (a registry's port is not one);
  // an image pinned by digest is never "latest".
  const std::string& image = c.image;
  if (image.find('@') != std::string::npos) return "IfNotPresent";
  const size_t slash = image.rfind('/');
  const size_t colon = image.rfind(':');
  const bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
  if (!tagged || image.substr(colon + 1) == "latest") return "Always";
  return "IfNotPresent";
}

StatusOr<std::unique_ptr<CriBackend>> CriBackend::New(CriBackendOptions options) {
  std::unique_ptr<CriBackend> b(new CriBackend(std::move(options)));
  KVOL_ASSIGN_OR_RETURN(b->client_, Client::New(b->options_.endpoint));
  auto v = b->client_->Version();
  if (!v.ok()) {
    return v.status().Annotate("container runtime at " + b->options_.endpoint +
                               " did not answer Version");
  }
  b->puller_ = std::make_unique<ImagePuller>();
  b->prefix_ = v->runtime_name() + "://";
  b->version_ = b->prefix_ + v->runtime_version();
  return b;
}

CriBackend::~CriBackend() {
  for (auto& f : stopping_) f.wait();
}

StatusOr<std::optional<os::FilesystemStats>> CriBackend::ImageFs() {
  KVOL_ASSIGN_OR_RETURN(auto info, client_->Call(&pb::ImageService::Stub::ImageFsInfo,
                                                 pb::ImageFsInfoRequest()));
  if (info.image_filesystems().empty() ||
      info.image_filesystems(0).fs_id().mountpoint().empty()) {
    return UnavailableError(client_->target() + " names no image filesystem in ImageFsInfo");
  }
  KVOL_ASSIGN_OR_RETURN(auto fs,
                        os::StatFilesystem(info.image_filesystems(0).fs_id().mountpoint()));
  return std::optional<os::FilesystemStats>(fs);
}

std::string CriBackend::Raw(const std::string& id) const {
  const size_t sep = id.find("://");
  return sep == std::string::npos ? id : id.substr(sep + 3);
}

// ---- sandboxes and images ----------------------------------------------------------------------

SandboxInputs CriBackend::Inputs(const api::Pod& pod, bool network_ready, uint32_t attempt) const {
  const api::PodSpec& spec = pod.spec;
  return {.logs_root = options_.logs_root,
          .namespaces = {.host_network = spec.host_network,
                         .host_pid = spec.host_pid,
                         .host_ipc = spec.host_ipc,
                         .share_process_namespace = spec.share_process_namespace.value_or(false)},
          .network_ready = network_ready,
          .hostname = spec.hostname.empty() ? pod.metadata.name : spec.hostname,
          .dns = NodeDns(options_.resolv_conf),
          .attempt = attempt};
}

StatusOr<CriBackend::Sandbox*> CriBackend::EnsureSandbox(const Launch& l) {
  const api::Pod& pod = l.pod;
  auto it = sandboxes_.find(pod.metadata.uid);
  uint32_t attempt = 0;
  if (it != sandboxes_.end()) {
    auto status = client_->PodSandboxStatus(it->second.id);
    if (status.ok() && status->state() == pb::SANDBOX_READY) {
      if (!it->second.has_config) {
        // Found again after a restart: described as it was made (the log directory it names
        // matters: the runtime puts the containers' logs under it).
        it->second.inputs = Inputs(pod, !status->network().ip().empty(), it->second.attempt);
        it->second.config = SandboxConfig(pod, it->second.inputs);
        it->second.has_config = true;
      }
      return &it->second;
    }
    // Gone or not ready: a new one, the next attempt, as kubelet's PodSandboxChanged decides.
    attempt = it->second.attempt + 1;
    static_cast<void>(client_->StopPodSandbox(it->second.id));
    static_cast<void>(client_->RemovePodSandbox(it->second.id));
    sandboxes_.erase(it);
  }
  KVOL_ASSIGN_OR_RETURN(pb::RuntimeStatus rs, client_->RuntimeStatus());
  const pb::RuntimeCondition* network = FindCondition(rs, kNetworkReady);
  const SandboxInputs in = Inputs(pod, network && network->status(), attempt);
  Sandbox sandbox;
  sandbox.attempt = attempt;
  sandbox.inputs = in;
  sandbox.config = SandboxConfig(pod, in);
  sandbox.has_config = true;
  std::error_code ec;
  fs::create_directories(sandbox.config.log_directory(), ec);
  KVOL_ASSIGN_OR_RETURN(sandbox.id, client_->RunPodSandbox(sandbox.config));
  if (!UsesNodeNetwork(in)) {
    auto status = client_->PodSandboxStatus(sandbox.id);
    if (status.ok()) sandbox.ip = status->network().ip();
  } else if (!in.network_ready && !in.namespaces.host_network && l.event) {
    l.event("Normal", "NodeNetwork",
            "The container runtime's network is not ready (NetworkReady=false reason:" +
                (network ? network->reason() : "") +
                " message:" + (network ? network->message() : "") +
                "): the pod runs in the node's network, with no hostname of its own");
  }
  return &(sandboxes_[pod.metadata.uid] = std::move(sandbox));
}

std::vector<pb::AuthConfig> CriBackend::PullCredentials(const Launch& l, const std::string& image) {
  const auto& refs = l.pod.spec.image_pull_secrets;
  if (refs.empty()) return {};
  Keyring keyring;
  std::string missing;
  for (const auto& ref : refs) {
    auto secret = options_.secrets ? options_.secrets(l.pod.metadata.namespace_, ref.name)
                                   : StatusOr<api::Secret>(NotFoundError(ref.name));
    if (!secret.ok()) {
      missing += (missing.empty() ? "" : ", ") + ref.name;
      continue;
    }
    if (Status s = keyring.Add(*secret); !s.ok()) {
      log::Warn("pod " + l.pod.metadata.namespace_ + "/" + l.pod.metadata.name + ": " +
                s.message());
    }
  }
  if (!missing.empty() && l.event) {
    l.event("Warning", "FailedToRetrieveImagePullSecret",
            "Unable to retrieve some image pull secrets (" + missing +
                "); attempting to pull the image may not succeed.");
  }
  return keyring.Lookup(image);
}

std::optional<StartFailure> CriBackend::EnsureImage(const Launch& l, const Sandbox& sandbox,
                                                    std::string* ref) {
  const std::string& image = l.spec.image;
  auto event = [&](std::string_view type, std::string_view reason, std::string message) {
    if (l.event) l.event(type, reason, std::move(message));
  };
  auto failure = [](std::string reason, std::string message) {
    return StartFailure{
        .reason = reason, .message = std::move(message), .event_message = "Error: " + reason};
  };
  if (image.empty()) {
    return StartFailure{.reason = "InvalidImageName",
                        .message =
                            "Failed to apply default image tag \"\": couldn't parse image "
                            "name \"\": invalid reference format",
                        .event_reason = "InspectFailed",
                        .event_message = "Failed to apply default image tag \"\""};
  }
  auto present = client_->ImageStatus(image);
  if (!present.ok()) {
    return failure("ImageInspectError",
                   "Failed to inspect image " + Quoted(image) + ": " + present.status().message());
  }
  const std::string policy = PullPolicy(l.spec);
  auto reference = [](const pb::Image& i) {
    return i.repo_digests_size() > 0 ? i.repo_digests(0) : i.id();
  };
  if (policy == "Never" || (policy == "IfNotPresent" && present->has_value())) {
    if (present->has_value()) {
      event("Normal", "Pulled", "Container image " + Quoted(image) + " already present on machine");
      *ref = reference(**present);
      return std::nullopt;
    }
    const std::string msg =
        "Container image " + Quoted(image) + " is not present with pull policy of Never";
    event("Warning", "ErrImageNeverPull", msg);
    return failure("ErrImageNeverPull", msg);
  }
  const std::string key = l.pod.metadata.uid + "_" + image;
  const auto now = std::chrono::steady_clock::now();
  auto backoff = pull_backoff_.find(key);
  if (backoff != pull_backoff_.end() && now - backoff->second.updated < backoff->second.delay) {
    const std::string msg = "Back-off pulling image " + Quoted(image);
    event("Normal", "BackOff", msg);
    StartFailure f = failure("ImagePullBackOff", msg);
    f.retry = std::chrono::duration_cast<std::chrono::milliseconds>(
        backoff->second.delay - (now - backoff->second.updated));
    return f;
  }
  // Pulled off this thread (image_puller.h): until it is done the container waits as it was.
  std::optional<PullOutcome> outcome = puller_->Take(key);
  if (!outcome) {
    if (!puller_->Pending(key)) {
      event("Normal", "Pulling", "Pulling image " + Quoted(image));
      // With the credentials of the pod's imagePullSecrets that match the image, each in turn;
      // or none.
      puller_->Request(key, [client = client_.get(), image, auths = PullCredentials(l, image),
                             config = sandbox.config](grpc::ClientContext* context) {
        StatusOr<std::string> pulled = InternalError("no pull attempted");
        for (size_t i = 0; i < std::max<size_t>(auths.size(), 1); ++i) {
          pulled = client->PullImage(context, image, auths.empty() ? nullptr : &auths[i], config);
          if (pulled.ok()) break;
        }
        return pulled;
      });
    }
    return StartFailure{.retry = kPullingLook, .pending = true};
  }
  if (!outcome->ref.ok()) {
    const std::string msg = outcome->ref.status().message();
    event("Warning", "Failed", "Failed to pull image " + Quoted(image) + ": " + msg);
    Backoff& b = pull_backoff_[key];
    // kubelet's: the first failure waits the initial delay, each next one twice as long, up to
    // the maximum; a long quiet spell starts again from the initial delay.
    b.delay = b.delay.count() == 0 || now - b.updated > 2 * options_.pull_backoff_max
                  ? options_.pull_backoff_initial
                  : std::min(2 * b.delay, options_.pull_backoff_max);
    b.updated = now;
    StartFailure f = failure("ErrImagePull", msg);
    f.retry = std::chrono::seconds(1);  // then ImagePullBackOff until the back-off is over
    return f;
  }
  pull_backoff_.erase(key);
  *ref = *outcome->ref;
  uint64_t size = 0;
  if (auto status = client_->ImageStatus(*ref); status.ok() && status->has_value()) {
    size = (*status)->size();
  }
  event("Normal", "Pulled",
        "Successfully pulled image " + Quoted(image) + " in " + GoDuration(outcome->pulling) +
            " (" + GoDuration(outcome->total) +
            " including waiting). Image size: " + std::to_string(size) + " bytes.");
  return std::nullopt;
}

// ---- runs ---------------------------------------------------------------------------------------

StartResult CriBackend::Start(const Launch& l) {
  auto sandbox = EnsureSandbox(l);
  if (!sandbox.ok()) {
    const std::string msg = sandbox.status().message();
    return {.failure = StartFailure{.reason = "ContainerCreating",
                                    .message = "Failed to create pod sandbox: " + msg,
                                    .event_reason = "FailedCreatePodSandBox",
                                    .event_message = "Failed to create pod sandbox: " + msg}};
  }
  std::string image_ref;
  if (auto f = EnsureImage(l, **sandbox, &image_ref)) return {.failure = std::move(f)};
  auto error = [](std::string reason, const Status& s) {
    return StartResult{.failure = StartFailure{.reason = std::move(reason),
                                               .message = s.message(),
                                               .event_message = "Error: " + s.message()}};
  };
  const std::string subpaths = SubPathsDir(l.bundle, l.run);
  auto mounts = BindSubPaths(l);
  if (!mounts.ok()) {
    UnbindRun(subpaths);
    return error("CreateContainerConfigError", mounts.status());
  }
  auto config = ContainerConfig(l.pod, l.spec, (*sandbox)->inputs,
                                {.restart_count = static_cast<uint32_t>(l.run),
                                 .image = image_ref,
                                 .env = l.env,
                                 .mounts = *std::move(mounts)});
  if (!config.ok()) {
    UnbindRun(subpaths);
    return error("CreateContainerConfigError", config.status());
  }
  auto raw = client_->CreateContainer((*sandbox)->id, *config, (*sandbox)->config);
  if (!raw.ok()) {
    UnbindRun(subpaths);
    return error("CreateContainerError", raw.status());
  }
  if (Status s = client_->StartContainer(*raw); !s.ok()) {
    static_cast<void>(client_->RemoveContainer(*raw));
    UnbindRun(subpaths);
    return error("RunContainerError", s);
  }
  subpaths_[*raw] = subpaths;
  return {.id = Id(*raw), .image_id = image_ref};
}

void CriBackend::Refresh() {
  auto list = client_->Call(&pb::RuntimeService::Stub::ListContainers, pb::ListContainersRequest());
  listed_ = list.ok();
  if (!list.ok()) {
    log::Warn("pod runtime: listing the runtime's containers: " + list.status().message());
    return;
  }
  states_.clear();
  for (const auto& c : list->containers()) states_[c.id()] = c.state();
}

std::optional<api::ContainerStateTerminated> CriBackend::EndedOf(const std::string& raw) {
  auto status = client_->ContainerStatus(raw);
  if (!status.ok()) {
    if (status.status().code() == StatusCode::kNotFound) return Unknown();
    return std::nullopt;  // asked again at the next look
  }
  if (status->state() == pb::CONTAINER_RUNNING || status->state() == pb::CONTAINER_CREATED) {
    return std::nullopt;
  }
  api::ContainerStateTerminated t;
  t.exit_code = status->exit_code();
  t.reason = status->reason();
  t.message = status->message();
  if (status->started_at() > 0) t.started_at = FromNanos(status->started_at());
  if (status->finished_at() > 0) t.finished_at = FromNanos(status->finished_at());
  return t;
}

std::optional<api::ContainerStateTerminated> CriBackend::Exited(const std::string& id) {
  if (!listed_) return std::nullopt;
  const std::string raw = Raw(id);
  auto it = states_.find(raw);
  std::optional<api::ContainerStateTerminated> ended;
  if (it == states_.end()) {
    ended = Unknown();
  } else if (it->second != pb::CONTAINER_RUNNING && it->second != pb::CONTAINER_CREATED) {
    ended = EndedOf(raw);
  }
  if (ended) {
    // Its subPath binds go now, before the volume manager may tear the volumes down.
    // Kept for the next look when that fails (the volume would stay pinned otherwise).
    if (auto s = subpaths_.find(raw); s != subpaths_.end() && UnbindRun(s->second)) {
      subpaths_.erase(s);
    }
  }
  return ended;
}

StatusOr<std::vector<runtime::BindMount>> CriBackend::BindSubPaths(const Launch& l) {
  std::vector<runtime::BindMount> mounts = l.mounts;
  const std::string dir = SubPathsDir(l.bundle, l.run);
  for (size_t i = 0; i < mounts.size(); ++i) {
    runtime::BindMount& m = mounts[i];
    if (m.within.empty()) continue;
    const std::string target = dir + "/" + std::to_string(i);
    if (Status s = BindSubPath(m.within, m.source, target); !s.ok()) {
      return s.Annotate("failed to prepare subPath for volumeMount at \"" + m.target +
                        "\" of container \"" + l.spec.name + "\"");
    }
    m.source = target;
    m.within.clear();
  }
  return mounts;
}

bool CriBackend::UnbindRun(const std::string& dir) {
  Status s = UnbindSubPaths(dir);
  if (!s.ok()) log::Warn("pod runtime: " + s.message());
  return s.ok();
}

void CriBackend::Terminate(const std::string& id, std::chrono::seconds grace) {
  // StopContainer waits out the grace period: on a thread of its own, as kubelet stops a pod's
  // containers in parallel. The end is seen at the next look.
  std::erase_if(stopping_, [](auto& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  stopping_.push_back(std::async(std::launch::async, [this, raw = Raw(id), grace] {
    if (Status s = client_->StopContainer(raw, grace.count()); !s.ok()) {
      log::Warn("pod runtime: stopping container " + raw + ": " + s.message());
    }
  }));
}

void CriBackend::Discard(const std::string& id) {
  const std::string raw = Raw(id);
  auto status = client_->ContainerStatus(raw);
  if (Status s = client_->RemoveContainer(raw); !s.ok() && s.code() != StatusCode::kNotFound) {
    log::Warn("pod runtime: removing container " + raw + ": " + s.message());
    return;
  }
  std::error_code ec;
  if (status.ok() && !status->log_path().empty()) fs::remove(status->log_path(), ec);
}

void CriBackend::RemovePod(const std::string& uid) {
  puller_->Forget(uid + "_");
  // Whatever subPath bind a run left (its end missed while the agent was away) goes before
  // the pod's directories do.
  if (!options_.containers_dir.empty()) {
    std::error_code ec;
    const fs::path pod = fs::path(options_.containers_dir) / uid;
    for (fs::directory_iterator c(pod, ec), end; !ec && c != end; c.increment(ec)) {
      std::error_code ec2;
      for (fs::directory_iterator r(c->path() / "subpaths", ec2); !ec2 && r != end;
           r.increment(ec2)) {
        UnbindRun(r->path().string());
      }
    }
  }
  pb::ListContainersRequest containers;
  (*containers.mutable_filter()->mutable_label_selector())[std::string(kPodUidLabel)] = uid;
  if (auto list = client_->Call(&pb::RuntimeService::Stub::ListContainers, containers); list.ok()) {
    for (const auto& c : list->containers()) {
      if (Status s = client_->RemoveContainer(c.id()); !s.ok()) {
        log::Warn("pod runtime: removing container " + c.id() + ": " + s.message());
      }
    }
  }
  pb::ListPodSandboxRequest sandboxes;
  (*sandboxes.mutable_filter()->mutable_label_selector())[std::string(kPodUidLabel)] = uid;
  if (auto list = client_->Call(&pb::RuntimeService::Stub::ListPodSandbox, sandboxes); list.ok()) {
    for (const auto& s : list->items()) {
      Status stopped = client_->StopPodSandbox(s.id());
      Status removed = stopped.ok() ? client_->RemovePodSandbox(s.id()) : stopped;
      if (!removed.ok()) {
        log::Warn("pod runtime: removing sandbox " + s.id() + ": " + removed.message());
      }
    }
  }
  sandboxes_.erase(uid);
  pull_backoff_.erase(pull_backoff_.lower_bound(uid + "_"), pull_backoff_.lower_bound(uid + "`"));
  // The pod's log directory, <namespace>_<name>_<uid>.
  std::error_code ec;
  for (fs::directory_iterator d(options_.logs_root, ec), end; !ec && d != end; d.increment(ec)) {
    const std::string name = d->path().filename().string();
    if (name.size() > uid.size() &&
        name.compare(name.size() - uid.size() - 1, std::string::npos, "_" + uid) == 0) {
      std::error_code ec2;
      fs::remove_all(d->path(), ec2);
    }
  }
}

// ---- finding runs again -------------------------------------------------------------------------

void CriBackend::BeginAdopt() {
  found_containers_.clear();
  found_sandboxes_.clear();
  if (auto list =
          client_->Call(&pb::RuntimeService::Stub::ListContainers, pb::ListContainersRequest());
      list.ok()) {
    for (const auto& c : list->containers()) {
      if (!Label(c.labels(), kPodUidLabel).empty()) found_containers_.push_back(c);
    }
  } else {
    log::Warn("pod runtime: listing the runtime's containers: " + list.status().message());
  }
  if (auto list =
          client_->Call(&pb::RuntimeService::Stub::ListPodSandbox, pb::ListPodSandboxRequest());
      list.ok()) {
    for (const auto& s : list->items()) {
      const std::string uid = Label(s.labels(), kPodUidLabel);
      if (uid.empty()) continue;
      found_sandboxes_.push_back(s);
      if (s.state() != pb::SANDBOX_READY) continue;
      Sandbox& mine = sandboxes_[uid];
      if (!mine.id.empty() && mine.attempt > s.metadata().attempt()) continue;
      mine.id = s.id();
      mine.attempt = s.metadata().attempt();
      if (auto status = client_->PodSandboxStatus(s.id()); status.ok()) {
        mine.ip = status->network().ip();
      }
    }
  } else {
    log::Warn("pod runtime: listing the runtime's sandboxes: " + list.status().message());
  }
}

FoundRun CriBackend::Adopt(const std::string& uid, const std::string& container,
                           const std::string& bundle, int run, const std::string& id) {
  FoundRun out = FindRun(uid, container, run, id);
  const std::string subpaths = SubPathsDir(bundle, run);
  if (out.ended || out.never_started) {
    UnbindRun(subpaths);
  } else {
    subpaths_[Raw(out.id)] = subpaths;
  }
  return out;
}

FoundRun CriBackend::FindRun(const std::string& uid, const std::string& container, int run,
                             const std::string& id) {
  const pb::Container* found = nullptr;
  for (const auto& c : found_containers_) {
    const bool match =
        id.empty() ? Label(c.labels(), kPodUidLabel) == uid &&
                         Label(c.labels(), kContainerNameLabel) == container &&
                         Label(c.annotations(), kRestartCountAnnotation) == std::to_string(run)
                   : c.id() == Raw(id);
    if (match) found = &c;
  }
  // Not found by its labels: the agent died before CreateContainer made it. Not found by its
  // id: it was removed behind the agent's back, and how it ended is unknown.
  if (!found && id.empty()) return {.never_started = true};
  if (!found) return {.id = id, .ended = Unknown()};
  FoundRun out{.id = Id(found->id())};
  if (found->state() == pb::CONTAINER_CREATED) {
    // Made but never started (the agent died in between): started now, as the run it was.
    if (Status s = client_->StartContainer(found->id()); !s.ok()) {
      api::ContainerStateTerminated t;
      t.exit_code = 128;
      t.reason = "StartError";
      t.message = s.message();
      out.ended = t;
    }
    return out;
  }
  if (found->state() != pb::CONTAINER_RUNNING) {
    out.ended = EndedOf(found->id());
    if (!out.ended) out.ended = Unknown();
  }
  return out;
}

void CriBackend::EndAdopt(const std::set<std::string>& claimed) {
  // Containers no record claims are ended and removed; so are the sandboxes of pods none of
  // whose containers are claimed.
  std::set<std::string> pods;
  for (const auto& c : found_containers_) {
    if (claimed.count(Id(c.id()))) {
      pods.insert(Label(c.labels(), kPodUidLabel));
      continue;
    }
    log::Warn("pod runtime: removing container " + c.id() + " (" +
              Label(c.labels(), kPodNamespaceLabel) + "/" + Label(c.labels(), kPodNameLabel) + " " +
              Label(c.labels(), kContainerNameLabel) + "), which no record claims");
    static_cast<void>(client_->StopContainer(c.id(), 0));
    static_cast<void>(client_->RemoveContainer(c.id()));
  }
  for (const auto& s : found_sandboxes_) {
    const std::string uid = Label(s.labels(), kPodUidLabel);
    if (pods.count(uid)) continue;
    static_cast<void>(client_->StopPodSandbox(s.id()));
    static_cast<void>(client_->RemovePodSandbox(s.id()));
    sandboxes_.erase(uid);
  }
  found_containers_.clear();
  found_sandboxes_.clear();
}

std::string CriBackend::LogPath(const runtime::PodName& pod, const std::string& container,
                                const std::string& bundle, int run) const {
  static_cast<void>(bundle);
  return options_.logs_root + "/" + pod.ns + "_" + pod.name + "_" + pod.uid + "/" + container +
         "/" + std::to_string(run) + ".log";
}

std::string CriBackend::PodIp(const std::string& uid) const {
  auto it = sandboxes_.find(uid);
  return it == sandboxes_.end() ? "" : it->second.ip;
}

StatusOr<std::unique_ptr<runtime::ExecStream>> CriBackend::Exec(
    const std::string& id, const std::string& bundle, const std::vector<std::string>& argv,
    bool stdin, bool tty) {
  static_cast<void>(bundle);
  KVOL_ASSIGN_OR_RETURN(auto stream, CriExecStream::Start(*client_, Raw(id), argv, stdin, tty));
  return std::unique_ptr<runtime::ExecStream>(std::move(stream));
}

}  // namespace kvol::node::cri
