// The CRI backend: the pod runtime's runs carried out by a container runtime such as containerd,
// as kubelet's kuberuntime does it:
//   - a sandbox per pod (RunPodSandbox), made before its first container, and made again (the
//     next attempt) when the runtime reports it not ready; in the node's network, with an event
//     that says so, while the runtime's network is not ready;
//   - the image per imagePullPolicy, with kubelet's events and waiting reasons (Pulling, Pulled,
//     ErrImagePull, ImagePullBackOff with a back-off per pod and image from 10 s to 5 min,
//     ErrImageNeverPull); pulls run one at a time off the runtime's thread (image_puller.h);
//   - CreateContainer and StartContainer; ends seen by listing the containers every poll
//     period (kubelet's PLEG relists every second); StopContainer with the grace period;
//   - subPaths bound safely for the runtime (subpath_bind.h), unbound when the run ends;
//   - runs found again by their labels and restartCount annotation;
//   - logs in the CRI log format under <logs_root>/<namespace>_<name>_<uid>/<container>/.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "node/runtime/backend.h"
#include "node/runtime/cri/cri_client.h"
#include "node/runtime/cri/image_puller.h"
#include "node/runtime/cri/pod_config.h"

namespace kvol::node::cri {

struct CriBackendOptions {
  std::string endpoint;  // "unix:///run/containerd/containerd.sock"
  std::string logs_root = std::string(kPodLogsRoot);
  // The pod runtime's <root>/containers: each container's directory (Launch's bundle) holds
  // its runs' subPath binds (subpath_bind.h).
  std::string containers_dir;
  std::string resolv_conf = "/etc/resolv.conf";  // the node's DNS, given to sandboxes
  std::chrono::milliseconds poll_period{1000};
  // The image pull back-off, per pod and image: kubelet's.
  std::chrono::milliseconds pull_backoff_initial{10'000};
  std::chrono::milliseconds pull_backoff_max{300'000};
  // The Secrets imagePullSecrets name (the agent's cache).
  std::function<StatusOr<api::Secret>(std::string_view ns, std::string_view name)> secrets;
};

// `d` as kubelet's events print a duration truncated to milliseconds (Go's): "512ms", "1.5s",
// "2m3.004s".
std::string GoDuration(std::chrono::milliseconds d);

// The pull policy a container's image is pulled with: imagePullPolicy, or kubelet's default
// (Always for an image tagged latest or not tagged, IfNotPresent otherwise).
std::string PullPolicy(const api::Container& c);

class CriBackend : public runtime::Backend {
 public:
  // A backend on the runtime at `options.endpoint`, which must answer Version.
  static StatusOr<std::unique_ptr<CriBackend>> New(CriBackendOptions options);
  ~CriBackend() override;

  std::string RuntimeVersion() override { return version_; }
  // The first image filesystem of ImageFsInfo, measured with statvfs at its mountpoint as
  // kubelet measures it. Any thread.
  StatusOr<std::optional<os::FilesystemStats>> ImageFs() override;
  runtime::StartResult Start(const runtime::Launch& launch) override;
  void Refresh() override;
  std::optional<api::ContainerStateTerminated> Exited(const std::string& id) override;
  void Terminate(const std::string& id, std::chrono::seconds grace) override;
  void Kill(const std::string& id) override { static_cast<void>(id); }
  void Discard(const std::string& id) override;
  void RemovePod(const std::string& uid) override;
  std::optional<std::chrono::milliseconds> PollPeriod() const override {
    return options_.poll_period;
  }
  void BeginAdopt() override;
  runtime::FoundRun Adopt(const std::string& uid, const std::string& container,
                          const std::string& bundle, int run, const std::string& id) override;
  void EndAdopt(const std::set<std::string>& claimed) override;
  std::string LogPath(const runtime::PodName& pod, const std::string& container,
                      const std::string& bundle, int run) const override;
  bool CriLogFormat() const override { return true; }
  std::string PodIp(const std::string& uid) const override;
  StatusOr<std::unique_ptr<runtime::ExecStream>> Exec(const std::string& id,
                                                      const std::string& bundle,
                                                      const std::vector<std::string>& argv,
                                                      bool stdin, bool tty) override;

 private:
  struct Sandbox {
    std::string id;
    uint32_t attempt = 0;
    bool has_config = false;  // false for one found again, until a container needs it
    SandboxInputs inputs;
    pb::PodSandboxConfig config;
    std::string ip;  // its own network's address; "" in the node's
  };
  struct Backoff {
    std::chrono::steady_clock::time_point updated;
    std::chrono::milliseconds delay{0};
  };

  explicit CriBackend(CriBackendOptions options) : options_(std::move(options)) {}
  // What the pod's sandbox is made with.
  SandboxInputs Inputs(const api::Pod& pod, bool network_ready, uint32_t attempt) const;
  // The credentials the pod's imagePullSecrets hold for `image`, most specific first.
  std::vector<pb::AuthConfig> PullCredentials(const runtime::Launch& l, const std::string& image);
  // The pod's sandbox, made (again) when it has none that is ready.
  StatusOr<Sandbox*> EnsureSandbox(const runtime::Launch& l);
  // The runtime's reference to the container's image, pulled as its policy says; or why not.
  std::optional<runtime::StartFailure> EnsureImage(const runtime::Launch& l, const Sandbox& sandbox,
                                                   std::string* ref);
  std::string Id(const std::string& raw) const { return prefix_ + raw; }
  std::string Raw(const std::string& id) const;
  std::optional<api::ContainerStateTerminated> EndedOf(const std::string& raw);
  // The launch's mounts with each subPath bound under <bundle>/subpaths/<run>/; or why not.
  StatusOr<std::vector<runtime::BindMount>> BindSubPaths(const runtime::Launch& l);
  // The run a record names, as the runtime holds it (Adopt's work but the binds).
  runtime::FoundRun FindRun(const std::string& uid, const std::string& container, int run,
                            const std::string& id);
  // Unbinds what a run bound (when it has ended, or never started); false when some of it
  // stays.
  bool UnbindRun(const std::string& dir);

  const CriBackendOptions options_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<ImagePuller> puller_;               // after client_, which its thread uses
  std::string version_;                               // "containerd://1.6.20"
  std::string prefix_;                                // "containerd://"
  std::map<std::string, Sandbox> sandboxes_;          // by pod uid
  std::map<std::string, pb::ContainerState> states_;  // by raw id, at the last Refresh
  bool listed_ = false;                               // states_ is current
  std::map<std::string, Backoff> pull_backoff_;       // by "<pod uid>_<image>"
  std::vector<std::future<void>> stopping_;           // StopContainer calls under way
  std::map<std::string, std::string> subpaths_;       // a running run's binds' dir, by raw id
  // While adopting: what the runtime holds of pods.
  std::vector<pb::Container> found_containers_;
  std::vector<pb::PodSandbox> found_sandboxes_;
};

}  // namespace kvol::node::cri
